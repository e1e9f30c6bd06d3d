"""A scenario run's figures and its validity, as ``results.*`` values.

Percentiles follow LoadGen: the ``q``-th percentile of ``n`` latencies is the sorted
value at 0-based index ``floor(n * q / 100)``. For 100 latencies the 90th percentile
is the 91st smallest: one rank above the nearest-rank method when ``n * q / 100`` is
a whole number, the same otherwise. (``results.time_p*`` of the batch scenario
interpolate linearly, as numpy does; the two differ by design, and this one lets a
figure be compared with a LoadGen summary.)

A run is valid when every rule holds; each rule that fails adds one sentence to
``results.valid_reasons``:

- enough queries (``min_queries``) and enough time (``min_duration_s``), measured as
  LoadGen does: to the last issue (streams), the last scheduled arrival (server) or
  the last completion (offline);
- server with a latency bound: the percentile is under it, and LoadGen's early
  stopping test holds for the queries over it (:mod:`dlbench.measure.loadgen.early_stopping`);
- single- and multi-stream: enough queries for an early-stopping estimate of the
  percentile, ``results.latency_early_stop``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dlbench.measure.loadgen.early_stopping import bound_holds, percentile_estimate
from dlbench.measure.loadgen.generator import ScenarioRun
from dlbench.measure.loadgen.scenarios.base import load_scenario
from dlbench.results.stats import loadgen_percentile, mean

_MS = 1000.0


def validity(run: ScenarioRun) -> list[str]:
    """Why ``run`` is not valid, one sentence per failed rule; empty when it is."""
    s = run.settings
    scenario = load_scenario(s.scenario)
    reasons = []
    if run.queries < s.min_queries:
        reasons.append(f"ran {run.queries} {scenario.counted}, fewer than the "
                       f"{s.min_queries} exp.scenario_min_queries asks for")
    if run.last_start < s.min_duration_s:
        reasons.append(f"{scenario.last_start_text} at {run.last_start:.3f} s, before the "
                       f"{s.min_duration_s:g} s exp.scenario_min_duration asks for")
    if not run.latencies:
        return reasons
    return reasons + scenario.latency_reasons(run)


def bound_reasons(run: ScenarioRun) -> list[str]:
    """Why ``run`` breaks its latency bound (the server's): the percentile over it, or
    too few queries for early stopping to be confident it is under."""
    s = run.settings
    value = loadgen_percentile(run.latencies, s.percentile)
    bound_ms = s.latency_bound_s * _MS
    if value > s.latency_bound_s:
        early = (f"; stopped after {len(run.latencies)} of {run.planned} queries, the "
                 f"bound being lost whatever the rest did" if run.stopped_early else "")
        return [f"the {s.percentile:g}th percentile latency, {value * _MS:.3f} ms, is over "
                f"exp.latency_bound_ms={bound_ms:g}{early}"]
    holds, overs, needed = bound_holds(run.latencies, s.latency_bound_s, s.percentile / 100.0)
    if holds:
        return []
    return [f"early stopping: {overs} of {len(run.latencies)} queries over "
            f"exp.latency_bound_ms={bound_ms:g} need at least {needed} queries for 99% "
            f"confidence in the {s.percentile:g}th percentile"]


def _ms(values: Sequence[float]) -> list[float]:
    return [value * _MS for value in values]


def summarize(run: ScenarioRun) -> dict[str, Any]:
    """The ``results.*`` of one run: latencies (ms), rates, every raw figure they come
    from, and the validity verdict."""
    s = run.settings
    scenario = load_scenario(s.scenario)
    results: dict[str, Any] = {"results.queries": run.queries,
                               "results.timed_seconds": run.end}
    if run.end > 0:
        results["results.throughput"] = run.samples / run.end
        results["results.qps_achieved"] = scenario.completed_for_rate(run) / run.end
    results.update(scenario.rate_results(run))
    lat = run.latencies
    if lat:
        results["results.latency_mean"] = mean(lat) * _MS
        for q in (50, 90, 99):
            results[f"results.latency_p{q}"] = loadgen_percentile(lat, q) * _MS
        results["results.latency_max"] = max(lat) * _MS
        results["results.latency_at_percentile"] = loadgen_percentile(lat, s.percentile) * _MS
        if scenario.estimates_percentile:
            estimate = percentile_estimate(lat, s.percentile / 100.0)
            results["results.latency_early_stop"] = (
                None if estimate is None else estimate * _MS)
        results["results.latency_data"] = _ms(lat)
    if run.waits:
        results["results.wait_mean"] = mean(run.waits) * _MS
    if scenario.keeps_service:
        results["results.service_data"] = _ms(run.service)
        results["results.batch_data"] = list(run.batch_sizes)
    reasons = validity(run)
    results["results.valid"] = not reasons
    results["results.valid_reasons"] = reasons
    return results


def probe_summary(run: ScenarioRun) -> dict[str, Any]:
    """One probe of the peak search, as an element of ``results.scenario_probes``."""
    s = run.settings
    reasons = validity(run)
    return {
        "qps": s.target_qps,
        "valid": not reasons,
        "reasons": reasons,
        "queries": run.queries,
        "planned": run.planned,
        "latency_at_percentile": (loadgen_percentile(run.latencies, s.percentile) * _MS
                                  if run.latencies else None),
        "qps_achieved": (run.queries - 1) / run.end if run.end > 0 else None,
        "seconds": run.end,
    }
