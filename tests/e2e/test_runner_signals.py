"""Signals to a running sweep, sent for real to a ``dlbench run`` subprocess:
SIGUSR1 stops after the current experiment, a second Ctrl-C while the worker is being
stopped changes nothing, and Ctrl-C while planning ends quietly with 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlbench.cli.commands import run as commands_run
from dlbench.cli.main import main
from dlbench.launch.sweep import SweepResult
from dlbench.results.store import Store

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals")

FAKE = ["-P", "exp.framework=fake", "-P", "exp.num_warmup_batches=0",
        "-P", "monitor.enabled=false"]


def _statuses(out: Path) -> list[str]:
    with Store.in_directory(out, create=False) as store:
        return sorted(str(r["exp.status"]) for r in store.records())


def _wait_for_logs(out: Path, count: int, limit: float = 30) -> None:
    """Until ``count`` experiment logs exist (the count-th worker has started)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        logs = out / "logs"
        if logs.is_dir() and len([p for p in logs.iterdir() if p.suffix == ".log"]) >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"no {count} log(s) under {out} after {limit} s")


def _sweep(out: Path, driver: str = "", batches: int = 12) -> subprocess.Popen[str]:
    args = ["run", *FAKE, "-P", "fake.step_ms=50", "-P", f"exp.num_batches={batches}",
            "-V", "exp.replica_batch=[1, 2, 3]", "--out", str(out)]
    command = ([sys.executable, "-c", driver, *args] if driver
               else [sys.executable, "-m", "dlbench", *args])
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigusr1_finishes_the_current_experiment_then_stops(tmp_path: Path) -> None:
    out = tmp_path / "out"
    runner = _sweep(out)
    _wait_for_logs(out, 1)
    runner.send_signal(signal.SIGUSR1)
    _, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 128 + signal.SIGUSR1, stderr
    assert "Stopped on SIGUSR1 after the current experiment: 2 experiment(s) not started" \
        in stderr
    assert "Traceback" not in stderr
    assert _statuses(out) == ["ok"]  # recorded cleanly; the others never started
    assert len(list((out / "logs").glob("*.log"))) == 1

    again = subprocess.run([sys.executable, "-m", "dlbench", "run", *FAKE, "-P",
                            "fake.step_ms=50", "-P", "exp.num_batches=12", "-V",
                            "exp.replica_batch=[1, 2, 3]", "--out", str(out)],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("ok (kept)") == 1
    assert _statuses(out) == ["ok", "ok", "ok"]


def test_second_ctrl_c_while_stopping_the_worker(tmp_path: Path) -> None:
    # The workers ignore SIGTERM (set before exec, as a framework that traps it
    # would), so stopping one takes the runner's whole grace period: the second
    # Ctrl-C lands in it.
    wrapper = tmp_path / "python-ignoring-sigterm"
    wrapper.write_text(f"#!/bin/sh\ntrap '' TERM\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    driver = (f"import sys; sys.executable = {str(wrapper)!r}\n"
              "from dlbench.cli.main import main\nsys.exit(main(sys.argv[1:]))")
    out = tmp_path / "out"
    runner = _sweep(out, driver, batches=40)  # 2 s: still running at the second Ctrl-C
    _wait_for_logs(out, 1)
    time.sleep(0.2)
    runner.send_signal(signal.SIGINT)
    time.sleep(0.5)
    runner.send_signal(signal.SIGINT)
    runner.send_signal(signal.SIGTERM)
    _, stderr = runner.communicate(timeout=60)
    assert runner.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "Interrupted: 2 experiment(s) not run" in stderr
    assert _statuses(out) == ["interrupted"]


def test_interrupted_before_any_experiment_ended_prints_no_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As after a Ctrl-C while a Slurm job was still queued: no outcome at all.
    monkeypatch.setattr(commands_run.Sweep, "run",
                        lambda self, experiments: SweepResult(interrupted=True))
    assert main(["run", *FAKE, "-V", "exp.replica_batch=[1, 2]",
                 "--out", str(tmp_path / "out")]) == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.endswith("Interrupted: 2 experiment(s) not run; run the same command "
                                 "again to resume.\n")


def test_ctrl_c_while_planning_is_130_without_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands_run, "plan_experiments", interrupted)
    assert main(["run", *FAKE, "--out", str(tmp_path / "out")]) == 130
    err = capsys.readouterr().err
    assert err == "dlbench: interrupted\n"
    assert not (tmp_path / "out").exists()
