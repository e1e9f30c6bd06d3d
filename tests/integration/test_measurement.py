"""Trustworthy measurement end to end on the fake workload: adaptive stopping, auto
warm-up, the monitor, the stability verdict, MFU and repeats, with known answers."""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import dlbench.measure.monitor as monitor_module
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.sweep import Sweep
from dlbench.measure.nvml import load_nvml
from dlbench.results.log.parser import parse_log
from tests.integration.worker import plan_one, run_in_process


def _experiment(tmp_path: Path, *params: str) -> dict[str, Any]:
    return plan_one(tmp_path, "exp.framework=fake", "monitor.frequency=0.05", *params)


def _run(experiment: dict[str, Any]) -> dict[str, Any]:
    record = run_in_process(experiment)
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    return record


def _not_about_the_neighbours(reasons: list[str]) -> list[str]:
    # This machine may be shared: other processes competing for the CPU are a real
    # finding, but not the one these tests are about. For the same reason the known
    # step times are checked on the median: a preempted batch moves the mean.
    # A preempted first batch or two also reads as warm-up left in the timed batches
    # (the warm-up verdict has tests of its own, on a real slow warm-up).
    return [r for r in reasons if not r.startswith(("cpu contention", "cv ", "warm-up visible"))]


def test_auto_stops_early_on_a_steady_workload(tmp_path: Path) -> None:
    # On an idle machine the 20 ms step reaches ±1% at the first check (0.3 s). The
    # target here is ±2% because a neighbour's bursts of load, on a shared machine,
    # move whole groups of batches and can hold ±1% off for seconds; the exact ±1%
    # rule is tested on a simulated clock in tests/unit/test_measure_timing.py.
    record = _run(_experiment(tmp_path, "fake.step_ms=20", "exp.num_batches=auto",
                              "exp.target_ci=0.02", "exp.min_duration=0.3",
                              "exp.max_duration=10"))
    assert record["results.stop_reason"] == "ci_reached"  # not the 10 s limit
    assert record["results.ci95_rel"] <= 0.02
    assert record["results.time_p50"] == pytest.approx(20.0, rel=0.02)
    assert record["results.num_batches"] == len(record["results.time_data"]) >= 10
    assert _not_about_the_neighbours(record["results.unstable_reasons"]) == []


def test_auto_runs_to_the_limit_on_a_noisy_workload(tmp_path: Path) -> None:
    # Jitter uniform in [0, 40] ms on 2 ms steps: cv ~ 0.5, so ±1% would need thousands
    # of batches; the 0.5 s limit comes first, and the verdict says why.
    record = _run(_experiment(tmp_path, "fake.step_ms=2", "fake.jitter_ms=40",
                              "exp.num_batches=auto", "exp.min_duration=0.1",
                              "exp.max_duration=0.5"))
    assert record["results.stop_reason"] == "max_duration"
    # It stops at the first batch that ends past the limit: the batches before it
    # ended inside the limit (a count of batches, whatever the machine's load).
    assert record["results.timed_seconds"] >= 0.5
    assert math.fsum(record["results.time_data"][:-1]) / 1000 < 0.5
    assert record["results.stable"] is False
    reasons = record["results.unstable_reasons"]
    assert any(r.startswith("cv ") for r in reasons)
    assert any(r.startswith("ci ±") and r.endswith("> ±1% target") for r in reasons)


def test_auto_warmup_detects_the_slow_start(tmp_path: Path) -> None:
    # Warm-up adds 200 ms * 0.5**i to batch i: the rule waits until it is ~0.1 ms
    # (about 19 batches). A neighbour's noise can end it a little early, never before
    # two windows (10 batches), when the extra is 0.2 ms.
    record = _run(_experiment(tmp_path, "fake.step_ms=5", "fake.warmup_ms=200",
                              "exp.num_warmup_batches=auto", "exp.num_batches=20"))
    assert 10 <= record["results.num_warmup_batches"] <= 30
    assert record["results.warmup_settled"] is True
    assert record["results.warmup_time_data"][0] > 200
    assert statistics.median(record["results.time_data"][:5]) < 5 + 1.0
    assert not any("warm-up" in r for r in record["results.unstable_reasons"])


def test_warmup_left_in_the_timed_batches_is_flagged(tmp_path: Path) -> None:
    record = _run(_experiment(tmp_path, "fake.step_ms=5", "fake.warmup_ms=200",
                              "exp.num_warmup_batches=0", "exp.num_batches=30"))
    assert record["results.stable"] is False
    assert any(r.startswith("warm-up visible: first 3 batches")
               for r in record["results.unstable_reasons"])


