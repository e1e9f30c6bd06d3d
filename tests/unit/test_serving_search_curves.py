"""The serving report draws an endpoint's load search (``exp.target_qps=auto``,
``exp.replica_batch=auto``) as a token curve of its own: every search's probes as
points by load, the search's answer as the knee, its peak with the 95 % interval over
its searches in the notes, the knees' table and the goodput chart; on search records
built here in the shape the endpoint backend writes, with known answers."""

from __future__ import annotations

import doctest
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.cli.main import main
from dlbench.report.aggregate import Measured
from dlbench.report.charts.checks import chart_problems
from dlbench.report.html.page import render_html
from dlbench.report.serving.report import build_serving_report
from dlbench.report.serving.tokens import search as token_search
from dlbench.report.serving.tokens import tables as token_tables
from dlbench.report.serving.tokens.chart import draw_token_chart, render_token_chart
from dlbench.report.serving.tokens.search import TokenSearch, peak_text
from dlbench.report.serving.tokens.tables import curve_token_table, token_reason
from dlbench.results.export import write_records

SLO_TTFT = 500.0
#: t(2) at 97.5 %: the interval of three searches' peaks.
T2 = 4.302652729911275


def _probe(repeat: int, load: float, tokens: float, ttft: float, attained: float = 1.0, *,
           integer: bool = False, kept_up: bool = True) -> dict[str, Any]:
    """A probe as the endpoint's search records it: it passes when its TTFT p99 is
    within the SLO and 99 % of its requests were good (128 tokens each)."""
    reasons = []
    if ttft > SLO_TTFT:
        reasons.append(f"the 99th percentile TTFT, {ttft:.3f} ms, is over "
                       f"endpoint.slo_ttft_ms={SLO_TTFT:g}")
    if attained < 0.99:
        reasons.append(f"{100 * attained:.1f} % of the requests met every SLO, under "
                       "endpoint.search_attainment=0.99")
    named = {"concurrency": int(load)} if integer else {"qps": load}
    return {"repeat": repeat, "load": load, **named, "passed": not reasons,
            "reasons": reasons, "valid": ttft <= SLO_TTFT, "requests": 40,
            "slo_attainment": attained, "goodput_requests_per_s": attained * tokens / 128,
            "goodput_tokens_per_s": attained * tokens, "output_tokens_per_s": tokens,
            "requests_per_s": tokens / 128, "ttft_p99": ttft, "tpot_p99": 20.0,
            "latency_p99": ttft + 2540.0, "client_kept_up": kept_up, "seconds": 4.0}


#: Three rate searches from 10 requests/s: each doubles to 40 (fails), then bisects.
#: The first and last find 30, the second 25 (its probe at 30 was unlucky).
RATE_PROBES = [
    _probe(0, 10, 1280, 100), _probe(0, 20, 2550, 150), _probe(0, 40, 3800, 2400, 0.30),
    _probe(0, 30, 3700, 420), _probe(0, 35, 3900, 900, 0.80), _probe(0, 32.5, 3850, 560, 0.95),
    _probe(1, 10, 1275, 110), _probe(1, 20, 2560, 160), _probe(1, 40, 3790, 2600, 0.25),
    _probe(1, 30, 3650, 520, 0.97), _probe(1, 25, 3200, 300), _probe(1, 27.5, 3450, 510, 0.98),
    _probe(2, 10, 1285, 105), _probe(2, 20, 2540, 155), _probe(2, 40, 3810, 2500, 0.28),
    _probe(2, 30, 3690, 430), _probe(2, 35, 3880, 950, 0.75), _probe(2, 32.5, 3860, 580, 0.96),
]
PEAKS = [30.0, 25.0, 30.0]


def _base(scenario: str = "server", **params: Any) -> dict[str, Any]:
    """What every record here shares: an ok endpoint run with a TTFT SLO."""
    return {"exp.status": "ok", "exp.framework": "endpoint", "exp.model": "served:llama",
            "exp.phase": "generate", "exp.device_type": "cpu", "exp.dtype": "float16",
            "exp.scenario": scenario, "exp.target_qps": 0.0, "exp.replica_batch": 1,
            "endpoint.url": "http://127.0.0.1:8000/v1", "endpoint.slo_ttft_ms": SLO_TTFT,
            "endpoint.slo_tpot_ms": 0.0, "results.throughput_unit": "tokens/s", **params}


