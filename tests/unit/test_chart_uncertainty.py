"""Uncertainty drawn honestly: every error bar shown, cut with an arrowhead where it
leaves the axes, intervals of times and rates never below 0, a log y axis for every
chart kind, every line of the history chart in its legend, and time of day on its
axis when runs share a date. Checked on the matplotlib figure (its artists) and on the
SVG the pages carry of it."""

from __future__ import annotations

import json
import math
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.errors import ChartError
from dlbench.report.cells import Report
from dlbench.report.charts.charts import draw_chart
from dlbench.report.charts.checks import chart_problems
from dlbench.report.charts.errorbars import (
    CI_LABEL,
    CLIP_LABEL,
    SD_LABEL,
    error_bars,
    y_limits,
)
from dlbench.report.charts.series import ChartSeries, build_series, ci95_bounds
from dlbench.report.history.changes import analyse_history
from dlbench.report.history.chart import draw_history_chart, time_ticks, value_limits
from dlbench.report.history.page import render_history_page
from dlbench.report.html.charts import report_charts
from dlbench.report.html.page import render_html
from dlbench.results.history.records import history_row
from tests.conftest import CliRunner

SVG = "{http://www.w3.org/2000/svg}"


def rec(batch: int, value: float, **results: Any) -> dict[str, Any]:
    return {"exp.status": "ok", "exp.model": "resnet18", "exp.replica_batch": batch,
            "results.throughput": value, "results.throughput_unit": "images/s", **results}


#: resnet18 at batch 16 on a busy machine: a 95 % interval wider than its mean.
NOISY = [rec(8, 60.0, **{"results.ci95_rel": 0.05}), rec(16, 40.0, **{"results.ci95_rel": 1.03}),
         rec(32, 70.0, **{"results.ci95_rel": 0.04})]


# ---------------------------------------------------------------- the interval


@pytest.mark.parametrize(("record", "key", "value", "expected"), [
    # Known answers: value * e^(-+rel).
    ({"results.ci95_rel": 0.1}, "results.throughput", 100.0,
     (100.0 * math.exp(-0.1), 100.0 * math.exp(0.1))),
    ({"results.ci95_rel": 1.03}, "results.throughput", 40.0,
     (40.0 * math.exp(-1.03), 40.0 * math.exp(1.03))),
    # The time's own half-width, relative to the time, when ci95_rel is missing.
    ({"results.ci95": 15.0, "results.time": 10.0}, "results.time", 10.0,
     (10.0 * math.exp(-1.5), 10.0 * math.exp(1.5))),
    ({"results.ci95_rel": 0.2}, "results.tflops", 5.0, (5.0 * math.exp(-0.2),
                                                          5.0 * math.exp(0.2))),
])
def test_the_interval_is_taken_on_the_log_scale(record: dict[str, Any], key: str,
                                                 value: float,
                                                 expected: tuple[float, float]) -> None:
    bounds = ci95_bounds(record, key, value)
    assert bounds == pytest.approx(expected)
    assert bounds is not None and bounds[0] > 0  # never below 0, however wide


@pytest.mark.parametrize(("record", "key", "value"), [
    ({"results.ci95_rel": 0.0}, "results.throughput", 10.0),
    ({"results.ci95_rel": -0.5}, "results.throughput", 10.0),
    ({"results.ci95_rel": "wide"}, "results.throughput", 10.0),
    ({"results.ci95_rel": math.inf}, "results.throughput", 10.0),
    ({"results.ci95_rel": math.nan}, "results.throughput", 10.0),
    ({}, "results.throughput", 10.0),
    ({"results.ci95": 1.0, "results.time": 0.0}, "results.time", 0.0),
    ({"results.ci95_rel": 0.1}, "results.throughput", 0.0),
    ({"results.ci95_rel": 0.1}, "results.time_p99", 10.0),  # no interval declared
])
def test_no_interval_where_the_record_has_none(record: dict[str, Any], key: str,
                                                value: float) -> None:
    assert ci95_bounds(record, key, value) is None


# ---------------------------------------------------------------- PNG (matplotlib)


def _clip_marks(axes: Any) -> list[tuple[str, float, float]]:
    return [(line.get_marker(), float(x), float(y)) for line in axes.get_lines()
            if line.get_gid() == "clip-mark" for x, y in line.get_xydata()]


