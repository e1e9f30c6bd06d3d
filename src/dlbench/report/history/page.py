"""A history as one HTML page: a time-series chart per configuration, change points
marked, filterable.

Each chart is inline SVG drawn by the one SVG writer (:mod:`dlbench.report.charts.svg`;
no plotting library, no external resource):
one dot per run, its 95 % confidence interval as a vertical bar where the record has
one (:func:`~dlbench.report.charts.series.ci95_bounds`, the interval every chart
draws: never below 0 for a time or a rate), cut with an arrowhead where it leaves the
axes (which grow for a bar only as far as
:data:`~dlbench.report.charts.errorbars.BAR_ROOM` allows), the mean of each segment
between change points as a step line, and each change point as a dashed vertical
line, red for a regression; a legend under the chart names each. The x axis reads
the first and last run's date, or their time of day when they share one. Hovering a
dot shows its run, value, revision and environment; hovering a change shows its size,
p-value and what changed with it (SVG ``<title>`` elements, which browsers show as
tooltips). Under each chart, its runs as a (collapsed) table. A text box above the
charts hides those whose configuration does not contain the text typed.

Every value from a record is HTML-escaped (:func:`_esc`): configurations, versions
and host names are user input.

Example::

    analysis = analyse_history(store.rows(), metric="results.throughput")
    write_history_page(analysis, Path("history.html"), source="history.sqlite")
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dlbench
from dlbench.report.charts.axes import axis_label, nice_step, tick_values
from dlbench.report.charts.errorbars import BAR_ROOM
from dlbench.report.charts.series import ci95_bounds, unit_of
from dlbench.report.charts.svg import (
    LegendEntry,
    Scale,
    clip_mark,
    legend,
    svg_document,
    text,
    x_title,
    y_ticks,
    y_title,
)
from dlbench.report.history.changepoint import segment_means
from dlbench.report.history.changes import Change, HistoryAnalysis, HistorySeries, Point
from dlbench.report.html.markup import escape as _esc
from dlbench.report.html.markup import page_shell
from dlbench.results.io import write_atomically

#: Environment keys named in a dot's tooltip, when the record has them.
TOOLTIP_KEYS = (
    "sys.dlbench_git_commit", "sys.dlbench_version", "sys.framework_version",
    "exp.framework_ver", "exp.docker_image", "hw.device_name", "hw.gpu_driver",
    "sys.cuda_driver_version", "sys.hostname", "sys.python",
)

_WIDTH, _HEIGHT = 760, 230
#: The left margin holds the y axis's numbers and, turned upright, its label.
_LEFT, _RIGHT, _TOP, _BOTTOM = 84, 12, 12, 34

# Hides every chart whose configuration text does not contain the filter's text.
_JS = """
(function () {
  var box = document.getElementById("filter");
  var count = document.getElementById("shown");
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var shown = 0;
    document.querySelectorAll("section.series").forEach(function (section) {
      var text = section.getAttribute("data-filter");
      var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
      section.hidden = !keep;
      if (keep) { shown += 1; }
    });
    count.textContent = String(shown);
  }
  box.addEventListener("input", apply);
  apply();
})();
"""



def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _num(value: float) -> str:
    return f"{value:.4g}"


def _day(iso: str) -> str:
    return iso[:10]


def time_ticks(first: str, last: str) -> tuple[str, str, str]:
    """The x axis's two end labels and what its title adds: the runs' dates, or, when
    the first and last run share a date, their times of day (UTC) and the date once.

    >>> time_ticks("2024-01-02T09:15:00.000000+00:00", "2024-01-02T17:40:00.000000+00:00")
    ('09:15', '17:40', ' on 2024-01-02 (UTC)')
    """
    if _day(first) != _day(last):
        return _day(first), _day(last), ""
    if first[11:16] == last[11:16]:  # the same minute: seconds tell them apart
        return first[11:19], last[11:19], f" on {_day(first)} (UTC)"
    return first[11:16], last[11:16], f" on {_day(first)} (UTC)"


#: Colours of the page's stylesheet (``.dot``, ``.ci``, ``.mean``, ``.cp``, ``.cp.bad``),
#: for the legend's symbols.
_DOT, _CI, _MEAN, _CP, _BAD = "#0969da", "#54aeff", "#1a7f37", "#8c959f", "#cf222e"


def interval(metric: str, point: Point) -> tuple[float, float] | None:
    """The 95 % CI of ``point``'s value of ``metric`` as (low, high), where its record
    has one: the interval every chart of dlbench draws."""
    return ci95_bounds(point.row.results, metric, point.value)


def _interval_words(metric: str, point: Point) -> str:
    bounds = interval(metric, point)
    return "-" if bounds is None else f"{_num(bounds[0])} to {_num(bounds[1])}"


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


def _point_title(analysis: HistoryAnalysis, series: HistorySeries, index: int) -> str:
    point = series.points[index]
    row = point.row
    bounds = interval(analysis.metric, point)
    ci = "" if bounds is None else f" (95% CI {_interval_words(analysis.metric, point)})"
    lines = [
        f"#{index + series.skipped + 1} {row.record_time[:19]} UTC, run {row.run_id}",
        f"{analysis.metric} = {_num(point.value)}{ci}",
    ]
    if row.revision is not None:
        lines.append(f"revision: {row.revision}")
    lines += [f"{k}: {_text(row.environment[k])}" for k in TOOLTIP_KEYS if k in row.environment]
    return "\n".join(lines)


def _change_words(change: Change) -> str:
    """``-5.1% (p=0.005)``: the change's size and confidence."""
    return f"{change.point.change:+.1%} (p={change.point.p_value:.3g})"


