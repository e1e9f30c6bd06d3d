"""The serving curves (:mod:`dlbench.report.serving.curves`) as a chart drawn with
matplotlib: a PNG, SVG or PDF file, and the HTML report's chart
(:mod:`dlbench.report.serving.section` inlines the same figure).

The chart plots the latency at the percentile of the rules (y, in the unit the key is
declared with, ms) against the achieved throughput (x, queries/s), one line per curve
through its points in order of offered load: x is a measured number, so a line between
neighbouring loads is what the system did in between. A point that is not valid
(``results.valid`` false) is hollow; the knee is a star; a latency bound is a dashed
horizontal line, and a curve without one shows its knee's limit (twice the latency at
its lowest load) as a dotted line in its colour. Latencies spanning more than
:data:`LOG_RATIO` times are drawn on a log axis, so that the low-load points stay
readable beside an overloaded one.

Drawn the way :mod:`dlbench.report.charts.charts` draws (a ``Figure`` without pyplot, the
legend under the axes) and checked by
:func:`~dlbench.report.charts.checks.chart_problems`: labels with their units, every
marker inside the axes, the legend inside the image.

Example::

    report = build_serving_report(records)
    Path("serving.svg").write_bytes(render_serving_chart(report.curves, fmt="svg"))
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dlbench.report.charts.axes import axis_label, tick_text
from dlbench.report.charts.charts import DrawnChart, Panel, save_chart
from dlbench.report.charts.series import ChartSeries, value_text
from dlbench.report.serving.curves import (
    KNEE_FACTOR,
    ServingCurve,
    percentile_text,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Latencies whose highest is more than this many times the lowest get a log y axis.
LOG_RATIO = 20.0

_WIDTH_IN, _HEIGHT_IN = 7.0, 4.8
_PAD = 0.08  # of an axis' span, either side of the data
_EDGE = 0.04  # of the span: room under a marker near 0
BOUND_COLOUR = "#cf222e"


def chart_groups(curves: Sequence[ServingCurve]) -> list[list[ServingCurve]]:
    """The curves by group (device, phase, precision): one chart each."""
    groups: dict[str, list[ServingCurve]] = {}
    for curve in curves:
        groups.setdefault(value_text(curve.group), []).append(curve)
    return list(groups.values())


def curve_points(curve: ServingCurve) -> list[tuple[int, float, float]]:
    """(index, achieved, latency) of each point that has both."""
    return [(i, float(p.achieved), float(p.at_percentile)) for i, p in enumerate(curve.points)
            if p.achieved is not None and p.at_percentile is not None]


def axis_limits(values: Sequence[float], log: bool) -> tuple[float, float]:
    """Axis limits with a margin around ``values``; a linear axis starts at 0 unless a
    marker there would sit on the frame."""
    if log:
        low, high = math.log10(min(values)), math.log10(max(values))
        pad = _PAD * ((high - low) or 1.0)
        return 10 ** (low - pad), 10 ** (high + pad)
    low, high = min(values), max(values)
    span = high or 1.0
    return (0.0 if low >= _EDGE * span else -_EDGE * span), high + _PAD * span


def _draw_curves(axes: Axes, curves: Sequence[ServingCurve],
                 labels: Sequence[str]) -> tuple[list[Any], list[str], list[ChartSeries]]:
    """Each curve's line, points and knee; its legend handles and labels, and what it
    drew as series (for the chart check)."""
    from matplotlib.lines import Line2D

    handles: list[Any] = []
    texts: list[str] = []
    drawn: list[ChartSeries] = []
    for number, (curve, label) in enumerate(zip(curves, labels, strict=True)):
        colour = f"C{number % 10}"
        points = curve_points(curve)
        xs, ys = [x for _, x, _ in points], [y for _, _, y in points]
        axes.plot(xs, ys, linestyle="-", color=colour, gid=f"serving-curve-{number}")
        valid = [(x, y) for i, x, y in points if curve.points[i].valid is not False]
        invalid = [(x, y) for i, x, y in points if curve.points[i].valid is False]
        if valid:
            axes.plot(*zip(*valid, strict=True), linestyle="none", marker="o", color=colour,
                      gid=f"serving-valid-{number}")
        if invalid:
            axes.plot(*zip(*invalid, strict=True), linestyle="none", marker="o",
                      markerfacecolor="white", markeredgecolor=colour,
                      gid=f"serving-invalid-{number}")
        knee = next(((x, y) for i, x, y in points if i == curve.knee), None)
        if knee is not None:
            hollow = curve.points[curve.knee or 0].valid is False
            axes.plot([knee[0]], [knee[1]], linestyle="none", marker="*", markersize=15,
                      color=colour, markerfacecolor="white" if hollow else colour,
                      markeredgecolor="black", zorder=5, gid=f"serving-knee-{number}")
        handles.append(Line2D([], [], color=colour, marker="o"))
        texts.append(label)
        drawn.append(ChartSeries(label, xs, ys, None, unit=curve.y_unit))
    return handles, texts, drawn


@dataclass
class ServingAxes:
    """The layout of one serving chart: the curves' labels, the axes' labels, units,
    scale and limits, and the lines across the plot (bounds, and the knee limit of a
    curve without one) with their legend texts."""

    labels: list[str]
    xlabel: str
    ylabel: str
    x_unit: str
    y_unit: str
    log: bool
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    bounds: list[float]
    #: (curve number, latency) of each curve without a bound: its knee's limit.
    limits: list[tuple[int, float]] = field(default_factory=list)
    #: Legend texts of the marks, each only where the chart has one.
    knee_text: str = ""
    hollow_text: str = ""
    bound_text: str = ""
    limit_text: str = ""


def serving_axes(curves: Sequence[ServingCurve]) -> ServingAxes:
    """The :class:`ServingAxes` of the curves of one chart."""
    pcts = {c.percentile for c in curves}
    one = len(pcts) == 1
    labels = [c.label if one else f"{c.label} ({percentile_text(c.percentile)})"
              for c in curves]
    y_unit = next((c.y_unit for c in curves if c.y_unit), "")
    x_unit = next((c.x_unit for c in curves if c.x_unit), "")
    xs = [x for c in curves for _, x, _ in curve_points(c)] or [0.0]
    ys = [y for c in curves for _, _, y in curve_points(c)] or [1.0]
    lines = [*(b for c in curves for b in c.bounds),
             *(lim for c in curves for lim in c.limits if lim is not None)]
    heights = [*ys, *lines]
    log = min(heights) > 0 and max(heights) > LOG_RATIO * min(heights)
    pct = percentile_text(next(iter(pcts))) if one else "exp.latency_percentile"
    bounds = list(dict.fromkeys(b for curve in curves for b in curve.bounds))
    bound_text = ""
    if bounds:
        bounded = {percentile_text(c.percentile) for c in curves if c.bounds}
        what = bounded.pop() if len(bounded) == 1 else "the percentile"
        bound_text = (f"bound: {what} <= {', '.join(f'{b:g}' for b in bounds)} ms "
                      "(exp.latency_bound_ms)")
    limits = []
    for number, curve in enumerate(curves):
        limit = next((lim for p, lim in zip(curve.points, curve.limits, strict=True)
                      if p.bound_ms is None and lim is not None), None)
        if limit is not None:
            limits.append((number, limit))
    return ServingAxes(
        labels=labels,
        xlabel=axis_label("achieved throughput, results.qps_achieved", x_unit),
        ylabel=axis_label(f"{pct} latency" if one else f"latency at {pct}", y_unit),
        x_unit=x_unit, y_unit=y_unit, log=log,
        xlim=axis_limits([*xs, 0.0], False), ylim=axis_limits(heights, log),
        bounds=bounds, limits=limits,
        knee_text=("knee: the highest achieved throughput within the limit"
                   if any(c.knee is not None for c in curves) else ""),
        hollow_text=("hollow: not valid (results.valid)"
                     if any(p.valid is False for c in curves for p in c.points) else ""),
        bound_text=bound_text,
        limit_text=(f"no bound: {KNEE_FACTOR:g}x the latency at the lowest load"
                    if limits else ""),
    )


def _draw_limits(axes: Axes, layout: ServingAxes) -> tuple[list[Any], list[str]]:
    """The bounds (dashed) and, for curves without one, their knee limit (dotted)."""
    from matplotlib.lines import Line2D

    handles: list[Any] = []
    texts: list[str] = []
    for number, bound in enumerate(layout.bounds):
        axes.axhline(bound, color=BOUND_COLOUR, linestyle="--", linewidth=1.2,
                     gid=f"serving-bound-{number}")
    if layout.bound_text:
        handles.append(Line2D([], [], color=BOUND_COLOUR, linestyle="--"))
        texts.append(layout.bound_text)
    for number, limit in layout.limits:
        axes.axhline(limit, color=f"C{number % 10}", linestyle=":", linewidth=1.2,
                     gid=f"serving-limit-{number}")
    if layout.limit_text:
        handles.append(Line2D([], [], color="grey", linestyle=":"))
        texts.append(layout.limit_text)
    return handles, texts


def legend_under(figure: Any, handles: list[Any], labels: list[str]) -> Any:
    """A legend under the axes, as few columns as it takes to fit the figure's width."""
    legend = None
    for ncols in range(min(len(handles), 2), 0, -1):
        wrapped = [textwrap.fill(label, 44, break_on_hyphens=False) for label in labels]
        legend = figure.legend(handles, wrapped, loc="outside lower center", ncols=ncols,
                               frameon=False)
        figure.draw_without_rendering()
        box = legend.get_window_extent()
        if (box.x0 >= figure.bbox.x0 and box.x1 <= figure.bbox.x1) or ncols == 1:
            break
        legend.remove()
    return legend


