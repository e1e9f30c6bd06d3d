"""The ``serving`` report: tail latency against achieved throughput over a sweep of
offered load, a table per curve with its bound and knee (the curves and the knee's
definition: :mod:`dlbench.report.serving.curves`; the chart and the HTML section:
:mod:`dlbench.report.serving.chart`).

Per group (device, phase, precision), a table of the knees when there are several
curves, then a table per curve: offered and achieved queries/s, p50, p90 and p99 (and
the percentile of the rules where it is another), valid, and the rules that failed.
Records that are not ok server-scenario runs are left out, with a warning per kind.

Generate-phase records (an endpoint's, in-process generation's) make token curves
instead, after the latency curves: output tokens/s, TTFT, TPOT and goodput by load
(:mod:`dlbench.report.serving.tokens.curves`, their tables
:mod:`dlbench.report.serving.tokens.tables`); a selection without them gives the latency
report alone, unchanged by their code.

Example::

    report = build_serving_report(load_records(["runs/serving"]))
    print("\\n".join(render_report(report, "text")))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.errors import ResultsError
from dlbench.report.aggregate import LabeledTable, environment_warning
from dlbench.report.cells import Report, Table
from dlbench.report.charts.series import value_text
from dlbench.report.registry import ReportOptions, ReportType
from dlbench.report.serving.curves import (
    KNEE_FACTOR,
    PERCENTILES,
    ServingCurve,
    percentile_text,
    server_records,
    serving_curves,
    short_reason,
)
from dlbench.report.serving.tokens.curves import (
    ATTAINMENT,
    KNEE_ATTAINMENT,
    THROUGHPUT,
    TokenCurve,
    token_curves,
    token_records,
)
from dlbench.report.serving.tokens.tables import curve_token_table, token_knees_table

__all__ = ["Serving", "ServingReport", "build_serving_report", "curve_notes", "curve_table",
           "knees_table", "short_reason"]


@dataclass
class ServingReport(Report):
    """A serving report: its tables, and the curves they were made of (the HTML page
    draws them): latency curves of server runs, token curves of generate-phase runs."""

    curves: list[ServingCurve] = field(default_factory=list)
    token_curves: list[TokenCurve] = field(default_factory=list)


def _limit_text(curve: ServingCurve) -> str:
    pct = percentile_text(curve.percentile)
    bounds = curve.bounds
    if bounds and all(p.bound_ms is not None for p in curve.points):
        return f"within the bound ({', '.join(f'{b:g}' for b in bounds)} ms)"
    low = next((limit for point, limit in zip(curve.points, curve.limits, strict=True)
                if point.bound_ms is None and limit is not None), None)
    twice = f"{KNEE_FACTOR:g}x its {pct} at the lowest offered load"
    return f"within {twice} ({low:.2f} ms)" if low is not None else f"within {twice}"


def curve_notes(curve: ServingCurve) -> list[str]:
    """The bound and the knee of ``curve``, as lines under its table."""
    pct, unit = percentile_text(curve.percentile), curve.x_unit
    notes = []
    if curve.search is not None:
        notes.append(f"points: the probes of the exp.target_qps=auto search {curve.search}, "
                     "by offered load; p50, p90 and p99 are recorded for its answer only")
    bounds = curve.bounds
    notes.append(f"bound: {pct} <= {', '.join(f'{b:g}' for b in bounds)} ms "
                 "(exp.latency_bound_ms)" if bounds else
                 "no bound (exp.latency_bound_ms=0)")
    if any(point.reasons for point in curve.points):
        notes.append("reasons: the rules a run failed, in short; results.valid_reasons (a "
                     "search's results.scenario_probes) words them in full")
    if curve.knee is None:
        notes.append(f"knee: none, no point's {pct} is {_limit_text(curve)}")
    else:
        knee = curve.points[curve.knee]
        notes.append(
            f"knee: {knee.achieved or 0.0:.2f} {unit} achieved at {knee.offered:.2f} offered, "
            f"{pct} {knee.at_percentile or 0.0:.2f} ms: the highest achieved throughput "
            f"whose {pct} is {_limit_text(curve)}"
            # Within the limit by its percentile, yet LoadGen's rules may not accept it
            # (too few queries for early stopping's confidence, too short a run).
            + (f"; not valid: {'; '.join(map(short_reason, knee.reasons))}"
               if knee.valid is False else ""))
    return notes


def _title(text: str, group: Mapping[str, Any]) -> str:
    suffix = ", ".join(f"{k}={value_text(v)}" for k, v in group.items())
    return f"{text} [{suffix}]" if suffix else text


def curve_table(curve: ServingCurve) -> LabeledTable:
    """The points of ``curve``: offered and achieved rates, p50, p90, p99 (and the
    percentile of the rules where it is another), valid and why not."""
    unit, pct = curve.x_unit, curve.percentile
    extra = pct not in tuple(q for q, _ in PERCENTILES)
    columns = [f"offered ({unit})", f"achieved ({unit})",
               *(f"{percentile_text(q)} ({curve.y_unit})" for q, _ in PERCENTILES)]
    if extra:
        columns.append(f"{percentile_text(pct)} ({curve.y_unit})")
    rows = []
    for point in curve.points:
        # A probe knows only the rules' percentile: it fills that column.
        latencies = [point.percentiles.get(q) if point.percentiles.get(q) is not None
                     or q != pct else point.at_percentile for q, _ in PERCENTILES]
        rows.append([point.offered, point.achieved, *latencies,
                     *([point.at_percentile] if extra else []), point.valid,
                     "; ".join(map(short_reason, point.reasons)) or None])
    return LabeledTable(
        title=_title(f"Serving curve: {curve.label}", curve.group),
        columns=[*columns, "valid", "reasons"], rows=rows, notes=curve_notes(curve),
        group={**curve.group, **curve.key}, label_columns=1)


def knees_table(group: Mapping[str, Any], curves: Sequence[ServingCurve]) -> Table:
    """One row per curve of a group: its knee, the latency there, and its limit."""
    unit = curves[0].x_unit
    rows = []
    for curve in curves:
        knee = None if curve.knee is None else curve.points[curve.knee]
        limit = None if curve.knee is None else curve.limits[curve.knee]
        valid = sum(p.valid is True for p in curve.points)
        rows.append([curve.label, percentile_text(curve.percentile),
                     knee.offered if knee else None, knee.achieved if knee else None,
                     knee.at_percentile if knee else None, limit,
                     f"{valid} of {len(curve.points)}"])
    return LabeledTable(
        title=_title("Knees: the highest achieved throughput within the limit", group),
        columns=["curve", "percentile", f"offered ({unit})", f"achieved ({unit})",
                 "latency (ms)", "limit (ms)", "valid points"],
        rows=rows, group=dict(group), label_columns=1)


def build_serving_report(records: Sequence[Mapping[str, Any]]) -> ServingReport:
    """The serving report of ``records``: per group, a table of the knees when there
    are several curves, then a table per curve; the latency curves of server runs
    first, then the token curves of generate-phase runs. ``ResultsError`` when no
    record is an ok server-scenario run or generate-phase run with a point."""
    usable, warnings = server_records(records)
    tokens, token_warnings = token_records(records)
    if not usable and not tokens:
        why = "; ".join([*warnings, *token_warnings]) or "no records"
        raise ResultsError(
            f"none of the {len(records)} selected record(s) is an ok server-scenario run "
            f"with a point to draw, nor an ok generate-phase run with {THROUGHPUT} ({why}); "
            "run a sweep such as -P exp.scenario=server -V 'exp.target_qps=[40,80,120]'")
    differs = environment_warning([*usable, *tokens])
    titles = [*(["latency vs achieved throughput"] if usable else []),
              *(["output tokens/s vs TTFT and TPOT"] if tokens else [])]
    report = ServingReport(title=f"Serving curves: {'; '.join(titles)}",
                           warnings=[*warnings, *token_warnings, *([differs] if differs else [])])
    if usable:
        _latency_tables(report, usable)
    if tokens:
        _token_tables(report, tokens)
    return report


def _latency_tables(report: ServingReport, usable: Sequence[Mapping[str, Any]]) -> None:
    """The latency curves of server runs: their tables and summary."""
    report.curves = serving_curves(usable)
    groups: dict[str, list[ServingCurve]] = {}
    for curve in report.curves:
        groups.setdefault(value_text(curve.group), []).append(curve)
    for members in groups.values():
        if len(members) > 1:
            report.tables.append(knees_table(members[0].group, members))
        report.tables += [curve_table(curve) for curve in members]
    report.summary += [
        f"{len(usable)} server-scenario record(s): {len(report.curves)} curve(s) in "
        f"{len(groups)} group(s).",
        "A curve per model (and framework), and per any other parameter that differs at "
        "one offered load (exp.target_qps); a search (exp.target_qps=auto) is a curve "
        "of its probes. Rows by offered load.",
        f"Knee: the highest achieved throughput whose latency at the percentile of the "
        f"rules is within exp.latency_bound_ms, or without a bound within "
        f"{KNEE_FACTOR:g}x that latency at the lowest offered load.",
        "Latency: from each query's scheduled arrival to its answer (LoadGen's server "
        "rule), ms.",
    ]


def _token_tables(report: ServingReport, usable: Sequence[Mapping[str, Any]]) -> None:
    """The token curves of generate-phase runs: their tables and summary."""
    report.token_curves = token_curves(usable)
    groups: dict[str, list[TokenCurve]] = {}
    for curve in report.token_curves:
        groups.setdefault(value_text(curve.group), []).append(curve)
    for members in groups.values():
        if len(members) > 1:
            report.tables.append(token_knees_table(members[0].group, members))
        report.tables += [curve_token_table(curve) for curve in members]
    report.summary += [
        f"{len(usable)} generate-phase record(s): {len(report.token_curves)} token "
        f"curve(s) in {len(groups)} group(s).",
        "A curve per model (and framework), and per any other parameter that differs at "
        "one load; rows by load: exp.target_qps, requests offered per second (open loop, "
        "exp.scenario=server), or exp.replica_batch, requests in flight (closed loop, "
        "exp.scenario=batch).",
        f"Knee: the highest output tokens/s with at least {KNEE_ATTAINMENT:.0%} of "
        f"requests within the SLOs given ({ATTAINMENT} >= {KNEE_ATTAINMENT:g}; "
        f"endpoint.slo_*), or without an SLO with TTFT p99 and TPOT p99 within "
        f"{KNEE_FACTOR:g}x those at the lowest load; never a point whose client fell "
        "behind (results.client_kept_up false).",
        "TTFT, TPOT and ITL as the records define them, ms (docs/serving.md); output "
        "tokens/s and goodput over the run's steady-state window.",
    ]
    if any(curve.search is not None for curve in report.token_curves):
        report.summary.append(
            "A load search (exp.target_qps=auto, exp.replica_batch=auto) is a curve of its "
            "own: its probes over all its searches (a load probed by several, their mean), "
            "its knee the search's answer (results.search_load), its peak the mean of its "
            "searches' peaks with a 95 % interval (results.peak_load, "
            "results.peak_load_ci95).")


class Serving(ReportType):
    """The ``serving`` report type (``--target-variable`` does not apply)."""

    def build(self, records: Sequence[dict[str, Any]], options: ReportOptions) -> Report:
        """The serving report of ``records`` (see :func:`build_serving_report`)."""
        return build_serving_report(records)
