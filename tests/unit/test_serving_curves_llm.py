"""The serving report's token curves: language-model serving runs (an endpoint's
records, in-process generation's) as output tokens/s by load, with TTFT, TPOT,
goodput, SLO attainment and the client's check per point, their knee, their tables,
charts and HTML section; on records built here, with known answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.errors import ResultsError
from dlbench.report.aggregate import Measured
from dlbench.report.cells import Report
from dlbench.report.charts.checks import chart_problems
from dlbench.report.charts.figure import PNG_KEY
from dlbench.report.html.page import render_html
from dlbench.report.serving.report import build_serving_report
from dlbench.report.serving.tokens.chart import (
    chart_kinds,
    draw_token_chart,
    render_token_chart,
    token_chart_groups,
)
from dlbench.report.serving.tokens.curves import TokenPoint, find_token_knee
from dlbench.report.serving.tokens.tables import token_reason
from dlbench.results.export import write_records

SLOS = {"endpoint.slo_ttft_ms": 500.0, "endpoint.slo_tpot_ms": 50.0}
NO_SLOS = {"endpoint.slo_ttft_ms": 0.0, "endpoint.slo_tpot_ms": 0.0}
RATES = [1.0, 2.0, 4.0, 8.0]


def _reasons(ttft: float, tpot: float, kept_up: bool, slos: dict[str, float]) -> list[str]:
    """The sentences the endpoint's validity gates write (measure/serving/definitions.py)."""
    reasons = []
    for name, value, figure in (("endpoint.slo_ttft_ms", ttft, "TTFT"),
                                ("endpoint.slo_tpot_ms", tpot, "TPOT")):
        if slos.get(name, 0) > 0 and value > slos[name]:
            reasons.append(f"the 99th percentile {figure}, {value:.3f} ms, is over "
                           f"{name}={slos[name]:g}")
    if not kept_up:
        reasons.append("the client fell behind its schedule: its 99th percentile lag, "
                       "25.000 ms, is over endpoint.max_client_lag_ms=10")
    return reasons


def _run(load: float, tokens: float, ttft: float, tpot: float, attained: float = 1.0,
         good: float | None = None, *, kept_up: bool = True, scenario: str = "server",
         slos: dict[str, float] | None = None, **params: Any) -> dict[str, Any]:
    """An ok endpoint record at ``load`` (requests/s offered in ``server``, in flight in
    ``batch``): ``tokens`` output tokens/s, TTFT and TPOT p99 in ms (p50 half of them),
    SLO attainment and goodput tokens/s; 128 tokens a request."""
    slos = SLOS if slos is None else slos
    reasons = _reasons(ttft, tpot, kept_up, slos)
    good = tokens if good is None else good
    load_param = "exp.target_qps" if scenario == "server" else "exp.replica_batch"
    return {
        "exp.status": "ok", "exp.framework": "endpoint", "exp.model": "served:llama",
        "exp.phase": "generate", "exp.device_type": "cpu", "exp.dtype": "float16",
        "exp.scenario": scenario, "exp.target_qps": 1.0, "exp.replica_batch": 1,
        load_param: load, "endpoint.url": "http://127.0.0.1:8000/v1", **slos,
        "results.output_tokens_per_s": tokens, "results.throughput": tokens,
        "results.throughput_unit": "tokens/s", "results.requests_per_s": tokens / 128,
        "results.ttft_p50": ttft / 2, "results.ttft_p99": ttft,
        "results.tpot_p50": tpot / 2, "results.tpot_p99": tpot, "results.itl_p99": tpot * 1.5,
        "results.goodput_tokens_per_s": good, "results.goodput_requests_per_s": good / 128,
        "results.slo_attainment": attained, "results.requests": 100,
        "results.requests_failed": 0, "results.client_kept_up": kept_up,
        "results.valid": not reasons, "results.valid_reasons": reasons, **params}


def _open_sweep(**params: Any) -> list[dict[str, Any]]:
    """Requests/s 1, 2, 4, 8 against SLOs of 500 ms TTFT, 50 ms TPOT: at 8 the server is
    past its capacity (TTFT p99 2.5 s, 40% of requests good)."""
    return [_run(1, 128, 100, 20, **params), _run(2, 255, 120, 22, **params),
            _run(4, 500, 300, 30, 0.995, 497, **params),
            _run(8, 610, 2500, 80, 0.40, 240, **params)]


