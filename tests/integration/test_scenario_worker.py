"""The worker runs LoadGen-style scenarios (exp.scenario) through the backend's step:
known answers on the fake workload's known step time."""

from __future__ import annotations

from pathlib import Path

from tests.integration.worker import ok, plan_one, run_in_process

_COMMON = ("exp.framework=fake", "exp.model=resnet50", "exp.phase=inference",
           "fake.step_ms=5", "exp.num_warmup_batches=2", "exp.scenario_min_duration=0.5",
           "monitor.frequency=0")


def test_single_stream_p50_is_the_step_time(tmp_path: Path) -> None:
    record = ok(run_in_process(plan_one(
        tmp_path, *_COMMON, "exp.scenario=single_stream", "exp.replica_batch=1",
        "exp.scenario_min_queries=60")))
    assert record["results.valid"] is True
    assert record["results.queries"] >= 60
    assert len(record["results.latency_data"]) == record["results.queries"]
    # A fake step never ends early; preemption on a busy host only adds time.
    assert 5.0 <= record["results.latency_p50"] <= 5.0 * 1.05
    assert record["results.throughput_unit"] == "samples/s"
    assert abs(record["results.throughput"] - record["results.qps_achieved"]) < 1e-9


def test_server_below_capacity_is_valid_and_reaches_its_rate(tmp_path: Path) -> None:
    record = ok(run_in_process(plan_one(
        tmp_path, *_COMMON, "exp.scenario=server", "exp.replica_batch=1",
        "exp.target_qps=50", "exp.latency_bound_ms=200", "exp.latency_percentile=90",
        "exp.scenario_min_queries=60")))
    assert record["results.valid"] is True, record.get("results.valid_reasons")
    assert abs(record["results.qps_achieved"] / 50.0 - 1.0) < 0.1
    assert min(record["results.latency_data"]) >= 5.0
