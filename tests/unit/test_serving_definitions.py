"""dlbench's serving definitions (measure/serving/definitions.py) on records whose
every figure is worked out by hand: times are whole milliseconds, so each expected
value is a fraction a reader can check."""

from __future__ import annotations

import doctest
import random
from typing import Any

import numpy as np
import pytest

from dlbench.measure.serving import definitions
from dlbench.measure.serving.definitions import (
    SLOs,
    SteadyWindow,
    _percentiles,
    chunk_gaps_ms,
    latency_ms,
    serving_results,
    steady_window,
    tpot_ms,
    ttft_ms,
)
from dlbench.measure.serving.records import RequestRecord
from dlbench.results.keys.lookup import conforms, is_declared
from dlbench.results.stats import loadgen_percentile

MS = 1_000_000  # ns


def rec(index: int, scheduled: int, chunks: list[int], *, sent: int | None = None,
        usage: int | None = None, client: int | None = None, first: int | None = None,
        error: str = "", warmup: bool = False) -> RequestRecord:
    """A record with times in ms from the run's start."""
    return RequestRecord(
        index=index, scheduled_ns=scheduled * MS,
        sent_ns=(scheduled if sent is None else sent) * MS,
        chunk_ns=[c * MS for c in chunks], chunk_chars=[4] * len(chunks),
        first_event_ns=(first if first is not None else chunks[0]) * MS if chunks else None,
        done_ns=chunks[-1] * MS if chunks else None, usage_output_tokens=usage,
        client_output_tokens=client, error=error, warmup=warmup)


def run() -> list[RequestRecord]:
    """A warm-up request, three that succeed and one that fails (ms):

    ====  =========  ====  ================  ======  =====  ===========  =======
    req   scheduled  sent  text events       tokens  TTFT   TPOT         latency
    ====  =========  ====  ================  ======  =====  ===========  =======
    w0    0          0     2, 15             2       (warm-up: in no figure)
    r1    10         10    20, 30, 40        3       10     20/2 = 10    30
    r2    20         21    50, 70            4       30     20/3         50
    r3    30         30    (HTTP error)
    r4    60         60    65, 75, 85, 95    4       5      30/3 = 10    35
    ====  =========  ====  ================  ======  =====  ===========  =======

    The steady-state window: from r1's schedule (10) to r4's (60), 50 ms.
    """
    return [rec(0, 0, [2, 15], usage=2, warmup=True),
            rec(1, 10, [20, 30, 40], usage=3),
            rec(2, 20, [50, 70], sent=21, usage=4),
            rec(3, 30, [], error="http"),
            rec(4, 60, [65, 75, 85, 95], usage=4)]


# -- one request ------------------------------------------------------------------------


def test_ttft_runs_from_the_scheduled_moment_to_the_first_text_event() -> None:
    # Sent 4 ms late, and a role-only first event at 6 ms: neither moves TTFT.
    r = rec(0, 0, [10, 20], sent=4, first=6, usage=2)
    assert r.first_event_ns == 6 * MS < r.chunk_ns[0]
    assert ttft_ms(r) == 10.0
    results = serving_results([r])
    assert results["results.ttft_data"] == [10.0]
    assert results["results.client_lag_mean"] == results["results.client_lag_p99"] == 4.0
    assert ttft_ms(rec(0, 0, [], error="empty")) is None


def test_tpot_latency_and_gaps_of_one_request() -> None:
    r = rec(0, 5, [10, 20, 30, 40], usage=10)  # 10 tokens in 4 events
    assert tpot_ms(r) == pytest.approx(30 / 9)  # per token, not per event
    assert latency_ms(r) == 35.0
    assert chunk_gaps_ms(r) == [10.0, 10.0, 10.0]  # per event
    assert tpot_ms(rec(0, 0, [10], usage=1)) is None  # one token: no pace
    assert tpot_ms(rec(0, 0, [10], usage=5)) is None  # the whole answer in one event
    assert latency_ms(rec(0, 0, [], error="connect")) is None
    assert chunk_gaps_ms(rec(0, 0, [10], usage=1)) == []