def test_an_interval_wider_than_its_mean_is_drawn_and_clipped_in_the_png() -> None:
    (series,) = build_series(NOISY, "exp.replica_batch", "results.throughput")
    drawn = draw_chart([series], ylabel="results.throughput")
    axes = drawn.panels[0].axes
    low, high = axes.get_ylim()
    # The axis is not stretched to the interval's top (40 * e^1.03 = 112): the points
    # keep the height of the chart, the bar is cut at the top edge.
    assert high < 40.0 * math.exp(1.03) and low == 0.0
    (container,) = [c for c in axes.containers if c.has_yerr]
    segments = [np.asarray(s) for s in container.lines[2][0].get_segments()]
    at_16 = [s for s in segments if s[0][0] == 16.0]
    assert len(at_16) == 1, "the noisiest point has its error bar"
    assert at_16[0][:, 1].min() == pytest.approx(40.0 * math.exp(-1.03))
    assert at_16[0][:, 1].max() == pytest.approx(high)
    # An arrowhead where it leaves the axes, and only there.
    assert _clip_marks(axes) == [("^", 16.0, pytest.approx(high))]
    assert drawn.labels["legend"] == [CI_LABEL, CLIP_LABEL]
    assert chart_problems(drawn) == []


def test_a_spread_below_zero_stops_at_the_axis_of_a_bar_chart_with_a_mark() -> None:
    # The small model's bars beside a big one's: sd bars that reach below 0 images/s
    # (what printed "point ... lies on or past the bottom edge" before).
    records = [{**rec(b, v * b), "exp.model": m}
               for m, base in (("big", 900.0), ("small", 1.5)) for b in (1, 2)
               for v in (base * 0.2, base * 0.3, base * 2.5)]  # mean base, sd 1.3 base
    series = build_series(records, "exp.replica_batch", "results.throughput")
    drawn = draw_chart(series, chart="bar", ylabel="results.throughput")
    axes = drawn.panels[0].axes
    assert axes.get_ylim()[0] == 0.0
    at_zero = [shape for shape, _, y in _clip_marks(axes) if y == 0.0]
    assert at_zero and set(at_zero) == {"v"}
    assert CLIP_LABEL in drawn.labels["legend"] and SD_LABEL in drawn.labels["legend"]
    assert chart_problems(drawn) == []


def test_bars_inside_the_axes_get_caps_and_no_mark() -> None:
    s = ChartSeries("a", [1, 2], [10.0, 20.0], [1.0, 2.0])
    limits = y_limits([s], "line")
    assert [(b.low, b.high, b.clipped) for b in error_bars(s, limits)] == [
        (9.0, 11.0, False), (18.0, 22.0, False)]
    drawn = draw_chart([s], ylabel="y")
    assert _clip_marks(drawn.panels[0].axes) == []
    assert CLIP_LABEL not in drawn.labels["legend"]


@pytest.mark.parametrize("chart", ["line", "bar"])
def test_a_log_y_axis_for_every_chart_kind(chart: str) -> None:
    records = [{**rec(b, v * b), "exp.model": m} for m, v in (("big", 900.0), ("small", 1.5))
               for b in (1, 2)]
    series = build_series(records, "exp.replica_batch", "results.throughput")
    drawn = draw_chart(series, chart=chart, ylabel="results.throughput", log_y=True)
    axes = drawn.panels[0].axes
    low, high = axes.get_ylim()
    assert axes.get_yscale() == "log" and 0 < low < 1.5 and high > 1800.0
    if chart == "bar":  # bars stand on the axis's foot, and reach their values
        tops = sorted(round(p.get_y() + p.get_height(), 6) for p in axes.patches)
        assert tops == [1.5, 3.0, 900.0, 1800.0]
    assert chart_problems(drawn) == []


def test_a_log_y_axis_refuses_a_value_at_or_below_zero() -> None:
    s = ChartSeries("slow", [1, 2], [0.0, 3.0], None)
    with pytest.raises(ChartError, match=r"^--log-y: series 'slow' is 0 at 1; a log axis "):
        draw_chart([s], log_y=True)


def _write(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps(records))
    return str(path)


def test_plot_bar_and_log_y_end_to_end_print_no_internal_warning(
        dlbench: CliRunner, tmp_path: Path) -> None:
    records = [{**rec(b, v * b), "exp.model": m}
               for m, base in (("big", 900.0), ("small", 1.5)) for b in (1, 2, 4)
               for v in (base * 0.6, base, base * 1.4)]
    source = _write(tmp_path / "runs.json", records)
    for extra in ([], ["--log-y"]):
        done = dlbench("plot", "--input", source, "--x", "exp.replica_batch", "--chart",
                       "bar", *extra, "--output", "bars.png")
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        assert done.stdout == "chart written to bars.png (2 series, 6 points)\n"
    zero = _write(tmp_path / "zero.json", [rec(1, 0.0), rec(2, 4.0)])
    done = dlbench("plot", "--input", zero, "--x", "exp.replica_batch", "--log-y",
                   "--output", "z.png")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("dlbench: error: --log-y: series ")
    assert done.stderr.count("\n") == 1 and not (tmp_path / "z.png").exists()


# ---------------------------------------------------------------- HTML (SVG)