def environment_words(change: Change) -> str:
    """``key: before → after; ...``: the environment change that coincides."""
    if not change.environment:
        return "no environment change"
    words = []
    for key, env in change.environment.items():
        at = "" if env.index == change.index else f" (at run #{env.index + 1})"
        words.append(f"{key}: {_text(env.before)} → {_text(env.after)}{at}")
    return "; ".join(words)


def _change_title(analysis: HistoryAnalysis, series: HistorySeries, change: Change) -> str:
    kind = "new regression" if change.regression and change.new else (
        "regression" if change.regression else "change")
    return "\n".join([
        f"{kind} at #{change.index + series.skipped + 1}, {change.row.record_time[:19]} UTC, "
        f"run {change.row.run_id}",
        f"{analysis.metric}: {_num(change.point.mean_before)} → "
        f"{_num(change.point.mean_after)}, {_change_words(change)}",
        environment_words(change),
    ])


def y_label(metric: str, series: HistorySeries) -> str:
    """The y axis's label: the metric and its unit, ``results.throughput
    (images/s)``, ``results.time (ms)``; the metric alone for a pure number."""
    return axis_label(metric, unit_of(series.points[-1].row.results, metric))


def _legend(series: HistorySeries, with_ci: bool, clipped: bool) -> list[LegendEntry]:
    """What the chart draws, each named: every line and mark has an entry."""
    entries = [LegendEntry("a run's value", _DOT, "marker")]
    if with_ci:
        entries.append(LegendEntry("95% CI of a run's mean (never below 0 for a time or "
                                   "a rate)", _CI, "solid"))
    if clipped:
        entries.append(LegendEntry("arrowhead: interval continues past the axis", _CI, "clip"))
    entries.append(LegendEntry("mean of the runs between change points", _MEAN, "solid"))
    if any(not c.regression for c in series.changes):
        entries.append(LegendEntry("change point", _CP, "dash"))
    if any(c.regression for c in series.changes):
        entries.append(LegendEntry("change point: a regression", _BAD, "dash"))
    return entries


