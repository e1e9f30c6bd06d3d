"""SGLang's figures, as ``sglang.bench_serving`` computes them
(``python/sglang/bench_serving.py``).

Every clock starts at the send; TTFT stops at the first chunk with content (SGLang
times ``content`` only; a record's text events include reasoning, so here it counts
too); latency ends at ``[DONE]``. TPOT is (latency - TTFT) / (tokens - 1), tokens
from ``usage``, else the ``max_tokens`` asked for; ITL is the pooled gaps between
chunks; statistics are numpy's; the duration runs from the schedule's start to the
last request's end.
"""

from __future__ import annotations

from collections.abc import Sequence

from dlbench.measure.serving.definitions import chunk_gaps_ms
from dlbench.measure.serving.peers.common import (
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
    stat_figures,
    to_ms,
)
from dlbench.measure.serving.records import RequestRecord


def compute(records: Sequence[RequestRecord], ctx: Context) -> list[Figure]:
    """SGLang's figures for ``records`` (warm-up included) in ``ctx``."""
    measured = after_warmup(records)
    done = [r for r in measured if r.error in READ_WITHOUT_EXCEPTION]
    ttfts: list[float] = []
    tpots: list[float] = []
    itls: list[float] = []
    e2es: list[float] = []
    lens: list[int] = []
    retokenized: list[int | None] = []
    for r in done:
        ttft = r.chunk_ns[0] - r.sent_ns if r.chunk_ns else 0
        latency = end_ns(r) - r.sent_ns
        n = (r.usage_output_tokens if r.usage_output_tokens is not None
             else r.max_tokens if r.max_tokens is not None else len(r.chunk_ns))
        if n > 1:
            tpots.append((latency - ttft) / (n - 1) / NS_PER_MS)
        itls.extend(chunk_gaps_ms(r))
        ttfts.append(to_ms(ttft))
        e2es.append(to_ms(latency))
        lens.append(n)
        retokenized.append(r.client_output_tokens)
    seconds = (max(map(end_ns, measured)) - schedule_start_ns(measured)) / NS_PER_S
    total_in = sum(r.prompt_tokens or 0 for r in done)
    total_out = sum(lens)
    total_retok = (sum(n for n in retokenized if n is not None)
                   if done and None not in retokenized else None)
    figures = [
        Figure("completed", len(done), "requests", "requests of HTTP 200 read without an "
               "exception (empty answers and error objects included)", "results.requests_ok"),
        Figure("duration", seconds, "s", "the schedule's start to the last request's end",
               "results.window_seconds"),
        Figure("total_input_tokens", total_in, "tokens", "sum of the dataset's prompt lengths"),
        Figure("total_output_tokens", total_out, "tokens", "sum of usage.completion_tokens, "
               "else of the max_tokens asked for", "results.output_tokens_total"),
        Figure("total_output_tokens_retokenized", total_retok, "tokens",
               "the answers' text counted by the client tokenizer (endpoint.tokenizer)"),
        Figure("request_throughput", per_s(len(done), seconds), "requests/s",
               "completed / duration", "results.requests_per_s"),
        Figure("input_throughput", per_s(total_in, seconds), "tokens/s",
               "total_input_tokens / duration"),
        Figure("output_throughput", per_s(total_out, seconds), "tokens/s",
               "total_output_tokens / duration", "results.output_tokens_per_s"),
        Figure("concurrency", per_s(sum(e2es) / 1000.0, seconds), "requests",
               "sum of e2e latencies / duration: the mean requests in flight"),
    ]
    how = "; numpy mean, median, std (n), percentile (linear); 0 when none"
    for short, values, stats, definition, figure, same, empty in (
            ("ttft", ttfts, ("mean", "median", "std", "p99"),
             "send to the first chunk with content (0 for an answer without)", "ttft",
             (), 0.0),
            ("tpot", tpots, ("mean", "median", "std", "p99"),
             "(latency - ttft) / (tokens - 1): latency to [DONE], tokens from usage else "
             "max_tokens", "tpot", (), 0.0),
            ("itl", itls, ("mean", "median", "std", "p95", "p99", "max"),
             "gaps between consecutive content chunks, pooled over requests", "itl",
             ("mean",), 0.0),
            ("e2e_latency", e2es, ("mean", "median", "std", "p99"),
             "send to the [DONE] line (the stream's end without it)", "latency", (), None)):
        figures += stat_figures("{stat}_" + short + "_ms",
                                numpy_summary(values, stats, empty), "ms",
                                definition + how, figure, same)
    return figures


#: The tool, by the name ``dlbench definitions --as`` takes, with the upstream files
#: its definitions were read from (and the commit).
PEER = Peer(
    "sglang", "SGLang (sglang.bench_serving)",
    "python/sglang/bench_serving.py (0033168f0f58b2bc05aa0273bd475d9c01bafb1c)",
    compute)