def _figures(probe: dict[str, Any]) -> dict[str, Any]:
    """A run's figures, as those of ``probe``."""
    return {"results.output_tokens_per_s": probe["output_tokens_per_s"],
            "results.throughput": probe["output_tokens_per_s"],
            "results.ttft_p50": probe["ttft_p99"] / 2, "results.ttft_p99": probe["ttft_p99"],
            "results.tpot_p99": 20.0, "results.slo_attainment": probe["slo_attainment"],
            "results.requests": 40, "results.requests_failed": 0,
            "results.client_kept_up": True, "results.valid": probe["passed"],
            "results.valid_reasons": probe["reasons"]}


def _record(probes: list[dict[str, Any]], peaks: list[float], load: float, *,
            param: str = "exp.target_qps", **params: Any) -> dict[str, Any]:
    """An ok endpoint record of a search: ``auto`` as its load, the peaks' mean and
    interval, and as its other figures those of its last probe at ``load``."""
    chosen = next(p for p in reversed(probes) if p["load"] == load)
    ci95 = T2 * statistics.stdev(peaks) / 3 ** 0.5 if len(peaks) == 3 else None
    scenario = "server" if param == "exp.target_qps" else "batch"
    return {
        **_base(scenario, **{"exp.id": "s1", param: "auto"}), **_figures(chosen),
        "results.peak_load": statistics.mean(peaks) if peaks else None,
        "results.peak_load_ci95": ci95, "results.peak_load_repeats": peaks,
        "results.peak_load_unit": "requests/s" if scenario == "server" else "requests",
        "results.search_load": load, "results.scenario_probes": probes, **params}


def _rate_search(**params: Any) -> dict[str, Any]:
    return _record(RATE_PROBES, PEAKS, 30.0, **params)


def _sweep_run(load: float, tokens: float, ttft: float, attained: float = 1.0
               ) -> dict[str, Any]:
    """A run of a sweep of the search's configuration at ``load`` requests/s."""
    return {**_base("server", **{"exp.id": f"r{load:g}", "exp.target_qps": load}),
            **_figures(_probe(0, load, tokens, ttft, attained))}


def test_every_searchs_probes_are_points_and_the_answer_is_the_knee() -> None:
    report = build_serving_report([_rate_search()])
    (curve,) = report.token_curves
    assert curve.label == "exp.model=served:llama, search s1" and curve.loop == "open"
    assert [p.load for p in curve.points] == [10, 20, 25, 27.5, 30, 32.5, 35, 40]
    assert [p.runs for p in curve.points] == [3, 3, 1, 1, 3, 2, 2, 3]
    assert [p.passed for p in curve.points] == [3, 3, 1, 0, 2, 0, 0, 0]
    # At 30 the three searches' probes are averaged: 3,700, 3,650 and 3,690 tokens/s.
    thirty = curve.points[4]
    assert isinstance(thirty.throughput, Measured)
    assert float(thirty.throughput) == pytest.approx(3680.0) and thirty.throughput.n == 3
    assert thirty.valid is False  # the second search's probe at 30 was over the SLO
    # The knee: the search's answer, the last search's probe at 30 having passed.
    assert curve.knee == 4 and curve.search is not None and curve.search.passed
    assert curve.search.peak == pytest.approx(85 / 3)
    assert curve.search.ci95 == pytest.approx(T2 * 2.886751 / 3 ** 0.5)


def test_the_search_curves_table_and_notes() -> None:
    (table,) = build_serving_report([_rate_search()]).tables
    assert table.title == "Token serving curve: exp.model=served:llama, search s1"
    # No TTFT or TPOT p50 or ITL column: a probe keeps none. Its probes and passes.
    assert table.columns == [
        "offered (requests/s)", "output (tokens/s)", "completed (requests/s)",
        "TTFT p99 (ms)", "TPOT p99 (ms)", "goodput (tokens/s)", "goodput (requests/s)",
        "SLO attainment", "client kept up", "probes", "passed", "valid", "reasons"]
    assert table.rows[0][0] == 10 and table.rows[0][-4:] == [3, 3, True, None]
    # Runs that failed one gate by different margins say it once.
    assert table.rows[6][-4:] == [2, 0, False, "TTFT p99 over endpoint.slo_ttft_ms; 80.0 % "
                                  "good, under endpoint.search_attainment; 75.0 % good, under "
                                  "endpoint.search_attainment"]
    assert table.notes == [
        "load: exp.target_qps, requests offered per second (an open loop: "
        "exp.scenario=server)",
        "points: the probes of the exp.target_qps=auto search s1 (results.scenario_probes), "
        "every repeat's: a load probed by several searches is their mean; a probe keeps no "
        "TTFT or TPOT p50, nor ITL",
        "SLOs: TTFT <= 500 ms (endpoint.slo_ttft_ms); a request is good when it meets every "
        "one",
        "peak: 28.3 ± 7.2 requests/s over 3 searches (results.peak_load ± "
        "results.peak_load_ci95: the mean of the searches' highest passing loads, 30, 25, "
        "30, and the half-width of its 95 % interval)",
        "probes, passed: the probes at a load over all searches, and how many passed (valid, "
        "and at least endpoint.search_attainment of requests within every SLO)",
        "reasons: the rules a run failed, in short; results.valid_reasons words them in full",
        "knee: 3680.00 tokens/s at 30 requests/s offered, TTFT p99 456.67 ms, TPOT p99 "
        "20.00 ms: the search's answer (results.search_load), the highest load that passed "
        "in its last search; 1 of its 3 probes did not pass: TTFT p99 over "
        "endpoint.slo_ttft_ms; 97.0 % good, under endpoint.search_attainment"]


