"""The history page's chart of one configuration, drawn by matplotlib: a dot per run,
its 95 % confidence interval as a vertical bar where the record has one
(:func:`~dlbench.report.charts.series.ci95_bounds`, the interval every chart draws:
never below 0 for a time or a rate), cut with an arrowhead where it leaves the axes
(which grow for a bar only as far as
:data:`~dlbench.report.charts.errorbars.BAR_ROOM` allows), the mean of each segment
between change points as a step line, and each change point as a dashed vertical
line, red for a regression; a legend under the chart names each. The x axis reads the
first and last run's date, or their time of day when they share one.

The page (:mod:`dlbench.report.history.page`) inlines it as SVG and lists its runs,
with their values, intervals, revisions and environments, in a table under it.

Example::

    drawn = draw_history_chart(analysis, analysis.series[0])
    chart_problems(drawn)   # [] : every dot and bar inside the axes
"""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any

from dlbench.report.charts.axes import axis_label, tick_text
from dlbench.report.charts.errorbars import BAR_ROOM
from dlbench.report.charts.figure import DrawnChart, Panel
from dlbench.report.charts.series import ChartSeries, ci95_bounds, unit_of
from dlbench.report.history.changepoint import segment_means
from dlbench.report.history.changes import HistoryAnalysis, HistorySeries, Point

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: The colours of the chart's marks: a run's dot, its interval, the segments' mean, a
#: change point and a regression.
DOT, CI, MEAN, CP, BAD = "#0969da", "#54aeff", "#1a7f37", "#8c959f", "#cf222e"

#: What each mark is, as the legend names it.
DOT_LABEL = "a run's value"
CI_LABEL = "95% CI of a run's mean (never below 0 for a time or a rate)"
CLIP_LABEL = "arrowhead: interval continues past the axis"
MEAN_LABEL = "mean of the runs between change points"
CP_LABEL = "change point"
BAD_LABEL = "change point: a regression"

_WIDTH_IN, _HEIGHT_IN = 7.6, 3.2  # the plot and its axes; the legend adds its rows
_LEGEND_ROW_IN = 0.2


def day(iso: str) -> str:
    """The date of an ISO 8601 time."""
    return iso[:10]


def time_ticks(first: str, last: str) -> tuple[str, str, str]:
    """The x axis's two end labels and what its title adds: the runs' dates, or, when
    the first and last run share a date, their times of day (UTC) and the date once.

    >>> time_ticks("2024-01-02T09:15:00.000000+00:00", "2024-01-02T17:40:00.000000+00:00")
    ('09:15', '17:40', ' on 2024-01-02 (UTC)')
    """
    if day(first) != day(last):
        return day(first), day(last), ""
    if first[11:16] == last[11:16]:  # the same minute: seconds tell them apart
        return first[11:19], last[11:19], f" on {day(first)} (UTC)"
    return first[11:16], last[11:16], f" on {day(first)} (UTC)"


def interval(metric: str, point: Point) -> tuple[float, float] | None:
    """The 95 % CI of ``point``'s value of ``metric`` as (low, high), where its record
    has one: the interval every chart of dlbench draws."""
    return ci95_bounds(point.row.results, metric, point.value)


def value_limits(values: list[float], intervals: list[tuple[float, float] | None]
                 ) -> tuple[float, float]:
    """The y limits of a history chart: every value inside with a margin, intervals as
    far as ``BAR_ROOM`` of the values' span allows (the rest is cut with a mark), and
    no interval below 0 for values that are all at or above 0."""
    low, high = min(values), max(values)
    span = (high - low) or abs(high) * 0.1 or 1.0
    ends = [end for bounds in intervals if bounds is not None for end in bounds]
    floor = max(low - BAR_ROOM * span, 0.0 if low >= 0 else -math.inf)
    bottom = min(low, max(min(ends, default=low), floor))
    top = max(high, min(max(ends, default=high), high + BAR_ROOM * span))
    pad = (top - bottom) * 0.08 or abs(top) * 0.05 or 1.0
    return (max(bottom - pad, 0.0) if low >= 0 else bottom - pad), top + pad


def y_label(metric: str, series: HistorySeries) -> str:
    """The y axis's label: the metric and its unit, ``results.throughput
    (images/s)``, ``results.time (ms)``; the metric alone for a pure number."""
    return axis_label(metric, unit_of(series.points[-1].row.results, metric))


