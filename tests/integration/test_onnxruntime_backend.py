"""The ONNX Runtime backend on CPU: exports that compute what the PyTorch model
computes, the export cache, FLOPs and units, and what is refused (at plan time
through the command line, at set-up in the worker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from dlbench.backends.onnxruntime import (
    OnnxRuntimeBackend,
    export_cache_dir,
    export_onnx,
)
from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.models.pytorch.flops import flop_formulas
from dlbench.models.pytorch.workloads import make_workload
from tests.conftest import CliRunner
from tests.integration.worker import TOY_FORWARD, plan_one, run_in_process


@pytest.fixture(autouse=True)
def dlbench_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache of exports of this module's own, shared by its tests (and by the
    command lines they start), never the user's."""
    home = tmp_path_factory.getbasetemp() / "onnxruntime-home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLBENCH_HOME", str(home))
        yield home


def _experiment(tmp_path: Path, *params: str) -> dict[str, Any]:
    return plan_one(tmp_path, "exp.framework=onnxruntime", "exp.phase=inference",
                    "monitor.enabled=false", "onnxruntime.intra_op_threads=1",
                    "exp.num_warmup_batches=1", "exp.num_batches=3", *params)


def test_toy_runs_and_its_export_is_cached(tmp_path: Path, dlbench_home: Path) -> None:
    params = ("exp.model=toy", "exp.replica_batch=4", "onnxruntime.seed=11")
    first = run_in_process(_experiment(tmp_path / "first", *params))
    assert first["exp.status"] == "ok", first.get("exp.status_msg")
    assert first["results.export_cached"] is False
    assert first["results.export_time"] > 0 and first["results.compile_time"] > 0
    assert first["results.flops_per_sample"] == TOY_FORWARD
    assert first["results.throughput_unit"] == "samples/s"
    assert first["sys.model_params"] == (64 * 128 + 128) + (128 * 10 + 10)
    assert first["sys.framework_build"]["providers"] == ["CPUExecutionProvider"]
    assert first["hw.device_name"] == "cpu"
    (export,) = export_cache_dir().glob("toy-4x64-float32-seed11-*.onnx")
    assert export.parent == dlbench_home / "onnx"
    assert [p.name for p in export.parent.iterdir() if p.suffix == ".tmp"] == []

    second = run_in_process(_experiment(tmp_path / "second", *params))
    assert second["exp.status"] == "ok", second.get("exp.status_msg")
    assert second["results.export_cached"] is True
    assert "results.export_time" not in second
    assert second["sys.framework_build"]["export_file"] == str(export)

    # A file that does not parse is exported again rather than failing the run.
    export.write_bytes(b"not an onnx model")
    third = run_in_process(_experiment(tmp_path / "third", *params))
    assert third["exp.status"] == "ok", third.get("exp.status_msg")
    assert third["results.export_cached"] is False and third["results.export_time"] > 0


