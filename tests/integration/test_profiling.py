"""Where the time and memory go: the profiling window, the memory breakdown, the
largest batch that fits and time to accuracy, run for real on the CPU."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from dlbench.backends.pytorch.memory import (
    optimizer_bytes,
    saved_activation_bytes,
    weights_bytes,
)
from dlbench.config.catalog import MODELS
from dlbench.models.pytorch.workloads import make_workload
from dlbench.worker.autobatch import largest_batch
from tests.integration.worker import ok, plan_one, run_in_process


@pytest.mark.slow
def test_profiled_resnet18_training_has_a_trace_top_ops_and_exact_memory(
        tmp_path: Path) -> None:
    record = ok(run_in_process(plan_one(
        tmp_path, "exp.model=resnet18", "exp.image_size=32", "exp.replica_batch=2",
        "exp.num_warmup_batches=1", "exp.num_batches=2", "exp.profile=torch",
        "exp.profile_start=1", "exp.profile_batches=2", "monitor.frequency=0")))
    # The profiled batches come after the timed ones and are not among them.
    assert record["results.num_batches"] == 2 and len(record["results.time_data"]) == 2
    assert record["results.profile.when"] == "after_timed"
    assert record["results.profile.batches"] == 2
    trace = Path(record["results.profile.trace"])
    assert trace.name.endswith(".log.trace.json.gz") and trace.parent == Path(
        record["exp.log_file"]).parent
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    assert any(e.get("name") == "aten::convolution_backward" for e in events)
    top = record["results.profile.top_ops"]
    assert top and all(op["calls"] >= 1 and 0 < op["share"] <= 1 for op in top)
    assert [op["self_host_ms"] for op in top] == sorted(
        (op["self_host_ms"] for op in top), reverse=True)
    assert "aten::convolution_backward" in {op["name"] for op in top}
    assert 0 < record["results.profile.busy_ms"] <= record["results.profile.wall_ms"]
    assert 0 < record["results.profile.utilization"] <= 1
    assert record["results.profile.utilization_basis"] == "cpu_time"
    # resnet18 with 1000 classes: 11,689,512 float32 parameters; SGD keeps one
    # momentum buffer per parameter.
    params = record["sys.model_params"]
    assert params == 11_689_512
    assert record["results.memory.weights_bytes"] == params * 4
    assert record["results.memory.gradients_bytes"] == params * 4
    assert record["results.memory.optimizer_bytes"] == params * 4
    assert record["results.memory.activations_bytes"] > 0
    assert "results.memory.peak_bytes" not in record  # no allocator peak on the CPU


def test_saved_activations_grow_linearly_with_the_batch() -> None:
    torch.manual_seed(0)
    workload = make_workload(MODELS["resnet18"], 32, 0)
    module = workload.build()
    parameters = list(module.parameters())
    saved = {}
    for batch in (2, 4, 8):  # batch norm needs two samples at resnet's last 1x1 map
        inputs, targets = workload.synthetic_batch(batch, torch.device("cpu"))
        saved[batch], loss = saved_activation_bytes(
            lambda: workload.loss(module, inputs, targets), parameters)  # noqa: B023
        loss.backward()
    # The same bytes per sample; batch norm's per-channel statistics are the constant.
    two_samples = saved[4] - saved[2]
    assert two_samples > 0
    assert saved[8] - saved[4] == 2 * two_samples
    assert 0 <= saved[2] - two_samples < two_samples / 10


def test_adam_state_is_two_moments_and_a_step_per_parameter() -> None:
    module = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = torch.optim.Adam(module.parameters())
    module(torch.randn(4, 64)).sum().backward()
    optimizer.step()
    weights = weights_bytes(module.parameters())
    assert weights == (64 * 128 + 128 + 128 * 10 + 10) * 4
    tensors = len(list(module.parameters()))
    assert optimizer_bytes([optimizer]) == 2 * weights + tensors * 4  # float32 steps


@pytest.mark.slow
def test_deep_mnist_reaches_90_percent_on_the_digits(tmp_path: Path) -> None:
    record = ok(run_in_process(plan_one(
        tmp_path, "exp.model=deep_mnist", "exp.image_size=8", "exp.replica_batch=32",
        "exp.phase=train_to_accuracy", "exp.target_accuracy=0.9", "exp.max_epochs=8",
        "monitor.frequency=0")))
    curve = record["results.accuracy_curve"]
    assert record["results.accuracy_reached"] is True
    assert record["results.epochs_to_target"] == len(curve) <= 8
    assert curve[-1] == record["results.accuracy_final"] >= 0.9
    assert all(c < 0.9 for c in curve[:-1])
    assert record["results.time_to_target"] == pytest.approx(
        sum(record["results.epoch_seconds"]))
    assert "1438 train / 359 validation" in record["results.accuracy_data"]
    assert "8x8" in record["results.accuracy_data"]


def test_auto_batch_finds_the_largest_batch_under_the_fake_memory_cap(
        tmp_path: Path) -> None:
    # 10 MiB of device, 0.25 MiB a sample: batch 40 fits, 41 does not.
    record = ok(run_in_process(plan_one(
        tmp_path, "exp.framework=fake", "exp.model=toy", "exp.replica_batch=auto",
        "fake.step_ms=0.1", "fake.sample_memory_mb=0.25", "fake.memory_cap_mb=10",
        "exp.num_batches=3", "monitor.frequency=0")))
    assert record["results.auto_batch"] == record["exp.replica_batch"] == 40
    assert record["exp.effective_batch"] == record["exp.device_batch"] == 40
    probes = [(p["batch"], p["fits"]) for p in record["results.auto_batch_probes"]]
    assert probes == [(1, True), (2, True), (4, True), (8, True), (16, True), (32, True),
                      (64, False), (48, False), (40, True), (44, False), (42, False),
                      (41, False)]
    assert all("MemoryError" in p["error"] for p in record["results.auto_batch_probes"]
               if not p["fits"])


@pytest.mark.parametrize(("cap", "maximum"), [(1, 64), (5, 64), (64, 64), (100, 64),
                                              (1000, 4096), (3, 3)])
def test_largest_batch_search(cap: int, maximum: int) -> None:
    assert largest_batch(lambda batch: batch <= cap, maximum) == min(cap, maximum)
