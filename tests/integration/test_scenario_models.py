"""A LoadGen scenario on real frameworks' backends: the toy model on PyTorch and ONNX
Runtime answers single-stream queries, each one a step of the backend and its
synchronisation, with every figure of a valid run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.worker import ok, plan_one, run_in_process


@pytest.fixture(autouse=True)
def dlbench_home(tmp_path: Path) -> Iterator[Path]:
    """ONNX Runtime's exports go to the test's own cache, never the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLBENCH_HOME", str(tmp_path / "home"))
        yield tmp_path / "home"


# ONNX Runtime exports the model first (seconds).
@pytest.mark.parametrize("framework", ["pytorch", pytest.param("onnxruntime",
                                                               marks=pytest.mark.slow)])
def test_single_stream_on_a_real_backend_is_valid(tmp_path: Path, framework: str) -> None:
    record = ok(run_in_process(plan_one(
        tmp_path, f"exp.framework={framework}", "exp.model=toy", "exp.phase=inference",
        "exp.scenario=single_stream", "exp.replica_batch=1", "exp.num_warmup_batches=2",
        "exp.scenario_min_queries=64", "exp.scenario_min_duration=0.2",
        "monitor.enabled=false")))
    assert record["results.valid"] is True, record["results.valid_reasons"]
    latencies = record["results.latency_data"]
    assert len(latencies) == record["results.queries"] >= 64
    assert min(latencies) > 0
    assert (record["results.latency_p50"] <= record["results.latency_p90"]
            <= record["results.latency_p99"] <= record["results.latency_max"])
    # 64 queries are the fewest for an early-stopping estimate of the 90th percentile.
    assert record["results.latency_early_stop"] >= record["results.latency_p90"]
    assert record["results.throughput_unit"] == "samples/s"
    assert record["results.throughput"] == pytest.approx(record["results.qps_achieved"])
    assert record["results.qps_achieved"] == pytest.approx(
        len(latencies) / record["results.timed_seconds"])
    assert record["exp.framework"] == framework
