"""Progress while an experiment runs, not only after it: a sweep under a
pseudo-terminal redraws a status line during its slow experiment; without a terminal
plain lines come at the configured rate; exp.timeout=auto stops a hung worker soon
after its pace says it should have moved on."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.launch import deadline
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.sweep import Sweep

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals")


def _read_all(fd: int, process: subprocess.Popen[bytes], limit: float = 60) -> bytes:
    """Everything written to the terminal ``fd`` until ``process`` ends."""
    out, end = b"", time.monotonic() + limit
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            out += chunk
        elif process.poll() is not None:
            break
    return out


def test_sweep_on_a_terminal_redraws_progress_during_a_slow_experiment(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    # 200 columns: the status line is cut to the terminal's width (a new one says 0).
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "DLBENCH_PROGRESS_SECONDS"}
    env["TERM"] = "xterm"
    process = subprocess.Popen(
        [sys.executable, "-m", "dlbench", "run", "-P", "exp.framework=fake",
         "-P", "exp.num_warmup_batches=1", "-P", "exp.num_batches=5",
         "-P", "monitor.enabled=false",
         "-V", "fake.step_ms=[2, 250]", "--out", str(tmp_path / "out")],
        stdin=terminal, stdout=terminal, stderr=terminal, env=env, cwd=tmp_path)
    os.close(terminal)
    try:
        text = _read_all(controller, process).decode("utf-8", "replace")
    finally:
        os.close(controller)
        process.wait(timeout=30)
    assert process.returncode == 0, text
    slow_end = re.search(r"\[#+\] 2/2 ok +fake\(resnet50\) fake\.step_ms=250\.0", text)
    assert slow_end is not None, text
    before = text[text.index("1/2 ok"):slow_end.start()]
    # Redrawn in place during the slow experiment: carriage return, the status, clear to
    # the end of the line; the throughput so far once timed batches have run.
    redraws = re.findall(
        r"\r(running 2/2: fake\(resnet50\) fake\.step_ms=250\.0 — [^\r\x1b]*)\x1b\[K", before)
    assert any(re.search(r"timed \d/5, [\d.]+ samples/s so far, \d+:\d\d elapsed$", line)
               for line in redraws), redraws
    assert before.endswith("\r\x1b[K")  # the status is cleared before the end line


def _plan(out: Path) -> list[dict[str, Any]]:
    """Two experiments of 100 ms batches: 1 + 8 batches, then one that hangs at batch
    4 of 1 + 5 (fewer batches left: a shorter auto timeout)."""
    spec = load_spec(
        params=["exp.framework=fake", "monitor.enabled=false", f"exp.out_dir={out}",
                "fake.step_ms=100", "exp.num_warmup_batches=1", "exp.num_batches=8",
                "fake.failure_batch=4"],
        variables=["fake.failure=[none, hang]"],
        extensions=['{"condition": {"fake.failure": "hang"}, '
                    '"parameters": {"exp.num_batches": 5}}'])
    return plan_experiments(spec)


def _run(experiments: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    lines: list[str] = []
    runner = Sweep(LocalLauncher(lines.append), report=lines.append)
    try:
        result = runner.run(experiments)
    finally:
        runner.close()
    return [o.record for o in result.outcomes], lines


def test_plain_lines_without_a_terminal_and_auto_timeout_of_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", "dumb")  # plain lines even when the tests run on a terminal
    monkeypatch.setenv("DLBENCH_PROGRESS_SECONDS", "0.3")
    # A shorter grace than 120 s, so that the hung worker is stopped within the test.
    monkeypatch.setattr(deadline, "GRACE_S", 0.5)
    records, lines = _run(_plan(tmp_path / "out"))
    first_end = next(i for i, line in enumerate(lines) if " 1/2 ok " in line)
    status = (r"running 1/2: fake\(resnet50\) exp\.num_batches=8 fake\.failure=none — timed \d/8, "
              r"[\d.]+ samples/s so far, \d+:\d\d elapsed$")
    assert any(re.match(status, line) for line in lines[:first_end]), lines
    ok, hung = records
    assert ok["exp.status"] == "ok" and ok["exp.timeout"] == "auto"
    assert hung["exp.status"] == "timeout" and hung["exp.timeout"] == "auto"
    assert hung["results.failure_kind"] == "timeout"
    assert re.match(r"timed out after \d+ s in the timed batches at batch \d$",
                    hung["exp.status_msg"]), hung["exp.status_msg"]
