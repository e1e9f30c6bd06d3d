"""One model in every installed framework through the worker, in this process: the
FLOPs per sample it records are the architecture's, one number whatever the framework
or the batch, with each framework's own counter recorded beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlbench.config.catalog import FRAMEWORKS
from tests.integration.worker import ok, plan_one, resnet18_macs, run_in_process

pytestmark = pytest.mark.slow

INSTALLED = [f for f in ("pytorch", "jax", "tensorflow", "onnxruntime")
             if not FRAMEWORKS[f].missing_requirements()]
IMAGE = 32


@pytest.mark.skipif(len(INSTALLED) < 2, reason="fewer than two frameworks installed")
@pytest.mark.parametrize("phase", ["inference", "training"])
def test_resnet18_counts_the_same_in_every_framework_and_batch(tmp_path: Path,
                                                               phase: str) -> None:
    macs, first = resnet18_macs(IMAGE)
    # Training: each convolution's input and weight gradients, as many FLOPs as its
    # forward each, but for the first convolution's input gradient.
    expected = 2 * macs if phase == "inference" else 3 * 2 * macs - 2 * first
    frameworks = [f for f in INSTALLED if phase in FRAMEWORKS[f].phases]
    own: dict[tuple[str, int], float] = {}
    for framework in frameworks:
        for batch in (2, 4):
            record = ok(run_in_process(plan_one(
                tmp_path / f"{framework}{batch}", f"exp.framework={framework}",
                "exp.model=resnet18", f"exp.phase={phase}", f"exp.image_size={IMAGE}",
                f"exp.replica_batch={batch}", "exp.num_warmup_batches=0",
                "exp.num_batches=1", "monitor.enabled=false")))
            assert record["results.flops_per_sample"] == expected, (framework, batch)
            assert record["results.flops_source"] == "architecture"
            own[framework, batch] = record["results.flops_per_sample_framework"]
            # TFLOP/s are the architecture's count times the samples per second.
            assert record["results.tflops"] == pytest.approx(
                expected * batch * 1000 / record["results.time"] / 1e12)
    for (framework, _), count in own.items():
        if framework == "jax":
            # XLA's cost analysis: elementwise work in, padded taps out, batch-dependent.
            assert 0.5 * expected < count < 1.05 * expected
        else:  # PyTorch's counter, or TensorFlow's graph counted by its rules
            assert count == expected


@pytest.mark.skipif(len(INSTALLED) < 3, reason="PyTorch, JAX and TensorFlow not all installed")
def test_caffe_alexnet_trains_alike_in_every_framework(tmp_path: Path) -> None:
    # The DLBS model with the most layers of its own in the Keras and Flax zoos:
    # grouped convolutions, LRN, ceil-mode max pools; at its smallest image.
    records = {framework: ok(run_in_process(plan_one(
        tmp_path / framework, f"exp.framework={framework}", "exp.model=alexnet",
        "exp.phase=training", "exp.image_size=39", "exp.replica_batch=2",
        "exp.num_warmup_batches=0", "exp.num_batches=1", "monitor.enabled=false")))
        for framework in ("pytorch", "jax", "tensorflow")}
    assert len({r["sys.model_params"] for r in records.values()}) == 1
    assert len({r["results.flops_per_sample"] for r in records.values()}) == 1
    assert all(r["results.throughput"] > 0 for r in records.values())
    # TensorFlow's graph, counted by PyTorch's rules, agrees with the architecture.
    assert (records["tensorflow"]["results.flops_per_sample_framework"]
            == records["pytorch"]["results.flops_per_sample"])
