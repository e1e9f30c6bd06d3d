"""The same requests in each peer's definitions (:mod:`dlbench.measure.serving.peers`),
on records made here whose numbers make each disagreement show, with the answers
worked out by hand in the comments.

The vLLM, SGLang and GuideLLM answers of :func:`test_vllm_on_the_shared_requests` and
its neighbours were also obtained by running each tool's own metric code (vLLM's
``calculate_metrics``, SGLang's ``calculate_metrics``, GuideLLM's
``DistributionSummary``) on the timings its client would have taken from the same
streams; the numbers are encoded here, nothing upstream is imported.
"""

from __future__ import annotations

import math

import pytest

from dlbench.cli.commands.definitions import PEER_CHOICES
from dlbench.measure.serving.definitions import SLOs, serving_results
from dlbench.measure.serving.peers import PEERS, Context, Figure, peer_figures
from dlbench.measure.serving.peers.mlperf import _trunc_div
from dlbench.measure.serving.records import RequestRecord
from dlbench.results.keys.lookup import lookup

MS = 1_000_000


def _ns(*ms: float) -> list[int]:
    return [round(t * MS) for t in ms]


def shared() -> list[RequestRecord]:
    """Three requests, times in ms from the run's start:

    - A: due at 0, sent at 4 (the client 4 ms late); a role-only chunk at 10, then text
      at 30, 40, 50, 60 (4 events); [DONE] at 62; usage says 10 tokens (several per
      chunk), the client tokenizer 9; asked for 12; a prompt of 100 tokens.
    - B: due and sent at 100; text at 120..170 every 10 (6 events, the first event the
      first text); [DONE] at 171; no usage, client count 6; asked for 8; prompt 50.
    - C: due at 200, sent at 201; text at 210 and 250; [DONE] at 252; no usage, no
      client count (so: events, 2); asked for 4; prompt 20.
    """
    return [
        RequestRecord(0, 0, 4 * MS, chunk_ns=_ns(30, 40, 50, 60), first_event_ns=10 * MS,
                      done_ns=62 * MS, usage_output_tokens=10, client_output_tokens=9,
                      max_tokens=12, prompt_tokens=100),
        RequestRecord(1, 100 * MS, 100 * MS, chunk_ns=_ns(120, 130, 140, 150, 160, 170),
                      first_event_ns=120 * MS, done_ns=171 * MS, client_output_tokens=6,
                      max_tokens=8, prompt_tokens=50),
        RequestRecord(2, 200 * MS, 201 * MS, chunk_ns=_ns(210, 250), first_event_ns=210 * MS,
                      done_ns=252 * MS, max_tokens=4, prompt_tokens=20),
    ]


def values(peer: str, records: list[RequestRecord], context: Context | None = None
           ) -> dict[str, object]:
    return {f.name: f.value for f in peer_figures(peer, records, context or Context())}


def test_vllm_on_the_shared_requests() -> None:
    # vLLM's clock starts at the send; its chat client's TTFT ends at the first event
    # with choices, A's role-only chunk: A 10-4 = 6, B 120-100 = 20, C 210-201 = 9.
    # Latency to the last event timed: A 60-4 = 56, B 70, C 49. Tokens: usage when
    # non-zero (A 10), else the tokenizer (B 6, C: no client count, so its 2 events).
    # TPOT (latency - ttft) / (n - 1): A 50/9, B 50/5 = 10, C 40/1 = 40.
    # ITL pooled over events, the role-only one included: A 20,10,10,10; B 10 x5; C 40.
    # Duration: the schedule's start (0) to the last end (C's [DONE], 252): 0.252 s.
    # SLOs TTFT 8 and TPOT 12: only A (6, 5.56) is good: 1 / 0.252.
    got = values("vllm", shared(), Context(slos=SLOs(ttft_ms=8, tpot_ms=12)))
    expected = {
        "completed": 3, "failed": 0, "duration": 0.252, "total_input_tokens": 170,
        "total_output_tokens": 18, "request_throughput": 11.904761904761905,
        "request_goodput": 3.9682539682539684, "output_throughput": 71.42857142857143,
        "total_token_throughput": 188 / 0.252,
        # One-second buckets from the first send, one token per event: 5 + 6 + 2.
        "max_output_tokens_per_s": 13.0, "max_concurrent_requests": 3,
        # numpy: mean, median, std with divisor n, percentile interpolated linearly:
        # sorted TTFTs 6, 9, 20: p99 at rank 1.98 = 9 + 0.98 x 11 = 19.78.
        "mean_ttft_ms": 35 / 3, "median_ttft_ms": 9.0, "std_ttft_ms": 6.018490028422595,
        "p90_ttft_ms": 17.8, "p99_ttft_ms": 19.78,
        "mean_tpot_ms": 18.518518518518523, "median_tpot_ms": 10.0,
        "std_tpot_ms": 15.297686243009917, "p90_tpot_ms": 34.0, "p99_tpot_ms": 39.4,
        # 140 ms over 10 gaps.
        "mean_itl_ms": 14.0, "median_itl_ms": 10.0, "std_itl_ms": 9.165151389911681,
        "p90_itl_ms": 22.0, "p99_itl_ms": 38.2,
        "mean_e2el_ms": 175 / 3, "median_e2el_ms": 56.0, "std_e2el_ms": 8.730533902472539,
        "p90_e2el_ms": 67.2, "p99_e2el_ms": 69.72,
    }
    assert got == pytest.approx(expected, rel=1e-12)


