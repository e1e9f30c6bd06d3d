"""The charts of the HTML report: throughput against replica batch, one chart per model
and device name, each with a caption naming the unit its records state.

:mod:`dlbench.report.html.page` places them on the page; this module decides what they
show, so that a test can check the same charts the page carries.

Example::

    for chart in report_charts(load_records(["runs/sweep"])):
        print(chart.caption, chart.problems)  # "resnet50 (fake, cpu): throughput ..." []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.report.charts.series import ChartSeries, build_series, value_text
from dlbench.results.values import is_number as _is_number

X = "exp.replica_batch"
Y = "results.throughput"

#: Named in a chart's caption when all of its records share them.
CAPTION_KEYS = ("exp.framework", "exp.device_type", "hw.device_name")


@dataclass
class ReportChart:
    """One chart of the page: its caption, its series, the SVG drawn of them, and what
    :func:`~dlbench.report.charts.checks.chart_problems` found wrong with it."""

    caption: str
    series: list[ChartSeries]
    svg: str
    problems: list[str]


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
    device), as SVG.

    Within a chart, build_series draws one line per combination of the other
    parameters that vary (framework, device, precision...), so it never averages
    measurements of different things; series in different units get a panel each.
    """
    # Imported here: matplotlib takes a while to load, and text reports never need it.
    from dlbench.report.charts.charts import render_chart

    charts = []
    for group in chart_groups(records):
        series = build_series(group, X, Y)
        problems: list[str] = []
        # ylabel equal to the y key: a single unlabelled series then needs no legend;
        # the axis adds the records' unit to it.
        svg = render_chart(series, xlabel=X, ylabel=Y, fmt="svg", problems=problems)
        charts.append(ReportChart(_caption(group, series), series, svg.decode("utf-8"),
                                  problems))
    return charts
