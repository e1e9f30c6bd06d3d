"""The charts of the HTML report: throughput against replica batch, one chart per model
and device name, each with a caption naming the unit its records state, drawn as SVG
by the one SVG writer (:mod:`dlbench.report.charts.svg`).

:mod:`dlbench.report.html.page` places them on the page; this module decides what they
show, so that a test can check the same charts the page carries. They are the charts
``dlbench plot`` draws with matplotlib (:func:`~dlbench.report.charts.charts.draw_chart`)
from the same series: the same y limits, panels (one per unit), axis labels, legend
entries, error bars and colours.

Example::

    for chart in report_charts(load_records(["runs/sweep"])):
        print(chart.caption, chart.problems)  # "resnet50 (fake, cpu): throughput ..." []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.report.cells import Table
from dlbench.report.charts.axes import axis_label, nice_step, tick_values
from dlbench.report.charts.charts import (
    series_in_legend,
    unit_panels,
    x_categories,
    x_limits,
)
from dlbench.report.charts.errorbars import (
    CI_LABEL,
    CLIP_LABEL,
    ErrorBar,
    error_bars,
    error_kinds,
    legend_kinds,
    y_limits,
)
from dlbench.report.charts.series import ChartSeries, build_series, key_text, value_text
from dlbench.report.charts.svg import (
    DASHED,
    PALETTE,
    LegendEntry,
    Scale,
    error_bar,
    frame,
    legend,
    marker,
    polyline,
    svg_document,
    x_grid,
    x_title,
    y_grid,
    y_title,
)
from dlbench.report.html.markup import escape
from dlbench.results.values import is_number as _is_number

X = "exp.replica_batch"
Y = "results.throughput"

#: Named in a chart's caption when all of its records share them.
CAPTION_KEYS = ("exp.framework", "exp.device_type", "hw.device_name")


@dataclass
class ReportChart:
    """One chart of the page: its caption, its series, the SVG drawn of them, and what
    the drawing found wrong with it (a point outside its axes)."""

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


_WIDTH = 700.0  # as the 7 inches at 100 dpi of a PNG
_LEFT, _RIGHT, _TOP = 84.0, 16.0, 12.0
_PANEL, _GAP = 240.0, 18.0  # height of a panel, and between panels
_MAX_X_TICKS = 16  # numeric x values get a tick each, up to this many


@dataclass
class _XAxis:
    """The x axis as :func:`~dlbench.report.charts.charts.draw_chart` lays it out: its
    scale, ticks and their labels (None: the ticks' numbers), each x value's position,
    and whether the values are categories (evenly spaced slots, never joined)."""

    scale: Scale
    ticks: list[float]
    labels: list[str] | None
    position: dict[str, float]
    categorical: bool


def _x_axis(series: Sequence[ChartSeries]) -> _XAxis:
    categories = x_categories(series)
    right = _WIDTH - _RIGHT
    names = [value_text(v) for v in categories]
    if not all(_is_number(v) for v in categories):
        # Half a slot either side, so the first and last points are not on the frame.
        return _XAxis(Scale(-0.5, len(categories) - 0.5, _LEFT, right),
                      [float(i) for i in range(len(categories))], names,
                      {key_text(v): float(i) for i, v in enumerate(categories)}, True)
    values = [float(v) for v in categories]
    low, high = x_limits(values)
    position = {key_text(v): float(v) for v in categories}
    if len(values) <= _MAX_X_TICKS:
        return _XAxis(Scale(low, high, _LEFT, right), values, names, position, False)
    return _XAxis(Scale(low, high, _LEFT, right), tick_values(low, high, nice_step(high - low)),
                  None, position, False)


def series_chart_svg(series: Sequence[ChartSeries], *, xlabel: str, ylabel: str,
                     problems: list[str] | None = None) -> str:
    """``series`` as an SVG line chart, laid out as ``dlbench plot`` lays out its line
    chart: a panel (y axis, labelled :func:`axis_label` of ``ylabel`` and the unit) per
    unit; numeric x on a numeric axis, anything else in evenly spaced slots where the
    points are not joined; ±1 sd error bars solid, a single run's 95 % CI dashed, each
    cut with an arrowhead where it leaves the axes; the legend under the axes, inside
    the image. Each point has a tooltip with its value
    and the number of runs; a point drawn outside its axes is appended to ``problems``.
    """
    axis = _x_axis(series)
    x, categorical = axis.scale, axis.categorical
    right = _WIDTH - _RIGHT
    panels = unit_panels(series)
    bottom = _TOP + len(panels) * (_PANEL + _GAP) - _GAP
    # The grid first: later elements are drawn over earlier ones.
    parts = x_grid(x, axis.ticks, top=_TOP, bottom=bottom, labels=axis.labels)
    legend_entries: list[LegendEntry] = []
    kinds: list[str] = []
    top = _TOP
    colour_number = 0
    for unit, members in panels:
        low, high = y_limits(members, "line")
        y = Scale(low, high, top + _PANEL, top)
        label = axis_label(ylabel, unit)
        parts += [*y_grid(y, tick_values(low, high, nice_step(high - low)), left=_LEFT,
                          right=right),
                  y_title(y, 16, label), frame(_LEFT, top, right, top + _PANEL)]
        count = len(members)
        for number, s in enumerate(members):
            colour = PALETTE[(colour_number + number) % len(PALETTE)]
            xs = [axis.position[key_text(v)] for v in s.x]
            if categorical:  # dodged, so that series at one slot do not hide each other
                xs = [p + (number - (count - 1) / 2) * (0.5 / count) for p in xs]
            points = [(x(px), y(py)) for px, py in zip(xs, s.y, strict=True)]
            group = [f'<g class="series" data-label="{escape(s.label)}">']
            if not categorical and len(points) > 1:
                group.append(polyline(points, colour))
            bars = error_bars(s, (low, high))
            for i, (px, py) in enumerate(points):
                group += _error_bars([b for b in bars if b.index == i], px, y, colour)
                runs = s.n[i] if s.n is not None else 1
                tip = (f"{s.label}: {value_text(s.x[i])} → {s.y[i]:,.6g}"
                       f"{' ' + unit if unit else ''} ({runs} run(s))")
                group.append(marker(px, py, colour, tooltip=tip,
                                    data=[("x", value_text(s.x[i])), ("y", repr(s.y[i]))]))
                if problems is not None and not (x.contains(px) and y.contains(py)):
                    problems.append(f"point ({value_text(s.x[i])}, {s.y[i]:g}) lies on or "
                                    f"past the edge of the axes {label!r}")
            parts += [*group, "</g>"]
            legend_entries.append(LegendEntry(s.label, colour,
                                              "marker" if categorical else "line"))
            kinds += [k for k in error_kinds(s, (low, high)) if k not in kinds]
        colour_number += count
        top += _PANEL + _GAP
    parts.append(x_title(x, bottom + 36, xlabel))
    entries = legend_entries if series_in_legend(series, ylabel) else []
    symbols = {CI_LABEL: "dash", CLIP_LABEL: "clip"}
    entries += [LegendEntry(k, "#000000", symbols.get(k, "solid")) for k in legend_kinds(kinds)]
    drawn, height = legend(entries, left=_LEFT, top=bottom + 52, width=right - _LEFT)
    parts += drawn
    size = bottom + 52 + height + 8
    return svg_document(_WIDTH, size, parts, css_class="series-chart", font=True,
                        label=f"{ylabel} against {xlabel}, {len(series)} series")


def _error_bars(bars: Sequence[ErrorBar], px: float, y: Scale, colour: str) -> list[str]:
    """A point's error bars: ±1 sd of its runs (solid), its run's 95 % CI (dashed),
    each cut at the axes with an arrowhead where it leaves them."""
    return [error_bar(px, y(bar.low), y(bar.high), colour, dash=DASHED if bar.dashed else "",
                      clipped_low=bar.clipped_low, clipped_high=bar.clipped_high)
            for bar in bars]


def report_charts(records: Sequence[Mapping[str, Any]]) -> list[ReportChart]:
    """Throughput against replica batch for the ok records, one chart per model (and
    device), as SVG.

    Within a chart, build_series draws one line per combination of the other
    parameters that vary (framework, device, precision...), so it never averages
    measurements of different things; series in different units get a panel each.
    """
    charts = []
    for group in chart_groups(records):
        series = build_series(group, X, Y)
        problems: list[str] = []
        # ylabel equal to the y key: a single unlabelled series then needs no legend;
        # the axis adds the records' unit to it.
        svg = series_chart_svg(series, xlabel=X, ylabel=Y, problems=problems)
        charts.append(ReportChart(_caption(group, series), series, svg, problems))
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