def test_sglang_on_the_shared_requests() -> None:
    # SGLang: TTFT from the send to the first chunk with content: A 26, B 20, C 9.
    # Latency to the [DONE] line: A 58, B 71, C 51. Tokens: usage, else the max_tokens
    # asked for: A 10, B 8, C 4 (not what was streamed). TPOT (latency - ttft)/(n - 1):
    # A 32/9, B 51/7, C 42/3 = 14. ITL: content-chunk gaps pooled (no role-only gap):
    # 120 ms over 9 gaps.
    got = values("sglang", shared())
    # Without a client count for C, the retokenized total is unknown.
    assert got.pop("total_output_tokens_retokenized") is None
    expected = {
        "completed": 3, "duration": 0.252, "total_input_tokens": 170,
        "total_output_tokens": 22,
        "request_throughput": 11.904761904761905, "input_throughput": 170 / 0.252,
        "output_throughput": 87.3015873015873,
        # sum of latencies (0.180 s) / duration
        "concurrency": 0.7142857142857143,
        "mean_ttft_ms": 55 / 3, "median_ttft_ms": 20.0, "std_ttft_ms": 7.039570693980966,
        "p99_ttft_ms": 25.88,
        "mean_tpot_ms": 8.280423280423282, "median_tpot_ms": 7.285714285714288,
        "std_tpot_ms": 4.321549832053916, "p99_tpot_ms": 13.865714285714288,
        "mean_itl_ms": 120 / 9, "median_itl_ms": 10.0, "std_itl_ms": 9.428090415820632,
        "p95_itl_ms": 28.0, "p99_itl_ms": 37.6, "max_itl_ms": 40.0,
        "mean_e2e_latency_ms": 60.0, "median_e2e_latency_ms": 58.0,
        "std_e2e_latency_ms": 8.286535263104035, "p99_e2e_latency_ms": 70.74,
    }
    assert got == pytest.approx(expected, rel=1e-12)


def test_aiperf_on_the_shared_requests() -> None:
    # aiperf: TTFT from the send to the first response with text (26, 20, 9); latency
    # to the last one (56, 70, 49); output sequence length by the client tokenizer
    # (A 9, B 6; C has none: usage, else its 2 events). Its "ITL" is
    # (latency - ttft) / (osl - 1): A 30/8 = 3.75, B 10, C 40 (dlbench's TPOT, by another
    # count of tokens); its pooled gaps are ICL. Duration: first send (4) to the last
    # response (250): 0.246 s.
    got = values("aiperf", shared())
    assert got["request_count"] == 3 and got["error_request_count"] == 0
    assert got["benchmark_duration"] == pytest.approx(0.246)
    assert got["request_throughput"] == pytest.approx(3 / 0.246)
    assert got["output_token_throughput"] == pytest.approx(17 / 0.246)
    assert got["time_to_first_token.avg"] == pytest.approx(55 / 3)
    assert got["time_to_first_token.min"] == 9.0 and got["time_to_first_token.max"] == 26.0
    assert got["time_to_second_token.avg"] == pytest.approx(20.0)  # 10, 10, 40
    assert got["inter_token_latency.avg"] == pytest.approx((3.75 + 10 + 40) / 3)
    assert got["inter_token_latency.p50"] == pytest.approx(10.0)
    assert got["inter_chunk_latency.avg"] == pytest.approx(120 / 9)
    assert got["request_latency.avg"] == pytest.approx(175 / 3)
    assert got["output_sequence_length.avg"] == pytest.approx(17 / 3)
    # 1 / ITL in tokens per second: 1000/3.75, 100, 25.
    assert got["output_token_throughput_per_user.max"] == pytest.approx(1000 / 3.75)
    assert got["goodput"] is None  # no SLO given


