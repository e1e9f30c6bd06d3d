"""The charts of the HTML report: throughput against replica batch, one chart per model
and device name, each with a caption naming the unit its records state.

Each is the chart ``dlbench plot`` draws (:func:`~dlbench.report.charts.charts.draw_chart`),
the same matplotlib figure, inlined as SVG (:func:`~dlbench.report.charts.figure.inline_svg`):
the same y limits, panels (one per unit), axis labels, legend entries, error bars
(clipped with an arrowhead where they leave the axes) and colours. What
:func:`~dlbench.report.charts.checks.chart_problems` finds wrong with a drawing goes
under it; its points go in a table beside it.

:mod:`dlbench.report.html.page` places them on the page; this module decides what they
show, so that a test can check the same charts the page carries.

Example::

    for chart in report_charts(load_records(["runs/sweep"])):
        print(chart.caption, chart.problems)  # "resnet50 (fake, cpu): throughput ..." []
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.report.cells import Table
from dlbench.report.charts.charts import DrawnChart, draw_chart
from dlbench.report.charts.checks import chart_problems
from dlbench.report.charts.figure import inline_svg
from dlbench.report.charts.series import ChartSeries, build_series, value_text
from dlbench.report.html.markup import TableView, table_view
from dlbench.results.values import is_number as _is_number
from dlbench.textsafe import safe_text

X = "exp.replica_batch"
Y = "results.throughput"

#: Named in a chart's caption when all of its records share them.
CAPTION_KEYS = ("exp.framework", "exp.device_type", "hw.device_name")


@dataclass
class ReportChart:
    """One chart of the page: its caption, its series, the figure drawn of them, its
    SVG, and what the drawing found wrong with it (a point outside its axes)."""

    caption: str
    series: list[ChartSeries]
    drawn: DrawnChart
    svg: str
    problems: list[str]

    @property
    def table(self) -> TableView:
        """The chart's points as the page's table shows them."""
        return table_view(chart_table(self))



def chart_groups(records: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The ok records with a throughput, one group (chart) per model and device name.

    ``hw.device_name`` is no parameter, so build_series would not split series by it
    unless it varied; two GPU types averaged into one line would be a number nobody
    measured.
    """
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        if (
            record.get("exp.status") == "ok"
            and _is_number(record.get(Y))
            and record.get(X) is not None
        ):
            key = (str(record.get("exp.model", "?")), str(record.get("hw.device_name", "")))
            groups.setdefault(key, []).append(record)
    return list(groups.values())


def _caption(group: Sequence[Mapping[str, Any]], series: Sequence[ChartSeries]) -> str:
    """``resnet50 (fake, cpu): throughput in samples/s vs replica batch``: the model,
    what all its records share, and the unit(s) the records state."""
    first = group[0]
    fixed = list(  # dict: the fake backend's device name is "fake" too
        dict.fromkeys(
            value_text(first[k])
            for k in CAPTION_KEYS
            if k in first and all(r.get(k) == first[k] for r in group)
        )
    )
    model = value_text(first.get("exp.model", "?"))
    units = list(dict.fromkeys(s.unit for s in series if s.unit))
    per = f" in {', '.join(units)}" if units else ""
    head = f"{model} ({', '.join(fixed)})" if fixed else model
    return f"{head}: throughput{per} vs replica batch"


def report_charts(records: Sequence[Mapping[str, Any]]) -> list[ReportChart]:
    """Throughput against replica batch for the ok records, one chart per model (and
    device), drawn by matplotlib.

    Within a chart, build_series draws one line per combination of the other
    parameters that vary (framework, device, precision...), so it never averages
    measurements of different things; series in different units get a panel each.
    """
    charts: list[ReportChart] = []
    for group in chart_groups(records):
        series = build_series(group, X, Y)
        # matplotlib warns of a glyph its font lacks quoting the character itself:
        # its warnings become the chart's problems, escaped, as dlbench plot's do.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # ylabel equal to the y key: a single unlabelled series then needs no
            # legend; the axis adds the records' unit to it.
            drawn = draw_chart(series, xlabel=X, ylabel=Y)
            problems = chart_problems(drawn, layout=False)  # laid out by draw_chart
            svg = inline_svg(drawn.figure, ids=f"chart-{len(charts)}-")
        problems += list(dict.fromkeys(safe_text(str(w.message)) for w in caught))
        charts.append(ReportChart(_caption(group, series), series, drawn, svg, problems))
    return charts



def chart_table(chart: ReportChart) -> Table:
    """The points of ``chart`` as a table: a row per point of each series, with its
    value, unit, number of runs and ±1 sd (missing for a single run)."""
    rows = []
    for s in chart.series:
        for i, value in enumerate(s.x):
            rows.append([s.label, value if _is_number(value) else value_text(value), s.y[i],
                         s.unit or None,
                         s.n[i] if s.n is not None else None,
                         s.err[i] if s.err is not None and s.err[i] > 0 else None])
    return Table(chart.caption, ["series", X, Y, "unit", "runs", "sd"], rows)