def test_the_knee_is_the_most_tokens_with_99_percent_of_requests_good() -> None:
    report = build_serving_report(_open_sweep())
    assert report.curves == [] and report.title == (
        "Serving curves: output tokens/s vs TTFT and TPOT")
    (curve,) = report.token_curves
    assert curve.loop == "open" and [p.load for p in curve.points] == RATES
    # 8/s gives the most tokens, but only 40% of its requests were good; 4/s: 99.5%.
    assert curve.knee == 2 and curve.slos == SLOS
    (table,) = report.tables
    assert table.title == "Token serving curve: exp.model=served:llama"
    assert table.columns == [
        "offered (requests/s)", "output (tokens/s)", "completed (requests/s)",
        "TTFT p50 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)", "TPOT p99 (ms)", "ITL p99 (ms)",
        "goodput (tokens/s)", "goodput (requests/s)", "SLO attainment", "errors",
        "client kept up", "valid", "reasons"]
    assert table.rows[3] == [8.0, 610.0, 610 / 128, 1250.0, 2500.0, 40.0, 80.0, 120.0, 240.0,
                             240 / 128, 0.4, 0, True, False,
                             "TTFT p99 over endpoint.slo_ttft_ms; TPOT p99 over "
                             "endpoint.slo_tpot_ms"]
    assert table.notes == [
        "load: exp.target_qps, requests offered per second (an open loop: "
        "exp.scenario=server)",
        "SLOs: TTFT <= 500 ms (endpoint.slo_ttft_ms), TPOT <= 50 ms (endpoint.slo_tpot_ms); "
        "a request is good when it meets every one",
        "reasons: the rules a run failed, in short; results.valid_reasons words them in full",
        "knee: 500.00 tokens/s at 4 requests/s offered, TTFT p99 300.00 ms, TPOT p99 "
        "30.00 ms: the highest output tokens/s with at least 99% of requests within the "
        "SLOs (results.slo_attainment >= 0.99), the client keeping up"]
    assert report.warnings == []
    assert report.summary[0] == "4 generate-phase record(s): 1 token curve(s) in 1 group(s)."


def test_a_point_whose_client_fell_behind_is_marked_and_never_the_knee() -> None:
    # At 8/s every request was good and the most tokens came out, but the client was
    # late on its schedule: the load offered was not 8/s.
    records = [*_open_sweep()[:3], _run(8, 700, 400, 40, 1.0, kept_up=False)]
    report = build_serving_report(records)
    (curve,) = report.token_curves
    assert curve.points[3].kept_up is False and curve.knee == 2
    (table,) = report.tables
    assert table.rows[3][-3:] == [False, False, "client fell behind (endpoint.max_client_lag_ms)"]
    assert ("client fell behind at 8 (exp.target_qps): results.client_kept_up is false, so "
            "those points measure the client as much as the server; never the knee"
            ) in table.notes
    drawn = draw_token_chart(report.token_curves, "ttft")
    lines = {line.get_gid(): line for line in drawn.panels[0].axes.get_lines()}
    assert list(lines["tokens-behind-0"].get_xdata()) == [400.0]
    assert list(lines["tokens-knee-0"].get_ydata()) == [500.0]
    assert ("crossed: the client fell behind (results.client_kept_up false)"
            in _legend(drawn.labels))


def _legend(labels: dict[str, Any]) -> list[str]:
    """The legend's texts, unwrapped."""
    return [text.replace("\n", " ") for text in labels["legend"]]


def _points(*rows: tuple[float, float, float, float, float | None, bool]) -> list[TokenPoint]:
    return [TokenPoint(load=load, figures={"results.output_tokens_per_s": tokens,
                                           "results.ttft_p99": ttft, "results.tpot_p99": tpot,
                                           "results.slo_attainment": attained},
                       failed=None, valid=None, reasons=[], kept_up=kept)
            for load, tokens, ttft, tpot, attained, kept in rows]