def _chart(analysis: HistoryAnalysis, series: HistorySeries) -> str:
    """One series as an SVG chart (see the module's description)."""
    values = [p.value for p in series.points]
    intervals = [interval(analysis.metric, p) for p in series.points]
    low, high = value_limits(values, intervals)
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM
    # One slot per run; a single run sits in the middle.
    x = Scale(0.0, float(len(values) - 1), _LEFT, _LEFT + plot_w)
    y = Scale(low, high, _TOP + plot_h, _TOP)
    parts = [
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}"/>',
        f'<line class="axis" x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_WIDTH - _RIGHT}" '
        f'y2="{_TOP + plot_h}"/>',
        # The unit the records state (results.throughput_unit for a throughput), as the
        # charts of `dlbench plot` name it; the latest run's, as the page's heading.
        y_title(y, 14, y_label(analysis.metric, series)),
        # Round numbers over the axis, margins included: a flat series has some too.
        *y_ticks(y, tick_values(low, high, nice_step(high - low, 4)), left=_LEFT),
    ]
    first, last = time_ticks(series.points[0].row.record_time,
                             series.points[-1].row.record_time)[:2]
    on_day = time_ticks(series.points[0].row.record_time, series.points[-1].row.record_time)[2]
    base = _TOP + plot_h + 16
    parts.append(text(_LEFT, base, first, css_class="label"))
    parts.append(text(_WIDTH - _RIGHT, base, last, anchor="end", css_class="label"))
    parts.append(x_title(x, base + 14, f"{len(values)} runs{on_day}", css_class="label"))
    means = segment_means(values, [c.point for c in series.changes])
    steps = " ".join(
        f"{x(max(i - 0.5, 0)):.1f},{y(m):.1f} {x(min(i + 0.5, len(values) - 1)):.1f},{y(m):.1f}"
        for i, m in enumerate(means))
    parts.append(f'<polyline class="mean" points="{steps}"/>')
    for change in series.changes:
        cx = x(change.index - 0.5)
        kind = "cp bad" if change.regression else "cp"
        parts.append(
            f'<line class="{kind}" x1="{cx:.1f}" y1="{_TOP}" x2="{cx:.1f}" '
            f'y2="{_TOP + plot_h}"><title>{_esc(_change_title(analysis, series, change))}'
            "</title></line>")
    clipped = False
    for i, point in enumerate(series.points):
        bounds = intervals[i]
        if bounds is not None:
            bottom, top = max(bounds[0], low), min(bounds[1], high)
            parts.append(f'<line class="ci" x1="{x(i):.1f}" y1="{y(bottom):.1f}" '
                         f'x2="{x(i):.1f}" y2="{y(top):.1f}"/>')
            # Pixels grow downwards: a cut low end points down (+1), a high end up.
            parts += [clip_mark(x(i), y(end), direction, _CI)
                      for end, cut, direction in ((low, bounds[0] < low, 1.0),
                                                  (high, bounds[1] > high, -1.0)) if cut]
            clipped = clipped or bounds[0] < low or bounds[1] > high
        parts.append(f'<circle class="dot" cx="{x(i):.1f}" cy="{y(point.value):.1f}" r="3">'
                     f"<title>{_esc(_point_title(analysis, series, i))}</title></circle>")
    entries = _legend(series, any(b is not None for b in intervals), clipped)
    drawn, height = legend(entries, left=_LEFT, top=_HEIGHT, width=plot_w)
    parts.append('<g class="legend">')
    parts += drawn
    parts.append("</g>")
    return svg_document(_WIDTH, _HEIGHT + height + 6, parts,
                        label=f"{analysis.metric} over {len(values)} runs")


