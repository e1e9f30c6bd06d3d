"""inference-perf's figures, as its report computes them
(``inference_perf/reportgen/base.py``), in seconds.

Every clock starts at the send. NTPOT divides the whole latency, TTFT included, by
every token; TPOT is (last - first token) / (tokens - 1); tokens are counted by its
client tokenizer; statistics are numpy's; throughput runs from the first send to the
last end. Goodput counts the successes that met every SLO.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlbench.measure.serving.definitions import chunk_gaps_ms
from dlbench.measure.serving.peers.common import (
    ENDED,
    NS_PER_S,
    Context,
    Figure,
    Peer,
    after_warmup,
    end_ns,
    numpy_summary,
    per_s,
    slo_note,
    stat_figures,
    to_ms,
)
from dlbench.measure.serving.records import RequestRecord


def compute(records: Sequence[RequestRecord], ctx: Context) -> list[Figure]:
    """inference-perf's figures for ``records`` (warm-up included) in ``ctx``."""
    measured = after_warmup(records)
    ok = [r for r in measured if r.error in ENDED]
    total_s = (max(map(end_ns, measured)) - min(r.sent_ns for r in measured)) / NS_PER_S

    def tokens(r: RequestRecord) -> int:
        # Its client tokenizer's count (use_server_output_tokens off by default).
        if r.client_output_tokens is not None:
            return r.client_output_tokens
        return r.usage_output_tokens if r.usage_output_tokens is not None else len(r.chunk_ns)

    counts = [tokens(r) for r in ok]
    latency = [(end_ns(r) - r.sent_ns) / NS_PER_S for r in ok]
    ntpot = [(end_ns(r) - r.sent_ns) / NS_PER_S / n if n > 0 else 0.0
             for r, n in zip(ok, counts, strict=True)]
    streamed = [(r, n) for r, n in zip(ok, counts, strict=True) if r.chunk_ns and n > 1]
    ttft = [(r.chunk_ns[0] - r.sent_ns) / NS_PER_S for r, _ in streamed]
    tpot = [(r.chunk_ns[-1] - r.chunk_ns[0]) / NS_PER_S / (n - 1) for r, n in streamed]
    # Its ITL is per token, every token of a chunk at the chunk's time: known here only
    # when each chunk held one token.
    per_token = all(len(r.chunk_ns) == n for r, n in streamed)
    itl = [g / 1000.0 for r, _ in streamed for g in chunk_gaps_ms(r)] if per_token else []
    lag = [(r.sent_ns - r.scheduled_ns) / NS_PER_S for r in measured]
    slos = ctx.slos
    good = sum(1 for r, n, lat in zip(ok, counts, latency, strict=True)
               if (slos.ttft_ms <= 0 or (r.chunk_ns and n > 1 and
                                         to_ms(r.chunk_ns[0] - r.sent_ns) <= slos.ttft_ms))
               and (slos.tpot_ms <= 0 or (r.chunk_ns and n > 1 and to_ms(
                   r.chunk_ns[-1] - r.chunk_ns[0]) / (n - 1) <= slos.tpot_ms))
               and (slos.latency_ms <= 0 or lat * 1000.0 <= slos.latency_ms))
    given = bool(slo_note(ctx))
    figures = [
        Figure("successes.count", len(ok), "requests", "requests without an error",
               "results.requests_ok"),
        Figure("failures.count", len(measured) - len(ok), "requests", "requests with one",
               "results.requests_failed"),
        Figure("load_summary.schedule_delay.mean",
               float(np.mean(lag)) if lag else None, "s",
               "send - scheduled time, every request", "results.client_lag_mean", True),
        Figure("successes.throughput.requests_per_sec", per_s(len(ok), total_s),
               "requests/s", "successes / (last end - first send, every request)",
               "results.requests_per_s"),
        Figure("successes.throughput.output_tokens_per_sec", per_s(sum(counts), total_s),
               "tokens/s", "output tokens (client tokenizer; here client count, else usage, "
               "else events) / (last end - first send)", "results.output_tokens_per_s"),
        Figure("goodput.request_goodput", per_s(good, total_s) if given else None,
               "requests/s", f"successes meeting every SLO ({slo_note(ctx) or 'none given'})"
               " / (last end - first send)", "results.goodput_requests_per_s"),
        Figure("goodput.goodput_percentage", 100.0 * good / len(ok) if given and ok else None,
               "%", "good / successes x 100 (failures not in the denominator)",
               "results.slo_attainment"),
    ]
    how = "; numpy mean, percentile (linear)"
    stats = ("mean", "median", "p90", "p99")
    for key, values, definition, figure in (
            ("time_to_first_token", ttft, "send to the first text event, requests of 2+ "
             "tokens", "ttft"),
            ("time_per_output_token", tpot, "(last - first text event) / (tokens - 1)",
             "tpot"),
            ("normalized_time_per_output_token", ntpot, "(response end - send) / tokens: "
             "TTFT included (0 for 0 tokens)", None),
            ("inter_token_latency", itl, "gaps between tokens, a chunk's tokens at its time, "
             "pooled" + ("" if per_token else " (unknown here: a chunk held several tokens)"),
             "itl"),
            ("request_latency", latency, "send to the response's end", "latency")):
        figures += stat_figures("successes.latency." + key + ".{stat}",
                                numpy_summary(values, stats, None), "s",
                                definition + how, figure)
    return figures


#: The tool, by the name ``dlbench definitions --as`` takes, with the upstream files
#: its definitions were read from (and the commit).
PEER = Peer(
    "inference-perf", "inference-perf (Kubernetes SIG)",
    "inference_perf/reportgen/base.py "
    "(7de5ef2ed6f7934e0ecbc8297e593f79e68430c0)",
    compute)