def test_monitor_sees_a_known_allocation(tmp_path: Path) -> None:
    # Through real worker processes, as in a sweep: this test process may have loaded
    # other frameworks whose allocators keep freed memory, which the fake workload's
    # allocation would then reuse without raising the resident size.
    common = ("fake.step_ms=10", "exp.num_batches=15")
    without, _ = _sweep(tmp_path / "a", "fake.memory_mb=0", *common)
    with_200, _ = _sweep(tmp_path / "b", "fake.memory_mb=200", *common)
    assert without["exp.status"] == with_200["exp.status"] == "ok"
    rise = with_200["results.use.rss_mb_max"] - without["results.use.rss_mb_max"]
    assert 190 <= rise <= 230
    # Every record carries the monitor's summaries and series.
    for key in ("results.use.cpu_percent_mean", "results.use.cpu_percent_max",
                "results.use.rss_mb_max", "results.use.host_memory_used_mb_max",
                "results.use.system_cpu_percent_mean", "results.use.samples"):
        assert key in with_200
    assert len(with_200["results.use.time"]) == len(with_200["results.use.rss_mb"]) >= 2


@pytest.mark.skipif(load_nvml()[0] is not None, reason="this machine has NVML")
def test_no_gpu_is_one_note_in_the_log(tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "fake.step_ms=1", "exp.num_batches=3")
    _run(exp)
    text = Path(exp["exp.log_file"]).read_text()
    notes = [line for line in text.splitlines() if "GPU" in line and not line.startswith("__")]
    assert len(notes) == 1 and notes[0].startswith("dlbench: monitor: GPU monitoring skipped")


def test_mfu_from_a_stored_peak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 samples per 20 ms step = 200 samples/s; 1e9 FLOPs each = 0.2 TFLOP/s;
    # a stored peak of 0.4 TFLOP/s for device "fake" makes the MFU 0.5.
    params = ("fake.step_ms=20", "exp.replica_batch=4", "fake.flops_per_sample=1e9",
              "exp.num_batches=15")
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path / "home"))
    record = _run(_experiment(tmp_path / "none", *params))
    # The fake workload runs no model: its own figure stands, and the record says so.
    assert record["results.flops_per_sample"] == 1e9
    assert record["results.flops_source"] == "framework:fake.flops_per_sample"
    assert record["results.tflops"] == pytest.approx(1e9 * 4 * 1000 / record["results.time"] / 1e12)
    assert record["results.time_p50"] == pytest.approx(20.0, rel=0.02)  # so ~0.2 TFLOP/s
    assert "results.mfu" not in record  # no peak anywhere: no MFU, no error
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "peaks.json").write_text(json.dumps({"version": 1, "devices": {
        "fake": {"device": "fake", "measured": "2025-01-01T00:00:00",
                 "tflops": {"float32": 0.4}, "tflops_best": {"float32": 0.5}}}}))
    record = _run(_experiment(tmp_path / "peak", *params))
    assert record["results.mfu"] == pytest.approx(record["results.tflops"] / 0.4)
    assert 0.4 < record["results.mfu"] <= 0.51  # 0.5 at exactly 20 ms; less if preempted
    assert record["results.mfu_peak_tflops"] == 0.4
    assert record["results.mfu_peak_source"] == (
        "dlbench peak: fake float32, measured 2025-01-01T00:00:00: sustained (median)")
    assert "results.mfu_note" not in record
    assert record["results.peak_sustained_tflops"] == 0.4
    assert record["results.peak_burst_tflops"] == 0.5


def test_an_mfu_above_one_is_not_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ~0.2 TFLOP/s (as above) against a stored peak of 0.05: an MFU of ~4 says the peak
    # is wrong, and the record says so instead of holding it.
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "peaks.json").write_text(json.dumps({"version": 1, "devices": {
        "fake": {"device": "fake", "measured": "2025-01-01T00:00:00",
                 "tflops": {"float32": 0.05}}}}))
    record = _run(_experiment(tmp_path, "fake.step_ms=20", "exp.replica_batch=4",
                              "fake.flops_per_sample=1e9", "exp.num_batches=5"))
    assert record["results.tflops"] > 0.05
    assert record["results.mfu"] is None
    assert record["results.mfu_peak_tflops"] == 0.05
    assert record["results.mfu_note"].startswith(
        f"{record['results.tflops']:.4g} TFLOP/s is above the peak 0.05 TFLOP/s "
        f"(dlbench peak: fake float32, measured 2025-01-01T00:00:00: sustained (median)), "
        "MFU ")