def test_guidellm_on_the_shared_requests() -> None:
    # GuideLLM: tokens from usage, else one per text event: A 10, B 6, C 2.
    # Its time_per_output_token_ms includes TTFT: (last text - send) / tokens:
    # A 56/10 = 5.6, B 70/6, C 49/2 = 24.5, weighted by tokens: 175/18 = 9.72.
    # Its inter_token_latency_ms is dlbench's TPOT weighted by tokens - 1:
    # A 30/9 (x9), B 10 (x5), C 40 (x1): 120/15 = 8.0. A percentile is the first value
    # whose cumulative weight reaches it: TPOT's p50 is A's 5.6 (10/18 of the weight).
    got = values("guidellm", shared())
    assert got["request_totals.successful"] == 3 and got["request_totals.errored"] == 0
    assert got["duration"] == pytest.approx(0.252)
    assert got["requests_per_second.successful.mean"] == pytest.approx(11.904761904761905)
    assert got["output_tokens_per_second.successful.mean"] == pytest.approx(18 / 0.252)
    expected = {
        "time_to_first_token_ms": (18.333333333333332, 20.0, 26.0, 26.0, 7.039570693980958),
        "time_per_output_token_ms": (9.722222222222221, 5.6, 24.5, 24.5, 5.913157540499444),
        "inter_token_latency_ms": (8.0, 10 / 3, 10.0, 40.0, 9.092121131323903),
        "request_latency": (0.06, 0.058, 0.071, 0.071, 0.008286535263104034),
    }
    for field, (mean, median, p90, p99, std) in expected.items():
        stats = [got[f"{field}.successful.{s}"] for s in ("mean", "median", "p90", "p99",
                                                           "std_dev")]
        assert stats == pytest.approx([mean, median, p90, p99, std], rel=1e-12), field


def test_mlperf_on_the_shared_requests() -> None:
    # LoadGen: TTFT from the scheduled moment: A 30, B 20, C 10 (dlbench's TTFT).
    # Latency to the sample's completion (the response's end): 62, 71, 52.
    # TPOT in integer ns, truncated: A 32 ms / 9 = 3_555_555 ns, B 51/5 = 10.2 ms,
    # C 42/1 = 42 ms; mean 55_755_555 // 3 = 18_585_185 ns.
    # Percentiles: the sorted value at floor(n q): p50 of 10, 20, 30 is [1] = 20.
    # Server: (samples - 1) / the last issued query's end, 2 / 0.252 s.
    # The p99 TTFT, 30, is over an SLO of 25: INVALID.
    got = values("mlperf", shared(), Context(scenario="server", slos=SLOs(ttft_ms=25)))
    assert got["sample_count"] == 3
    assert got["Completed samples per second"] == pytest.approx(2 / 0.252)
    assert got["Completed tokens per second"] == pytest.approx(18 / 0.252)
    assert got["Result is"] == "INVALID"
    assert got["Mean First Token latency"] == 20.0
    assert [got[f"{q} percentile first token latency"] for q in ("50.00", "90.00", "99.00")
            ] == [20.0, 30.0, 30.0]
    assert got["Mean Time per Output Token"] == 18.585185
    assert got["Min Time per Output Token"] == 3.555555
    assert got["Max latency"] == 71.0
    assert values("mlperf", shared(), Context(scenario="server"))["Result is"] == "VALID"
    # Offline: samples / the longest latency (71 ms).
    offline = values("mlperf", shared(), Context(scenario="offline"))
    assert offline["Samples per second"] == pytest.approx(3 / 0.071)
    assert offline["Tokens per second"] == pytest.approx(18 / 0.071)


