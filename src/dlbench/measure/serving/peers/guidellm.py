"""GuideLLM's figures, as its benchmark schemas compute them
(``src/guidellm/schemas/``, ``benchmark/schemas/metrics.py``).

Every clock starts at the send. ``time_per_output_token_ms`` divides the whole latency,
TTFT included, by every token; ``inter_token_latency_ms`` is (last - first token) /
(tokens - 1), dlbench's TPOT. Tokens come from ``usage``, else one per chunk. Its
statistics are a weighted distribution (TPOT weighted by tokens) whose percentiles
are taken without interpolation. It keeps every request that overlaps its measured
window, warm-up ones included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dlbench.measure.serving.peers.common import (
    ENDED,
    NS_PER_S,
    Context,
    Figure,
    Peer,
    after_warmup,
    end_ns,
    per_s,
    schedule_start_ns,
    stat_figures,
    to_ms,
)
from dlbench.measure.serving.records import RequestRecord


def _weighted_summary(pairs: Sequence[tuple[float, float]]) -> dict[str, float]:
    """GuideLLM's summary of (value, weight) pairs: equal values merged, zero weights
    dropped, the weights normalised into a distribution (all 1 when they sum to about
    0); mean and variance under it; a percentile is the first value whose cumulative
    probability reaches it (no interpolation); 0 for each when there is no value."""
    stats = ("mean", "median", "p90", "p99", "std_dev", "min", "max")
    if not pairs:
        return dict.fromkeys(stats, 0.0)
    array = np.asarray(pairs, dtype=float)
    values, inverse = np.unique(array[:, 0], return_inverse=True)
    weights = np.zeros_like(values)
    np.add.at(weights, inverse, array[:, 1])
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    if weights.sum() <= 1e-6:
        weights = np.ones_like(values)
    if len(values) == 0:
        return dict.fromkeys(stats, 0.0)
    probabilities = weights / weights.sum()
    cdf = np.cumsum(probabilities)

    def at(q: float) -> float:
        return float(values[min(int(np.searchsorted(cdf, q, side="left")), len(values) - 1)])

    mean = float(np.sum(values * probabilities))
    variance = float(np.sum((values - mean) ** 2 * probabilities))
    return {"mean": mean, "median": at(0.5), "p90": at(0.9), "p99": at(0.99),
            "std_dev": math.sqrt(variance), "min": float(values[0]), "max": float(values[-1])}


def _token_timings(r: RequestRecord, n: int) -> list[tuple[float, float]]:
    """When GuideLLM counts a request's output tokens: one at the first text event,
    the rest spread evenly over the events after it (each its share)."""
    first, last, iterations = r.chunk_ns[0], r.chunk_ns[-1], len(r.chunk_ns)
    if iterations <= 1:
        return [(float(last), float(n))]
    rest = [] if n <= 1 else [(float(t), (n - 1.0) / (iterations - 1.0))
                              for t in np.linspace(first, last, num=iterations)[1:]]
    return [(float(first), 1.0 if n else 0.0), *rest]


def compute(records: Sequence[RequestRecord], ctx: Context) -> list[Figure]:
    """GuideLLM's figures for ``records`` (warm-up included) in ``ctx``."""
    measured = after_warmup(records)
    start = schedule_start_ns(measured)
    end = max(map(end_ns, measured))
    overlapping = [r for r in sorted(records, key=lambda r: r.index)
                   if end_ns(r) >= start and r.sent_ns <= end]
    successful = [r for r in overlapping if r.error in ENDED and r.chunk_ns]
    seconds = (end - start) / NS_PER_S
    ttft: list[tuple[float, float]] = []
    tpot: list[tuple[float, float]] = []
    itl: list[tuple[float, float]] = []
    latency: list[tuple[float, float]] = []
    tokens: list[tuple[float, float]] = []
    timings: list[tuple[float, float]] = []
    ended = 0
    for r in successful:
        n = r.usage_output_tokens if r.usage_output_tokens is not None else len(r.chunk_ns)
        first, last = r.chunk_ns[0], r.chunk_ns[-1]
        ttft.append((to_ms(first - r.sent_ns), 1.0))
        tpot.append((to_ms(last - r.sent_ns) / n if n else 0.0, float(n)))
        itl.append((to_ms(last - first) / (n - 1) if n > 1 else 0.0, float(max(n, 1) - 1)))
        latency.append(((end_ns(r) - r.sent_ns) / NS_PER_S, 1.0))
        tokens.append((float(n), 1.0))
        timings += _token_timings(r, n)
        ended += start <= end_ns(r) <= end
    in_window = sum(w for t, w in timings if start <= t <= end)
    figures = [
        Figure("request_totals.successful", len(successful), "requests",
               "requests overlapping the measured window (warm-up ones included) that "
               "ended with text", "results.requests_ok"),
        Figure("request_totals.errored", len(overlapping) - len(successful), "requests",
               "the other requests overlapping the window", "results.requests_failed"),
        Figure("duration", seconds, "s", "measured window: the schedule's start after the "
               "warm-up to the last request's end", "results.window_seconds"),
        Figure("requests_per_second.successful.mean", per_s(ended, seconds), "requests/s",
               "successful requests ending in the window / its length",
               "results.requests_per_s"),
        Figure("output_tokens_per_second.successful.mean", per_s(in_window, seconds),
               "tokens/s", "output tokens in the window (the first at the first text "
               "event, the rest spread evenly to the last) / its length",
               "results.output_tokens_per_s"),
    ]
    how = "; weighted distribution, percentile = first value whose CDF reaches it"
    for key, pairs, unit, definition, figure in (
            ("time_to_first_token_ms", ttft, "ms", "send to the first text event "
             "(content or reasoning)", "ttft"),
            ("time_per_output_token_ms", tpot, "ms", "(last text event - send) / output "
             "tokens: TTFT included; weighted by tokens; tokens from usage, else events",
             "tpot"),
            ("inter_token_latency_ms", itl, "ms", "(last - first text event) / (tokens - "
             "1), weighted by tokens - 1: dlbench's TPOT, token-weighted", "itl"),
            ("request_latency", latency, "s", "send to the response's end", "latency"),
            ("output_token_count", tokens, "tokens", "usage.completion_tokens, else one "
             "per text event", None)):
        figures += stat_figures(key + ".successful.{stat}",
                                _weighted_summary(pairs), unit, definition + how, figure)
    return figures


#: The tool, by the name ``dlbench definitions --as`` takes, with the upstream files
#: its definitions were read from (and the commit).
PEER = Peer(
    "guidellm", "GuideLLM",
    "src/guidellm/schemas/request_stats.py, schemas/statistics.py, "
    "benchmark/schemas/metrics.py, backends/openai/http.py "
    "(ee7a77457ba668b4b5ccb40f110518829893b36a)",
    compute)
