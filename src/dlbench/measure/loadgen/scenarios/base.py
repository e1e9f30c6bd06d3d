"""What a scenario of the load generator is, what it is given and gives back, and how
one is found by name.

A scenario is given :class:`ScenarioSettings`, the system under test (:data:`Serve`)
and a :class:`Clock`, and gives back a :class:`ScenarioRun`. A :class:`LoadScenario`
issues queries to the system under test (:meth:`issue`) and says what its figures
mean: what its query count counts, what its duration is measured to, which latency
rule judges it and which figures its summary keeps. The generator
(:mod:`dlbench.measure.loadgen.generator`) and the results
(:mod:`dlbench.measure.loadgen.results`) ask the scenario of a run, by its name, through
:func:`load_scenario`; neither names a scenario.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol, cast

from dlbench.config.scenarios.registry import issues_queries, scenario, scenario_names
from dlbench.measure.loadgen.early_stopping import min_queries, percentile_estimate
from dlbench.plugins import load_class

#: The system under test: serve this many samples, return when they are done.
Serve = Callable[[int], None]


class Clock(Protocol):
    """Seconds on a monotonic clock, and a way to wait for a moment on it."""

    def now(self) -> float:
        """The current time, seconds."""

    def wait_until(self, deadline: float) -> None:
        """Return at ``deadline`` (at once when it has passed)."""


@dataclass(frozen=True)
class ScenarioSettings:
    """How one scenario run issues queries and when it ends."""

    scenario: str
    min_queries: int
    min_duration_s: float
    #: multi_stream: samples per query.
    samples_per_query: int = 1
    #: server: the dynamic batcher's largest batch; offline: the batch size.
    max_batch: int = 1
    #: server: how long the batcher may hold the oldest queued query.
    max_queue_delay_s: float = 0.0
    #: server: mean arrival rate, queries per second.
    target_qps: float = 0.0
    #: server: the latency the percentile must stay under, seconds (0: none).
    latency_bound_s: float = 0.0
    #: the latency percentile of the validity rules, in percent.
    percentile: float = 99.0
    #: server: seed of the arrival schedule.
    seed: int = 0

    def __post_init__(self) -> None:
        if not issues_queries(self.scenario):
            accepted = tuple(n for n in scenario_names() if issues_queries(n))
            raise ValueError(f"scenario {self.scenario!r} is not one of {accepted}")
        load_scenario(self.scenario).check(self)
        if self.min_queries < 1 or self.max_batch < 1 or self.samples_per_query < 1:
            raise ValueError("min_queries, max_batch and samples_per_query must be >= 1")

    def at_qps(self, qps: float) -> ScenarioSettings:
        """The same settings at another target QPS (a probe of the peak search)."""
        return replace(self, target_qps=qps)


@dataclass
class ScenarioRun:
    """What one scenario run measured, every figure in seconds from its start."""

    settings: ScenarioSettings
    #: Each completed query's latency, in issue order (offline: none).
    latencies: list[float] = field(default_factory=list)
    #: Each call of ``serve``: its duration and how many samples it served.
    service: list[float] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    #: server: each completed query's wait before its batch started.
    waits: list[float] = field(default_factory=list)
    #: server: the queries the schedule held; others: those issued.
    planned: int = 0
    #: server: the scheduled arrival of the last completed query; others: the
    #: issue time of the last query (LoadGen's duration rules).
    last_start: float = 0.0
    #: When the last sample completed.
    end: float = 0.0
    #: server: stopped before the schedule ended, the bound being already lost.
    stopped_early: bool = False

    @property
    def samples(self) -> int:
        """Samples served."""
        return sum(self.batch_sizes)

    @property
    def queries(self) -> int:
        """Queries completed, as the scenario counts them (offline: samples, as LoadGen
        does)."""
        return load_scenario(self.settings.scenario).queries(self)


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
