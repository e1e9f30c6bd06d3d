"""The scenario parameters: their checks at plan time, and the worker's entry point
``run_scenario`` from planned parameters (on a virtual clock)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.config.run_params import check_one_process
from dlbench.errors import ConfigError
from dlbench.measure.loadgen.generator import VirtualClock
from dlbench.measure.loadgen.scenario import default_min_queries, run_scenario, settings_from_params
from dlbench.results.keys.lookup import conforms, is_declared

INFERENCE = ["exp.framework=fake", "exp.model=toy", "exp.phase=inference"]


def plan(params: Sequence[str]) -> dict[str, Any]:
    return plan_experiments(load_spec(params=[*INFERENCE, *params]))[0]


def error_of(params: Sequence[str], base: Sequence[str] = INFERENCE) -> str:
    with pytest.raises(ConfigError) as err:
        plan_experiments(load_spec(params=[*base, *params]))
    message = str(err.value)
    assert "\n" not in message
    return message


def test_batch_is_the_default_and_needs_nothing() -> None:
    experiment = plan([])
    assert experiment["exp.scenario"] == "batch"
    assert experiment["exp.target_qps"] == 0.0
    assert experiment["exp.latency_percentile"] == "auto"


@pytest.mark.parametrize(("params", "message"), [
    (["exp.scenario=server"],
     "exp.target_qps=0.0 (from default): exp.scenario=server needs a rate between 0.01 and "
     "1000000 queries/s, or 'auto' to search the highest under exp.latency_bound_ms"),
    (["exp.scenario=server", "exp.target_qps=auto"],
     "exp.latency_bound_ms=0.0 (from default): exp.target_qps=auto searches the highest "
     "load under a latency bound: give one > 0 ms"),
    (["exp.target_qps=auto"],
     "exp.target_qps='auto' (from -P flag) searches the highest load of the server "
     "scenario: set exp.scenario=server (exp.scenario='batch' (from default))"),
    (["exp.target_qps=-5"], "exp.target_qps=-5.0 (from -P flag) must be between 0 and "
                            "1000000, or 'auto'"),
    (["exp.target_qps=fast"], "exp.target_qps='fast' (from -P flag) is not a float or 'auto'"),
    (["exp.latency_percentile=100"],
     "exp.latency_percentile=100.0 (from -P flag) must be between 50 and 99.99, "
     "or 'auto'"),
    (["exp.qps_search_tolerance=0"],
     "exp.qps_search_tolerance=0.0 (from -P flag) must be between 0 and 1 (exclusive), "
     "e.g. 0.02"),
    (["exp.scenario=single_stream"],
     "exp.replica_batch=16 (from default): exp.scenario=single_stream issues one sample "
     "per query: set exp.replica_batch=1"),
    (["exp.scenario=offline", "exp.scenario_min_queries=0"],
     "exp.scenario_min_queries=0 (from -P flag) must be between 1 and 100000000, or 'auto'"),
    (["exp.scenario=warp"],
     "exp.scenario='warp' (from -P flag) is not one of 'batch', 'single_stream', "
     "'multi_stream', 'server', 'offline'"),
])
def test_bad_values_are_one_line_errors(params: list[str], message: str) -> None:
    assert error_of(params) == message


def test_scenarios_need_inference_and_one_replica() -> None:
    training = ["exp.framework=fake", "exp.model=toy"]
    assert error_of(["exp.scenario=offline"], base=training) == (
        "exp.scenario='offline' (from -P flag) issues inference queries: it needs "
        "exp.phase=inference (exp.phase='training' (from default))")
    assert error_of(["exp.scenario=offline", "exp.num_local_replicas=2"]) == (
        "exp.scenario='offline' (from -P flag) issues queries to one replica: use "
        "exp.scenario=batch for data-parallel runs (exp.num_replicas=2 (from default))")
    assert error_of(["exp.scenario=offline", "exp.repeat=3"]) == (
        "exp.repeat=3 (from -P flag): scenario runs are not combined across processes "
        "yet; use exp.repeat=1 (exp.scenario='offline' (from -P flag))")


def test_one_process_runs_refuse_repeats_and_copies() -> None:
    values = {"exp.repeat": 1, "exp.parallel_jobs": 1, "exp.phase": "generate"}
    check_one_process(values, str, "generation runs", "exp.phase")  # nothing to refuse
    for name, value in (("exp.repeat", 2), ("exp.parallel_jobs", "gpus")):
        with pytest.raises(ConfigError) as caught:
            check_one_process({**values, name: value}, lambda n: f"<{n}>", "generation runs",
                              "exp.phase")
        assert str(caught.value) == (f"<{name}>: generation runs are not combined across "
                                     f"processes yet; use {name}=1 (<exp.phase>)")


def test_settings_follow_loadgen_defaults() -> None:
    single = settings_from_params(plan(["exp.scenario=single_stream", "exp.replica_batch=1"]))
    assert (single.percentile, single.min_queries, single.min_duration_s) == (90.0, 100, 10.0)
    multi = settings_from_params(plan(["exp.scenario=multi_stream", "exp.replica_batch=8"]))
    assert (multi.percentile, multi.min_queries, multi.samples_per_query) == (99.0, 662, 8)
    server = settings_from_params(plan([
        "exp.scenario=server", "exp.target_qps=50", "exp.latency_bound_ms=15",
        "exp.max_queue_delay_ms=2", "exp.replica_batch=4"]))
    assert server.min_queries == 459 and server.target_qps == 50.0
    assert (server.latency_bound_s, server.max_queue_delay_s, server.max_batch) == (
        0.015, 0.002, 4)
    assert default_min_queries("offline", 99.0) == 100
    assert default_min_queries("single_stream", 99.9) == 6636


def _check_keys(results: dict[str, Any]) -> None:
    for name, value in results.items():
        assert is_declared(name), name
        assert conforms(name, value), (name, value)


def test_run_scenario_server_from_planned_parameters() -> None:
    experiment = plan(["exp.scenario=server", "exp.target_qps=100", "exp.replica_batch=1",
                       "exp.latency_bound_ms=50", "exp.scenario_min_duration=20"])
    clock = VirtualClock()
    results = run_scenario(experiment, lambda samples: clock.advance(0.005), clock)
    _check_keys(results)
    assert results["results.queries"] == 2001  # 20 s at 100/s, both ends counted
    assert results["results.valid"] is True and results["results.valid_reasons"] == []
    assert results["results.qps_target"] == 100.0
    assert len(results["results.latency_data"]) == 2001


def test_run_scenario_auto_records_every_probe() -> None:
    experiment = plan(["exp.scenario=server", "exp.target_qps=auto", "exp.replica_batch=1",
                       "exp.latency_bound_ms=1000", "exp.scenario_min_duration=60"])
    clock = VirtualClock()
    results = run_scenario(experiment, lambda samples: clock.advance(0.010), clock)
    _check_keys(results)
    probes = results["results.scenario_probes"]
    assert results["results.qps_search_start"] == pytest.approx(50.0)
    assert results["results.valid"] is True
    assert results["results.qps_target"] == pytest.approx(100.0, rel=0.05)
    assert results["results.qps_target"] == max(p["qps"] for p in probes if p["valid"])
    assert all(p["reasons"] == [] for p in probes if p["valid"])
    assert all(p["reasons"] for p in probes if not p["valid"])