def _texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_an_interval_wider_than_its_mean_is_drawn_and_clipped_in_the_html_chart() -> None:
    page = render_html(Report("r"), NOISY)
    (chart,) = report_charts(NOISY)
    assert chart.problems == [] and chart.svg in page
    # The page's chart is the PNG's figure: the same bar cut at the top, its arrowhead.
    axes = chart.drawn.panels[0].axes
    high = axes.get_ylim()[1]
    (container,) = [c for c in axes.containers if c.has_yerr]
    segments = [np.asarray(s) for s in container.lines[2][0].get_segments()]
    assert len(segments) == 3, "every point with an interval has its bar"
    assert _clip_marks(axes) == [("^", 16.0, pytest.approx(high))]
    # In the SVG: the three dashed bars, one arrowhead group, and the legend's words.
    root = ET.fromstring(chart.svg)
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g")}
    bars = groups["chart-0-LineCollection_1"].findall(f"{SVG}path")
    assert len(bars) == 3 and all("stroke-dasharray" in (b.get("style") or "") for b in bars)
    assert "chart-0-clip-mark" in groups and "chart-0-clip-mark-2" not in groups
    texts = _texts(chart.svg)
    for label in (CI_LABEL, CLIP_LABEL):
        assert all(line in texts for line in textwrap.wrap(label, 44)), label


# ---------------------------------------------------------------- the history page


def _rows(values: list[float], rel: float, times: list[str]) -> list[Any]:
    rows = []
    for i, (value, when) in enumerate(zip(values, times, strict=True)):
        record = {"exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet18",
                  "exp.phase": "inference", "exp.replica_batch": 16,
                  "results.throughput": value, "results.throughput_unit": "images/s",
                  "results.ci95_rel": rel}
        rows.append(history_row(record, run_id=f"r{i}", run_time=when))
    return rows


def test_the_history_chart_keeps_intervals_above_zero_and_names_every_line() -> None:
    times = ["2024-03-05T09:15:00", "2024-03-05T17:40:00"]
    rows = _rows([10.0, 70.0], 1.03, times)
    analysis = analyse_history(rows)
    drawn = draw_history_chart(analysis, analysis.series[0])
    assert chart_problems(drawn) == []
    axes = drawn.panels[0].axes
    low, high = axes.get_ylim()
    assert low >= 0.0 and high < 70 * math.exp(1.03)
    # Both intervals drawn, cut at the axes; the one cut at the top has its arrowhead.
    (ci,) = [c for c in axes.collections if c.get_gid() == "history-ci"]
    ends = [sorted(np.asarray(s)[:, 1]) for s in ci.get_segments()]
    assert ends[0] == pytest.approx([10 * math.exp(-1.03), 10 * math.exp(1.03)])
    assert ends[1] == pytest.approx([70 * math.exp(-1.03), high])
    assert _clip_marks(axes) == [("^", 1.0, pytest.approx(high))]
    # Every line and mark is named in the legend.
    legend = " ".join(drawn.labels["legend"]).replace("\n", " ")
    for said in ("a run's value", "95% CI", "mean of the runs between change points",
                 "arrowhead"):
        assert said in legend
    # Both runs on one day: the axis reads their times of day, the title the date.
    assert [t.get_text() for t in axes.get_xticklabels()] == ["09:15", "17:40"]
    assert axes.get_xlabel() == "2 runs on 2024-03-05 (UTC)"
    # The page carries that figure, and the runs' table gives the interval's ends.
    page = render_history_page(analysis)
    [svg] = re.findall(r"<svg.*?</svg>", page, re.S)
    assert {"09:15", "17:40", "2 runs on 2024-03-05 (UTC)", "a run's value"} <= set(
        _texts(svg))
    assert "3.57 to 28.01" in page


def test_history_limits_never_go_below_zero_for_positive_values() -> None:
    low, high = value_limits([10.0, 70.0], [(10 * math.exp(-1.03), 10 * math.exp(1.03)),
                                            (70 * math.exp(-1.03), 70 * math.exp(1.03))])
    assert low >= 0.0 and high < 70 * math.exp(1.03)
    # Negative values (a change in %) keep their sign's room.
    assert value_limits([-5.0, 5.0], [None, None])[0] < -5.0


@pytest.mark.parametrize(("first", "last", "expected"), [
    ("2024-03-05T09:15:00", "2024-03-06T09:15:00", ("2024-03-05", "2024-03-06", "")),
    ("2024-03-05T09:15:00", "2024-03-05T17:40:59", ("09:15", "17:40", " on 2024-03-05 (UTC)")),
    ("2024-03-05T09:15:01", "2024-03-05T09:15:42",
     ("09:15:01", "09:15:42", " on 2024-03-05 (UTC)")),
])
def test_time_ticks_show_the_time_of_day_when_runs_share_a_date(
        first: str, last: str, expected: tuple[str, str, str]) -> None:
    assert time_ticks(first, last) == expected