def _intervals(axes: Axes, intervals: list[tuple[float, float] | None],
               limits: tuple[float, float]) -> bool:
    """Each interval as a bar cut at the y ``limits``, an arrowhead (gid ``clip-mark``)
    at a cut end; whether any was cut."""
    low, high = limits
    bars = [(i, max(b[0], low), min(b[1], high)) for i, b in enumerate(intervals)
            if b is not None]
    if bars:
        axes.vlines([i for i, _, _ in bars], [lo for _, lo, _ in bars],
                    [hi for _, _, hi in bars], colors=CI, linewidth=1.5, gid="history-ci")
    cut = False
    for end, shape, side in ((low, "v", 0), (high, "^", 1)):
        # Past the low limit going down, or past the high limit going up.
        marks = [i for i, b in enumerate(intervals)
                 if b is not None and (b[side] - end) * (1 if side else -1) > 0]
        if marks:
            cut = True
            axes.plot(marks, [end] * len(marks), linestyle="none", marker=shape,
                      markersize=7, color=CI, gid="clip-mark", clip_on=False)
    return cut


def draw_history_chart(analysis: HistoryAnalysis, series: HistorySeries) -> DrawnChart:
    """One configuration's runs as a chart (see the module's doc), laid out as it will
    be saved."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    values = [p.value for p in series.points]
    intervals = [interval(analysis.metric, p) for p in series.points]
    low, high = value_limits(values, intervals)
    count = len(values)
    figure = Figure(figsize=(_WIDTH_IN, _HEIGHT_IN), dpi=100, layout="constrained")
    axes = figure.subplots()
    cut = _intervals(axes, intervals, (low, high))
    means = segment_means(values, [c.point for c in series.changes])
    steps = [(x, m) for i, m in enumerate(means)
             for x in (max(i - 0.5, 0.0), min(i + 0.5, count - 1.0))]
    axes.plot([x for x, _ in steps], [m for _, m in steps], color=MEAN, linewidth=1.5,
              gid="history-mean")
    for number, change in enumerate(series.changes):
        axes.axvline(change.index - 0.5, color=BAD if change.regression else CP,
                     linestyle="--", linewidth=2,
                     gid=f"{'regression' if change.regression else 'change'}-{number}")
    axes.plot(range(count), values, linestyle="none", marker="o", markersize=5, color=DOT,
              gid="history-runs")
    axes.set_xlim(-0.5, count - 0.5)
    axes.set_ylim(low, high)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: tick_text(value)))
    first, last, on_day = time_ticks(series.points[0].row.record_time,
                                     series.points[-1].row.record_time)
    axes.set_xticks([0, count - 1] if count > 1 else [0],
                    [first, last] if count > 1 else [first])
    axes.set_xlabel(f"{count} runs{on_day}")
    # The unit the records state (results.throughput_unit for a throughput), as the
    # charts of `dlbench plot` name it; the latest run's, as the page's heading.
    axes.set_ylabel(y_label(analysis.metric, series))
    axes.grid(True, axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    entries: list[tuple[Any, str]] = [
        (Line2D([], [], linestyle="none", marker="o", color=DOT), DOT_LABEL)]
    if any(b is not None for b in intervals):
        entries.append((Line2D([], [], color=CI, linewidth=1.5), CI_LABEL))
    if cut:
        entries.append((Line2D([], [], linestyle="none", marker="^", color=CI), CLIP_LABEL))
    entries.append((Line2D([], [], color=MEAN, linewidth=1.5), MEAN_LABEL))
    for regression, label, colour in ((False, CP_LABEL, CP), (True, BAD_LABEL, BAD)):
        if any(c.regression == regression for c in series.changes):
            entries.append((Line2D([], [], color=colour, linestyle="--"), label))
    labels = [textwrap.fill(label, 48, break_on_hyphens=False) for _, label in entries]
    rows = sum(label.count("\n") + 1 for label in labels[::2])
    figure.set_size_inches(_WIDTH_IN, _HEIGHT_IN + _LEGEND_ROW_IN * rows)
    legend = figure.legend([h for h, _ in entries], labels, loc="outside lower center",
                           ncols=2, frameon=False, fontsize=9)
    figure.draw_without_rendering()
    unit = unit_of(series.points[-1].row.results, analysis.metric)
    points = ChartSeries(analysis.metric, list(range(count)), values, None, unit=unit)
    drawn = DrawnChart(figure, [Panel(axes, unit, [points])], categorical=False, chart="line",
                       legend=legend)
    drawn.labels = {"title": "", "xlabel": axes.get_xlabel(), "ylabels": [axes.get_ylabel()],
                    "units": [unit], "legend": [t.get_text() for t in legend.get_texts()]}
    return drawn
