"""What the worker calls for ``exp.scenario`` other than ``batch``.

:func:`run_scenario` turns an experiment's resolved parameters into
:class:`~dlbench.measure.loadgen.generator.ScenarioSettings`, runs the scenario (or, with
``exp.target_qps=auto``, the peak search) against ``serve``, and returns the
``results.*`` values for the log. ``serve(samples)`` must return when that many
samples are done; a backend with a fixed batch shape serves a short batch as a full
one (padding), which is what the latency of a fixed-shape engine is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.measure.loadgen.generator import Clock, RealClock, ScenarioSettings, Serve, run
from dlbench.measure.loadgen.peak_search import find_peak_qps, start_qps
from dlbench.measure.loadgen.results import probe_summary, summarize
from dlbench.measure.loadgen.scenarios.base import LOADGEN_MIN_QUERIES, load_scenario

AUTO = "auto"

__all__ = ["LOADGEN_MIN_QUERIES", "default_min_queries", "run_scenario",
           "settings_from_params"]


def default_min_queries(scenario: str, percentile: float) -> int:
    """``exp.scenario_min_queries=auto`` for ``scenario`` at ``percentile`` (percent):
    LoadGen's 100, raised for the streams to the queries an early-stopping estimate of
    the percentile needs (662 at the 99th: the multi-stream count of MLPerf's
    configuration), and for the server to those a run with no query over the bound
    needs (459 at the 99th); each scenario says which
    (:meth:`~dlbench.measure.loadgen.scenarios.base.LoadScenario.default_min_queries`)."""
    return load_scenario(scenario).default_min_queries(percentile)


def settings_from_params(params: Mapping[str, Any], target_qps: float | None = None
                         ) -> ScenarioSettings:
    """The settings of ``params`` (an experiment's resolved parameters); a server's
    rate is ``target_qps`` when given (the peak search's placeholder)."""
    scenario = str(params["exp.scenario"])
    percentile = (load_scenario(scenario).default_percentile
                  if params["exp.latency_percentile"] == AUTO
                  else float(params["exp.latency_percentile"]))
    count = (default_min_queries(scenario, percentile)
             if params["exp.scenario_min_queries"] == AUTO
             else int(params["exp.scenario_min_queries"]))
    batch = int(params["exp.replica_batch"])
    qps = target_qps if target_qps is not None else float(params["exp.target_qps"])
    return ScenarioSettings(
        scenario=scenario, min_queries=count,
        min_duration_s=float(params["exp.scenario_min_duration"]),
        samples_per_query=batch, max_batch=batch,
        max_queue_delay_s=float(params["exp.max_queue_delay_ms"]) / 1000.0,
        target_qps=qps, latency_bound_s=float(params["exp.latency_bound_ms"]) / 1000.0,
        percentile=percentile, seed=int(params["exp.scenario_seed"]))


def run_scenario(params: Mapping[str, Any], serve: Serve,
                 clock: Clock | None = None) -> dict[str, Any]:
    """Run ``params``'s scenario against ``serve`` and return its ``results.*``: the
    latencies and rates with every raw figure, ``results.valid`` and why not; with
    ``exp.target_qps=auto``, those of the highest valid probe, every probe in
    ``results.scenario_probes`` and the search's start in ``results.qps_search_start``.
    """
    clock = clock if clock is not None else RealClock()
    if params["exp.target_qps"] != AUTO:
        return summarize(run(settings_from_params(params), serve, clock))
    settings = settings_from_params(params, target_qps=1.0)  # each probe sets its own
    start = start_qps(settings, serve, clock)
    search = find_peak_qps(settings, serve, clock, start,
                           float(params["exp.qps_search_tolerance"]))
    # Without a valid probe, the last one (the lowest load tried) is shown, invalid.
    results = summarize(search.best if search.best is not None else search.probes[-1])
    results["results.qps_search_start"] = start
    results["results.scenario_probes"] = [probe_summary(p) for p in search.probes]
    if search.problem:
        results["results.valid"] = False
        results["results.valid_reasons"] = [*results["results.valid_reasons"], search.problem]
    return results