def test_find_token_knee_with_and_without_slos() -> None:
    # SLOs: 0.99 attainment qualifies, 0.98 does not; of equal throughputs the lower load.
    points = _points((1, 100, 50, 10, 1.0, True), (2, 200, 60, 11, 0.99, True),
                     (4, 200, 70, 12, 0.99, True), (8, 300, 90, 15, 0.98, True))
    assert find_token_knee(points, SLOS) == (1, {})
    # No SLO: within 2x the lowest load's p99s (100 ms TTFT, 20 ms TPOT); 8 is within
    # both but its client fell behind.
    points = _points((1, 100, 50, 10, None, True), (2, 200, 90, 19, None, True),
                     (4, 250, 101, 12, None, True), (8, 300, 90, 15, None, False))
    assert find_token_knee(points, {}) == (1, {"results.ttft_p99": 100.0,
                                               "results.tpot_p99": 20.0})
    # SLOs without any attainment recorded: no knee.
    assert find_token_knee(_points((1, 100, 50, 10, None, True)), SLOS)[0] is None


def test_a_closed_loop_concurrency_sweep_without_slos() -> None:
    records = [_run(c, t, ttft, tpot, scenario="batch", slos=NO_SLOS)
               for c, t, ttft, tpot in ((2, 240, 60, 12), (4, 430, 90, 18), (8, 700, 150, 25))]
    # single_stream is one in flight: the curve's first point; a repeat is averaged.
    records += [_run(99, 128, 50, 10, scenario="single_stream", slos=NO_SLOS),
                _run(4, 450, 92, 18, scenario="batch", slos=NO_SLOS, **{"user.run": 2})]
    report = build_serving_report(records)
    (curve,) = report.token_curves
    assert curve.loop == "closed" and [p.load for p in curve.points] == [1, 2, 4, 8]
    four = curve.points[2]
    assert four.runs == 2 and isinstance(four.throughput, Measured)
    assert float(four.throughput) == pytest.approx(440.0) and four.failed == 0
    # Limits: twice the TTFT p99 and TPOT p99 at one in flight, 100 and 20 ms; at 8,
    # TTFT p99 is 150 ms.
    assert curve.limits == {"results.ttft_p99": 100.0, "results.tpot_p99": 20.0}
    assert curve.knee == 2
    (table,) = report.tables
    assert table.columns[0] == "concurrency (requests)"
    assert table.notes[0] == ("load: exp.replica_batch, requests in flight (a closed loop: "
                              "exp.scenario=batch; single_stream is one)")
    assert table.notes[1] == ("no SLO (endpoint.slo_ttft_ms, endpoint.slo_tpot_ms, "
                              "endpoint.slo_latency_ms)")
    assert table.notes[-1] == (
        "knee: 440.00 tokens/s at 4 in flight, TTFT p99 91.00 ms, TPOT p99 18.00 ms: the "
        "highest output tokens/s with TTFT p99 and TPOT p99 within 2x those at the lowest "
        "load (TTFT p99 100.00 ms, TPOT p99 20.00 ms), the client keeping up")
    assert ("errors: failed requests (results.requests_failed), summed over a point's runs"
            in table.notes)


def test_open_and_closed_loops_are_curves_apart() -> None:
    records = [*_open_sweep(), _run(1, 128, 50, 10, scenario="batch"),
               _run(4, 430, 90, 18, scenario="batch")]
    report = build_serving_report(records)
    assert [(c.label, c.loop, [p.load for p in c.points]) for c in report.token_curves] == [
        ("exp.model=served:llama, open loop", "open", RATES),
        ("exp.model=served:llama, closed loop", "closed", [1.0, 4.0])]
    knees = report.tables[0]
    assert [row[:3] for row in knees.rows] == [
        ["exp.model=served:llama, open loop", 4.0, None],
        ["exp.model=served:llama, closed loop", None, 4.0]]
    assert len(token_chart_groups(report.token_curves)) == 2


def _generated(load: float, tokens: float, ttft: float, tpot: float, **params: Any
               ) -> dict[str, Any]:
    """An in-process generate-phase record of the server scenario: no SLO, goodput, ITL
    or client's check, but LoadGen's rate and latency too."""
    return {"exp.status": "ok", "exp.framework": "pytorch", "exp.model": "gpt2_small",
            "exp.phase": "generate", "exp.device_type": "cpu", "exp.dtype": "float32",
            "exp.scenario": "server", "exp.target_qps": load, "exp.replica_batch": 4,
            "exp.latency_bound_ms": 0.0, "exp.latency_percentile": "auto",
            "results.qps_achieved": load, "results.latency_at_percentile": ttft * 3,
            "results.output_tokens_per_s": tokens, "results.requests_per_s": load,
            "results.ttft_p50": ttft / 2, "results.ttft_p99": ttft,
            "results.tpot_p50": tpot / 2, "results.tpot_p99": tpot, "results.valid": True,
            "results.valid_reasons": [], **params}