def test_a_search_beside_a_sweep_of_its_configuration() -> None:
    sweep = [_sweep_run(10, 1280, 100), _sweep_run(20, 2550, 150), _sweep_run(40, 3800, 2400, 0.30)]
    alone = build_serving_report(sweep)
    both = build_serving_report([_rate_search(), *sweep])
    assert [c.label for c in both.token_curves] == [
        "exp.model=served:llama", "exp.model=served:llama, search s1"]
    knees, swept, searched = both.tables
    # The sweep's curve is the one it has alone; the search comes after it.
    assert swept == alone.tables[0]
    assert searched.title == "Token serving curve: exp.model=served:llama, search s1"
    assert [row[0] for row in knees.rows] == [c.label for c in both.token_curves]
    assert knees.rows[0][1] == 20.0 and knees.rows[0][-2] == "SLO attainment"
    assert knees.rows[1][1] == 30.0 and knees.rows[1][-2] == (
        "search's answer; peak 28.3 ± 7.2 requests/s over 3 searches")
    assert both.summary[-1].startswith("A load search (exp.target_qps=auto, "
                                       "exp.replica_batch=auto) is a curve of its own")
    assert len(alone.summary) == len(both.summary) - 1


def test_a_concurrency_search_whose_last_search_found_nothing() -> None:
    # One search: no number of requests in flight met the SLO, down to 1; the record's
    # figures are its lowest probe's, and the search did not settle.
    probes = [_probe(0, 1, 130, 700, 0.5, integer=True)]
    record = _record(probes, [], 1.0, param="exp.replica_batch")
    record["results.valid_reasons"] = [*record["results.valid_reasons"],
                                       "no probe met the SLOs, down to 1 request in flight"]
    (curve,) = build_serving_report([record]).token_curves
    assert curve.loop == "closed" and curve.knee is None
    table = curve_token_table(curve)
    assert table.columns[0] == "concurrency (requests)"
    assert table.notes[3] == ("peak: none found (results.peak_load: no search had a "
                              "passing load)")
    assert table.notes[-2:] == [
        "knee: none, the search's probe at 1 in flight (results.search_load) did not pass",
        "search not valid (results.valid): TTFT p99 over endpoint.slo_ttft_ms; 50.0 % good, "
        "under endpoint.search_attainment; no probe met the SLOs, down to 1 request in flight"]


def test_the_peak_in_words() -> None:
    def search(peak: float | None, ci95: float | None, peaks: list[float],
               unit: str = "requests/s") -> str:
        return peak_text(TokenSearch("s", "exp.target_qps", None, False, peak, ci95, peaks,
                                     unit))

    assert search(38.93, 1.234, [38, 39.5, 39.3]) == "38.9 ± 1.2 requests/s over 3 searches"
    assert search(138.6, 15.3, [130, 140, 145]) == "139 ± 15 requests/s over 3 searches"
    assert search(4.0, 0.0, [4, 4, 4], "requests") == (
        "4 ± 0 requests in flight over 3 searches")
    assert search(39.35788, None, [39.35788]) == "39.36 requests/s from one search, no interval"
    assert search(None, None, []) == "none found"


def test_doctests() -> None:
    assert doctest.testmod(token_search).failed == 0
    assert doctest.testmod(token_tables).failed == 0


