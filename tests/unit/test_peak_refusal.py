"""A peak that cannot be the device's is not saved: measured under CPU contention, far
below the peak saved for the device or the device's datasheet figure, or of too small a
matmul (``--force`` saves it); and no MFU above 1 is recorded as a value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.launch.copies.copies import copies_outcome
from dlbench.launch.records import combine_processes
from dlbench.measure.peak.peaks import (
    Peak,
    checked_mfu,
    contention_problem,
    datasheet_problem,
    drop_problem,
    model_flops_utilization,
    peak_problems,
    size_problem,
)

SAVED = {"device": "Some CPU", "device_type": "cpu", "measured": "2026-01-05T10:00:00+00:00",
         "matmul_size": 2048, "tflops": {"float32": 0.223}}


def _entry(tflops: float = 0.2, share: float | None = 0.95, size: int = 2048,
           kind: str = "cpu") -> dict[str, Any]:
    entry: dict[str, Any] = {
        "device": "Some CPU", "device_type": kind, "measured": "2026-02-01T09:00:00+00:00",
        "host": "h", "torch": "2", "matmul_size": size, "tflops": {"float32": tflops},
        "tflops_best": {"float32": tflops}, "copy_mib": 256, "memory_gbps": 10.0,
        "memory_gbps_best": 11.0}
    if share is not None:
        entry.update(threads=2, cpu_share={"float32": share})
    return entry


def test_size_problem() -> None:
    assert size_problem(1, "cpu") == (
        "a 1x1 matmul is too small to measure the device: its time is mostly the call's "
        "(at least 256 on cpu; default 2048)")
    assert size_problem(0, "cpu") == "a 0x0 matmul does no arithmetic"
    assert size_problem(-3, "cuda") == "a -3x-3 matmul does no arithmetic"
    assert size_problem(512, "cuda") is not None and "at least 1024 on cuda" in str(
        size_problem(512, "cuda"))
    assert size_problem(256, "cpu") is None and size_problem(1024, "cuda") is None


def test_contention_problem() -> None:
    assert contention_problem(_entry(0.017, share=0.31)) == (
        "cpu contention: the matmuls ran float32 (17.00 GFLOP/s) 0.31 of the time their 2 "
        "thread(s) could have (< 0.75): something else was using the CPUs")
    assert contention_problem(_entry(share=0.75)) is None
    assert contention_problem(_entry(share=1.02)) is None  # a clock tick over
    assert contention_problem(_entry(share=None)) is None  # nothing to judge by
    assert contention_problem(_entry(share=0.1, kind="cuda")) is None  # the host waits


def test_drop_problem() -> None:
    assert drop_problem(_entry(0.017), SAVED) == (
        "float32 17.00 GFLOP/s is 8% of the 223.0 GFLOP/s saved 2026-01-05T10:00:00 (a loaded "
        "machine?)")
    assert drop_problem(_entry(0.12), SAVED) is None  # 54%: within what it may vary
    assert drop_problem(_entry(0.5), SAVED) is None  # better is always welcome
    assert drop_problem(_entry(0.017), None) is None
    assert drop_problem(_entry(0.017), {"tflops": "damaged"}) is None
    assert drop_problem(_entry(0.017), {"tflops": {"float16": 1.0}}) is None


def test_peak_problems_lists_every_reason() -> None:
    assert peak_problems(_entry(), SAVED) == []
    problems = peak_problems(_entry(0.017, share=0.3, size=64), SAVED)
    assert [p.split(":")[0] for p in problems] == [
        "a 64x64 matmul is too small to measure the device", "cpu contention",
        "float32 17.00 GFLOP/s is 8% of the 223.0 GFLOP/s saved 2026-01-05T10"]


def _gpu(tflops: dict[str, float], memory_gbps: float = 2900.0,
         name: str = "NVIDIA H100 80GB HBM3") -> dict[str, Any]:
    return {"device": name, "device_type": "cuda", "measured": "2026-02-01T09:00:00+00:00",
            "host": "h", "torch": "2", "matmul_size": 8192, "tflops": tflops,
            "tflops_best": tflops, "copy_mib": 1024, "memory_gbps": memory_gbps,
            "memory_gbps_best": memory_gbps}


def test_datasheet_problem() -> None:
    # H100 SXM's dense bfloat16 is 989.5 TFLOP/s: 60 is 6.1% of it.
    assert datasheet_problem(_gpu({"bfloat16": 60.0, "float32": 50.0})) == (
        "bfloat16 60.00 TFLOP/s is 6.1% of the datasheet's 989.5 (NVIDIA H100 SXM: below 10%, "
        "not the device's)")
    assert datasheet_problem(_gpu({"bfloat16": 98.95})) is None  # a tenth exactly
    assert datasheet_problem(_gpu({"bfloat16": 98.9})) is not None
    # H100 PCIe: 2,000 GB/s; a copy at 150 is 7.5% of it, at 300 15%.
    pcie = "NVIDIA H100 PCIe"
    assert datasheet_problem(_gpu({"float32": 40.0}, 150.0, pcie)) == (
        "memory copy 150.0 GB/s is 7.5% of the datasheet's 2000 (NVIDIA H100 PCIe: below 10%, "
        "not the device's)")
    assert datasheet_problem(_gpu({"float32": 40.0}, 300.0, pcie)) is None
    assert "nan%" in str(datasheet_problem(_gpu({"float32": float("nan")})))
    assert datasheet_problem(_gpu({"float64": 0.001})) is None  # no datasheet figure
    assert datasheet_problem(_entry(1e-6)) is None  # a CPU has no datasheet entry
    assert peak_problems(_gpu({"bfloat16": 60.0}), None) == [
        str(datasheet_problem(_gpu({"bfloat16": 60.0})))]


@pytest.fixture
def peak_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``dlbench peak`` in this process, its measurement replaced by the entry in the
    returned dict (``entry``), its peaks file under ``tmp_path``; ``calls`` counts
    measurements."""
    pytest.importorskip("torch")
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path))
    state: dict[str, Any] = {"entry": _entry(), "calls": 0, "file": tmp_path / "peaks.json"}

    def measure(device: str, dtypes: list[str], seconds: float, size: int | None = None,
                copy_mib: int | None = None) -> dict[str, Any]:
        state["calls"] += 1
        return dict(state["entry"], matmul_size=size or 2048)

    monkeypatch.setattr("dlbench.cli.commands.host.measure_device", measure)
    return state


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert captured.out == ""
    return lines[0]