def test_in_process_generation_gets_token_curves_only_with_what_it_measured() -> None:
    records = [_generated(q, t, ttft, tpot) for q, t, ttft, tpot in
               ((0.5, 8.0, 900, 90), (1.0, 15.0, 1200, 95))]
    records += [_generated(1.0, 16.0, 1000, 92, **{"exp.replica_batch": 8})]
    report = build_serving_report(records)
    # Not a latency curve of queries: a generate run's points are tokens.
    assert report.curves == []
    assert [(c.label, [p.load for p in c.points]) for c in report.token_curves] == [
        ("exp.model=gpt2_small, exp.replica_batch=4", [0.5, 1.0]),
        ("exp.model=gpt2_small, exp.replica_batch=8", [1.0])]
    knees, first, _ = report.tables
    assert knees.title == "Token knees: the highest output tokens/s meeting the SLOs"
    assert knees.columns == ["curve", "offered (requests/s)", "concurrency (requests)",
                             "output (tokens/s)", "TTFT p99 (ms)", "TPOT p99 (ms)", "rule",
                             "valid points"]
    # Twice 900 ms and 90 ms allows 1,200 ms and 95 ms: 1/s is the knee.
    assert knees.rows[0] == ["exp.model=gpt2_small, exp.replica_batch=4", 1.0, None, 15.0,
                             1200.0, 95.0, "2x lowest load", "2 of 2"]
    # No goodput, ITL, errors or client's check recorded: no such columns.
    assert first.columns == ["offered (requests/s)", "output (tokens/s)",
                             "completed (requests/s)", "TTFT p50 (ms)", "TTFT p99 (ms)",
                             "TPOT p50 (ms)", "TPOT p99 (ms)", "valid", "reasons"]


def test_latency_and_token_curves_together_and_the_latency_part_unchanged() -> None:
    loadgen = {"exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet50",
               "exp.phase": "inference", "exp.device_type": "cpu", "exp.dtype": "float16",
               "exp.scenario": "server", "exp.replica_batch": 1, "exp.latency_bound_ms": 100.0,
               "exp.latency_percentile": 90.0, "results.latency_p50": 4.0,
               "results.latency_p90": 8.0, "results.latency_p99": 12.0,
               "results.latency_at_percentile": 8.0, "results.valid": True,
               "results.valid_reasons": []}
    server = [{**loadgen, "exp.target_qps": q, "results.qps_target": q,
               "results.qps_achieved": q * 0.99} for q in (40.0, 80.0)]
    alone = build_serving_report(server)
    both = build_serving_report([*server, *_open_sweep()])
    assert both.title == ("Serving curves: latency vs achieved throughput; output tokens/s "
                          "vs TTFT and TPOT")
    # Each kind of curve is made of its own records: the latency curve's table is the
    # one it has alone.
    assert len(both.curves) == 1 and len(both.token_curves) == 1
    assert both.tables[0] == alone.tables[0]
    assert both.summary[:4] == alone.summary and len(both.summary) == 8
    assert both.tables[1].title == "Token serving curve: exp.model=served:llama"


def test_records_left_out_and_none_left() -> None:
    records = [*_open_sweep(), {**_run(1, 1, 1, 1), "exp.scenario": "offline"},
               {**_run(1, 1, 1, 1), "exp.status": "timeout"},
               {**_run(3, 1, 1, 1), "exp.id": "e7", "results.output_tokens_per_s": None}]
    report = build_serving_report(records)
    assert report.warnings == [
        "1 generate-phase record(s) left out: exp.status is not ok (1 timeout)",
        "1 generate-phase record(s) left out: no load to draw them by (exp.scenario: 1 "
        "offline); a token curve needs exp.scenario=server (by exp.target_qps) or batch (by "
        "exp.replica_batch)",
        "1 generate-phase record(s) left out: no numeric load or "
        "results.output_tokens_per_s: e7"]
    with pytest.raises(ResultsError) as caught:
        build_serving_report(records[4:])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(
        "none of the 3 selected record(s) is an ok server-scenario run with a point to "
        "draw, nor an ok generate-phase run with results.output_tokens_per_s (1 "
        "generate-phase record(s) left out")