def test_a_searchs_reasons_in_short() -> None:
    assert token_reason("95.0 % of the requests met every SLO, under "
                        "endpoint.search_attainment=0.99") == (
        "95.0 % good, under endpoint.search_attainment")
    assert token_reason("every probe met the SLOs, up to 64 requests in flight "
                        "(exp.auto_batch_max=64): the peak is higher") == (
        "every probe met the SLOs, up to 64 requests in flight (exp.auto_batch_max=64)")
    assert token_reason("at 8 requests/s the client fell behind its schedule "
                        "(results.client_kept_up false): the peak found may be the "
                        "client's, not the server's") == (
        "client fell behind at a failing load: the peak may be the client's")


def test_the_charts_mark_the_answer_and_the_peak() -> None:
    sweep = [_sweep_run(10, 1280, 100), _sweep_run(20, 2550, 150)]
    report = build_serving_report([_rate_search(), *sweep])
    search_curve = report.token_curves[1]
    drawn = draw_token_chart([search_curve], "goodput")
    assert chart_problems(drawn) == []
    axes = drawn.panels[0].axes
    lines = {line.get_gid(): line for line in axes.get_lines()}
    assert np.asarray(lines["tokens-knee-0"].get_xdata()).tolist() == [30.0]
    assert np.asarray(lines["tokens-peak-0"].get_xdata()) == pytest.approx([85 / 3] * 2)
    (interval,) = [c for c in axes.collections if c.get_gid() == "tokens-peak-interval-0"]
    low, high = sorted(set(np.asarray(interval.get_paths()[0].vertices)[:, 0].tolist()))
    half = T2 * statistics.stdev(PEAKS) / 3 ** 0.5
    assert (low, high) == pytest.approx((85 / 3 - half, 85 / 3 + half))
    # The answer's crowd (27.5, 32.5 within 10 % of 30 or of 25) is not labelled.
    assert [t.get_text() for t in axes.texts] == ["10/s", "20/s", "25/s", "30/s", "35/s",
                                                  "40/s"]
    legend = [text.replace("\n", " ") for text in drawn.labels["legend"]]
    assert "knee: a search's answer (results.search_load)" in legend
    assert ("dotted: a search's peak (results.peak_load), shaded: its 95 % interval"
            in legend)
    # Beside a sweep: both knees' rules; the TTFT chart has no peak (its x is TTFT).
    ttft = draw_token_chart(report.token_curves, "ttft")
    assert chart_problems(ttft) == []
    legend = [text.replace("\n", " ") for text in ttft.labels["legend"]]
    assert ("knee: the highest output tokens/s meeting the SLOs; a search's: its answer "
            "(results.search_load)") in legend
    assert not any(str(line.get_gid()).startswith("tokens-peak")
                   for line in ttft.panels[0].axes.get_lines())
    png = render_token_chart(report.token_curves, "goodput", "png")
    assert png.startswith(b"\x89PNG")


def test_the_html_section_and_the_command_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    records = [_rate_search()]
    page = render_html(build_serving_report(records), records)
    section = page.split('<section id="serving">')[1].split("</section>")[0]
    assert section.count("<svg") == 3
    assert 'id="serving-tokens-0-goodput-tokens-peak-0"' in section
    assert ("exp.model=served:llama, search s1: peak: 28.3 ± 7.2 requests/s over 3 "
            "searches") in section
    source = tmp_path / "search.jsonl"
    write_records(records, source)
    assert main(["report", "--type", "serving", "--input", str(source)]) == 0
    out = capsys.readouterr().out
    assert "note: peak: 28.3 ± 7.2 requests/s over 3 searches" in out
    assert "no numeric load" not in out
    assert main(["report", "--type", "serving", "--input", str(source), "--format",
                 "json"]) == 0
    (table,) = json.loads(capsys.readouterr().out)["tables"]
    assert len(table["rows"]) == 8


def test_a_search_without_token_probes_is_left_out() -> None:
    # An in-process search's probes keep no output tokens/s: nothing to draw.
    record = {**_rate_search(), "exp.id": "g1",
              "results.scenario_probes": [{"qps": 10.0, "qps_achieved": 9.9,
                                           "latency_at_percentile": 40.0, "valid": True}]}
    report = build_serving_report([record, _sweep_run(10, 1280, 100)])
    assert [c.label for c in report.token_curves] == ["exp.model=served:llama"]
    assert report.warnings == ["1 generate-phase record(s) left out: no numeric load or "
                               "results.output_tokens_per_s: g1"]