def test_a_contended_peak_is_refused_and_force_saves_it(
        peak_cli: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    peak_cli["entry"] = _entry(0.017, share=0.31)
    assert main(["peak", "--gpus", ""]) == 2
    assert _one_error_line(capsys) == (
        "dlbench: error: peak not saved: Some CPU: cpu contention: the matmuls ran float32 "
        "(17.00 GFLOP/s) 0.31 of the time their 2 thread(s) could have (< 0.75): something "
        "else was using the CPUs; measure again on a quiet machine, or --force saves it "
        "anyway")
    assert not peak_cli["file"].exists()
    assert main(["peak", "--gpus", "", "--no-save"]) == 0  # printing it is harmless
    shown = capsys.readouterr().out
    assert "matmul float32" in shown and "saved to" not in shown
    assert not peak_cli["file"].exists()
    assert main(["peak", "--gpus", "", "--force"]) == 0
    assert "saved to" in capsys.readouterr().out
    saved = json.loads(peak_cli["file"].read_text())["devices"]["Some CPU"]
    assert saved["tflops"] == {"float32": 0.017} and saved["cpu_share"] == {"float32": 0.31}


def test_a_peak_far_below_the_saved_one_is_refused(
        peak_cli: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    peak_cli["file"].write_text(json.dumps({"version": 1, "devices": {"Some CPU": SAVED}}))
    peak_cli["entry"] = _entry(0.017, share=0.95)
    assert main(["peak", "--gpus", ""]) == 2
    assert "float32 17.00 GFLOP/s is 8% of the 223.0 GFLOP/s saved" in _one_error_line(capsys)
    stored = json.loads(peak_cli["file"].read_text())["devices"]["Some CPU"]
    assert stored == SAVED
    peak_cli["entry"] = _entry(0.21, share=0.95)
    assert main(["peak", "--gpus", ""]) == 0
    assert json.loads(peak_cli["file"].read_text())["devices"]["Some CPU"]["tflops"] == {
        "float32": 0.21}


def test_a_peak_far_below_the_datasheet_is_refused(
        peak_cli: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    peak_cli["entry"] = _gpu({"bfloat16": 50.0})
    assert main(["peak", "--gpus", ""]) == 2
    assert _one_error_line(capsys) == (
        "dlbench: error: peak not saved: NVIDIA H100 80GB HBM3: bfloat16 50.00 TFLOP/s is 5.1% "
        "of the datasheet's 989.5 (NVIDIA H100 SXM: below 10%, not the device's); measure "
        "again on a quiet machine, or --force saves it anyway")
    assert not peak_cli["file"].exists()
    peak_cli["entry"] = _gpu({"bfloat16": 700.0})
    assert main(["peak", "--gpus", ""]) == 0
    saved = json.loads(peak_cli["file"].read_text())["devices"]["NVIDIA H100 80GB HBM3"]
    assert saved["tflops"] == {"bfloat16": 700.0}


@pytest.mark.parametrize(("size", "force", "message"), [
    ("1", False, "dlbench: error: --size 1: a 1x1 matmul is too small to measure the device: "
                 "its time is mostly the call's (at least 256 on cpu; default 2048); --force "
                 "saves it anyway"),
    ("255", False, "--size 255: a 255x255 matmul is too small"),
    ("0", True, "dlbench: error: --size 0: a 0x0 matmul does no arithmetic"),
    ("-8", True, "--size -8: a -8x-8 matmul does no arithmetic"),
])
def test_a_size_that_cannot_measure_the_device_is_refused_before_measuring(
        peak_cli: dict[str, Any], capsys: pytest.CaptureFixture[str], size: str, force: bool,
        message: str) -> None:
    assert main(["peak", "--gpus", "", "--size", size, *(["--force"] if force else [])]) == 2
    assert message in _one_error_line(capsys)
    assert peak_cli["calls"] == 0 and not peak_cli["file"].exists()


def test_force_saves_a_small_size(peak_cli: dict[str, Any]) -> None:
    assert main(["peak", "--gpus", "", "--size", "1", "--force"]) == 0
    assert peak_cli["calls"] == 1
    assert json.loads(peak_cli["file"].read_text())["devices"]["Some CPU"]["matmul_size"] == 1


def test_an_mfu_is_recorded_with_its_peak_and_never_above_one() -> None:
    peak = Peak(0.25, "dlbench peak: Some CPU float32, measured 2026-01-05T10:00:00, n=2048")
    assert model_flops_utilization(0.2, peak) == {
        "results.mfu": pytest.approx(0.8), "results.mfu_peak_tflops": 0.25,
        "results.mfu_peak_source": peak.source}
    assert model_flops_utilization(0.25, peak)["results.mfu"] == 1.0
    over = model_flops_utilization(0.5, peak)
    assert over == {
        "results.mfu": None, "results.mfu_peak_tflops": 0.25,
        "results.mfu_peak_source": peak.source,
        "results.mfu_note": f"0.5 TFLOP/s is above the peak 0.25 TFLOP/s ({peak.source}), "
                            f"MFU 2.00: the peak is too low (measured under load, or another "
                            f"device's); run dlbench peak again"}
    assert checked_mfu({"results.mfu": 0.4}) == {}
    assert checked_mfu({"results.mfu": None}) == {}
    assert checked_mfu({"results.mfu": 1.5})["results.mfu"] is None


REPEATED = {"exp.repeat": 2, "exp.cv_threshold": 0.05}


def test_repeats_combined_above_one_are_not_recorded() -> None:
    # The first process's MFU is 0.95 at 10 ms; the repeats' mean time is 9 ms, so the
    # combined MFU would be 0.95 * 10 / 9 = 1.056.
    def process(time_ms: float, mfu: float) -> dict[str, Any]:
        return {"exp.log_file": f"/r/{time_ms}.log", "results.time": time_ms,
                "results.time_data": [time_ms] * 5, "results.tflops": 0.95 * 0.25 * 10 / time_ms,
                "results.mfu": mfu, "results.mfu_peak_tflops": 0.25,
                "results.mfu_peak_source": "datasheet: X float32 dense",
                "results.unstable_reasons": []}
    record = combine_processes(REPEATED, [process(10.0, 0.95), process(8.0, 0.99)])
    assert record["results.mfu"] is None
    assert "MFU 1.06: the peak is too low" in record["results.mfu_note"]
    kept = combine_processes(REPEATED, [process(10.0, 0.5), process(10.0, 0.5)])
    assert kept["results.mfu"] == pytest.approx(0.5) and "results.mfu_note" not in kept


def test_parallel_copies_combined_above_one_are_not_recorded() -> None:
    # Two CPU copies share the one CPU whose peak each was measured against: the node's
    # MFU is their sum, 0.6 + 0.6 = 1.2.
    def copy(mfu: float | None, note: str = "") -> dict[str, Any]:
        record = {"exp.status": "ok", "exp.log_file": "/r/c.log", "results.time": 10.0,
                  "results.time_data": [10.0] * 3, "results.throughput": 100.0,
                  "results.tflops": 0.15, "results.mfu": mfu,
                  "results.mfu_peak_tflops": 0.25, "results.mfu_peak_source": "p"}
        return {**record, "results.mfu_note": note} if note else record
    experiment = {"exp.gpus": "", "exp.cv_threshold": 0.05}
    over = copies_outcome(experiment, [copy(0.6), copy(0.6)], None, [], "affinity")
    assert over["results.mfu"] is None
    assert over["results.mfu_note"].startswith(
        "0.3 TFLOP/s is above the peak 0.25 TFLOP/s (p), MFU 1.20")
    one = copies_outcome(experiment, [copy(None, "copy's note"), copy(0.6)], None, [],
                         "affinity")
    assert one.get("results.mfu") is None and one["results.mfu_note"] == "copy's note"
    kept = copies_outcome(experiment, [copy(0.3), copy(0.3)], None, [], "affinity")
    assert kept["results.mfu"] == pytest.approx(0.6)
    assert (kept["results.mfu_peak_tflops"], kept["results.mfu_peak_source"]) == (0.25, "p")