def _changes_table(series: HistorySeries) -> str:
    if not series.changes:
        return "<p>No change point.</p>"
    rows = []
    for change in series.changes:
        verdict = ("new regression" if change.new else "regression") if change.regression \
            else "change"
        css = ' class="bad"' if change.regression else ""
        rows.append(
            f"<tr><td>#{change.index + series.skipped + 1}</td>"
            f'<td class="when">{_esc(change.row.record_time[:19])}</td>'
            f"<td>{_esc(change.row.run_id)}</td>"
            f'<td class="num">{_esc(f"{change.point.change:+.1%}")}</td>'
            f'<td class="num">{_esc(f"{change.point.p_value:.3g}")}</td>'
            f"<td{css}>{_esc(verdict)}</td><td>{_esc(environment_words(change))}</td></tr>")
    return ("<table><thead><tr><th>run #</th><th>time (UTC)</th><th>run</th><th>change</th>"
            "<th>p</th><th>verdict</th><th>environment change</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _runs_table(analysis: HistoryAnalysis, series: HistorySeries) -> str:
    """The chart's points as a table, collapsed: for a screen reader, and to copy."""
    rows = []
    for i, point in enumerate(series.points):
        row = point.row
        ci = _esc(_interval_words(analysis.metric, point))
        rows.append(
            f"<tr><td>#{i + series.skipped + 1}</td>"
            f'<td class="when">{_esc(row.record_time[:19])}</td><td>{_esc(row.run_id)}</td>'
            f'<td class="num">{_esc(_num(point.value))}</td><td class="num">{ci}</td>'
            f"<td>{_esc(row.revision if row.revision is not None else '-')}</td></tr>")
    return (f'<details class="runs"><summary>The {len(rows)} runs as a table</summary>'
            f"<table><thead><tr><th>run #</th><th>time (UTC)</th><th>run</th>"
            f"<th>{_esc(y_label(analysis.metric, series))}</th><th>95% CI</th>"
            "<th>revision</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            "</details>")


def _section(analysis: HistoryAnalysis, number: int, series: HistorySeries) -> str:
    label = series.label
    filter_text = f"{label} {series.key}".lower()
    latest = series.points[-1]
    return "\n".join([
        f'<section class="series" id="series-{number}" data-key="{_esc(series.key)}" '
        f'data-filter="{_esc(filter_text)}">',
        f"<h2>{_esc(label)}</h2>",
        f'<p class="meta">{len(series.points)} runs; latest {_esc(_num(latest.value))} '
        f"({_esc(latest.row.record_time[:10])}); configuration {_esc(series.key)}</p>",
        _chart(analysis, series),
        _runs_table(analysis, series),
        _changes_table(series),
        "</section>",
    ])


def render_history_page(analysis: HistoryAnalysis, *, source: str = "") -> str:
    """The whole page as one HTML document with no external resource."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    regressions = analysis.regressions()
    alert = ""
    if regressions:
        links = "".join(
            f'<li><a href="#series-{analysis.series.index(s)}">{_esc(s.label)}</a>: '
            f"{_esc(_change_words(c))}, {_esc(environment_words(c))}</li>"
            for s, c in regressions)
        alert = (f'<div class="alert" role="alert"><strong>{len(regressions)} new '
                 f"regression(s)</strong><ul>{links}</ul></div>")
    direction = "higher" if analysis.higher_is_better else "lower"
    sections = "\n".join(_section(analysis, i, s) for i, s in enumerate(analysis.series))
    title = f"History of {analysis.metric}"
    from_source = f" from {_esc(source)}" if source else ""
    body = f"""<h1>{_esc(title)}</h1>
<p class="meta">Generated {_esc(now)} by dlbench {_esc(dlbench.__version__)}{from_source}:
{len(analysis.series)} configurations, {sum(len(s.points) for s in analysis.series)} runs,
{sum(len(s.changes) for s in analysis.series)} change points (p &le;
{_esc(analysis.p_threshold)}; {direction} is better; a regression is a change of at least
{_esc(f"{analysis.threshold:.1%}")} the bad way, new in the last {_esc(analysis.window)} runs).</p>
{alert}
<p><label for="filter">Filter configurations: </label>
<input id="filter" type="search" placeholder="e.g. resnet50 float16" autocomplete="off">
(<span id="shown">{len(analysis.series)}</span> shown)</p>
{sections or "<p>No configuration has a value of this metric.</p>"}"""
    return page_shell(title, body, _JS)


def write_history_page(analysis: HistoryAnalysis, path: Path, *, source: str = "") -> None:
    """Write :func:`render_history_page` to ``path`` atomically."""
    write_atomically(path, render_history_page(analysis, source=source).encode("utf-8"))