def draw_serving_chart(curves: Sequence[ServingCurve]) -> DrawnChart:
    """The curves (of one group) on one chart, laid out as it will be saved."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    layout = serving_axes(curves)
    figure = Figure(figsize=(_WIDTH_IN, _HEIGHT_IN), dpi=100, layout="constrained")
    axes = figure.subplots()
    handles, texts, series = _draw_curves(axes, curves, layout.labels)
    if layout.knee_text:
        handles.append(Line2D([], [], linestyle="none", marker="*", markersize=12,
                              color="grey", markeredgecolor="black"))
        texts.append(layout.knee_text)
    if layout.hollow_text:
        handles.append(Line2D([], [], linestyle="none", marker="o", color="grey",
                              markerfacecolor="white"))
        texts.append(layout.hollow_text)
    more, more_texts = _draw_limits(axes, layout)
    if layout.log:
        from matplotlib.ticker import FuncFormatter

        axes.set_yscale("log")
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: tick_text(value)))
    axes.set_ylim(*layout.ylim)
    axes.set_xlim(*layout.xlim)
    axes.grid(True, alpha=0.3)
    axes.set_axisbelow(True)
    axes.set_ylabel(layout.ylabel)
    axes.set_xlabel(layout.xlabel)
    legend = legend_under(figure, [*handles, *more], [*texts, *more_texts])
    drawn = DrawnChart(figure, [Panel(axes, layout.y_unit, series)], categorical=False,
                       chart="line", legend=legend)
    drawn.labels = {"title": "", "xlabel": axes.get_xlabel(), "ylabels": [axes.get_ylabel()],
                    "units": [layout.y_unit],
                    "legend": [t.get_text() for t in legend.get_texts()]}
    return drawn


def render_serving_chart(curves: Sequence[ServingCurve], fmt: str = "svg",
                         problems: list[str] | None = None) -> bytes:
    """The bytes of a ``fmt`` file (png, svg, pdf) of :func:`draw_serving_chart`; what
    :func:`~dlbench.report.charts.checks.chart_problems` finds wrong with it is appended
    to ``problems`` when given."""
    from dlbench.report.charts.checks import chart_problems

    drawn = draw_serving_chart(curves)
    found = chart_problems(drawn, layout=False)
    if problems is not None:
        problems.extend(found)
    return save_chart(drawn, fmt, found)


def chart_caption(curves: Sequence[ServingCurve]) -> str:
    """``p90 latency in ms vs achieved throughput in queries/s, 2 curve(s) [exp.dtype=...]``."""
    pcts = {percentile_text(c.percentile) for c in curves}
    pct = pcts.pop() if len(pcts) == 1 else "tail"
    group = ", ".join(f"{k}={value_text(v)}" for k, v in curves[0].group.items())
    return (f"{pct} latency in {curves[0].y_unit} vs achieved throughput in "
            f"{curves[0].x_unit}, {len(curves)} curve(s)" + (f" [{group}]" if group else ""))