def test_output_tokens_come_from_usage_then_the_client_then_the_events() -> None:
    by_usage = rec(0, 0, [10, 20], usage=9, client=8)
    by_client = rec(1, 0, [10, 20, 30], client=7)
    by_events = rec(2, 0, [10, 20, 30])
    assert tpot_ms(by_usage) == pytest.approx(10 / 8)
    assert tpot_ms(by_client) == pytest.approx(20 / 6)
    assert tpot_ms(by_events) == pytest.approx(20 / 2)
    for records, source, total in (([by_usage], "usage", 9), ([by_client], "client", 7),
                                   ([by_events], "events", 3),
                                   ([by_usage, by_client, by_events], "mixed", 19)):
        results = serving_results(records)
        assert results["results.output_tokens_source"] == source
        assert results["results.output_tokens_total"] == total


def test_token_count_diff_over_requests_with_both_counts() -> None:
    records = [rec(0, 0, [10, 20], usage=10, client=8), rec(1, 0, [10, 20], usage=5, client=5),
               rec(2, 0, [10, 20], usage=7), rec(3, 0, [10, 20], client=3)]
    results = serving_results(records)
    assert results["results.token_count_diff"] == 2
    assert results["results.token_count_diff_rel"] == pytest.approx(2 / 13)
    alone = serving_results([rec(0, 0, [10, 20], usage=10)])
    assert alone["results.token_count_diff"] is alone["results.token_count_diff_rel"] is None


# -- distributions ------------------------------------------------------------------------


def test_the_distributions_of_a_run() -> None:
    results = serving_results(run())
    assert results["results.ttft_data"] == [10.0, 30.0, 5.0]  # issue order
    assert results["results.ttft_mean"] == 15.0
    assert (results["results.ttft_p50"], results["results.ttft_p90"],
            results["results.ttft_p99"]) == (10.0, 30.0, 30.0)
    assert results["results.tpot_data"] == pytest.approx([10.0, 20 / 3, 10.0])
    assert results["results.tpot_mean"] == pytest.approx((20 + 20 / 3) / 3)
    assert results["results.tpot_p50"] == 10.0
    assert results["results.latency_data"] == [30.0, 50.0, 35.0]
    assert results["results.latency_mean"] == pytest.approx(115 / 3)
    assert (results["results.latency_p50"], results["results.latency_max"]) == (35.0, 50.0)
    # Pooled gaps 10, 10 | 20 | 10, 10, 10; per request 10, 20, 10.
    assert results["results.itl_mean"] == pytest.approx(70 / 6)
    assert (results["results.itl_p50"], results["results.itl_p90"]) == (10.0, 20.0)
    assert results["results.itl_request_mean"] == pytest.approx(40 / 3)
    assert (results["results.itl_request_p50"], results["results.itl_request_p99"]) == (
        10.0, 20.0)
    # The client's lag, over every request after the warm-up: 0, 1, 0, 0 ms.
    assert results["results.client_lag_mean"] == 0.25
    assert results["results.client_lag_p99"] == 1.0
    # Output tokens over latency: 3/30, 4/50 and 4/35 per ms; the median is 3/30.
    assert results["results.request_tokens_per_s_p50"] == pytest.approx(3000 / 30)


def test_tpot_is_per_request_and_itl_pooled_per_event() -> None:
    # A short answer (2 tokens, one 10 ms gap) and a long one (11 tokens, ten 1 ms gaps):
    # per request they weigh the same; pooled, the long one's gaps are 10 of 11.
    short, long = rec(0, 0, [10, 20], usage=2), rec(1, 0, [5, *range(6, 16)], usage=11)
    results = serving_results([short, long])
    assert results["results.tpot_data"] == [10.0, 1.0]
    assert results["results.tpot_mean"] == 5.5
    assert results["results.itl_mean"] == pytest.approx(20 / 11)
    assert results["results.itl_p50"] == results["results.itl_p90"] == 1.0
    assert results["results.itl_p99"] == 10.0
    assert results["results.itl_request_mean"] == 5.5


def test_percentiles_follow_loadgens_rule() -> None:
    rng = random.Random(3)
    for n in (*range(1, 40), 100, 101, 999, 1000):
        values = [rng.uniform(0, 100) for _ in range(n)]
        for q in (1, 33.3, 50, 90, 95, 99, 99.9):
            assert _percentiles(np.asarray(values), [q]) == [loadgen_percentile(values, q)]
    # 100 requests of TTFT 1..100 ms, given out of order: p90 is the 91st smallest.
    records = [rec(i, 0, [t, t + 1], usage=2) for i, t in enumerate(rng.sample(range(1, 101),
                                                                               100))]
    results = serving_results(records)
    assert (results["results.ttft_p50"], results["results.ttft_p90"],
            results["results.ttft_p99"]) == (51.0, 91.0, 100.0)


