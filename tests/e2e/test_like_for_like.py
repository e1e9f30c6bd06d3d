"""The same model, batch and phase in every installed framework: one architecture.

Each framework's own tests compare its models with the PyTorch definitions; this one
runs a sweep across the frameworks, as a user comparing them would, and checks that
what ran was the same model: parameter count, output shape, FLOPs per sample (the
architecture's, one number; and each framework's own counter beside it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.results.store import Store
from tests.conftest import CliRunner

pytestmark = pytest.mark.slow

INSTALLED = [f for f in ("pytorch", "jax", "onnxruntime", "tensorflow")
             if not FRAMEWORKS[f].missing_requirements()]
IMAGE = 32
BATCH = 2


def _output_shape(framework: str, record: dict[str, Any]) -> tuple[int, ...]:
    """The model's output for one batch, asked of the framework's own model, built for
    the sample shape and batch the record says ran (the zoo's shape rule, not ours)."""
    info = MODELS[str(record["exp.model"])]
    shape = info.sample_shape(image_size=int(record["exp.image_size"]))
    batch = int(record["exp.replica_batch"])
    if framework == "pytorch":
        import torch

        from dlbench.models.pytorch.workloads import make_workload

        module = make_workload(info, shape[-1]).build().eval()
        with torch.inference_mode():
            return tuple(module(torch.zeros(batch, *shape)).shape)
    if framework == "jax":
        import jax
        import jax.numpy as jnp

        from dlbench.models.jax import build_jax_model, jax_sample_shape

        model = build_jax_model(info.id, shape, info.num_classes, jnp.float32)
        inputs = jax.ShapeDtypeStruct((batch, *jax_sample_shape(shape, True)), jnp.float32)
        variables = jax.eval_shape(model.init, jax.random.key(0), inputs)
        out = jax.eval_shape(lambda v, x: model.apply(v, x), variables, inputs)
        return tuple(out.shape)
    if framework == "tensorflow":
        import numpy as np

        from dlbench.models.tensorflow import build_tensorflow_model

        model = build_tensorflow_model(info.id, shape, info.num_classes)
        # The model's own input layout (channels last), with the batch that ran.
        return tuple(model(np.zeros((batch, *model.input_shape[1:]), "float32")).shape)
    import onnx

    graph = onnx.load(record["sys.framework_build"]["export_file"]).graph
    return tuple(d.dim_value for d in graph.output[0].type.tensor_type.shape.dim)


@pytest.mark.skipif(len(INSTALLED) < 2, reason="fewer than two frameworks installed")
def test_resnet18_is_the_same_model_in_every_framework(dlbench: CliRunner, tmp_path: Path) -> None:
    proc = dlbench("run", "-V", f"exp.framework=[{', '.join(INSTALLED)}]",
                   "-P", "exp.model=resnet18", "-P", "exp.phase=inference",
                   "-P", f"exp.image_size={IMAGE}", "-P", f"exp.replica_batch={BATCH}",
                   "-P", "exp.num_warmup_batches=1", "-P", "exp.num_batches=2",
                   "--out", "out", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with Store.in_directory(tmp_path / "out", create=False) as store:
        records = {r["exp.framework"]: r for r in store.records()}
    assert sorted(records) == sorted(INSTALLED)
    for record in records.values():
        assert record["exp.status"] == "ok", record["exp.status_msg"]
        assert record["results.throughput_unit"] == "images/s"
    # 11,689,512 at every size: the same layers in every framework.
    assert {r["sys.model_params"] for r in records.values()} == {11_689_512}
    shapes = {f: _output_shape(f, records[f]) for f in INSTALLED}
    assert set(shapes.values()) == {(BATCH, MODELS["resnet18"].num_classes)}, shapes
    # FLOPs per sample are the architecture's: one number in every framework.
    assert len({r["results.flops_per_sample"] for r in records.values()}) == 1
    assert {r["results.flops_source"] for r in records.values()} == {"architecture"}
    # The frameworks' own counters, the cross-check.
    flops = {f: r["results.flops_per_sample_framework"] for f, r in records.items()}
    for framework in ("onnxruntime", "tensorflow"):
        if framework in flops:  # counted by PyTorch's rules: the same number
            assert flops[framework] == pytest.approx(flops["pytorch"], rel=1e-6)
    if "jax" in flops:
        # XLA's estimate skips the taps that fall on the zero padding (docs/jax.md):
        # at 32 px most of a small feature map is border.
        assert 0.5 * flops["pytorch"] < flops["jax"] < 1.05 * flops["pytorch"]

    report = dlbench("report", "--type", "exploration", "--input", "out")
    assert report.returncode == 0, report.stderr
    for framework in INSTALLED:
        assert framework in report.stdout
