"""A history as one HTML page: a time-series chart per configuration, change points
marked, filterable.

Each chart is the matplotlib figure of :mod:`dlbench.report.history.chart`, inlined as
SVG (no external resource): a dot per run, its 95 % interval, the mean between change
points, the change points, and a legend naming each. Under each chart, its runs as a
(collapsed) table with their value, interval, revision and environment, and its change
points with their size, p-value and what changed with them. A text box above the
charts hides those whose configuration does not contain the text typed.

The page is the template ``history.html.j2`` (:mod:`dlbench.report.html.markup`),
which escapes every value from a record: configurations, versions and host names are
user input.

Example::

    analysis = analyse_history(store.rows(), metric="results.throughput")
    write_history_page(analysis, Path("history.html"), source="history.sqlite")
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dlbench.report.charts.checks import chart_problems
from dlbench.report.charts.figure import inline_svg
from dlbench.report.history.changes import Change, HistoryAnalysis, HistorySeries, Point
from dlbench.report.history.chart import draw_history_chart, interval, y_label
from dlbench.report.html.markup import render_page
from dlbench.results.io import write_atomically
from dlbench.textsafe import safe_text

#: Environment keys named in a run's row, when the record has them.
TOOLTIP_KEYS = (
    "sys.dlbench_git_commit", "sys.dlbench_version", "sys.framework_version",
    "exp.framework_ver", "exp.docker_image", "hw.device_name", "hw.gpu_driver",
    "sys.cuda_driver_version", "sys.hostname", "sys.python",
)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _num(value: float) -> str:
    return f"{value:.4g}"


def _interval_words(metric: str, point: Point) -> str:
    bounds = interval(metric, point)
    return "-" if bounds is None else f"{_num(bounds[0])} to {_num(bounds[1])}"


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


@dataclass
class RunRow:
    """A run as its chart's table shows it."""

    number: int
    time: str
    run_id: str
    value: str
    ci: str
    revision: str
    environment: str


@dataclass
class ChangeRow:
    """A change point as the table under its chart shows it."""

    number: int
    time: str
    run_id: str
    change: str
    p_value: str
    verdict: str
    regression: bool
    environment: str


@dataclass
class SeriesSection:
    """One configuration's section: heading, summary, chart, runs and change points."""

    number: int
    label: str
    key: str
    filter: str
    runs: int
    latest: str
    latest_day: str
    svg: str
    problems: list[str]
    y_label: str
    rows: list[RunRow]
    changes: list[ChangeRow]


def _run_rows(analysis: HistoryAnalysis, series: HistorySeries) -> list[RunRow]:
    rows = []
    for i, point in enumerate(series.points):
        row = point.row
        environment = "; ".join(f"{k}: {_text(row.environment[k])}" for k in TOOLTIP_KEYS
                                if k in row.environment)
        rows.append(RunRow(i + series.skipped + 1, row.record_time[:19], str(row.run_id),
                           _num(point.value), _interval_words(analysis.metric, point),
                           row.revision if row.revision is not None else "-",
                           environment or "-"))
    return rows


def _change_rows(series: HistorySeries) -> list[ChangeRow]:
    rows = []
    for change in series.changes:
        verdict = ("new regression" if change.new else "regression") if change.regression \
            else "change"
        rows.append(ChangeRow(change.index + series.skipped + 1, change.row.record_time[:19],
                              str(change.row.run_id), f"{change.point.change:+.1%}",
                              f"{change.point.p_value:.3g}", verdict, change.regression,
                              environment_words(change)))
    return rows


def _chart(analysis: HistoryAnalysis, series: HistorySeries,
           number: int) -> tuple[str, list[str]]:
    """The series' chart as SVG (its ids ``series-<number>-...``), and what the drawing
    found wrong with it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drawn = draw_history_chart(analysis, series)
        problems = chart_problems(drawn, layout=False)  # laid out by draw_history_chart
        svg = inline_svg(drawn.figure, ids=f"series-{number}-")
    return svg, problems + list(dict.fromkeys(safe_text(str(w.message)) for w in caught))


def _section(analysis: HistoryAnalysis, number: int, series: HistorySeries) -> SeriesSection:
    latest = series.points[-1]
    svg, problems = _chart(analysis, series, number)
    return SeriesSection(number, series.label, series.key,
                         f"{series.label} {series.key}".lower(), len(series.points),
                         _num(latest.value), latest.row.record_time[:10], svg, problems,
                         y_label(analysis.metric, series), _run_rows(analysis, series),
                         _change_rows(series))


def render_history_page(analysis: HistoryAnalysis, *, source: str = "") -> str:
    """The whole page as one HTML document with no external resource."""
    regressions = [(analysis.series.index(s), s.label,
                    f"{_change_words(c)}, {environment_words(c)}")
                   for s, c in analysis.regressions()]
    return render_page(
        "history.html.j2",
        title=f"History of {analysis.metric}",
        now=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        source=source,
        configurations=len(analysis.series),
        runs=sum(len(s.points) for s in analysis.series),
        changes=sum(len(s.changes) for s in analysis.series),
        p_threshold=analysis.p_threshold,
        direction="higher" if analysis.higher_is_better else "lower",
        threshold=f"{analysis.threshold:.1%}",
        window=analysis.window,
        regressions=regressions,
        sections=[_section(analysis, i, s) for i, s in enumerate(analysis.series)],
    )


def write_history_page(analysis: HistoryAnalysis, path: Path, *, source: str = "") -> None:
    """Write :func:`render_history_page` to ``path`` atomically."""
    write_atomically(path, render_history_page(analysis, source=source).encode("utf-8"))