# -- rates and goodput ---------------------------------------------------------------------


def test_steady_window_from_first_counted_to_last_issued_schedule() -> None:
    assert steady_window(run()) == SteadyWindow(10 * MS, 60 * MS)
    # Everything due at once (offline): the window runs to the last text event.
    offline = [rec(0, 0, [10, 20], usage=2), rec(1, 0, [15, 40], usage=2)]
    assert steady_window(offline) == SteadyWindow(0, 40 * MS)
    assert steady_window([rec(0, 0, [10], warmup=True)]) is None
    assert steady_window([rec(0, 0, [], error="connect")]) is None
    assert steady_window([]) is None


def test_rates_count_the_tokens_of_the_events_inside_the_window() -> None:
    results = serving_results(run())
    assert results["results.window_start_s"] == 0.010
    assert results["results.window_end_s"] == 0.060
    assert results["results.window_seconds"] == pytest.approx(0.050)
    # Inside [10, 60] ms: r1's 3 events (1 token each), r2's first (2 tokens of 4).
    assert results["results.output_tokens_per_s"] == pytest.approx(5 / 0.050)
    assert results["results.throughput"] == results["results.output_tokens_per_s"]
    assert results["results.throughput_unit"] == "tokens/s"
    # Ended inside it: r1 only.
    assert results["results.requests_per_s"] == pytest.approx(1 / 0.050)
    # The whole run: 11 tokens from r1's schedule (10) to the last event (95).
    assert results["results.output_tokens_per_s_run"] == pytest.approx(11 / 0.085)


def test_several_tokens_per_event_are_shared_among_its_events() -> None:
    # 10 tokens in 4 events (2.5 each); the window is [0, 25] ms, holding 2 of them.
    records = [rec(0, 0, [10, 20, 30, 40], usage=10), rec(1, 25, [60], usage=1)]
    results = serving_results(records)
    assert results["results.output_tokens_per_s"] == pytest.approx(5 / 0.025)
    assert results["results.tpot_data"] == pytest.approx([30 / 9])
    assert results["results.itl_mean"] == 10.0 and results["results.itl_request_mean"] == 10.0
    # A window given is used as it is.
    given = serving_results(records, window=SteadyWindow(0, 40 * MS))
    assert given["results.output_tokens_per_s"] == pytest.approx(10 / 0.040)
    assert given["results.requests_per_s"] == pytest.approx(1 / 0.040)


@pytest.mark.parametrize(("slos", "good", "tokens", "requests"), [
    (SLOs(), [1, 2, 4], 5, 1),
    (SLOs(ttft_ms=20), [1, 4], 3, 1),  # r2's TTFT is 30
    (SLOs(tpot_ms=8), [2], 2, 0),  # r1's and r4's TPOT are 10
    (SLOs(latency_ms=40), [1, 4], 3, 1),  # r2's latency is 50
    (SLOs(ttft_ms=20, latency_ms=40), [1, 4], 3, 1),
    (SLOs(ttft_ms=20, tpot_ms=8), [], 0, 0),
    (SLOs(ttft_ms=30, tpot_ms=10, latency_ms=50), [1, 2, 4], 5, 1),  # limits included
])
def test_goodput_counts_requests_that_met_every_objective(
        slos: SLOs, good: list[int], tokens: int, requests: int) -> None:
    results = serving_results(run(), slos)
    # The failed request r3 is in the denominator: 4 requests after the warm-up.
    assert results["results.slo_attainment"] == len(good) / 4
    assert results["results.goodput_tokens_per_s"] == pytest.approx(tokens / 0.050)
    assert results["results.goodput_requests_per_s"] == pytest.approx(requests / 0.050)


def test_a_request_of_one_token_cannot_miss_the_tpot_objective() -> None:
    results = serving_results([rec(0, 0, [10], usage=1)], SLOs(tpot_ms=1))
    assert results["results.slo_attainment"] == 1.0 and results["results.tpot_p99"] is None


# -- errors, warm-up, validity -------------------------------------------------------------


def test_errors_are_counted_by_kind() -> None:
    results = serving_results(run())
    assert (results["results.requests"], results["results.requests_ok"],
            results["results.requests_failed"]) == (4, 3, 1)
    assert results["results.error_counts"] == {"http": 1}
    assert results["results.valid"] is False
    assert results["results.valid_reasons"] == ["1 of 4 requests failed (http 1)"]