def test_inference_perf_on_the_shared_requests() -> None:
    # inference-perf, in seconds: tokens by the client tokenizer (A 9, B 6, C 2 events);
    # TTFT from the send (0.026, 0.020, 0.009); TPOT (last - first) / (n - 1) (3.75,
    # 10, 40 ms); NTPOT (end - send) / n, TTFT included: 58/9, 71/6, 51/2 ms.
    # Total time: first send (4) to the last end (252): 0.248 s.
    got = values("inference-perf", shared())
    assert got["successes.count"] == 3 and got["failures.count"] == 0
    assert got["load_summary.schedule_delay.mean"] == pytest.approx(0.005 / 3)
    assert got["successes.throughput.requests_per_sec"] == pytest.approx(3 / 0.248)
    assert got["successes.throughput.output_tokens_per_sec"] == pytest.approx(17 / 0.248)
    assert got["successes.latency.time_to_first_token.mean"] == pytest.approx(0.055 / 3)
    assert got["successes.latency.time_per_output_token.median"] == pytest.approx(0.010)
    assert got["successes.latency.normalized_time_per_output_token.mean"] == pytest.approx(
        (58 / 9 + 71 / 6 + 51 / 2) / 3 / 1000)
    # Its ITL is per token; A's chunks held several tokens, so it cannot be rebuilt.
    assert got["successes.latency.inter_token_latency.mean"] is None
    assert got["goodput.request_goodput"] is None


def test_one_token_per_chunk_gives_inference_perf_its_itl() -> None:
    records = [RequestRecord(0, 0, 0, chunk_ns=_ns(10, 15, 25), client_output_tokens=3,
                             done_ns=26 * MS)]
    got = values("inference-perf", records)
    assert got["successes.latency.inter_token_latency.mean"] == pytest.approx(0.0075)


def test_the_role_only_chunk_and_the_clock_start_separate_the_ttfts() -> None:
    # Request A alone: due at 0, sent at 4, role-only chunk at 10, first text at 30.
    a = shared()[:1]
    assert values("vllm", a)["mean_ttft_ms"] == pytest.approx(6.0)  # send -> role chunk
    assert values("sglang", a)["mean_ttft_ms"] == pytest.approx(26.0)  # send -> text
    assert values("aiperf", a)["time_to_first_token.avg"] == pytest.approx(26.0)
    assert values("guidellm", a)["time_to_first_token_ms.successful.mean"] == 26.0
    assert values("inference-perf", a)["successes.latency.time_to_first_token.mean"] == (
        pytest.approx(0.026))
    assert values("mlperf", a)["Mean First Token latency"] == 30.0  # scheduled -> text
    assert serving_results(a)["results.ttft_mean"] == pytest.approx(30.0)


def test_tpot_includes_the_first_token_in_guidellm_and_inference_perf_only() -> None:
    # B alone: sent at 100, text every 10 ms from 120 to 170, 6 tokens, [DONE] at 171.
    b = shared()[1:2]
    assert values("vllm", b)["mean_tpot_ms"] == pytest.approx(10.0)  # 50 / 5
    assert values("aiperf", b)["inter_token_latency.avg"] == pytest.approx(10.0)
    assert values("guidellm", b)["inter_token_latency_ms.successful.mean"] == (
        pytest.approx(10.0))
    # TTFT included: 70 / 6 and (171 - 100) / 6.
    assert values("guidellm", b)["time_per_output_token_ms.successful.mean"] == (
        pytest.approx(70 / 6))
    assert values("inference-perf", b)[
        "successes.latency.normalized_time_per_output_token.mean"] == pytest.approx(0.071 / 6)
    # SGLang counts the 8 tokens asked for (no usage): (71 - 20) / 7.
    assert values("sglang", b)["mean_tpot_ms"] == pytest.approx(51 / 7)


def test_vllms_peak_counts_events_in_one_second_buckets_from_the_first_send() -> None:
    # Sent at 0: events at 0.1, 1.2, 1.4 s; sent at 1.1: events at 1.25, 1.3 s (4 tokens
    # by usage, 2 events). Buckets [0, 1) and [1, 2): 1 and 4 events; the first request
    # is active in both, the second in the second: at most 2 at once.
    records = [
        RequestRecord(0, 0, 0, chunk_ns=_ns(100, 1200, 1400), usage_output_tokens=3),
        RequestRecord(1, 1100 * MS, 1100 * MS, chunk_ns=_ns(1250, 1300),
                      usage_output_tokens=4),
    ]
    got = values("vllm", records)
    assert (got["max_output_tokens_per_s"], got["max_concurrent_requests"]) == (4.0, 2)


