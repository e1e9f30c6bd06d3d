"""``server``: queries of one sample arrive as a Poisson process at ``target_qps``
(:func:`~dlbench.measure.loadgen.generator.poisson_schedule`, seeded) and a dynamic
batcher serves them (:func:`~dlbench.measure.loadgen.generator.serve_schedule`); a
query's latency runs from its scheduled arrival."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from dlbench.measure.loadgen.early_stopping import min_queries
from dlbench.measure.loadgen.generator import poisson_schedule, serve_schedule, server_query_count
from dlbench.measure.loadgen.results import bound_reasons
from dlbench.measure.loadgen.scenarios.base import LOADGEN_MIN_QUERIES, LoadScenario

if TYPE_CHECKING:
    from dlbench.measure.loadgen.generator import Clock, ScenarioRun, ScenarioSettings, Serve


class Server(LoadScenario):
    """Poisson arrivals at a target rate, a dynamic batcher, an optional latency bound."""

    last_start_text: ClassVar[str] = "the last query completed was scheduled"
    keeps_service: ClassVar[bool] = True

    def issue(self, settings: ScenarioSettings, serve: Serve, clock: Clock) -> ScenarioRun:
        """The seeded schedule, long enough for the run's rules, served as it arrives."""
        count = server_query_count(settings)
        schedule = poisson_schedule(settings.target_qps, count, settings.seed)
        return serve_schedule(settings, schedule.tolist(), serve, clock)

    def check(self, settings: ScenarioSettings) -> None:
        """A rate of arrivals is needed."""
        if not settings.target_qps > 0:
            raise ValueError(f"server needs a target QPS > 0, not {settings.target_qps}")

    def completed_for_rate(self, run: ScenarioRun) -> int:
        """LoadGen's (n - 1) / end: the last arrival closes the time range."""
        return self.queries(run) - 1

    def default_min_queries(self, percentile: float) -> int:
        """The queries a run with no query over the bound needs (459 at the 99th)."""
        return max(LOADGEN_MIN_QUERIES, min_queries(0, percentile / 100.0))

    def rate_results(self, run: ScenarioRun) -> dict[str, Any]:
        """The rate asked for, ``results.qps_target``."""
        return {"results.qps_target": run.settings.target_qps}

    def latency_reasons(self, run: ScenarioRun) -> list[str]:
        """With a latency bound: the percentile under it, then early stopping."""
        return bound_reasons(run) if run.settings.latency_bound_s > 0 else []
