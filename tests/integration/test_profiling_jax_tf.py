"""The profiling window and the memory breakdown of JAX and TensorFlow, run for real on
the CPU (the toy model, training, two profiled batches), and the trace summary's
arithmetic on known events."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from dlbench.backends.trace_summary import (
    RawEvent,
    TraceEvent,
    operator_events,
    self_operator_times,
    summarize,
)
from dlbench.errors import ConfigError
from tests.integration.worker import ok, plan_one, run_in_process

TOY_PARAMS = (64 * 128 + 128) + (128 * 10 + 10)  # the toy model's weights and biases
BATCH = 16


def _profiled(tmp_path: Path, framework: str, *params: str) -> dict[str, Any]:
    return ok(run_in_process(plan_one(
        tmp_path, f"exp.framework={framework}", "exp.model=toy", f"exp.replica_batch={BATCH}",
        "exp.num_warmup_batches=1", "exp.num_batches=2", f"exp.profile={framework}",
        "exp.profile_start=1", "exp.profile_batches=2", "monitor.enabled=false", *params)))


def _check_window(record: dict[str, Any], suffix: str) -> list[dict[str, Any]]:
    """What every profiled record holds: the window after the timed batches, its trace
    directory next to the log, operators ranked by host self time, busy <= wall."""
    assert len(record["results.time_data"]) == 2
    assert record["results.profile.when"] == "after_timed"
    assert record["results.profile.batches"] == 2
    trace = Path(record["results.profile.trace"])
    assert trace.name == Path(record["exp.log_file"]).name + suffix
    assert list(trace.rglob("*.xplane.pb"))
    top = record["results.profile.top_ops"]
    assert top and all(op["calls"] >= 1 and 0 < op["share"] <= 1 for op in top)
    assert all(op["self_device_ms"] == 0 for op in top)
    times = [op["self_host_ms"] for op in top]
    assert times == sorted(times, reverse=True)
    assert 0 < record["results.profile.busy_ms"] <= record["results.profile.wall_ms"]
    assert record["results.profile.utilization"] == pytest.approx(min(1.0, (
        record["results.profile.cpu_ms"]
        / (record["results.profile.wall_ms"] * record["results.profile.cpus"]))))
    assert record["results.profile.utilization_basis"] == "cpu_time"
    assert "results.profile.note" not in record
    return list(top)


def test_jax_window_and_memory(tmp_path: Path) -> None:
    pytest.importorskip("jax", reason="exp.framework=jax needs jax")
    record = _profiled(tmp_path, "jax")
    _check_window(record, ".jax_trace")
    # jax.profiler also writes a Chrome/Perfetto trace next to the XPlane.
    assert list(Path(record["results.profile.trace"]).rglob("*.trace.json.gz"))
    assert record["sys.model_params"] == TOY_PARAMS
    # float32 weights; gradients of the same shapes; SGD's momentum is one more copy.
    assert record["results.memory.weights_bytes"] == TOY_PARAMS * 4
    assert record["results.memory.gradients_bytes"] == TOY_PARAMS * 4
    assert record["results.memory.optimizer_bytes"] == TOY_PARAMS * 4
    # Saved for backward: at least the input (64) and the hidden layer (128) of every
    # sample; the parameters are not counted.
    saved = record["results.memory.activations_bytes"]
    assert BATCH * (64 + 128) * 4 <= saved < TOY_PARAMS * 4
    assert record["results.memory.temp_bytes"] > 0
    assert "results.memory.peak_bytes" not in record
    assert "no allocator peak on the CPU" in record["results.memory.note"]


def test_tensorflow_window_and_memory(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow", reason="exp.framework=tensorflow needs tensorflow")
    record = _profiled(tmp_path, "tensorflow")
    top = _check_window(record, ".tf_trace")
    # Graph operators, summed by op type: the two dense layers' matrix products.
    assert any("MatMul" in op["name"] for op in top)
    assert all(":" not in op["name"] and "/" not in op["name"] for op in top)
    assert record["results.memory.weights_bytes"] == TOY_PARAMS * 4
    assert record["results.memory.gradients_bytes"] == TOY_PARAMS * 4
    # Keras's SGD: one momentum per weight, its int64 iteration and float32 rate.
    assert record["results.memory.optimizer_bytes"] == TOY_PARAMS * 4 + 8 + 4
    assert "results.memory.activations_bytes" not in record
    assert "GradientTape" in record["results.memory.note"]


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="planning exp.framework=tensorflow needs TensorFlow installed")
def test_each_framework_declares_its_own_profiler(tmp_path: Path) -> None:
    from dlbench.config import load_spec, plan_experiments

    def plan(*params: str) -> None:
        plan_experiments(load_spec(params=list(params),
                                   overrides={"exp.out_dir": (str(tmp_path), "test")}))

    plan("exp.framework=jax", "exp.model=toy", "exp.profile=jax")
    plan("exp.framework=tensorflow", "exp.model=toy", "exp.profile=tensorflow")
    with pytest.raises(ConfigError, match=r"not supported by framework jax; supported: "
                                          r"none, jax$"):
        plan("exp.framework=jax", "exp.model=toy", "exp.profile=torch")
    with pytest.raises(ConfigError, match="framework tensorflow; supported: none, tensorflow"):
        plan("exp.framework=tensorflow", "exp.model=toy", "exp.profile=jax")


def test_self_times_subtract_nested_operators_on_the_same_line_only() -> None:
    events = [TraceEvent("while", "t1", 0, 100), TraceEvent("dot", "t1", 10, 40),
              TraceEvent("add", "t1", 40, 50), TraceEvent("dot", "t2", 20, 60)]
    ops = {op.name: op for op in self_operator_times(events, on_device=False)}
    assert (ops["while"].calls, ops["while"].self_host_us) == (1, 60.0)
    assert (ops["dot"].calls, ops["dot"].self_host_us) == (2, 70.0)
    summary = summarize(events, events, wall_ms=0.2, top=2, on_device=False)
    assert [op["name"] for op in summary["results.profile.top_ops"]] == ["dot", "while"]
    assert summary["results.profile.top_ops"][0]["share"] == pytest.approx(0.35)
    assert summary["results.profile.busy_ms"] == pytest.approx(0.1)  # 0-100 us, once
    # On the CPU the worker gives the utilisation, from CPU time (worker/extras.py).
    assert "results.profile.utilization" not in summary


def test_host_operators_are_xla_ops_or_graph_ops_never_their_allocations() -> None:
    graph = [
        RawEvent("/host:CPU", "python", "EagerExecute", 0, 90, None),
        RawEvent("/host:CPU", "tf_Compute/1", "model/conv/Conv2D:_MklNativeConv2D", 10, 30,
                 None),
        # TensorFlow tags an allocation with the operator it was made for.
        RawEvent("/host:CPU", "tf_Compute/1", "MemoryAllocation", 12, 13, "model/conv/Conv2D"),
    ]
    ops, busy, on_device = operator_events(graph, tf_ops=True)
    assert [e.name for e in ops] == ["_MklNativeConv2D"] and busy == ops and not on_device
    xla = [*graph, RawEvent("/host:CPU", "eigen", "fusion.3", 40, 60, "fusion.3")]
    assert [e.name for e in operator_events(xla, tf_ops=True)[0]] == ["fusion.3"]
    assert [e.name for e in operator_events(graph, tf_ops=False)[0]] == []


def test_gpu_kernels_rank_by_device_time_and_name_their_operator() -> None:
    events = [
        RawEvent("/host:CPU", "python", "conv:Conv2D", 0, 50, None),
        RawEvent("/device:GPU:0", "Stream #7(Compute)", "sm90_xmma_fprop", 5, 25,
                 "model/conv:Conv2D"),
        RawEvent("/device:GPU:0", "Stream #7(Compute)", "elementwise_kernel", 30, 35, None),
        RawEvent("/device:GPU:0", "XLA Ops", "fusion.1", 5, 35, "fusion.1"),  # a derived view
    ]
    ops, busy, on_device = operator_events(events, tf_ops=True)
    assert on_device and ops == busy
    assert [(e.name, e.start_us) for e in ops] == [("Conv2D", 5), ("elementwise_kernel", 30)]
    summary = summarize(ops, busy, wall_ms=0.05, top=5, on_device=True)
    assert summary["results.profile.utilization_basis"] == "device_kernels"
    assert summary["results.profile.busy_ms"] == pytest.approx(0.025)
    assert summary["results.profile.utilization"] == pytest.approx(0.5)
    assert summary["results.profile.top_ops"][0]["self_device_ms"] == pytest.approx(0.02)
