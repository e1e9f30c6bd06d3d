"""The serving report: curves of latency against achieved throughput over offered load,
their knee and bound, the records it leaves out, its chart and its HTML section; on
records built here, with known answers."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.errors import ResultsError
from dlbench.report.aggregate import Measured
from dlbench.report.cells import Report
from dlbench.report.charts.charts import save_chart
from dlbench.report.charts.checks import chart_problems
from dlbench.report.html.page import render_html
from dlbench.report.registry import ReportOptions, report_type
from dlbench.report.render import render_report
from dlbench.report.serving.chart import draw_serving_chart
from dlbench.report.serving.curves import ServingPoint, find_knee
from dlbench.report.serving.report import build_serving_report, short_reason
from dlbench.results.export import write_records

LOADS = [40.0, 80.0, 120.0, 160.0, 180.0, 190.0]
ACHIEVED = [39.9, 79.4, 118.3, 158.2, 171.0, 165.0]
P90 = [8.0, 10.0, 15.0, 30.0, 90.0, 130.0]


def _run(offered: float, achieved: float, p90: float, *, bound: float = 100.0,
         **params: Any) -> dict[str, Any]:
    """An ok server-scenario record at ``offered`` queries/s, its p90 the rules'."""
    over = bound > 0 and p90 > bound
    return {
        "exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet50",
        "exp.phase": "inference", "exp.device_type": "cpu", "exp.dtype": "float32",
        "exp.scenario": "server", "exp.replica_batch": 1, "exp.target_qps": offered,
        "exp.latency_bound_ms": bound, "exp.latency_percentile": 90.0,
        "results.qps_target": offered, "results.qps_achieved": achieved,
        "results.latency_p50": p90 / 2, "results.latency_p90": p90,
        "results.latency_p99": p90 * 1.5, "results.latency_at_percentile": p90,
        "results.valid": not over,
        "results.valid_reasons": [f"the 90th percentile latency, {p90:.3f} ms, is over "
                                  f"exp.latency_bound_ms={bound:g}"] if over else [],
        **params}


def _sweep(p90: list[float] = P90, **params: Any) -> list[dict[str, Any]]:
    return [_run(q, a, p, **params) for q, a, p in zip(LOADS, ACHIEVED, p90, strict=True)]


def test_the_knee_is_the_highest_achieved_rate_within_the_bound() -> None:
    report = build_serving_report(_sweep())
    (curve,) = report.curves
    assert [p.offered for p in curve.points] == LOADS
    # 190 offered is over the bound; 180 achieves 171 at 90 ms, the most within it.
    assert curve.knee == 4 and curve.bounds == [100.0]
    (table,) = report.tables
    assert table.title == "Serving curve: exp.model=resnet50"
    assert table.columns == ["offered (queries/s)", "achieved (queries/s)", "p50 (ms)",
                             "p90 (ms)", "p99 (ms)", "valid", "reasons"]
    assert len(table.rows) == 6
    assert table.rows[5] == [190.0, 165.0, 65.0, 130.0, 195.0, False,
                             "over exp.latency_bound_ms"]
    assert table.notes == [
        "bound: p90 <= 100 ms (exp.latency_bound_ms)",
        "reasons: the rules a run failed, in short; results.valid_reasons (a search's "
        "results.scenario_probes) words them in full",
        "knee: 171.00 queries/s achieved at 180.00 offered, p90 90.00 ms: the highest "
        "achieved throughput whose p90 is within the bound (100 ms)"]
    assert report.warnings == []
    # Within the bound by its p90, but early stopping does not accept it: said so.
    records = _sweep()
    records[4] = {**records[4], "results.valid": False, "results.valid_reasons": [
        "early stopping: 9 of 60 queries over exp.latency_bound_ms=100 need at least 90"]}
    assert build_serving_report(records).tables[0].notes[-1].endswith(
        "within the bound (100 ms); not valid: early stopping (exp.latency_bound_ms)")


def test_without_a_bound_the_knee_is_within_twice_the_low_load_latency() -> None:
    report = build_serving_report(_sweep([8.0, 10.0, 15.0, 17.0, 40.0, 130.0], bound=0.0))
    (curve,) = report.curves
    assert curve.limits == [16.0] * 6 and curve.knee == 2  # 15 ms <= 16 < 17 ms
    assert report.tables[0].notes == [
        "no bound (exp.latency_bound_ms=0)",
        "knee: 118.30 queries/s achieved at 120.00 offered, p90 15.00 ms: the highest "
        "achieved throughput whose p90 is within 2x its p90 at the lowest offered load "
        "(16.00 ms)"]


