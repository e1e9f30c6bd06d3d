"""The highest server load that meets the latency bound (LoadGen's FindPeakPerformance).

Each probe is one whole server run at a target QPS, judged by every validity rule
(enough queries and time, the percentile under the bound, early stopping). The
search keeps the highest valid QPS ``low`` and the lowest invalid one ``high``:

1. bracket: from the start QPS, double while probes are valid (LoadGen widens its
   upper bound the same way, by its default step of 1, i.e. x2), or halve while
   they are not (LoadGen instead refuses a start that fails);
2. bisect: probe the middle of ``[low, high)`` until ``high - low`` is within
   ``tolerance`` of ``low`` (relative; LoadGen stops at a number of decimals of
   QPS, which suits one scale of system only).

Every probe is kept, in order, so the answer can be checked against each one. All
probes use the same schedule seed, so they differ by their rate only: their gaps are
one sequence of draws, rescaled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlbench.measure.loadgen.generator import Clock, ScenarioRun, ScenarioSettings, Serve, run
from dlbench.measure.loadgen.results import validity

#: The most probes one search runs (bracketing from a start 2^10 off takes 10).
MAX_PROBES = 30


@dataclass
class PeakSearch:
    """The outcome of a search: the best valid probe, every probe, and why the search
    did not settle when it did not."""

    best: ScenarioRun | None
    probes: list[ScenarioRun] = field(default_factory=list)
    problem: str = ""


def start_qps(settings: ScenarioSettings, serve: Serve, clock: Clock) -> float:
    """Where the search starts: half the better rate of one query of one sample and one
    full batch, each served once (after the worker's warm-up); a guess the bracketing
    step corrects in either direction."""
    rates = []
    for size in sorted({1, settings.max_batch}):
        began = clock.now()
        serve(size)
        took = clock.now() - began
        if took > 0:
            rates.append(size / took)
    if not rates:
        raise ValueError("serve took no time: cannot guess a starting QPS")
    return 0.5 * max(rates)


def find_peak_qps(settings: ScenarioSettings, serve: Serve, clock: Clock, start: float,
                  tolerance: float, max_probes: int = MAX_PROBES) -> PeakSearch:
    """Search the largest QPS from ``start`` at which a server run of ``settings`` is
    valid, within ``tolerance`` (relative)."""
    if start <= 0 or not 0 < tolerance < 1:
        raise ValueError(f"start {start} must be > 0 and tolerance {tolerance} in (0, 1)")
    search = PeakSearch(best=None)

    def probe(qps: float) -> tuple[ScenarioRun, bool]:
        result = run(settings.at_qps(qps), serve, clock)
        search.probes.append(result)
        return result, not validity(result)

    def qps(result: ScenarioRun) -> float:
        return result.settings.target_qps

    low: ScenarioRun | None = None
    high: ScenarioRun | None = None
    result, valid = probe(start)
    if valid:
        low = result
        while high is None and len(search.probes) < max_probes:
            result, valid = probe(qps(result) * 2)
            low, high = (result, high) if valid else (low, result)
    else:
        high = result
        while low is None and len(search.probes) < max_probes:
            result, valid = probe(qps(result) / 2)
            low, high = (result, high) if valid else (low, result)
    search.best = low
    if low is None:
        search.problem = (f"no probe met the rules, down to {qps(search.probes[-1]):.4g} QPS "
                          f"after {len(search.probes)} probes")
        return search
    if high is None:
        search.problem = (f"every probe met the rules, up to {qps(low):.4g} QPS after "
                          f"{len(search.probes)} probes: the peak is higher")
        return search
    while qps(high) - qps(low) > tolerance * qps(low):
        if len(search.probes) >= max_probes:
            search.problem = (f"the search stopped at {max_probes} probes with the peak "
                              f"between {qps(low):.4g} and {qps(high):.4g} QPS")
            break
        result, valid = probe((qps(low) + qps(high)) / 2)
        low, high = (result, high) if valid else (low, result)
    search.best = low
    return search
