"""The highest load an endpoint serves within its SLOs: ``exp.target_qps=auto`` (the
arrival rate of an open loop, ``exp.scenario=server``) and ``exp.replica_batch=auto``
(the requests in flight of a closed loop, ``exp.scenario=batch``).

**A probe** is one whole run at one load, sent and judged as any endpoint run is
(:func:`~dlbench.frameworks.endpoint.load.run_load`, then
:func:`~dlbench.measure.serving.definitions.serving_results`). It **passes** when the
run is valid (``results.valid``: no failed request, the 99th percentiles of TTFT and
TPOT within ``endpoint.slo_ttft_ms`` and ``endpoint.slo_tpot_ms``, the client kept
up) and at least ``endpoint.search_attainment`` of its requests met every SLO given
(``results.slo_attainment``).

**One search** is the in-process one's (:mod:`dlbench.measure.loadgen.peak_search`),
on either axis (:class:`Axis`): from a start, double the load while probes pass (halve
it while they fail), then bisect between the highest passing load and the lowest
failing one until they are within ``exp.qps_search_tolerance`` of each other (a rate,
relative) or adjacent (a concurrency, a whole number). A concurrency starts at one
request in flight; a rate at the one a single stream sustains, one over the mean
latency of a short run of one request at a time (:func:`calibration_plan`,
:func:`rate_search`), and goes no lower than a sixteenth of it. The search's **peak**
is its highest passing load.

**Repeats.** A peak measured once says nothing of its spread, so the whole search
runs again, each time on an arrival schedule of its own (``exp.scenario_seed`` plus
the search's number; within one search every probe has the same schedule, rescaled,
so that probes differ by their load only): ``endpoint.search_repeats`` times, or with
``auto`` at least :data:`AUTO_MIN_REPEATS` times and then until the 95 % confidence
interval of the peaks' mean (Student's t, the searches being independent draws) is
within the search's resolution of that mean (:meth:`Axis.resolution`), at most
:data:`AUTO_MAX_REPEATS` times. A search that does not settle (no probe passes, every
probe passes up to the axis' most, or :data:`MAX_PROBES` are spent) ends the repeats:
another would not settle either. Every probe's requests are numbered on from the
last probe's (:class:`ContinuedPrompts`).

The record holds the peaks' mean and interval, every probe in order
(``results.scenario_probes``), and, as its other figures, those of one probe: the
highest that passed in the last search (the lowest probed when none did).

Example, with a server whose SLOs hold up to 6 requests in flight::

    axis = Axis(CONCURRENCY, integer=True, minimum=1, maximum=64, tolerance=0.02)
    # probe(load, repeat) runs one probe of search number `repeat`: its ProbeRun
    search = await find_peak(axis, start=1, repeats=1, attainment=0.99, measure=probe)
    search.peaks  # [6.0]: probes at 1, 2, 4, 8 (fails), 6, 7 (fails)
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dlbench.config.params import MAX_REPLICA_BATCH
from dlbench.config.scenarios.params import MAX_QPS, MIN_QPS
from dlbench.frameworks.endpoint.declaration import AUTO, AUTO_MAX_REPEATS, AUTO_MIN_REPEATS
from dlbench.frameworks.endpoint.load import LoadPlan
from dlbench.frameworks.endpoint.prompts import Conversation, PromptSource
from dlbench.frameworks.endpoint.requests import Prompt
from dlbench.measure.loadgen.peak_search import MAX_PROBES
from dlbench.results.stats import mean, sample_std, t_quantile_975

__all__ = [
    "AUTO",
    "AUTO_MAX_REPEATS",
    "AUTO_MIN_REPEATS",
    "CALIBRATION_ATTAINMENT",
    "CALIBRATION_REQUESTS",
    "CONCURRENCY",
    "LOWEST_FRACTION",
    "MAX_PROBES",
    "RATE",
    "Axis",
    "Bracket",
    "ContinuedPrompts",
    "Probe",
    "ProbeRun",
    "Search",
    "axis_of",
    "calibration_plan",
    "find_peak",
    "probe_reasons",
    "rate_search",
]

#: The parameter each axis searches.
RATE, CONCURRENCY = "exp.target_qps", "exp.replica_batch"
#: Requests after the warm-up of the run that finds a rate search's start.
CALIBRATION_REQUESTS = 5
#: Below this share of that run's requests meeting the SLOs, one request at a time
#: already misses them and no rate is searched (half: one slow request of a few is
#: no verdict on the server).
CALIBRATION_ATTAINMENT = 0.5
#: A rate search probes no rate below its start over this.
LOWEST_FRACTION = 16


@dataclass(frozen=True)
class Axis:
    """What a search varies: ``param`` (:data:`RATE` or :data:`CONCURRENCY`), a
    whole number or not, between ``minimum`` and ``maximum`` (``limit`` names where
    the maximum comes from), to within ``tolerance`` (relative, for a rate)."""

    param: str
    integer: bool
    minimum: float
    maximum: float
    tolerance: float
    limit: str = ""

    @property
    def unit(self) -> str:
        """The unit of a load: requests in flight, or requests per second."""
        return "requests" if self.integer else "requests/s"

    def shown(self, load: float) -> str:
        """``load`` with its unit, as messages say it.

        >>> Axis(RATE, False, 0.01, 100, 0.02).shown(12.5)
        '12.5 requests/s'
        """
        if self.integer:
            return f"{load:.0f} request{'' if load == 1 else 's'} in flight"
        return f"{load:.4g} {self.unit}"

    def close(self, low: float, high: float) -> bool:
        """Whether the highest passing load ``low`` and the lowest failing ``high`` are
        close enough to stop: adjacent whole numbers, or within the tolerance of
        ``low``."""
        return high - low <= (1 if self.integer else self.tolerance * low)

    def middle(self, low: float, high: float) -> float:
        """The load between ``low`` and ``high`` to probe next."""
        return float((int(low) + int(high)) // 2) if self.integer else (low + high) / 2

    def above(self, load: float) -> float:
        """Twice ``load``, at most the maximum."""
        return min(2 * load, self.maximum)

    def below(self, load: float) -> float:
        """Half ``load`` (rounded down for a whole number), at least the minimum."""
        half = float(int(load) // 2) if self.integer else load / 2
        return max(half, self.minimum)

    def resolution(self, peak: float) -> float:
        """How close two peaks near ``peak`` can be told apart: the tolerance of it, and
        for a whole number at least 1 (the search stops at adjacent loads)."""
        return max(1.0, self.tolerance * peak) if self.integer else self.tolerance * peak


def axis_of(params: Mapping[str, Any]) -> Axis | None:
    """The axis an endpoint experiment searches: the rate with ``exp.target_qps=auto``,
    the concurrency with ``exp.replica_batch=auto`` (at most ``exp.auto_batch_max``);
    None when it searches nothing."""
    tolerance = float(params["exp.qps_search_tolerance"])
    if params.get(RATE) == AUTO:
        return Axis(RATE, False, MIN_QPS, MAX_QPS, tolerance, f"the largest {RATE}")
    if params.get(CONCURRENCY) == AUTO:
        most = min(int(params.get("exp.auto_batch_max", MAX_REPLICA_BATCH)), MAX_REPLICA_BATCH)
        return Axis(CONCURRENCY, True, 1, most, tolerance, f"exp.auto_batch_max={most}")
    return None


@dataclass
class Bracket:
    """One search's state: the highest passing load ``low`` and the lowest failing one
    ``high`` so far. Ask :meth:`next_load`, probe it, tell :meth:`add`; once
    :meth:`next_load` says None the search is over, settled unless ``problem`` says
    why not."""

    axis: Axis
    start: float
    max_probes: int = MAX_PROBES
    low: float | None = None
    high: float | None = None
    probes: int = 0
    problem: str = ""

    def next_load(self) -> float | None:
        """The load to probe next, or None when the search is over."""
        axis, low, high = self.axis, self.low, self.high
        if self.problem:
            return None
        if self.probes == 0:
            start = min(max(self.start, axis.minimum), axis.maximum)
            load = float(max(1, round(start))) if axis.integer else start
        elif high is None:
            assert low is not None
            if low >= axis.maximum:
                self.problem = (f"every probe met the SLOs, up to {axis.shown(low)} "
                                f"({axis.limit}): the peak is higher")
                return None
            load = axis.above(low)
        elif low is None:
            if high <= axis.minimum:
                self.problem = f"no probe met the SLOs, down to {axis.shown(high)}"
                return None
            load = axis.below(high)
        elif axis.close(low, high):
            return None
        else:
            load = axis.middle(low, high)
        if self.probes >= self.max_probes:
            between = (f"the peak between {axis.shown(low)} and {axis.shown(high)}"
                       if low is not None and high is not None else "no bracket of the peak")
            self.problem = f"the search stopped at {self.max_probes} probes with {between}"
            return None
        return load

    def add(self, load: float, passed: bool) -> None:
        """The verdict of the probe at ``load``."""
        self.probes += 1
        if passed:
            self.low = load
        else:
            self.high = load


def probe_reasons(results: Mapping[str, Any], attainment: float) -> list[str]:
    """Why a probe's run (its ``results.*``) does not pass: every reason it is not
    valid, and too few requests meeting every SLO. Empty: it passes.

    >>> probe_reasons({"results.valid_reasons": [], "results.slo_attainment": 0.95}, 0.99)
    ['95.0 % of the requests met every SLO, under endpoint.search_attainment=0.99']
    """
    reasons = [str(reason) for reason in results.get("results.valid_reasons") or []]
    share = results.get("results.slo_attainment")
    if share is not None and share < attainment:
        reasons.append(f"{100 * share:.1f} % of the requests met every SLO, under "
                       f"endpoint.search_attainment={attainment:g}")
    return reasons


@dataclass
class ProbeRun:
    """What a probe's run gave: its ``results.*`` (serving_results'), its wall time,
    and whatever the caller needs to report it should it be the record's probe (its
    load run and plan)."""

    results: dict[str, Any]
    seconds: float
    payload: Any = None


#: A probe's figures in ``results.scenario_probes``: the dict's name → the result key.
_SUMMARY = {"valid": "results.valid", "requests": "results.requests",
            "slo_attainment": "results.slo_attainment",
            "goodput_requests_per_s": "results.goodput_requests_per_s",
            "goodput_tokens_per_s": "results.goodput_tokens_per_s",
            "output_tokens_per_s": "results.output_tokens_per_s",
            "requests_per_s": "results.requests_per_s", "ttft_p99": "results.ttft_p99",
            "tpot_p99": "results.tpot_p99", "latency_p99": "results.latency_p99",
            "client_kept_up": "results.client_kept_up"}


@dataclass
class Probe:
    """One probe: which search (``repeat``, from 0) ran it, at what load, its verdict
    and the reasons for it, and what it measured (``measured``, let go of once it
    can no longer be the record's probe)."""

    repeat: int
    load: float
    reasons: list[str]
    measured: ProbeRun | None

    @property
    def passed(self) -> bool:
        """It met every rule of a passing probe."""
        return not self.reasons

    def summary(self, axis: Axis, results: Mapping[str, Any]) -> dict[str, Any]:
        """Its element of ``results.scenario_probes``: the load (also as ``qps`` or
        ``concurrency``, as the in-process search names its rate), the verdict, and
        the figures that decided it."""
        named = "concurrency" if axis.integer else "qps"
        item: dict[str, Any] = {"repeat": self.repeat, "load": self.load,
                                named: int(self.load) if axis.integer else self.load,
                                "passed": self.passed, "reasons": self.reasons}
        item.update({name: results.get(key) for name, key in _SUMMARY.items()})
        item["seconds"] = self.measured.seconds if self.measured is not None else None
        return item


@dataclass
class Search:
    """Every search's outcome: the probes in order (their summaries), each search's
    peak, the problems that made a search not settle or cast doubt on it, whether
    the last one settled, and the probe whose figures the record holds."""

    axis: Axis
    start: float
    summaries: list[dict[str, Any]] = field(default_factory=list)
    peaks: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    settled: bool = True
    chosen: Probe | None = None

    @property
    def ci95(self) -> float | None:
        """Half-width of the 95 % interval of the peaks' mean: ``t(n-1) sd / √n``, the
        searches being independent draws; None below two peaks."""
        n = len(self.peaks)
        if n < 2:
            return None
        return t_quantile_975(n - 1) * sample_std(self.peaks) / math.sqrt(n)

    def wants_more(self, repeats: int | None) -> bool:
        """Whether to search again: ``repeats`` searches in all, or (None: ``auto``)
        until the interval is within :meth:`Axis.resolution` of the mean, between
        :data:`AUTO_MIN_REPEATS` and :data:`AUTO_MAX_REPEATS` searches; never after a
        search that did not settle."""
        done = len(self.peaks)
        if not self.settled:
            return False
        if repeats is not None:
            return done < repeats
        if done < AUTO_MIN_REPEATS:
            return True
        if done >= AUTO_MAX_REPEATS:
            return False
        half_width = self.ci95
        return half_width is None or half_width > self.axis.resolution(mean(self.peaks))

    def results(self) -> dict[str, Any]:
        """The search's own ``results.*``: the peak's mean, interval and each search's,
        its unit, the load of the record's probe and every probe (the record's other
        figures are the chosen probe's)."""
        peaks = self.peaks
        out: dict[str, Any] = {
            "results.peak_load": mean(peaks) if peaks else None,
            "results.peak_load_ci95": self.ci95,
            "results.peak_load_repeats": list(peaks),
            "results.peak_load_unit": self.axis.unit,
            "results.search_load": self.chosen.load if self.chosen is not None else None,
            "results.scenario_probes": self.summaries,
        }
        if self.axis.param == RATE:
            out["results.qps_search_start"] = self.start
        return out


#: Runs one probe at a load, in the search numbered (from 0): its measurements.
Measure = Callable[[float, int], Awaitable[ProbeRun]]


async def find_peak(axis: Axis, start: float, repeats: int | None, attainment: float,
                    measure: Measure) -> Search:
    """Search the highest load on ``axis`` from ``start`` whose probe passes (see the
    module's description), ``repeats`` times (None: ``auto``); ``measure(load, repeat)``
    runs one probe of search number ``repeat``."""
    search = Search(axis, start)
    while search.wants_more(repeats):
        repeat = len(search.peaks)
        bracket = Bracket(axis, start)
        # Only two probes of a search can become the record's: its highest passing one
        # and its lowest; the others' measurements are let go (their request data).
        best: Probe | None = None
        lowest: Probe | None = None
        lowest_failing: dict[str, Any] | None = None
        while (load := bracket.next_load()) is not None:
            measured = await measure(load, repeat)
            probe = Probe(repeat, load, probe_reasons(measured.results, attainment), measured)
            bracket.add(load, probe.passed)
            summary = probe.summary(axis, measured.results)
            search.summaries.append(summary)
            kept = [p for p in (best, lowest) if p is not None]
            if probe.passed and (best is None or load > best.load):
                best = probe
            if lowest is None or load < lowest.load:
                lowest = probe
            if not probe.passed and (lowest_failing is None
                                     or load < lowest_failing["load"]):
                lowest_failing = summary
            for other in (*kept, probe):
                if other is not best and other is not lowest:
                    other.measured = None
        previous, search.chosen = search.chosen, best if best is not None else lowest
        if previous is not None:  # an earlier search's: only the last one's is kept
            previous.measured = None
        for candidate in (best, lowest):
            if candidate is not None and candidate is not search.chosen:
                candidate.measured = None
        if best is not None:
            search.peaks.append(best.load)
        if bracket.problem:
            search.problems.append(bracket.problem)
            search.settled = False
        elif lowest_failing is not None and lowest_failing["client_kept_up"] is False:
            note = (f"at {axis.shown(lowest_failing['load'])} the client fell behind its "
                    f"schedule (results.client_kept_up false): the peak found may be the "
                    f"client's, not the server's")
            if note not in search.problems:
                search.problems.append(note)
    return search


def calibration_plan(plan: LoadPlan) -> LoadPlan:
    """The run that finds a rate search's start: a closed loop of one request in
    flight, one warm-up request, :data:`CALIBRATION_REQUESTS` after it, with
    ``plan``'s conversations."""
    return LoadPlan(mode="closed", concurrency=1, min_requests=CALIBRATION_REQUESTS,
                    warmup_requests=1, seed=plan.seed, turns=plan.turns)


def rate_search(axis: Axis, results: Mapping[str, Any], turns: int = 1) -> tuple[Axis, float]:
    """A rate search's axis and start from its calibration run's ``results.*``. The
    start is one stream's pace, 1000 / ``results.latency_mean`` (ms) requests per
    second, over ``turns`` (a rate counts conversations); the least rate probed is
    1/:data:`LOWEST_FRACTION` of it, where an open loop is one stream with idle gaps
    (lower ones would only take longer to fail the same way). ValueError, in words,
    when the calibration shows that no rate can pass: none of its requests
    succeeded, or fewer than :data:`CALIBRATION_ATTAINMENT` of them met the SLOs.

    >>> axis, start = rate_search(Axis(RATE, False, 0.01, 1000, 0.02),
    ...                           {"results.latency_mean": 250.0})
    >>> start, axis.minimum
    (4.0, 0.25)
    """
    latency = results.get("results.latency_mean")
    reasons = "; ".join(str(r) for r in results.get("results.valid_reasons") or [])
    if not latency:
        raise ValueError(f"the first requests of the search, one at a time, gave no latency "
                         f"to start the rate from ({reasons or 'no request succeeded'})")
    share = results.get("results.slo_attainment")
    if share is not None and share < CALIBRATION_ATTAINMENT:
        raise ValueError(f"one request at a time, {100 * share:.0f} % of the requests met "
                         f"the SLOs, so no rate meets them ({reasons or 'each missed one'})")
    start = min(max(1000.0 / float(latency) / turns, axis.minimum), axis.maximum)
    lowest = min(max(axis.minimum, start / LOWEST_FRACTION), start)
    return replace(axis, minimum=lowest), start


class ContinuedPrompts(PromptSource):
    """``source``'s prompts numbered on from ``first``: request *i* of a probe is
    ``source``'s request ``first + i`` (a conversation likewise), so that no probe
    resends a prompt an earlier probe sent and a server's prefix cache cannot answer
    a later probe faster than the first. ``first`` moves on as probes run."""

    def __init__(self, source: PromptSource, first: int = 0) -> None:
        # The same source, shared, not built again: its tokenizer and dataset are
        # loaded once.
        vars(self).update(vars(source))
        self.first = first

    def prompt(self, index: int) -> Prompt:
        return super().prompt(self.first + index)

    def conversation(self, session: int, turns: int) -> Conversation:
        return super().conversation(self.first + session, turns)
