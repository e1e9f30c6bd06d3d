"""aiperf's figures, as its metrics compute them (``aiperf/metrics/types/``).

Every clock starts at the send. aiperf's "inter token latency" is (request latency -
TTFT) / (output tokens - 1) per request, dlbench's TPOT, and its inter-chunk latency
the pooled gaps between responses (vLLM's ITL); tokens are counted by its client
tokenizer; statistics are numpy's; the duration runs from the first send to the last
response.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlbench.measure.serving.definitions import chunk_gaps_ms
from dlbench.measure.serving.peers.common import (
    ENDED,
    NS_PER_S,
    Context,
    Figure,
    Peer,
    after_warmup,
    numpy_summary,
    per_s,
    slo_note,
    stat_figures,
    to_ms,
)
from dlbench.measure.serving.records import RequestRecord


def _tokens(r: RequestRecord) -> int:
    """Output sequence length: the client tokenizer's count of the text (content and
    reasoning); without one here, usage, else one per text event."""
    if r.client_output_tokens is not None:
        return r.client_output_tokens
    return r.usage_output_tokens if r.usage_output_tokens is not None else len(r.chunk_ns)


def compute(records: Sequence[RequestRecord], ctx: Context) -> list[Figure]:
    """aiperf's figures for ``records`` (warm-up included) in ``ctx``."""
    measured = after_warmup(records)
    valid = [r for r in measured if r.error in ENDED | {"server_error"} and r.chunk_ns]
    ttfts = [to_ms(r.chunk_ns[0] - r.sent_ns) for r in valid]
    ttsts = [to_ms(r.chunk_ns[1] - r.chunk_ns[0]) for r in valid if len(r.chunk_ns) > 1]
    latencies = [to_ms(r.chunk_ns[-1] - r.sent_ns) for r in valid]
    osl = [_tokens(r) for r in valid]
    itl: list[float | None] = [to_ms(r.chunk_ns[-1] - r.chunk_ns[0]) / (n - 1) if n >= 2
                               else None for r, n in zip(valid, osl, strict=True)]
    icl: list[float] = []
    for r in valid:
        gaps = chunk_gaps_ms(r)
        if all(g > 0 for g in gaps):  # aiperf drops a request's ICL at a gap of 0
            icl.extend(gaps)
    itls = [v for v in itl if v is not None]
    per_user = [1000.0 / v for v in itls if v > 0]
    seconds = ((max(r.chunk_ns[-1] for r in valid) - min(r.sent_ns for r in valid))
               / NS_PER_S if valid else 0.0)
    slos = ctx.slos
    good = sum(1 for t, i, lat in zip(ttfts, itl, latencies, strict=True)
               if (slos.ttft_ms <= 0 or t <= slos.ttft_ms)
               and (slos.tpot_ms <= 0 or (i is not None and i <= slos.tpot_ms))
               and (slos.latency_ms <= 0 or lat <= slos.latency_ms))
    stats = ("avg", "min", "max", "p50", "p90", "p99", "std")
    how = "; numpy percentile (linear), std (n)"

    def summary(values: Sequence[float]) -> dict[str, float | None]:
        out = numpy_summary(values, ["mean" if s == "avg" else s for s in stats], None)
        return {"avg" if s == "mean" else s: v for s, v in out.items()}

    figures = [
        Figure("request_count", len(valid), "requests", "valid requests: no error, at least "
               "one response with text", "results.requests_ok"),
        Figure("error_request_count", len(measured) - len(valid), "requests",
               "requests with an error or no text", "results.requests_failed"),
        Figure("benchmark_duration", seconds, "s", "first send to the last response (its "
               "last text event), valid requests", "results.window_seconds"),
        Figure("request_throughput", per_s(len(valid), seconds), "requests/s",
               "request_count / benchmark_duration", "results.requests_per_s"),
        Figure("output_token_throughput", per_s(sum(osl), seconds), "tokens/s",
               "sum of output_sequence_length / benchmark_duration",
               "results.output_tokens_per_s"),
        Figure("goodput", per_s(good, seconds) if slo_note(ctx) else None, "requests/s",
               f"valid requests meeting every SLO ({slo_note(ctx) or 'no SLO given'}) / "
               "benchmark_duration; a request without ITL misses a TPOT SLO",
               "results.goodput_requests_per_s"),
    ]
    for tag, values, definition, figure in (
            ("time_to_first_token", ttfts, "send to the first response with text "
             "(content or reasoning)", "ttft"),
            ("time_to_second_token", ttsts, "first to second response with text", None),
            ("inter_token_latency", itls, "(request_latency - ttft) / "
             "(output_sequence_length - 1): dlbench's TPOT, tokens by the client tokenizer "
             "(here: client count, else usage, else events)", "tpot"),
            ("inter_chunk_latency", icl, "gaps between consecutive responses with text, "
             "pooled (a request with a gap of 0 is left out)", "itl"),
            ("request_latency", latencies, "send to the last response with text", "latency"),
            ("output_sequence_length", [float(n) for n in osl], "output tokens per request "
             "(client tokenizer; here client count, else usage, else events)", None),
            ("output_token_throughput_per_user", per_user, "1 / inter_token_latency, per "
             "request", None)):
        unit = ("tokens" if tag == "output_sequence_length" else
                "tokens/s" if tag.endswith("per_user") else "ms")
        figures += stat_figures(tag + ".{stat}", summary(values), unit,
                                definition + how, figure)
    return figures


#: The tool, by the name ``dlbench definitions --as`` takes, with the upstream files
#: its definitions were read from (and the commit).
PEER = Peer(
    "aiperf", "aiperf (NVIDIA)",
    "aiperf/metrics/types/*.py, aiperf/metrics/metric_dicts.py, "
    "aiperf/parsers/ (db4f6397d11ee2d4cfbb41f70b2327315163dcf0)",
    compute)