def test_pooled_gaps_let_long_answers_outweigh_short_ones() -> None:
    # One long answer (11 events 1 ms apart) and one short (2 events 100 ms apart).
    records = [
        RequestRecord(0, 0, 0, chunk_ns=_ns(*range(10, 21)), usage_output_tokens=11,
                      done_ns=21 * MS),
        RequestRecord(1, 0, 0, chunk_ns=_ns(10, 110), usage_output_tokens=2,
                      done_ns=111 * MS),
    ]
    # Pooled (vLLM's ITL): 10 gaps of 1 and one of 100: 110 / 11 = 10.
    assert values("vllm", records)["mean_itl_ms"] == pytest.approx(10.0)
    # Per request (vLLM's TPOT): (1 + 100) / 2.
    assert values("vllm", records)["mean_tpot_ms"] == pytest.approx(50.5)
    # Token-weighted (GuideLLM's ITL): (1 x 10 + 100 x 1) / 11 = 10.
    assert values("guidellm", records)["inter_token_latency_ms.successful.mean"] == (
        pytest.approx(10.0))


def test_vllm_chat_counts_an_empty_answer_with_ttft_to_its_role_chunk() -> None:
    # An answer of HTTP 200 with only a role-only chunk (at 5 ms after its send): vLLM's
    # chat client returns it as a success, TTFT 5; its completions client, which needs
    # a chunk with choices, and dlbench do not count it.
    records = [*shared()[1:2],
               RequestRecord(3, 300 * MS, 300 * MS, first_event_ns=305 * MS, done_ns=306 * MS,
                             error="empty", status=200)]
    chat = values("vllm", records, Context(api="chat"))
    assert chat["completed"] == 2 and chat["mean_ttft_ms"] == pytest.approx((20 + 5) / 2)
    completions = values("vllm", records, Context(api="completions"))
    assert completions["completed"] == 1 and completions["failed"] == 1
    assert serving_results(records)["results.requests_ok"] == 1


def test_an_answer_without_done_counts_for_the_peers_not_for_dlbench() -> None:
    records = [RequestRecord(0, 0, 0, chunk_ns=_ns(10, 20), usage_output_tokens=2,
                             error="no_done", done_ns=21 * MS)]
    for peer, key in (("vllm", "completed"), ("sglang", "completed"),
                      ("aiperf", "request_count"), ("guidellm", "request_totals.successful"),
                      ("mlperf", "sample_count"), ("inference-perf", "successes.count")):
        assert values(peer, records)[key] == 1, peer
    assert serving_results(records)["results.requests_ok"] == 0


def test_aiperf_drops_a_requests_gaps_when_two_chunks_came_in_one_read() -> None:
    # Two text events with the same time (one network read): aiperf refuses a gap of 0
    # and leaves the request's ICL out; its ITL stands.
    records = [RequestRecord(0, 0, 0, chunk_ns=_ns(10, 10, 30), client_output_tokens=3),
               RequestRecord(1, 0, 0, chunk_ns=_ns(10, 14), client_output_tokens=2)]
    got = values("aiperf", records)
    assert got["inter_chunk_latency.avg"] == pytest.approx(4.0)
    assert got["inter_token_latency.avg"] == pytest.approx((20 / 2 + 4) / 2)


def test_a_one_token_answer_meets_vllms_tpot_slo_and_misses_aiperfs() -> None:
    # One token: vLLM takes its TPOT as 0 for goodput; aiperf has no ITL for it, and a
    # request without the metric is not good; inference-perf has no TPOT either.
    records = [RequestRecord(0, 0, 0, chunk_ns=_ns(10), usage_output_tokens=1,
                             client_output_tokens=1, done_ns=11 * MS)]
    slo = Context(slos=SLOs(tpot_ms=5))
    assert values("vllm", records, slo)["request_goodput"] == pytest.approx(1 / 0.011)
    assert values("aiperf", records, slo)["goodput"] == 0.0
    assert values("inference-perf", records, slo)["goodput.goodput_percentage"] == 0.0


def test_loadgen_records_minus_the_decode_time_for_a_one_token_answer() -> None:
    # LoadGen logs an error for a count of 1, records 0 tokens and divides by -1.
    records = [RequestRecord(0, 0, 0, chunk_ns=_ns(10), usage_output_tokens=1,
                             done_ns=13 * MS)]
    got = values("mlperf", records, Context(scenario="server"))
    assert got["Mean Time per Output Token"] == -3.0
    assert got["Completed tokens per second"] == 0.0