def test_energy_from_rapl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in RAPL package whose counter rises 10 mJ every 10 ms: 1 W.
    package = tmp_path / "powercap" / "intel-rapl:0"
    package.mkdir(parents=True)
    (package / "name").write_text("package-0\n")
    (package / "max_energy_range_uj").write_text("262143328850\n")
    (package / "energy_uj").write_text("0\n")
    monkeypatch.setattr(monitor_module, "RAPL_ROOT", tmp_path / "powercap")
    # The stand-in package alone: on a machine with NVIDIA GPUs their energy would
    # count in the total too.
    monkeypatch.setattr(monitor_module, "load_nvml", lambda: (None, "not in this test"))
    stop = threading.Event()

    def meter() -> None:
        started = time.monotonic()
        while not stop.wait(0.01):
            microjoules = round((time.monotonic() - started) * 1e6)  # 1 W
            (package / "energy_uj.tmp").write_text(f"{microjoules}\n")
            os.replace(package / "energy_uj.tmp", package / "energy_uj")  # never half-written

    thread = threading.Thread(target=meter)
    thread.start()
    try:
        record = _run(_experiment(tmp_path, "fake.step_ms=10", "exp.num_batches=60",
                                  "exp.replica_batch=4"))
    finally:
        stop.set()
        thread.join()
    energy = record["results.use.energy_j"]
    assert record["results.use.cpu_energy_j"] == energy
    assert record["results.use.power_w"] == pytest.approx(1.0, rel=0.2)
    assert energy == pytest.approx(record["results.timed_seconds"], rel=0.2)  # 1 W x s
    assert record["results.use.samples_per_joule"] == pytest.approx(4 * 60 / energy)


def _sweep(tmp_path: Path, *params: str) -> tuple[dict[str, Any], list[str]]:
    lines: list[str] = []
    runner = Sweep(LocalLauncher(lines.append), report=lines.append)
    try:
        result = runner.run([_experiment(tmp_path, *params)])
        stored = runner.store(tmp_path).records()
    finally:
        runner.close()
    assert len(stored) == 1
    assert stored[0] == result.outcomes[0].record
    return stored[0], lines


def test_repeats_make_one_record_with_the_spread(tmp_path: Path) -> None:
    record, _ = _sweep(tmp_path, "fake.step_ms=5", "exp.num_batches=10", "exp.repeat=3")
    assert record["exp.status"] == "ok"
    means = record["results.repeat_times"]
    assert len(means) == 3
    assert record["results.time"] == pytest.approx(sum(means) / 3)
    assert record["results.time_p50"] == pytest.approx(5.0, rel=0.05)
    assert len(record["results.time_data"]) == record["results.num_batches"] == 30
    assert record["results.repeat_cv"] is not None and "results.repeat_within_cv" in record
    log = Path(record["exp.log_file"])
    assert [Path(f).name for f in record["results.repeat_log_files"]] == [
        f"{log.name}.{k}" for k in (1, 2, 3)]
    parsed, _ = parse_log(log)  # the experiment's log holds the combined record
    assert parsed["results.time"] == record["results.time"]


def test_a_failing_process_fails_the_experiment(tmp_path: Path) -> None:
    record, _ = _sweep(tmp_path, "fake.step_ms=1", "exp.repeat=2", "fake.failure=exception",
                       "fake.failure_batch=1")
    assert record["exp.status"] == "failure"
    assert record["exp.status_msg"].startswith("process 1 of 2: RuntimeError: fake failure")


@pytest.fixture
def cpu_hogs() -> Iterator[None]:
    """A busy loop on every CPU, each in its own session (not in the worker's tree)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             start_new_session=True) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for hog in hogs:
            os.kill(hog.pid, signal.SIGKILL)
            hog.wait()


def test_a_competing_cpu_hog_makes_the_result_unstable(tmp_path: Path, cpu_hogs: None) -> None:
    record, lines = _sweep(tmp_path, "fake.step_ms=10", "exp.num_batches=80",
                           "monitor.frequency=0.1")
    assert record["results.stable"] is False
    contention = [r for r in record["results.unstable_reasons"]
                  if r.startswith("cpu contention: other processes used")]
    assert contention, record["results.unstable_reasons"]
    assert "(unstable: " in lines[-1]