def test_token_reasons() -> None:
    assert token_reason("the 99th percentile TPOT, 61.000 ms, is over "
                        "endpoint.slo_tpot_ms=50") == "TPOT p99 over endpoint.slo_tpot_ms"
    assert token_reason("the client used 95 % of a CPU core (from 90 % it may send late): "
                        "run it on a freer machine") == "client used 95 % of a CPU core"
    assert token_reason("ran 9 queries, fewer than the 60 exp.scenario_min_queries asks "
                        "for") == "below exp.scenario_min_queries"
    assert token_reason("3 of 100 requests failed (http 3)") == (
        "3 of 100 requests failed (http 3)")


def test_the_charts_throughput_against_ttft_tpot_and_goodput_against_load() -> None:
    steep = [*_open_sweep()[:3], _run(8, 610, 5000, 80, 0.40, 240)]  # 5 s: 50x 100 ms
    other = _open_sweep(**{"endpoint.url": "http://127.0.0.1:9000/v1"})
    report = build_serving_report([*steep, *other])
    (members,) = token_chart_groups(report.token_curves)
    assert len(members) == 2 and chart_kinds(members) == ["ttft", "tpot", "goodput"]
    drawn = draw_token_chart(members, "ttft")
    assert chart_problems(drawn) == []
    axes = drawn.panels[0].axes
    assert axes.get_xlabel() == "TTFT p99, results.ttft_p99 (ms)"
    assert axes.get_ylabel() == "output (tokens/s)"
    assert axes.get_xscale() == "log"  # 5,000 ms is 50 times 100 ms
    lines = {line.get_gid(): line for line in axes.get_lines()}
    assert list(lines["tokens-curve-0"].get_xdata()) == [100.0, 120.0, 300.0, 5000.0]
    assert list(lines["tokens-curve-0"].get_ydata()) == [128.0, 255.0, 500.0, 610.0]
    assert list(lines["tokens-invalid-0"].get_xdata()) == [5000.0]
    assert list(lines["tokens-slo-0"].get_xdata()) == [500.0, 500.0]
    assert [t.get_text() for t in axes.texts][:4] == ["1/s", "2/s", "4/s", "8/s"]
    assert "SLO: TTFT <= 500 ms (endpoint.slo_ttft_ms)" in _legend(drawn.labels)
    tpot = draw_token_chart(members, "tpot")
    assert chart_problems(tpot) == [] and tpot.panels[0].axes.get_xscale() == "linear"
    goodput = draw_token_chart(members, "goodput")
    assert chart_problems(goodput) == []
    axes = goodput.panels[0].axes
    assert axes.get_xlabel() == "offered load, exp.target_qps (requests/s)"
    lines = {line.get_gid(): line for line in axes.get_lines()}
    assert list(lines["tokens-curve-0"].get_ydata()) == [128.0, 255.0, 497.0, 240.0]
    assert list(lines["tokens-output-0"].get_ydata()) == [128.0, 255.0, 500.0, 610.0]
    png = render_token_chart(members, "goodput", "png")
    assert png.startswith(b"\x89PNG") and PNG_KEY.encode() in png


def test_the_html_section_and_the_command_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    records = _open_sweep()
    page = render_html(build_serving_report(records), records)
    section = page.split('<section id="serving">')[1].split("</section>")[0]
    assert section.count("<svg") == 3 and "<table" not in section
    assert "Language-model serving: output tokens/s against TTFT p99" in section
    assert "Latency at the percentile of the rules" not in section
    assert 'id="serving-tokens-0-ttft-tokens-knee-0"' in section
    assert "at least 99% of requests within the SLOs" in section
    # Another report's page shows the curves' tables under the last chart.
    page = render_html(Report("other"), records)
    section = page.split('<section id="serving">')[1].split("</section>")[0]
    assert section.count('<table class="sortable">') == 1 and section.count("<svg") == 3
    assert ("<figcaption>goodput tokens/s (results.goodput_tokens_per_s) vs requests/s "
            "offered, 1 curve(s), open loop</figcaption>") in section
    source = tmp_path / "serve.jsonl"
    write_records(records, source)
    assert main(["report", "--type", "serving", "--input", str(source)]) == 0
    assert "note: knee: 500.00 tokens/s at 4 requests/s offered" in capsys.readouterr().out
    assert main(["report", "--type", "serving", "--input", str(source), "--format",
                 "json"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert len(table["rows"]) == 4