def test_the_warm_up_is_in_no_figure() -> None:
    with_warmup = serving_results(run())
    without = serving_results(run()[1:])
    assert with_warmup == without  # r0 changes nothing: not TTFT 2, not the window
    everything = serving_results([*run()[1:], rec(5, 0, [2, 15], usage=2)])
    assert everything["results.ttft_data"] == [10.0, 30.0, 5.0, 2.0]
    assert everything["results.window_start_s"] == 0.0


def test_validity_gates_on_the_99th_percentiles_of_ttft_and_tpot() -> None:
    ok = [r for r in run() if not r.error]
    assert serving_results(ok)["results.valid"] is True
    assert serving_results(ok, SLOs(ttft_ms=30, tpot_ms=10))["results.valid"] is True
    ttft = serving_results(ok, SLOs(ttft_ms=20))
    assert ttft["results.valid_reasons"] == [
        "the 99th percentile TTFT, 30.000 ms, is over endpoint.slo_ttft_ms=20"]
    both = serving_results(ok, SLOs(ttft_ms=20, tpot_ms=8))
    assert both["results.valid_reasons"] == [
        "the 99th percentile TTFT, 30.000 ms, is over endpoint.slo_ttft_ms=20",
        "the 99th percentile TPOT, 10.000 ms, is over endpoint.slo_tpot_ms=8"]
    # An objective on latency is goodput's alone: it is no validity gate.
    assert serving_results(ok, SLOs(latency_ms=1))["results.valid"] is True


def test_the_client_kept_up_or_not_by_its_lag_and_its_cpu() -> None:
    ok = [r for r in run() if not r.error]  # lags 0, 1 and 0 ms
    kept = serving_results(ok, client_cpu_percent=50.0)
    assert kept["results.client_kept_up"] is True and kept["results.valid"] is True
    assert kept["results.client_cpu_percent"] == 50.0
    late = serving_results(ok, max_client_lag_ms=0.5)
    assert late["results.client_kept_up"] is False and late["results.valid"] is False
    assert late["results.valid_reasons"] == [
        "the client fell behind its schedule: its 99th percentile lag, 1.000 ms, is over "
        "endpoint.max_client_lag_ms=0.5"]
    busy = serving_results(ok, client_cpu_percent=95.0)
    assert busy["results.client_kept_up"] is False and busy["results.valid"] is False
    assert busy["results.valid_reasons"] == [
        "the client used 95 % of a CPU core (from 90 % it may send late): run it on a "
        "freer machine"]


@pytest.mark.parametrize(("records", "reasons"), [
    ([], ["no request was sent after the warm-up"]),
    ([rec(0, 0, [5], usage=1, warmup=True)], ["no request was sent after the warm-up"]),
    ([rec(0, 0, [], error="timeout"), rec(1, 5, [], error="connect"),
      rec(2, 6, [], error="timeout")],
     ["none of the 3 requests after the warm-up succeeded with text",
      "3 of 3 requests failed (connect 1, timeout 2)"]),
])
def test_runs_with_nothing_to_measure_give_none_and_say_why(
        records: list[RequestRecord], reasons: list[str]) -> None:
    results = serving_results(records, SLOs(ttft_ms=1, tpot_ms=1, latency_ms=1))
    assert results["results.valid"] is False and results["results.valid_reasons"] == reasons
    for name in ("ttft_mean", "ttft_p99", "tpot_mean", "itl_p50", "itl_request_mean",
                 "latency_mean", "latency_max", "output_tokens_per_s", "throughput",
                 "requests_per_s", "goodput_tokens_per_s", "request_tokens_per_s_p50",
                 "output_tokens_source", "token_count_diff"):
        assert results[f"results.{name}"] is None, name
    assert results["results.ttft_data"] == results["results.tpot_data"] == []
    assert results["results.output_tokens_total"] == 0
    assert results["results.slo_attainment"] == (0.0 if results["results.requests"] else None)


def test_every_run_gives_the_same_declared_keys() -> None:
    names: set[str] | None = None
    for records in ([], run(), [rec(0, 0, [], error="connect")]):
        results: dict[str, Any] = serving_results(records, client_cpu_percent=10.0)
        assert names is None or set(results) == names
        names = set(results)
        for name, value in results.items():
            assert is_declared(name) and conforms(name, value), (name, value)


def test_the_module_examples() -> None:
    assert doctest.testmod(definitions).failed == 0
