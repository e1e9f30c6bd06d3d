"""What a scenario of the load generator is, and how one is found by name.

A :class:`LoadScenario` issues queries to the system under test (:meth:`issue`) and
says what its figures mean: what its query count counts, what its duration is measured
to, which latency rule judges it and which figures its summary keeps. The generator
(:mod:`dlbench.measure.loadgen.generator`) and the results
(:mod:`dlbench.measure.loadgen.results`) ask the scenario of a run, by its name, through
:func:`load_scenario`; neither names a scenario.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, cast

from dlbench.config.scenarios.registry import scenario
from dlbench.measure.loadgen.early_stopping import min_queries, percentile_estimate
from dlbench.plugins import load_class

if TYPE_CHECKING:
    from dlbench.measure.loadgen.generator import Clock, ScenarioRun, ScenarioSettings, Serve

#: LoadGen's default min_query_count (test_settings.h); ``auto`` raises it to what
#: early stopping needs.
LOADGEN_MIN_QUERIES = 100


class LoadScenario(ABC):
    """One scenario of the load generator. The defaults are those of a scenario whose
    queries are counted one by one as they complete."""

    #: LoadGen's default latency percentile (test_settings.h).
    default_percentile: ClassVar[float] = 99.0
    #: What ``min_queries`` counts, in the reason of a short run.
    counted: ClassVar[str] = "queries"
    #: What the duration rule measures to, in the reason of a short run.
    last_start_text: ClassVar[str] = "the last query was issued"
    #: Whether the percentile is estimated by early stopping
    #: (``results.latency_early_stop``), which then needs enough queries to be valid.
    estimates_percentile: ClassVar[bool] = False
    #: Whether the summary keeps each call of ``serve`` (its service time and batch
    #: size): not where one query is one call, whose service times are the latencies.
    keeps_service: ClassVar[bool] = False

    @abstractmethod
    def issue(self, settings: ScenarioSettings, serve: Serve, clock: Clock) -> ScenarioRun:
        """Run the scenario of ``settings`` against ``serve`` on ``clock``."""

    def check(self, settings: ScenarioSettings) -> None:  # noqa: B027  (optional: most need none)
        """``ValueError`` for settings this scenario cannot run; none by default."""

    def queries(self, run: ScenarioRun) -> int:
        """The queries ``run`` completed, as LoadGen counts them."""
        return len(run.latencies)

    def completed_for_rate(self, run: ScenarioRun) -> int:
        """The queries ``results.qps_achieved`` divides by the run's time."""
        return self.queries(run)

    def default_min_queries(self, percentile: float) -> int:
        """``exp.scenario_min_queries=auto``: LoadGen's 100, raised to the queries an
        early-stopping estimate of the ``percentile`` (in percent) needs."""
        return max(LOADGEN_MIN_QUERIES, min_queries(1, percentile / 100.0))

    def rate_results(self, run: ScenarioRun) -> dict[str, Any]:
        """``results.*`` of the rate the run was asked for; none by default."""
        return {}

    def latency_reasons(self, run: ScenarioRun) -> list[str]:
        """Why ``run``'s latencies (it has some) make it invalid: with
        :attr:`estimates_percentile`, too few queries for the estimate."""
        fraction = run.settings.percentile / 100.0
        if not self.estimates_percentile or (
                percentile_estimate(run.latencies, fraction) is not None):
            return []
        return [f"early stopping: an estimate of the {run.settings.percentile:g}th "
                f"percentile needs at least {min_queries(1, fraction)} queries, and "
                f"{len(run.latencies)} ran"]


def load_scenario(name: str) -> LoadScenario:
    """The load-generator scenario registered as ``name``, its module imported now;
    ``ValueError`` for a name not registered or one that no load generator runs."""
    entry = scenario(name)
    if entry.implementation is None:
        raise ValueError(f"scenario {name!r} is not run by the load generator")
    # The registry lives below measure and cannot name this class; load_class checks it.
    implementation = cast("str | type[LoadScenario]", entry.implementation)
    loaded: type[LoadScenario] = load_class(implementation, LoadScenario)
    return loaded()
