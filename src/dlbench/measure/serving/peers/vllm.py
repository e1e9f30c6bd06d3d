"""vLLM's figures, as ``vllm bench serve`` computes them from the timings its client takes
(``vllm/benchmarks/serve.py``, ``lib/endpoint_request_func.py``).

Every clock starts at the send. The chat client stops TTFT at the first chunk with
``choices``, a role-only chunk carrying no text included (vllm-project/vllm#15106),
and counts the gap after it as the first inter-token latency. TPOT is (latency - TTFT)
/ (tokens - 1) per request, ITL the gaps between chunks pooled over requests; tokens
come from ``usage``, else its tokenizer; statistics are numpy's (linear percentiles,
0 when there is none); the duration runs from the schedule's start to the last
request's end.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, pairwise

import numpy as np

from dlbench.measure.serving.peers.common import (
    ENDED,
    NS_PER_MS,
    NS_PER_S,
    READ_WITHOUT_EXCEPTION,
    Context,
    Figure,
    Peer,
    after_warmup,
    end_ns,
    numpy_summary,
    per_s,
    schedule_start_ns,
    slo_note,
    stat_figures,
    to_ms,
)
from dlbench.measure.serving.records import RequestRecord


def _events(r: RequestRecord) -> list[int]:
    """The events vLLM's client times: the first event when it came before the first
    text (a role-only chunk), then every text event."""
    if r.first_event_ns is not None and (not r.chunk_ns or r.first_event_ns < r.chunk_ns[0]):
        return [r.first_event_ns, *r.chunk_ns]
    return list(r.chunk_ns)


def _tokens(r: RequestRecord) -> int:
    """``usage.completion_tokens`` when non-zero, else the tokenizer's count of the
    text (the record's client count; one per text event without one)."""
    if r.usage_output_tokens:
        return r.usage_output_tokens
    return r.client_output_tokens if r.client_output_tokens is not None else len(r.chunk_ns)


def _peak(served: Sequence[tuple[int, list[int], int]]) -> tuple[float, int]:
    """vLLM's peak output tokens per second and the concurrent requests at the most:
    one-second buckets from the first send; each *event* counts one token."""
    if not served:
        return 0.0, 0
    start = min(s for s, _, _ in served)
    end = max(e for _, _, e in served)
    buckets = int(np.ceil((end - start) / NS_PER_S)) + 1
    times = np.fromiter(chain.from_iterable(events or [sent] for sent, events, _ in served),
                        np.int64)
    # int() of non-negative seconds, as vLLM buckets them.
    bucket = ((times - start) / NS_PER_S).astype(np.int64)
    tokens = np.bincount(bucket[(bucket >= 0) & (bucket < buckets)], minlength=buckets)
    concurrent = np.zeros(buckets)
    for sent, _, ended in served:
        concurrent[int((sent - start) / NS_PER_S):int((ended - start) / NS_PER_S) + 1] += 1
    return float(tokens.max()), int(concurrent.max())


def compute(records: Sequence[RequestRecord], ctx: Context) -> list[Figure]:
    """vLLM's figures for ``records`` (warm-up included) in ``ctx``."""
    measured = after_warmup(records)
    counted = READ_WITHOUT_EXCEPTION if ctx.api == "chat" else ENDED
    done = [r for r in measured if r.error in counted]
    ttfts: list[float] = []
    tpots: list[float] = []
    all_tpots: list[float] = []
    itls: list[float] = []
    e2els: list[float] = []
    lens: list[int] = []
    served: list[tuple[int, list[int], int]] = []
    for r in done:
        events = _events(r)
        ttft = events[0] - r.sent_ns if events else 0
        latency = (events[-1] if events else r.sent_ns) - r.sent_ns
        n = _tokens(r)
        tpot = (latency - ttft) / (n - 1) / NS_PER_MS if n > 1 else 0.0
        if n > 1:
            tpots.append(tpot)
        all_tpots.append(tpot)
        itls.extend(to_ms(b - a) for a, b in pairwise(events))
        ttfts.append(to_ms(ttft))
        e2els.append(to_ms(latency))
        lens.append(n)
        served.append((r.sent_ns, events, r.sent_ns + latency))
    seconds = (max(map(end_ns, measured)) - schedule_start_ns(measured)) / NS_PER_S
    total_in = sum(r.prompt_tokens or 0 for r in done)
    slos = ctx.slos
    good = sum(1 for t, p, e in zip(ttfts, all_tpots, e2els, strict=True)
               if (slos.ttft_ms <= 0 or t <= slos.ttft_ms)
               and (slos.tpot_ms <= 0 or p <= slos.tpot_ms)
               and (slos.latency_ms <= 0 or e <= slos.latency_ms))
    peak_tokens, peak_requests = _peak(served)
    kinds = "errors '' and no_done" + (", empty, server_error (HTTP 200, no exception)"
                                       if ctx.api == "chat" else "")
    figures = [
        Figure("completed", len(done), "requests",
               f"requests its client returned as successes: {kinds}", "results.requests_ok"),
        Figure("failed", len(measured) - len(done), "requests",
               "the other requests", "results.requests_failed"),
        Figure("duration", seconds, "s", "the schedule's start to the last request's end "
               "(all requests awaited)", "results.window_seconds"),
        Figure("total_input_tokens", total_in, "tokens",
               "sum of the completed requests' prompt lengths (its dataset's count)"),
        Figure("total_output_tokens", sum(lens), "tokens",
               "sum of output tokens: usage.completion_tokens when non-zero, else its "
               "tokenizer's count (here the client count, else one per text event)",
               "results.output_tokens_total"),
        Figure("request_throughput", per_s(len(done), seconds), "requests/s",
               "completed / duration", "results.requests_per_s"),
        Figure("request_goodput", per_s(good, seconds) if slo_note(ctx) else None,
               "requests/s", "completed requests meeting every SLO / duration "
               f"({slo_note(ctx) or 'no SLO given'}; 1-token answers have TPOT 0)",
               "results.goodput_requests_per_s"),
        Figure("output_throughput", per_s(sum(lens), seconds), "tokens/s",
               "total_output_tokens / duration", "results.output_tokens_per_s"),
        Figure("total_token_throughput", per_s(total_in + sum(lens), seconds), "tokens/s",
               "(total_input_tokens + total_output_tokens) / duration"),
        Figure("max_output_tokens_per_s", peak_tokens, "tokens/s",
               "the busiest 1-s bucket from the first send, one token per event"),
        Figure("max_concurrent_requests", peak_requests, "requests",
               "the most requests active in one 1-s bucket"),
    ]
    stats = ("mean", "median", "std", "p90", "p99")
    how = "; numpy mean, median, std (n), percentile (linear); 0 when none"
    for short, values, definition, figure in (
            ("ttft", ttfts, "send to the first event with choices (a role-only chunk "
             "ends it)", "ttft"),
            ("tpot", tpots, "(latency - ttft) / (tokens - 1), requests of 2+ tokens: from "
             "the first event, role-only included", "tpot"),
            ("itl", itls, "gaps between consecutive events, role-only to first text "
             "included, pooled over requests", "itl"),
            ("e2el", e2els, "send to the last event timed (here the last text event)",
             "latency")):
        figures += stat_figures("{stat}_" + short + "_ms",
                                numpy_summary(values, stats, 0.0), "ms",
                                definition + how, figure)
    return figures


#: The tool, by the name ``dlbench definitions --as`` takes, with the upstream files
#: its definitions were read from (and the commit).
PEER = Peer(
    "vllm", "vLLM (vllm bench serve)",
    "vllm/benchmarks/serve.py (def9ce85ba1079af970a58ed3d42dd861ae35d58), "
    "vllm/benchmarks/lib/endpoint_request_func.py "
    "(3aee4a4f4c4d1a2a7af3ebdb88c768e459e6c602)",
    compute)
