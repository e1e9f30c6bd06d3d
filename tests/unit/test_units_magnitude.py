"""Figures in the unit their magnitude calls for, and the warning that a CPU emulates
half precision: known answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.commands.host import _peak_lines
from dlbench.measure.peak.peaks import cpu_flags, emulation_warning
from dlbench.measure.stability import warmup_visible
from dlbench.report.tables.reports import report_title
from dlbench.results.magnitude import bandwidth_text, duration_text, flops_text


@pytest.mark.parametrize(("flops", "text"), [
    (0.0, "0 FLOP/s"),
    (0.5, "0.500 FLOP/s"),
    (3.2e3, "3.200 kFLOP/s"),
    (262.2e6, "262.2 MFLOP/s"),
    (4.812e9, "4.812 GFLOP/s"),      # what printed as 0.005 TFLOP/s
    (17e9, "17.00 GFLOP/s"),
    (999.96e9, "1.000 TFLOP/s"),     # rounds up into the next prefix, not "1000.0 G"
    (989.5e12, "989.5 TFLOP/s"),
    (2.5e18, "2500 PFLOP/s"),        # past the largest prefix
    (-2e9, "-2.000 GFLOP/s"),
])
def test_flops_text(flops: float, text: str) -> None:
    assert flops_text(flops) == text


@pytest.mark.parametrize(("rate", "text"), [
    (17.9e9, "17.90 GB/s"), (2.039e12, "2.039 TB/s"), (150e6, "150.0 MB/s")])
def test_bandwidth_text(rate: float, text: str) -> None:
    assert bandwidth_text(rate) == text


@pytest.mark.parametrize(("ms", "text"), [
    (1130.0, "1.130 s"), (20.5, "20.50 ms"), (0.512, "512.0 µs"), (0.0004, "400.0 ns"),
    (999.99, "1.000 s")])
def test_duration_text(ms: float, text: str) -> None:
    assert duration_text(ms) == text


def test_warm_up_reason_names_its_durations_in_their_unit() -> None:
    times = [1130.0] * 3 + [1010.0 + i % 3 for i in range(27)]
    assert warmup_visible(times) == (
        "warm-up visible: first 3 batches median 1.130 s vs 1.011 s for the rest")


def _entry(tflops: float, gbps: float, **extra: Any) -> dict[str, Any]:
    return {"device": "Some CPU", "device_type": "cpu", "measured": "2026-01-05T10:00:00",
            "tflops": {"bfloat16": tflops}, "tflops_best": {"bfloat16": tflops * 1.1},
            "matmul_size": 1024, "memory_gbps": gbps, "copy_mib": 256, **extra}


def test_peak_prints_a_slow_cpu_dtype_in_gflops() -> None:
    lines = _peak_lines(_entry(0.004812, 17.9))
    assert lines[1].split() == ["matmul", "bfloat16", "4.812", "GFLOP/s", "(n=1024,",
                                "median;", "best", "5.293", "GFLOP/s)"]
    assert lines[2].split()[:4] == ["memory", "copy", "17.90", "GB/s"]
    assert "0.005" not in "\n".join(lines)


def test_peak_prints_a_gpu_in_tflops_beside_its_datasheet() -> None:
    sheet = {"tflops": {"bfloat16": 989.5}, "memory_gbps": 3350.0}
    lines = _peak_lines(_entry(700.0, 2900.0, datasheet=sheet))
    assert "700.0 TFLOP/s" in lines[1] and "(datasheet 989.5 TFLOP/s: 71%)" in lines[1]
    assert "2.900 TB/s" in lines[2] and "(datasheet 3.350 TB/s)" in lines[2]


def _cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\n"
                    f"processor\t: 1\nflags\t\t: {flags}\n")
    return path


def test_emulated_half_precision_is_warned_from_the_cpu_flags(tmp_path: Path) -> None:
    plain = _cpuinfo(tmp_path, "fpu sse avx2 avx512f")
    assert cpu_flags(plain) == {"fpu", "sse", "avx2", "avx512f"}
    assert emulation_warning(["float32", "bfloat16"], plain) == (
        f"this CPU emulates bfloat16 ({plain} lists none of amx_bf16, avx512_bf16, bf16): "
        "expect a figure far below float32's and a long measurement")
    assert "emulates bfloat16 and float16" in str(
        emulation_warning(["bfloat16", "float16"], plain))
    assert emulation_warning(["float32"], plain) is None


def test_native_half_precision_is_not_warned(tmp_path: Path) -> None:
    x86 = _cpuinfo(tmp_path, "avx2 avx512_bf16 amx_bf16")
    assert emulation_warning(["bfloat16"], x86) is None
    assert "emulates float16" in str(emulation_warning(["bfloat16", "float16"], x86))
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd fphp asimdhp bf16\n")
    assert emulation_warning(["bfloat16", "float16"], arm) is None


def test_unreadable_cpuinfo_says_may_be_emulated(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    assert cpu_flags(missing) is None
    assert emulation_warning(["bfloat16"], missing) == (
        f"bfloat16 may be emulated on this CPU ({missing} cannot be read to tell): "
        "expect a figure far below float32's and a long measurement")


@pytest.mark.parametrize(("target", "title"), [
    ("results.time", "Exploration: Batch time, ms"),
    ("results.time_p50", "Exploration: Median batch time, ms (results.time_p50)"),
    ("results.throughput", "Exploration: results.throughput"),
    ("user.score", "Exploration: user.score"),
])
def test_report_title_uses_the_declared_unit(target: str, title: str) -> None:
    assert report_title("Exploration", target) == title