def _points(*rows: tuple[float, float | None, float | None, float | None]) -> list[ServingPoint]:
    return [ServingPoint(offered=q, achieved=a, percentiles={}, at_percentile=lat, valid=None,
                         reasons=[], bound_ms=b) for q, a, lat, b in rows]


def test_find_knee_ties_gaps_and_no_point_within() -> None:
    # Equal achieved rates: the lower offered load; a point without a latency is skipped.
    assert find_knee(_points((10, 50, 5, 20), (20, 50, 6, 20), (30, 60, None, 20)))[0] == 0
    assert find_knee(_points((10, 50, 25, 20), (20, 60, 30, 20))) == (None, [20, 20])
    # No bound: twice the first latency, 8 ms; 9 ms at 90/s is past it.
    assert find_knee(_points((10, 50, 4, None), (20, 90, 9, None))) == (0, [8.0, 8.0])


def test_curves_per_framework_and_batch_repeats_averaged_groups_by_dtype() -> None:
    records = [*_sweep(), *_sweep([p * 2 for p in P90], **{"exp.framework": "other"}),
               *_sweep(**{"exp.replica_batch": 4}),
               *_sweep(**{"user.run": 2}),  # a repeat: averaged, not a curve of its own
               *_sweep(**{"exp.dtype": "float16"})]
    report = build_serving_report(records)
    labels = [(c.label, c.group) for c in report.curves]
    assert labels == [
        ("exp.model=resnet50, exp.framework=fake, exp.replica_batch=1",
         {"exp.dtype": "float32"}),
        ("exp.model=resnet50, exp.framework=fake, exp.replica_batch=4",
         {"exp.dtype": "float32"}),
        ("exp.model=resnet50, exp.framework=other, exp.replica_batch=1",
         {"exp.dtype": "float32"}),
        ("exp.model=resnet50", {"exp.dtype": "float16"})]  # named within its group
    first = report.curves[0].points[0]
    assert first.runs == 2 and isinstance(first.achieved, Measured) and first.achieved.n == 2
    # The doubled latencies cross the bound sooner: 60 ms at 160 offered, 180 at 180.
    assert [c.points[c.knee].offered for c in report.curves if c.knee is not None] \
        == [180.0, 180.0, 160.0, 180.0]
    titles = [t.title for t in report.tables]
    assert titles[0] == ("Knees: the highest achieved throughput within the limit "
                         "[exp.dtype=float32]")
    assert len(titles) == 5 and titles[-1].endswith("[exp.dtype=float16]")
    assert report.tables[0].rows[2][2:] == [160.0, 158.2, 60.0, 100.0, "4 of 6"]


def test_records_left_out_are_counted_and_none_left_is_one_line() -> None:
    batch = {"exp.status": "ok", "exp.model": "resnet50", "results.time": 5.0}
    records = [*_sweep(), batch, {**batch, "exp.scenario": "offline"},
               {**_run(40, 40, 8), "exp.status": "failure"},
               {**_run(50, 50, 8), "exp.id": "e1", "results.qps_achieved": None}]
    report = build_serving_report(records)
    assert report.warnings == [
        "1 record(s) left out: exp.status is not ok (1 failure)",
        "2 record(s) left out: not server-scenario runs (exp.scenario: 1 batch, 1 offline); "
        "a serving curve needs exp.scenario=server",
        "1 server record(s) left out: no numeric results.qps_achieved and "
        "results.latency_at_percentile: e1"]
    with pytest.raises(ResultsError) as caught:
        build_serving_report([batch])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(
        "none of the 1 selected record(s) is an ok server-scenario run")
    assert "exp.scenario=server" in message


def test_a_qps_search_is_a_curve_of_its_probes() -> None:
    probes = [{"qps": q, "valid": lat <= 100, "qps_achieved": a, "latency_at_percentile": lat,
               "reasons": [] if lat <= 100 else ["the 90th percentile latency, x ms, is over "
                                                 "exp.latency_bound_ms=100; stopped after 9"]}
              for q, a, lat in ((100, 99, 12), (200, 180, 150), (150, 148, 60))]
    record = {**_run(150, 148, 60), "exp.target_qps": "auto", "exp.id": "s1",
              "results.scenario_probes": probes}
    (curve,) = build_serving_report([record]).curves
    assert curve.search == "s1" and curve.label == "exp.model=resnet50, search s1"
    assert [p.offered for p in curve.points] == [100, 150, 200]
    table = build_serving_report([record]).tables[0]
    # The answer's probe has the record's p50/p99; the others only the rules' p90.
    assert [row[2:5] for row in table.rows] == [[None, 12, None], [30.0, 60, 90.0],
                                                [None, 150, None]]
    assert table.rows[2][-1] == "over exp.latency_bound_ms, stopped early"
    assert curve.knee == 1


