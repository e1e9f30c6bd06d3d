"""The ``serving`` report: tail latency against achieved throughput over a sweep of
offered load, a table per curve with its bound and knee (the curves and the knee's
definition: :mod:`dlbench.report.serving.curves`; the chart and the HTML section:
:mod:`dlbench.report.serving.chart`).

Per group (device, phase, precision), a table of the knees when there are several
curves, then a table per curve: offered and achieved queries/s, p50, p90 and p99 (and
the percentile of the rules where it is another), valid, and the rules that failed.
Records that are not ok server-scenario runs are left out, with a warning per kind.

Example::

    report = build_serving_report(load_records(["runs/serving"]))
    print("\\n".join(render_report(report, "text")))
"""

from __future__ import annotations

import re
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
)

__all__ = ["Serving", "ServingReport", "build_serving_report", "curve_notes", "curve_table",
           "knees_table", "short_reason"]


@dataclass
class ServingReport(Report):
    """A serving report: its tables, and the curves they were made of (the HTML page
    draws them)."""

    curves: list[ServingCurve] = field(default_factory=list)


_PARAM_RE = re.compile(r"exp\.[a-z_]+")


def short_reason(reason: str) -> str:
    """The rule a sentence of ``results.valid_reasons`` says failed, in a few words:
    ``over exp.latency_bound_ms``, ``below exp.scenario_min_duration``, ``early stopping
    (exp.latency_bound_ms)``; a sentence that names no parameter as it is."""
    named = _PARAM_RE.search(reason)
    if named is None:
        return reason
    name = named.group(0)
    if reason.startswith("early stopping"):
        return f"early stopping ({name})"
    if name == "exp.latency_bound_ms":
        return f"over {name}" + (", stopped early" if "stopped after" in reason else "")
    return f"below {name}"


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
    are several curves, then a table per curve. ``ResultsError`` when no record is an
    ok server-scenario run with a point."""
    usable, warnings = server_records(records)
    if not usable:
        why = "; ".join(warnings) or "no records"
        raise ResultsError(
            f"none of the {len(records)} selected record(s) is an ok server-scenario run "
            f"with a point to draw ({why}); run a sweep such as -P exp.scenario=server "
            "-V 'exp.target_qps=[40,80,120]'")
    differs = environment_warning(usable)
    report = ServingReport(title="Serving curves: latency vs achieved throughput",
                           warnings=[*warnings, *([differs] if differs else [])])
    report.curves = serving_curves(usable)
    groups: dict[str, list[ServingCurve]] = {}
    for curve in report.curves:
        groups.setdefault(value_text(curve.group), []).append(curve)
    for members in groups.values():
        if len(members) > 1:
            report.tables.append(knees_table(members[0].group, members))
        report.tables += [curve_table(curve) for curve in members]
    report.summary = [
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
    return report


class Serving(ReportType):
    """The ``serving`` report type (``--target-variable`` does not apply)."""

    def build(self, records: Sequence[dict[str, Any]], options: ReportOptions) -> Report:
        """The serving report of ``records`` (see :func:`build_serving_report`)."""
        return build_serving_report(records)
