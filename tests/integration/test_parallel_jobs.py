"""exp.parallel_jobs through the runner: real copies of the fake workload, each on its
own core, at the same time."""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.sweep import Sweep, SweepResult
from dlbench.report.scorecard.baseline import Baseline, Benchmark
from dlbench.report.scorecard.gpu_reports import train_items
from dlbench.report.scorecard.scorecard import scorecard_report
from dlbench.results.log.parser import parse_log

# Two copies on a core each: pinned to two cores (skipped with fewer).
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("two_cores")]


def _plan(tmp_path: Path, *params: str) -> dict[str, Any]:
    spec = load_spec(params=["exp.framework=fake", "exp.model=toy", "exp.parallel_jobs=2",
                             "exp.num_warmup_batches=1", "monitor.enabled=false", *params],
                     overrides={"exp.out_dir": (str(tmp_path / "out"), "test")})
    (experiment,) = plan_experiments(spec)
    return experiment


def _run(experiment: dict[str, Any], python: str | None = None) -> SweepResult:
    runner = Sweep(LocalLauncher(lambda line: None, python), report=lambda line: None)
    try:
        return runner.run([experiment])
    finally:
        runner.close()


def test_two_copies_on_a_core_each_report_their_own_and_the_sum(tmp_path: Path) -> None:
    experiment = _plan(tmp_path, "fake.step_ms=20", "exp.replica_batch=4",
                       "exp.num_batches=15", "exp.parallel_memory_mb=256")
    (outcome,) = _run(experiment).outcomes
    record = outcome.record
    assert record["exp.status"] == "ok", record["exp.status_msg"]
    copies = [parse_log(path)[0] for path in record["results.copy_log_files"]]
    # Together, not one after the other: each copy's timed batches began before the
    # other's ended (their own clocks' ISO 8601 times, not a bound on seconds).
    first, second = ((datetime.fromisoformat(c["results.start_time"]),
                      datetime.fromisoformat(c["results.end_time"])) for c in copies)
    assert first[0] < second[1] and second[0] < first[1]
    cores = sorted(os.sched_getaffinity(0))
    for number, copy in enumerate(copies, start=1):
        assert copy["exp.status"] == "ok"
        assert copy["exp.copy"] == number
        # The typical batch is the known answer (the mean carries a busy host's stalls).
        assert copy["results.time_p50"] == pytest.approx(20.0, rel=0.03)
        assert copy["results.throughput"] == pytest.approx(4 * 1000 / copy["results.time"])
        assert copy["exp.copy_memory_mb"] == 256
    # Each copy ran on its own core: the affinity each worker saw.
    halves = [cores[:(len(cores) + 1) // 2], cores[(len(cores) + 1) // 2:]]
    expected = [",".join(map(str, h)) if len(h) == 1 else f"{h[0]}-{h[-1]}" for h in halves]
    assert [c["sys.cpu_affinity"] for c in copies] == expected
    assert record["results.copy_cpu_affinity"] == expected
    assert record["results.copy_throughput"] == [c["results.throughput"] for c in copies]
    assert record["results.throughput"] == pytest.approx(sum(record["results.copy_throughput"]))
    assert record["results.throughput"] == pytest.approx(2 * 4 * 1000 / 20.0, rel=0.1)
    assert record["results.time"] == pytest.approx(
        (copies[0]["results.time"] + copies[1]["results.time"]) / 2)
    assert len(record["results.time_data"]) == 30
    assert record["results.copy_isolation"] in ("cgroup", "rlimit")
    assert record["exp.gpus"] == "" and record["exp.copy"] == 0
    # The experiment's own log holds the combined record, as the store does.
    assert parse_log(record["exp.log_file"])[0]["results.throughput"] == pytest.approx(
        record["results.throughput"])
    mechanism = copies[0]["exp.copy_limits"]
    assert mechanism.startswith(("cgroup v2", "CPU affinity and RLIMIT_DATA"))
    assert Path(record["exp.log_file"] + ".copy1").read_text().count(mechanism) == 1


def test_the_scorecard_reads_two_copies_as_two_gpu_reports(tmp_path: Path) -> None:
    experiment = _plan(tmp_path, "fake.step_ms=10", "exp.replica_batch=4",
                       "exp.num_batches=12", "exp.parallel_memory_mb=256")
    (outcome,) = _run(experiment).outcomes
    record = outcome.record
    assert record["exp.status"] == "ok", record["exp.status_msg"]
    copies = [parse_log(path)[0] for path in record["results.copy_log_files"]]
    # By hand, from each copy's own batches (4 samples each): Mila's train_item.
    expected = []
    for copy in copies:
        times = copy["results.time_data"]
        assert len(times) == 12
        expected.append((4000 * len(times) / math.fsum(times), 4000 / max(times),
                         4000 / min(times)))
    got = [(t.avg, t.min, t.max) for t in train_items(record)]
    assert got == [pytest.approx(e, rel=1e-9) for e in expected]
    # A one-GPU target at the copies' mean: the scorecard's diff is 0%, where the
    # node's sum (results.throughput) would be +100%.
    target = math.fsum(record["results.copy_throughput"]) / 2
    assert record["results.throughput"] / target - 1 == pytest.approx(1.0)
    baseline = Baseline([Benchmark("toy", {"exp.model": "toy$"}, target)], min_runs=1)
    report = scorecard_report([record], baseline)
    benchmarks, throughput, _ = report.tables
    assert benchmarks.rows[0][5] == pytest.approx(0.0, abs=1e-9)  # diff%
    avg, low, high = (math.fsum(e[k] for e in expected) / 2 for k in range(3))
    assert throughput.rows == [["toy", 1, 2, pytest.approx(avg, rel=1e-9),
                                pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9),
                                pytest.approx(high - low, rel=1e-9)]]


def test_a_failing_copy_fails_the_experiment_and_stops_the_other(tmp_path: Path) -> None:
    # Copy 2's interpreter breaks at start; copy 1 would run for 20 s.
    wrapper = tmp_path / "python"
    wrapper.write_text("#!/bin/sh\n"
                       "case \"$*\" in *copy2.json*) echo 'copy 2 cannot start' >&2; exit 3;; "
                       "esac\n"
                       f"exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    experiment = _plan(tmp_path, "fake.step_ms=20", "exp.num_batches=1000")
    (outcome,) = _run(experiment, python=str(wrapper)).outcomes
    assert outcome.status == "failure"
    assert outcome.record["exp.status_msg"] == (
        "copy 2 of 2: worker exited with status 3: copy 2 cannot start")
    first, _ = parse_log(experiment["exp.log_file"] + ".copy1")
    assert first["exp.status"] == "failure"
    assert first["exp.status_msg"].startswith("worker killed by SIGTERM")
    assert parse_log(experiment["exp.log_file"])[0]["exp.status_msg"] == (
        outcome.record["exp.status_msg"])


def test_ctrl_c_stops_every_copy(tmp_path: Path) -> None:
    experiment = _plan(tmp_path, "fake.step_ms=20", "exp.num_batches=1000")
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        result = _run(experiment)
    finally:
        timer.cancel()
    assert result.interrupted
    assert result.outcomes[0].status == "interrupted"
    for number in (1, 2):
        copy, _ = parse_log(f"{experiment['exp.log_file']}.copy{number}")
        assert copy["exp.status"] == "interrupted" and "results.time" not in copy


def test_a_copy_over_its_memory_share_runs_out_of_memory(tmp_path: Path) -> None:
    experiment = _plan(tmp_path, "fake.step_ms=1", "exp.num_batches=3",
                       "exp.parallel_memory_mb=200", "fake.memory_mb=400")
    (outcome,) = _run(experiment).outcomes
    message = outcome.record["exp.status_msg"]
    assert outcome.status == "failure"
    assert message.startswith(("copy 1 of 2: ", "copy 2 of 2: "))
    if outcome.record["results.copy_isolation"] == "rlimit":
        assert "MemoryError" in message and "RSS" not in message
        assert ": over the copy's memory cap of 200 MiB (exp.parallel_memory_mb; RLIMIT_DATA" \
            in message
    else:  # the kernel's OOM killer, under the copy's cgroup
        assert "memory cap of 200 MiB" in message and "memory.max" in message
    assert message.count("out of memory") == 1