def test_short_reasons() -> None:
    assert short_reason("ran 9 queries, fewer than the 60 exp.scenario_min_queries asks for") \
        == "below exp.scenario_min_queries"
    assert short_reason("early stopping: 3 of 100 queries over exp.latency_bound_ms=5 need "
                        "at least 200 queries") == "early stopping (exp.latency_bound_ms)"
    assert short_reason("no valid probe") == "no valid probe"


def test_renderers_and_the_command_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    report = report_type("serving").load().build(_sweep(), ReportOptions())
    for fmt in ("text", "markdown", "csv"):
        assert any("171" in line for line in render_report(report, fmt)), fmt
    (table,) = json.loads("\n".join(render_report(report, "json")))["tables"]
    assert len(table["rows"]) == 6 and table["group"] == {"exp.model": "resnet50"}
    source = tmp_path / "serving.jsonl"
    write_records(_sweep(), source)
    assert main(["report", "--type", "serving", "--input", str(source)]) == 0
    assert "note: knee: 171.00 queries/s achieved" in capsys.readouterr().out
    write_records([{"exp.status": "ok", "results.time": 1.0}], source)
    assert main(["report", "--type", "serving", "--input", str(source)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dlbench: error: none of the 1 selected") and err.count("\n") == 1


def test_the_chart_marks_bound_knee_and_invalid_points() -> None:
    steep = [8.0, 10.0, 15.0, 30.0, 90.0, 170.0]
    report = build_serving_report([*_sweep(steep), *_sweep(**{"exp.replica_batch": 4})])
    drawn = draw_serving_chart(report.curves)
    assert chart_problems(drawn) == []
    axes = drawn.panels[0].axes
    assert axes.get_ylabel() == "p90 latency (ms)"
    assert axes.get_xlabel() == "achieved throughput, results.qps_achieved (queries/s)"
    assert axes.get_yscale() == "log"  # 170 ms is over 20 times 8 ms
    lines = {line.get_gid(): line for line in axes.get_lines()}
    assert list(lines["serving-knee-0"].get_xdata()) == [171.0]
    assert list(lines["serving-invalid-1"].get_xdata()) == [165.0]
    assert lines["serving-invalid-1"].get_markerfacecolor() == "white"
    assert list(lines["serving-bound-0"].get_ydata()) == [100.0, 100.0]
    assert "bound: p90 <= 100 ms (exp.latency_bound_ms)" in drawn.labels["legend"]
    svg = save_chart(drawn, "svg").decode()
    assert 'id="serving-knee-0"' in svg and 'id="serving-invalid-1"' in svg


def test_the_pages_svg_chart_is_the_png_chart() -> None:
    steep = [8.0, 10.0, 15.0, 30.0, 90.0, 170.0]
    records = [*_sweep(steep), *_sweep(**{"exp.replica_batch": 4})]
    report = build_serving_report(records)
    page = render_html(report, records)
    [svg] = re.findall(r"<svg.*?</svg>", page.split('<section id="serving">')[1], re.S)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    drawn = draw_serving_chart(report.curves)
    # The page carries matplotlib's figure: its axis labels and legend as text, and
    # each mark under its gid, named for this chart of the page.
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert drawn.labels["ylabels"] == ["p90 latency (ms)"] and "p90 latency (ms)" in texts
    assert drawn.labels["xlabel"] in texts
    for label in drawn.labels["legend"]:
        assert all(line in texts for line in label.split("\n")), label
    ids = {g.get("id") for g in root.iter(f"{ns}g")}
    assert {"serving-0-serving-knee-0", "serving-0-serving-invalid-1",
            "serving-0-serving-bound-0"} <= ids
    # A log axis (170 ms is over 20 times 8 ms): its ticks are matplotlib's powers of ten.
    assert {"10", "100"} <= set(texts)


def test_the_html_section_with_the_serving_report_and_with_another() -> None:
    records = _sweep(bound=0.0)
    page = render_html(build_serving_report(records), records)
    section = page.split('<section id="serving">')[1].split("</section>")[0]
    assert "<h2>Serving curves</h2>" in section and section.count("<svg") == 1
    assert 'id="serving-0-serving-limit-0"' in section  # no bound: the 2x limit, dotted
    assert "<table" not in section  # the serving report's tables are under Tables
    # Another report's page (no throughput: no other chart to draw) shows the tables.
    batch = {"exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet50",
             "exp.phase": "inference", "exp.replica_batch": 1, "results.time": 5.0}
    mixed = [batch, *records]
    page = render_html(Report("mixed"), mixed)
    section = page.split('<section id="serving">')[1].split("</section>")[0]
    assert section.count('<table class="sortable">') == 1 and section.count("<tr>") == 7
    assert 'id="serving"' not in render_html(Report("batch"), [batch])