def test_a_failed_export_leaves_no_file(tmp_path: Path) -> None:
    class Unexportable(torch.nn.Module):
        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("no graph to trace")

    with pytest.raises(Exception, match="no graph to trace"):
        export_onnx(Unexportable().eval(), torch.zeros(2, 3), tmp_path / "cache" / "m.onnx")
    assert list((tmp_path / "cache").iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "sizes", "dtype", "unit", "tolerance"),
    [
        ("toy", (), "float16", ("samples/s", 1.0), 2e-3),
        ("resnet18", ("exp.image_size=32",), "float32", ("images/s", 1.0), 1e-4),
        ("gpt2_small", ("exp.seq_len=16",), "float32", ("tokens/s", 16.0), 1e-4),
    ],
)
def test_outputs_agree_with_pytorch(
    tmp_path: Path, model: str, sizes: tuple[str, ...], dtype: str,
    unit: tuple[str, float], tolerance: float,
) -> None:
    experiment = _experiment(tmp_path, f"exp.model={model}", "exp.replica_batch=2",
                             f"exp.dtype={dtype}", *sizes)
    backend = OnnxRuntimeBackend(experiment)
    backend.setup()
    try:
        backend.step(1)
        backend.synchronize()
        ours = backend.outputs()[0]
        inputs = backend.inputs
        assert backend.throughput_unit() == unit
        flops = backend.flops_per_sample()
    finally:
        backend.teardown()

    # The PyTorch model of the same seed (the weights pytorch.seed=0 gives it) on the
    # same inputs, counted as the PyTorch backend counts it.
    torch.manual_seed(0)
    workload = make_workload(MODELS[model], int(experiment["exp.image_size"]),
                             int(experiment["exp.seq_len"]))
    module = workload.build().eval().to(getattr(torch, dtype))
    with torch.inference_mode(), FlopCounterMode(
        display=False, custom_mapping=flop_formulas()
    ) as counter:
        theirs = workload.infer(module, inputs).float().numpy()
    assert ours.shape == theirs.shape
    assert ours.dtype == (np.float16 if dtype == "float16" else np.float32)
    scale = float(np.abs(theirs).max())
    np.testing.assert_allclose(ours.astype(np.float32), theirs, rtol=tolerance,
                               atol=tolerance * scale)
    assert flops == counter.get_total_flops() / 2


def test_unavailable_provider_fails_at_setup_naming_what_is_available(tmp_path: Path) -> None:
    record = run_in_process(_experiment(tmp_path, "exp.model=toy", "exp.gpus=0",
                                        "onnxruntime.providers=CUDAExecutionProvider"))
    assert record["exp.status"] == "failure"
    message = record["exp.status_msg"]
    assert message.startswith("onnxruntime.providers=CUDAExecutionProvider: "
                              "CUDAExecutionProvider is not available")
    assert "available: " in message and "CPUExecutionProvider" in message


def test_every_model_of_the_catalog_entry_is_a_model() -> None:
    models = FRAMEWORKS["onnxruntime"].models
    assert models is not None
    assert {"toy", "resnet18", "gpt2_small", "bert_base"} <= set(models) <= set(MODELS)
    assert "loader" not in models


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"exp.phase": "training"}, "exp.phase='training' (from -P flag) is not supported by "
         "framework onnxruntime (ONNX Runtime is inference only); supported: inference"),
        ({"onnxruntime.providers": "CPUExecutionProvider,FooExecutionProvider"},
         "unknown provider 'FooExecutionProvider'; use auto or a comma-separated list of "
         "CPUExecutionProvider, CUDAExecutionProvider, TensorrtExecutionProvider"),
        ({"onnxruntime.providers": "CUDAExecutionProvider"}, "does not fit exp.gpus=''"),
        ({"exp.gpus": "0", "onnxruntime.providers": "CPUExecutionProvider"},
         "does not fit exp.gpus='0'"),
        ({"exp.dtype": "bfloat16"}, "no bfloat16 kernels"),
        ({"exp.model": "loader"}, "exp.model='loader' (from -P flag) is not defined for "
         "framework onnxruntime; defined: toy, "),
        ({"onnxruntime.intra_op_threads": "-1"}, "onnxruntime.intra_op_threads=-1"),
        ({"onnxruntime.graph_optimization": "max"}, "'disable', 'basic', 'extended', 'all'"),
    ],
)
def test_refused_at_plan_time(
    dlbench: CliRunner, tmp_path: Path, overrides: dict[str, str], expected: str
) -> None:
    params = {"exp.framework": "onnxruntime", "exp.model": "toy", "exp.phase": "inference",
              **overrides}
    flags = [arg for name, value in params.items() for arg in ("-P", f"{name}={value}")]
    proc = dlbench("run", *flags, "--out", "out")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("dlbench: error:")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert expected in proc.stderr
    assert not (tmp_path / "out").exists()
