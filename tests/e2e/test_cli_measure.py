"""``dlbench sysinfo``, ``dlbench peak`` and the stability verdict as a user sees them."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import CliRunner


def test_sysinfo_text_and_json(dlbench: CliRunner) -> None:
    text = dlbench("sysinfo")
    assert text.returncode == 0, text.stderr
    for key in ("hw.cpu_model", "hw.cpu_cores", "hw.memory_gib", "sys.os", "sys.python",
                "sys.dlbench_version", "sys.framework_version", "sys.framework_build"):
        assert key in text.stdout
    as_json = dlbench("sysinfo", "--format", "json")
    info = json.loads(as_json.stdout)
    assert info["hw.cpu_count"] == os.cpu_count()
    assert info["sys.framework"] == "pytorch"
    if "hw.gpus" not in info:
        assert "(no NVIDIA GPU information: " in text.stdout


def test_peak_measures_and_stores(
    dlbench: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path / "home"))
    # --force: this machine may be shared, and a contended measurement is refused
    # (tests/unit/test_peak_refusal.py injects one).
    done = dlbench("peak", "--gpus", "", "--seconds", "0.2", "--size", "256",
                   "--format", "json", "--force")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)
    assert entry["device_type"] == "cpu" and entry["matmul_size"] == 256
    # No lower bound on speed: a loaded machine may be as slow as it likes. The upper
    # bounds check the units (FLOP/s for TFLOP/s would be 1e12 times too large).
    assert 0 < entry["tflops"]["float32"] < 100  # TFLOP/s
    assert 0 < entry["memory_gbps"] < 10_000  # GB/s
    stored = json.loads((tmp_path / "home" / "peaks.json").read_text())
    assert stored["devices"][entry["device"]]["tflops"] == entry["tflops"]
    assert entry["threads"] >= 1 and entry["cpu_share"]["float32"] > 0

    text = dlbench("peak", "--gpus", "", "--seconds", "0.1", "--size", "128", "--no-save")
    assert text.returncode == 0, text.stderr
    # Each figure in the unit its magnitude calls for (tests/unit/test_units_magnitude.py).
    assert re.search(r"matmul float32 +\d+\.?\d* [kMGTP]?FLOP/s", text.stdout)
    assert re.search(r"memory copy +\d+\.?\d* [kMGTP]?B/s", text.stdout)
    assert "saved to" not in text.stdout


def test_peak_rejects_an_unknown_dtype(dlbench: CliRunner) -> None:
    done = dlbench("peak", "--gpus", "", "--dtypes", "float64")
    assert done.returncode == 2
    assert "--dtypes 'float64': accepted: float32, tf32, float16, bfloat16" in done.stderr


def test_unstable_results_are_shown_in_progress_and_reports(
    dlbench: CliRunner, tmp_path: Path
) -> None:
    # Jitter of up to 20 ms on 2 ms steps: a cv far above 5%.
    run = dlbench("run", "-P", "exp.framework=fake", "-P", "fake.step_ms=2",
                  "-P", "fake.jitter_ms=20", "-P", "exp.num_batches=30",
                  "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    assert "ok          fake(resnet50): " in run.stderr and "(unstable: cv " in run.stderr
    report = dlbench("report", "--input", str(tmp_path / "out"))
    assert report.returncode == 0, report.stderr
    assert "warning: 1 of 1 result(s) unstable: resnet50 batch 16 (" in report.stdout
