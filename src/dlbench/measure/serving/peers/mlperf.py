"""MLPerf Inference LoadGen's figures, as its summary reports them (``loadgen/results.cc``).

Clocks start at the *scheduled* moment, as dlbench's do. TPOT is (latency - first
token latency) / (tokens - 1) in integer nanoseconds, tokens as the system under test
reports them; a percentile is the sorted sample at ``floor(n q)``; the throughput of
the Server scenario runs to the last *issued* query's end. The run is valid when every
sample was answered and, in the Server scenario, the p99 TTFT and p99 TPOT meet their
latencies.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

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
from dlbench.results.stats import loadgen_percentile


def _trunc_div(a: int, b: int) -> int:
    """``a / b`` in integers, truncated toward zero as C++ divides (LoadGen)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _loadgen_summary(values_ns: Sequence[int]) -> dict[str, float | None]:
    """LoadGen's summary of integer nanoseconds, in ms: the mean by integer division
    (C++), min, max, and the sorted value at ``floor(n q)`` for each percentile."""
    stats = ("mean", "min", "max", "p50", "p90", "p99")
    if not values_ns:
        return dict.fromkeys(stats, None)
    out: dict[str, float | None] = {
        "mean": to_ms(_trunc_div(sum(values_ns), len(values_ns))),
        "min": to_ms(min(values_ns)), "max": to_ms(max(values_ns))}
    for q in (50, 90, 99):
        out[f"p{q}"] = to_ms(loadgen_percentile(values_ns, q))
    return out


def _loadgen_name(title: str, per: str, stat: str) -> str:
    """A statistic's line in LoadGen's summary (its unit, ns, left out: ms here)."""
    if stat.startswith("p"):
        return f"{float(stat[1:]):.2f} percentile {per}"
    return f"{stat.capitalize()} {title}"


def compute(records: Sequence[RequestRecord], ctx: Context) -> list[Figure]:
    """LoadGen's figures for ``records`` (warm-up included) in ``ctx``."""
    measured = after_warmup(records)
    done = [r for r in measured if r.error in ENDED and r.chunk_ns]
    start = schedule_start_ns(measured)
    ttft = [r.chunk_ns[0] - r.scheduled_ns for r in done]
    latency = [end_ns(r) - r.scheduled_ns for r in done]
    # LoadGen logs an error for a count of 0 or 1 and records 0 tokens, then still
    # divides by (0 - 1): the sample's TPOT is minus its decode time.
    n_tokens = [n if n > 1 else 0 for n in (r.output_tokens()[0] for r in done)]
    tpot = [_trunc_div(lat - t, n - 1) for lat, t, n in zip(latency, ttft, n_tokens,
                                                            strict=True)]
    count, tokens = len(done), sum(n_tokens)
    figures = [Figure("sample_count", count, "samples", "samples completed with text",
                      "results.requests_ok")]
    final = measured[-1]  # the last query issued
    if ctx.scenario == "server":
        done_s = (end_ns(final) - start) / NS_PER_S
        figures += [
            Figure("Completed samples per second",
                   per_s(count - 1, done_s) if count else None, "samples/s",
                   "(samples - 1) / the last issued query's end (from the schedule's start)",
                   "results.requests_per_s"),
            Figure("Completed tokens per second", per_s(tokens, done_s), "tokens/s",
                   "tokens reported / the last issued query's end",
                   "results.output_tokens_per_s")]
    elif ctx.scenario == "offline":
        max_s = max(latency) / NS_PER_S if latency else 0.0
        figures += [
            Figure("Samples per second", per_s(count, max_s), "samples/s",
                   "samples / the longest sample latency", "results.requests_per_s"),
            Figure("Tokens per second", per_s(tokens, max_s), "tokens/s",
                   "tokens reported / the longest sample latency",
                   "results.output_tokens_per_s")]
    elif ctx.scenario == "single_stream":
        issued_s = (final.sent_ns - start) / NS_PER_S
        mean_s = _trunc_div(sum(latency), count) / NS_PER_S if count else 0.0
        figures += [
            Figure("TPS w/ loadgen overhead", per_s(tokens, issued_s), "tokens/s",
                   "tokens / the last query's issue time", "results.output_tokens_per_s"),
            Figure("TPS w/o loadgen overhead", per_s(tokens, mean_s * count), "tokens/s",
                   "tokens / (mean latency x samples)")]
    reasons = []
    if len(done) < len(measured):
        reasons.append(f"{len(measured) - len(done)} samples not completed")
    p99_ttft = _loadgen_summary(ttft)["p99"]
    p99_tpot = _loadgen_summary(tpot)["p99"]
    if ctx.scenario == "server":
        for what, p99, slo in (("TTFT", p99_ttft, ctx.slos.ttft_ms),
                               ("TPOT", p99_tpot, ctx.slos.tpot_ms)):
            if slo > 0 and p99 is not None and p99 > slo:
                reasons.append(f"{what} constraint not met")
    figures.append(Figure(
        "Result is", "INVALID" if reasons or not done else "VALID", "",
        "Server: p99 TTFT and p99 TPOT within their latencies (endpoint.slo_ttft_ms, "
        "slo_tpot_ms); every sample answered" + (f" -- {'; '.join(reasons)}" if reasons
                                                 else ""), "results.valid"))
    how = "; LoadGen: sorted value at floor(n q), mean by integer ns division"
    for (title, per), values, definition, figure, same in (
            (("First Token latency", "first token latency"), ttft,
             "scheduled moment to the first text event", "ttft", ("mean", "p50", "p90", "p99")),
            (("Time per Output Token", "time to output token"), tpot,
             "(latency - first token latency) / (tokens - 1), tokens as reported (usage, else "
             "client count, else events); latency to the response's end", "tpot", ()),
            (("latency", "latency"), latency, "scheduled moment to the sample's completion "
             "(the response's end)", "latency", ())):
        figures += stat_figures(
            functools.partial(_loadgen_name, title, per),
            _loadgen_summary(values), "ms", definition + how, figure, same)
    return figures


#: The tool, by the name ``dlbench definitions --as`` takes, with the upstream files
#: its definitions were read from (and the commit).
PEER = Peer(
    "mlperf", "MLPerf Inference LoadGen",
    "loadgen/results.cc, loadgen/logging.cc, loadgen/loadgen.cc, "
    "language/llama2-70b/SUT_API.py (b66003e10e2db4b8c36a448b0545ec90fcc6e9e9)",
    compute)
