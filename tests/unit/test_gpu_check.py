"""The GPU self-check's CPU side: its guard, the table's arithmetic, what it runs and
how it reads what ``dlbench peak`` prints. Its figures need a GPU (docs/gpu.md)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_cuda_it_says_so_in_one_line_and_exits_2() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU, whatever the machine has
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("gpu_check: ")
    assert "CUDA" in done.stdout or "PyTorch" in done.stdout


def test_rows_compare_against_the_reference(gpu_check: ModuleType) -> None:
    met = gpu_check.row("throughput", 3960.0, 4000.0, ">= 0.99")
    assert met["ratio"] == pytest.approx(0.99) and met["ok"] is True
    assert gpu_check.row("throughput", 3900.0, 4000.0, ">= 0.99")["ok"] is False
    cost = gpu_check.row("cost", 5.0, 4.0, "<= 1.3")
    assert cost["ratio"] == 1.25 and cost["ok"] is True
    assert gpu_check.row("cost", 8.29, 4.02, "<= 1.3")["ok"] is False
    assert gpu_check.row("layout", "NHWC", target="NHWC")["ok"] is True
    assert gpu_check.row("layout", "NCHW", target="NHWC")["ok"] is False
    shown = gpu_check.row("tokens/s", 812.5)
    assert shown["ratio"] is None and shown["ok"] is None  # shown, not judged
    assert gpu_check.row("x", "failed", 1.0, ">= 0.99")["ok"] is None


def test_table_is_one_aligned_line_per_row(gpu_check: ModuleType) -> None:
    rows = [gpu_check.row("ResNet-50 b64", 1884.0, 2061.0, ">= 0.99", "cuda_events"),
            gpu_check.row("layout", "NHWC", target="NHWC")]
    lines = gpu_check.format_table(rows)
    assert len(lines) == 4
    assert lines[0].split() == ["check", "dlbench", "reference", "ratio", "target", "ok", "note"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert "1,884.0" in lines[2] and "2,061.0" in lines[2] and "0.914" in lines[2]
    assert "MISSED" in lines[2] and lines[3].split()[-1] == "ok"


def test_peak_figures_are_read_from_dlbench_peaks_json(gpu_check: ModuleType) -> None:
    entries = [{"device": "NVIDIA H100 80GB HBM3", "tflops": {"bfloat16": 667.0},
                "tflops_best": {"bfloat16": 785.0}}]
    assert gpu_check.peak_figures(entries) == (667.0, 785.0)
    with pytest.raises(KeyError):
        gpu_check.peak_figures([{"tflops": {"float32": 60.0}, "tflops_best": {}}])


def test_dlbench_command(gpu_check: ModuleType, tmp_path: Path) -> None:
    argv = gpu_check.dlbench_command(tmp_path, ["exp.model=toy", "exp.gpus=0"],
                                     ["pytorch.seed=[1,2]"])
    assert argv == [sys.executable, "-m", "dlbench", "run", "--out", str(tmp_path),
                    "-P", "exp.model=toy", "-P", "exp.gpus=0", "-V", "pytorch.seed=[1,2]"]


def test_framework_rows_from_records_ok_and_failed(
        gpu_check: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Recorded samples stand in for the GPU runs: one framework ok, one failed.
    records = [
        {"exp.framework": "pytorch", "exp.status": "ok", "results.throughput": 2000.0,
         "results.mfu": 0.42, "results.mfu_peak_source": "datasheet: NVIDIA H100 SXM "
         "bfloat16 dense", "results.flops_per_sample": 24.6e9, "sys.layout": "NHWC",
         "results.timing_method": "cuda_events"},
        {"exp.framework": "jax", "exp.status": "failure"},
    ]
    monkeypatch.setattr(gpu_check, "FRAMEWORKS", {"pytorch": "json", "jax": "json"})
    monkeypatch.setattr(gpu_check, "dlbench_records", lambda *args, **kwargs: records)
    rows = {r["check"]: r for r in gpu_check._frameworks(tmp_path, 0)}
    speed = rows["ResNet-50 bf16 b128 pytorch, images/s"]
    assert speed["ratio"] == 1.0 and "MFU 42.0% of datasheet" in speed["note"]
    assert rows["ResNet-50 pytorch default layout"]["ok"] is True
    assert rows["ResNet-50 jax default layout"]["ok"] is False  # no layout recorded
    assert rows["ResNet-50 bf16 b128 jax, images/s"]["dlbench"] is None
