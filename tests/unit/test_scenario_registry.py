"""Scenarios are plug-ins: one class and one registration line, and everything that
names a scenario (the plan's checks, the parameter's choices and help, the load
generator, the results) finds it in the registry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.config.registry import REGISTRY
from dlbench.config.scenarios.params import check_scenario
from dlbench.config.scenarios.registry import (
    BATCH,
    arrives_at_rate,
    issues_queries,
    register,
    scenario,
    scenario_names,
    unregister,
)
from dlbench.errors import ConfigError
from dlbench.measure.loadgen.generator import (
    Clock,
    ScenarioRun,
    ScenarioSettings,
    Serve,
    VirtualClock,
    run,
)
from dlbench.measure.loadgen.results import summarize
from dlbench.measure.loadgen.scenarios.base import LoadScenario, load_scenario


class Burst(LoadScenario):
    """Every query there at once, served one sample at a time: the k-th query's latency
    is k service times."""

    default_percentile: ClassVar[float] = 75.0

    def issue(self, settings: ScenarioSettings, serve: Serve, clock: Clock) -> ScenarioRun:
        result = ScenarioRun(settings, planned=settings.min_queries)
        start = done = clock.now()
        for _ in range(settings.min_queries):
            serve(1)
            done = clock.now()
            result.latencies.append(done - start)
            result.batch_sizes.append(1)
        result.end = done - start
        return result


@pytest.fixture
def burst() -> Iterator[str]:
    register("burst", "every query at once, served one sample at a time", Burst,
             one_sample=True)
    try:
        yield "burst"
    finally:
        unregister("burst")


def test_the_shipped_scenarios_and_what_the_worker_asks_of_them() -> None:
    assert scenario_names() == ("batch", "single_stream", "multi_stream", "server", "offline")
    assert [issues_queries(n) for n in (*scenario_names(), "nothing", None)] == [
        False, True, True, True, True, False, False]
    assert [n for n in scenario_names() if arrives_at_rate(n)] == ["server"]
    assert [n for n in scenario_names() if scenario(n).one_sample] == ["single_stream"]
    assert not arrives_at_rate(3) and not arrives_at_rate("nothing")
    assert load_scenario("multi_stream").default_percentile == 99.0
    assert load_scenario("single_stream").default_percentile == 90.0
    with pytest.raises(ValueError, match="'batch' is not run by the load generator"):
        load_scenario(BATCH)
    with pytest.raises(ValueError, match="unknown scenario 'nothing'; accepted: batch, "):
        load_scenario("nothing")
    with pytest.raises(ValueError, match="scenario 'server' is already registered"):
        register("server", "again", None)


def test_the_parameter_takes_its_choices_and_help_from_the_registry() -> None:
    param = next(p for p in REGISTRY if p.name == "exp.scenario")
    assert param.choices == scenario_names() and param.default == BATCH
    for name in scenario_names():
        assert f"`{name}` ({scenario(name).help})" in param.help


def test_a_registered_scenario_is_run_and_summarized(burst: str) -> None:
    clock = VirtualClock()

    def serve(samples: int) -> None:
        clock.advance(0.01 * samples)

    settings = ScenarioSettings(burst, min_queries=4, min_duration_s=0.0, percentile=75.0)
    out = summarize(run(settings, serve, clock))
    # Latencies 10, 20, 30, 40 ms; the 75th percentile is index floor(4 * 0.75) = 3.
    assert out["results.latency_data"] == pytest.approx([10.0, 20.0, 30.0, 40.0])
    assert out["results.latency_mean"] == pytest.approx(25.0)
    assert out["results.latency_at_percentile"] == pytest.approx(40.0)
    assert out["results.latency_p50"] == pytest.approx(30.0)
    assert out["results.queries"] == 4
    assert out["results.throughput"] == pytest.approx(100.0)  # 4 samples in 40 ms
    assert out["results.qps_achieved"] == pytest.approx(100.0)
    assert out["results.valid"] is True and out["results.valid_reasons"] == []
    # Only what the scenario declares: no early-stopping estimate, no service figures.
    assert "results.latency_early_stop" not in out and "results.service_data" not in out
    assert "results.qps_target" not in out

    short = summarize(run(ScenarioSettings(burst, min_queries=2, min_duration_s=1.0),
                          serve, clock))
    assert short["results.valid_reasons"] == [
        "the last query was issued at 0.000 s, before the 1 s exp.scenario_min_duration "
        "asks for"]


def test_settings_accept_only_the_registered_load_generators(burst: str) -> None:
    assert ScenarioSettings(burst, min_queries=1, min_duration_s=0.0).scenario == burst
    for name in (BATCH, "nothing"):
        with pytest.raises(ValueError, match=rf"scenario '{name}' is not one of "
                                             r"\('single_stream', 'multi_stream', 'server', "
                                             r"'offline', 'burst'\)"):
            ScenarioSettings(name, min_queries=1, min_duration_s=0.0)
    with pytest.raises(ValueError, match=r"server needs a target QPS > 0, not 0\.0"):
        ScenarioSettings("server", min_queries=1, min_duration_s=0.0)


def test_the_plan_checks_what_a_registered_scenario_declares(burst: str) -> None:
    planned: dict[str, Any] = plan_experiments(load_spec(params=[
        "exp.framework=fake", "exp.model=toy", "exp.phase=inference",
        "exp.scenario=single_stream", "exp.replica_batch=1"]))[0]

    def check(**changes: Any) -> None:
        values = {**planned, "exp.scenario": burst, **changes}
        check_scenario(values, lambda name: f"{name}={values[name]!r}")

    with pytest.raises(ConfigError) as err:
        check(**{"exp.replica_batch": 2})
    assert str(err.value) == ("exp.replica_batch=2: exp.scenario=burst issues one sample per "
                              "query: set exp.replica_batch=1")
    check()  # one sample per query: accepted
    with pytest.raises(ConfigError) as err:
        check(**{"exp.target_qps": "auto"})
    assert str(err.value) == ("exp.target_qps='auto' searches the highest load of the server "
                              "scenario: set exp.scenario=server (exp.scenario='burst')")
