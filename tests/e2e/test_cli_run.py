"""``dlbench run`` end to end on the CPU, as a user runs it: real worker processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlbench.results.store import Store
from dlbench.results.text_table import format_number
from tests.conftest import CliRunner

FAKE = ["-P", "exp.framework=fake", "-P", "exp.num_warmup_batches=1"]


def _store_rows(out: Path) -> dict[str, dict[str, object]]:
    with Store.in_directory(out, create=False) as store:
        return {str(r["exp.id"]): r for r in store.records()}


def test_fake_sweep_runs_prints_table_and_stores(dlbench: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = dlbench("run", *FAKE, "-P", "fake.step_ms=2", "-P", "exp.num_batches=5",
                   "-V", "exp.replica_batch=[1,4]", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "samples/s" in proc.stdout
    assert f"Run directory: {out}" in proc.stdout
    assert "2/2 ok" in proc.stderr
    records = _store_rows(out)
    assert len(records) == 2
    assert {r["exp.status"] for r in records.values()} == {"ok"}
    for record in records.values():
        assert Path(str(record["exp.log_file"])).is_file()
        assert len(record["results.time_data"]) == 5  # type: ignore[arg-type]
        assert (out / "experiments" / f"{record['exp.id']}.json").is_file()


def test_rerun_keeps_finished_experiments(dlbench: CliRunner, tmp_path: Path) -> None:
    args = ("run", *FAKE, "-P", "fake.step_ms=1", "-P", "exp.num_batches=2",
            "-V", "exp.replica_batch=[1,2]", "--out", "out")
    assert dlbench(*args).returncode == 0
    logs = sorted((tmp_path / "out" / "logs").iterdir())
    mtimes = [p.stat().st_mtime_ns for p in logs]
    first = _store_rows(tmp_path / "out")
    second = dlbench(*args)
    assert second.returncode == 0
    assert second.stderr.count("ok (kept)") == 2
    assert [p.stat().st_mtime_ns for p in logs] == mtimes
    assert _store_rows(tmp_path / "out") == first
    third = dlbench(*args[:-2], "-P", "exp.rerun=always", "--out", "out")
    assert third.returncode == 0, third.stderr
    assert "ok (kept)" not in third.stderr
    assert "2/2 ok" in third.stderr
    # Both experiments really ran again: the same ids, each with a record of a later
    # run in the store, and a fresh log (one run's lines, not the old log appended to).
    rerun = _store_rows(tmp_path / "out")
    assert rerun.keys() == first.keys()
    for exp_id, record in rerun.items():
        assert record["exp.status"] == "ok"
        assert str(record["results.start_time"]) > str(first[exp_id]["results.end_time"])
        assert record["results.time_data"] != first[exp_id]["results.time_data"]
    assert sorted((tmp_path / "out" / "logs").iterdir()) == logs
    for path, mtime in zip(logs, mtimes, strict=True):
        assert path.stat().st_mtime_ns > mtime
        assert path.read_text().count("__results.start_time__=") == 1


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        ("exception", "RuntimeError: fake failure at batch 1"),
        ("exit", "worker exited with status 3"),
        ("signal", "worker killed by SIGKILL"),
        ("nan", "loss is NaN at batch 1"),
    ],
)
def test_failed_worker_marks_only_its_experiment(
    dlbench: CliRunner, tmp_path: Path, failure: str, expected: str
) -> None:
    # The failing experiment comes first; the sweep must go on to the second.
    proc = dlbench("run", *FAKE, "-P", "fake.step_ms=1", "-P", "exp.num_batches=3",
                   "-P", "fake.failure_batch=1", "-V", f"fake.failure=[{failure}, none]",
                   "--out", "out")
    assert proc.returncode == 1
    records = list(_store_rows(tmp_path / "out").values())
    by_failure = {r["fake.failure"]: r for r in records}
    assert by_failure["none"]["exp.status"] == "ok"
    assert by_failure[failure]["exp.status"] == "failure"
    assert expected in str(by_failure[failure]["exp.status_msg"])
    assert "did not end ok" in proc.stderr
    # The log itself records the outcome, so parsing it alone tells the same story.
    log = Path(str(by_failure[failure]["exp.log_file"])).read_text()
    assert '__exp.status__="failure"' in log


def test_hung_worker_times_out_and_sweep_goes_on(dlbench: CliRunner, tmp_path: Path) -> None:
    proc = dlbench("run", *FAKE, "-P", "fake.step_ms=1", "-P", "exp.num_batches=2",
                   "-P", "exp.timeout=3", "-P", "fake.failure_batch=0",
                   "-V", "fake.failure=[hang, none]", "--out", "out")
    assert proc.returncode == 1
    by_failure = {r["fake.failure"]: r for r in _store_rows(tmp_path / "out").values()}
    assert by_failure["hang"]["exp.status"] == "timeout"
    # It says where the worker hung: the first warm-up batch.
    assert by_failure["hang"]["exp.status_msg"] == "timed out after 3 s in warm-up at batch 0"
    assert by_failure["none"]["exp.status"] == "ok"


def _workers_of(out: Path) -> list[int]:
    """PIDs of live worker processes reading experiments under ``out``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = next(ln for ln in (entry / "status").read_text().splitlines()
                         if ln.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if "dlbench.worker" in cmdline and str(out) in cmdline and "zombie" not in state:
            pids.append(int(entry.name))
    return pids


def _start_sweep(out: Path, step_ms: int, n: int = 3) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "dlbench", "run", *FAKE, "-P", f"fake.step_ms={step_ms}",
         "-P", "exp.num_batches=10", "-V", f"exp.replica_batch={list(range(1, n + 1))}",
         "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _wait_for_records(out: Path, count: int, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if (out / "results.sqlite").exists():
            try:
                if len(_store_rows(out)) >= count:
                    return
            except sqlite3.Error:
                pass
        time.sleep(0.05)
    raise AssertionError(f"no {count} record(s) in {out} after {limit} s")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and prctl")
def test_kill_9_then_rerun_finishes_without_rerunning(dlbench: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "out"
    runner = _start_sweep(out, step_ms=100)  # ~1.1 s per experiment
    _wait_for_records(out, 1)
    time.sleep(0.3)  # the second experiment is now running
    assert _workers_of(out), "a worker should be running"
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    deadline = time.monotonic() + 5
    while _workers_of(out) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _workers_of(out) == [], "the worker outlived its runner"

    first = _store_rows(out)
    assert len(first) == 1
    (first_id,) = first
    proc = dlbench("run", *FAKE, "-P", "fake.step_ms=100", "-P", "exp.num_batches=10",
                   "-V", "exp.replica_batch=[1, 2, 3]", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("ok (kept)") == 1
    records = _store_rows(out)
    assert len(records) == 3 and records[first_id] == first[first_id]

    parsed = dlbench("parse", str(out / "logs"))
    assert parsed.returncode == 0
    data = json.loads(parsed.stdout)["data"]
    assert sorted(r["exp.replica_batch"] for r in data) == [1, 2, 3]
    assert {r["exp.status"] for r in data} == {"ok"}


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_ctrl_c_marks_running_experiment_interrupted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    runner = _start_sweep(out, step_ms=100)
    _wait_for_records(out, 1)
    time.sleep(0.3)
    runner.send_signal(signal.SIGINT)
    _, stderr = runner.communicate(timeout=30)
    assert runner.returncode == 130, stderr
    assert "Interrupted" in stderr
    statuses = sorted(str(r["exp.status"]) for r in _store_rows(out).values())
    assert statuses == ["interrupted", "ok"]
    assert _workers_of(out) == []


def test_pytorch_toy_training_and_inference(dlbench: CliRunner, tmp_path: Path) -> None:
    proc = dlbench("run", "-P", "exp.model=toy", "-P", "exp.num_batches=5",
                   "-P", "pytorch.num_threads=1", "-V", "exp.phase=[training, inference]",
                   "--out", "out")
    assert proc.returncode == 0, proc.stderr
    records = list(_store_rows(tmp_path / "out").values())
    assert [r["exp.phase"] for r in records] == ["training", "inference"]
    for record in records:
        assert record["exp.status"] == "ok"
        assert float(record["results.throughput"]) > 0  # type: ignore[arg-type]
        assert str(record["sys.framework_version"]).startswith("2.")
        assert record["sys.model_params"] == 9610
        assert record["hw.device_name"] == "cpu"


def test_pytorch_resnet18_reduced_size_trains(dlbench: CliRunner, tmp_path: Path) -> None:
    proc = dlbench("run", "-P", "exp.model=resnet18", "-P", "exp.image_size=32",
                   "-P", "exp.replica_batch=2", "-P", "exp.num_batches=2",
                   "-P", "exp.num_warmup_batches=1", "-P", "exp.dtype=bfloat16", "--out", "out")
    assert proc.returncode == 0, proc.stderr
    (record,) = _store_rows(tmp_path / "out").values()
    assert record["exp.status"] == "ok"
    assert record["sys.model_params"] == 11_689_512


@pytest.mark.slow
def test_a_sweep_with_a_run_to_accuracy_ends_prints_its_table_and_resumes(
        dlbench: CliRunner, tmp_path: Path) -> None:
    # A run to a target accuracy records no throughput: the sweep goes on past it, its
    # line and the table show the time to target, and a rerun keeps both records.
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    args = ("run", "-P", "exp.model=deep_mnist", "-P", "exp.image_size=8",
            "-P", "exp.replica_batch=64", "-V", 'exp.phase=["train_to_accuracy","training"]',
            "-P", "exp.target_accuracy=0.01", "-P", "exp.max_epochs=1",
            "-P", "exp.num_batches=1", "-P", "exp.num_warmup_batches=1",
            "-P", "monitor.frequency=0", "--out", "out")
    first = dlbench(*args)
    assert first.returncode == 0, first.stderr
    assert "1/2 ok          exp.phase=train_to_accuracy: time to target " in first.stderr
    assert "(accuracy " in first.stderr and "after 1 epoch)" in first.stderr
    assert "2/2 ok          exp.phase=training: " in first.stderr
    assert "images/s" in first.stderr
    records = {r["exp.phase"]: r for r in _store_rows(tmp_path / "out").values()}
    assert records["train_to_accuracy"].get("results.throughput") is None
    assert records["train_to_accuracy"]["results.accuracy_reached"] is True
    (head,) = [line for line in first.stdout.splitlines() if "throughput" in line]
    rows = [line for line in first.stdout.splitlines() if line.startswith("deep_mnist")]
    assert "to target (s)" in head and "accuracy" in head
    assert rows[0].split()[1] == "train_to_accuracy"
    reached = records["train_to_accuracy"]
    assert rows[0].split()[-2:] == [format_number(float(reached[k])) for k in  # type: ignore[arg-type]
                                    ("results.time_to_target", "results.accuracy_final")]
    second = dlbench(*args)
    assert second.returncode == 0, second.stderr
    assert second.stderr.count("ok (kept)") == 2
    assert "exp.phase=train_to_accuracy: time to target " in second.stderr
    assert "train_to_accuracy" in second.stdout