def test_guidellm_keeps_the_warm_up_requests_that_overlap_its_window() -> None:
    # A warm-up request still answering when the measured ones start (its end, 60,
    # after their start, 50) is in GuideLLM's distributions; the others leave it out.
    warm = RequestRecord(0, 0, 0, chunk_ns=_ns(40, 60), usage_output_tokens=2,
                         done_ns=60 * MS, warmup=True)
    measured = RequestRecord(1, 50 * MS, 50 * MS, chunk_ns=_ns(70, 80),
                             usage_output_tokens=2, done_ns=80 * MS)
    got = values("guidellm", [warm, measured])
    assert got["request_totals.successful"] == 2
    assert got["time_to_first_token_ms.successful.mean"] == pytest.approx((40 + 20) / 2)
    # Its rate counts ends inside the window [50, 80] only: 2 / 0.030.
    assert got["requests_per_second.successful.mean"] == pytest.approx(2 / 0.030)
    assert values("vllm", [warm, measured])["completed"] == 1


def test_failures_are_counted_and_leave_the_distributions() -> None:
    records = [*shared(), RequestRecord(3, 300 * MS, 300 * MS, error="http", status=500,
                                        done_ns=305 * MS)]
    assert values("vllm", records)["failed"] == 1
    assert values("aiperf", records)["error_request_count"] == 1
    assert values("inference-perf", records)["failures.count"] == 1
    mlperf = values("mlperf", records, Context(scenario="server"))
    assert mlperf["sample_count"] == 3 and mlperf["Result is"] == "INVALID"
    # The failed request ends last: vLLM's duration waits for it.
    assert values("vllm", records)["duration"] == pytest.approx(0.305)


def test_figures_of_the_same_meaning_equal_dlbenchs() -> None:
    records = shared()
    ours = serving_results(records)
    for peer in PEERS:
        for figure in peer_figures(peer, records, Context(scenario="server")):
            if figure.same_meaning and figure.unit == "ms":
                assert figure.value == pytest.approx(ours[figure.dlbench_key]), (
                    peer, figure.name)
    # Those: SGLang's pooled mean ITL and LoadGen's first-token latencies.
    same = {(p, f.name) for p in PEERS for f in peer_figures(p, records) if f.same_meaning}
    assert ("sglang", "mean_itl_ms") in same
    assert ("mlperf", "99.00 percentile first token latency") in same


def test_every_figure_is_described_in_one_line_beside_a_declared_key() -> None:
    for peer in PEERS:
        figures = peer_figures(peer, shared(), Context(scenario="server",
                                                       slos=SLOs(1, 1, 1)))
        assert figures, peer
        names = [f.name for f in figures]
        assert len(names) == len(set(names)), peer
        for figure in figures:
            assert isinstance(figure, Figure)
            assert figure.definition and "\n" not in figure.definition
            assert figure.dlbench_key is None or lookup(figure.dlbench_key) is not None, (
                figure.dlbench_key)
            assert not (figure.same_meaning and figure.dlbench_key is None)
            value = figure.value
            assert value is None or isinstance(value, (int, str)) or math.isfinite(value)


def test_no_request_after_the_warm_up_gives_no_figure_and_all_failed_no_crash() -> None:
    warm = [RequestRecord(0, 0, 0, chunk_ns=_ns(1), warmup=True)]
    failed = [RequestRecord(0, 0, 0, error="connect"), RequestRecord(1, 0, 0, error="timeout")]
    for peer in PEERS:
        assert peer_figures(peer, warm) == []
        figures = peer_figures(peer, failed, Context(scenario="offline"))
        assert figures, peer
    assert values("vllm", failed)["completed"] == 0
    assert values("vllm", failed)["mean_ttft_ms"] == 0.0  # vLLM prints 0 for none
    assert values("aiperf", failed)["time_to_first_token.avg"] is None
    mlperf = values("mlperf", failed, Context(scenario="server"))
    assert mlperf["Result is"] == "INVALID" and mlperf["Completed samples per second"] is None


def test_loadgen_divides_as_cpp_does() -> None:
    assert _trunc_div(7, 2) == 3 and _trunc_div(-7, 2) == -3 and _trunc_div(7, -1) == -7
    assert _trunc_div(-7, -2) == 3


def test_the_command_line_offers_every_peer() -> None:
    assert tuple(PEERS) == PEER_CHOICES
