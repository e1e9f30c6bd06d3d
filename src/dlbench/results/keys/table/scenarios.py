"""The result keys of language-model generation (``exp.phase=generate``,
``worker/generate.py``), as rows of :class:`dlbench.results.keys.table.ResultKey`:
name, type, unit, meaning, format, which way is better. Kept apart so that the key
table stays short; :mod:`dlbench.results.keys.table` makes them keys (none is combined
across processes: generation runs one)."""

from __future__ import annotations

_MS = "ms"
_TOKENS = "tokens/s"

#: Percentiles by LoadGen's rule (``measure/loadgen/results.py``).
GENERATE_ROWS: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("results.ttft_mean", "float", _MS,
     "generate: mean time to first token of a request (prefill and first token; server: "
     "from its scheduled arrival)", ".3f", "lower"),
    ("results.ttft_p50", "float", _MS, "generate: median time to first token", ".3f",
     "lower"),
    ("results.ttft_p99", "float", _MS, "generate: 99th percentile of time to first token",
     ".3f", "lower"),
    ("results.tpot_mean", "float", _MS,
     "generate: mean time per output token after the first (inter-token latency, every "
     "token of every request)", ".3f", "lower"),
    ("results.tpot_p50", "float", _MS, "generate: median inter-token latency", ".3f",
     "lower"),
    ("results.tpot_p99", "float", _MS, "generate: 99th percentile of inter-token latency",
     ".3f", "lower"),
    ("results.output_tokens_per_s", "float", _TOKENS,
     "generate: output tokens of every request per second of the timed section (the "
     "same as results.throughput)", ".2f", "higher"),
    ("results.requests_per_s", "float", "requests/s",
     "generate: requests completed per second of the timed section", ".3f", "higher"),
    ("results.request_tokens_per_s_p50", "float", _TOKENS,
     "generate: the median request's output tokens per second of its latency", ".2f",
     "higher"),
    ("results.ttft_data", "list[float]", _MS,
     "generate: every request's time to first token, in the order served", "", ""),
    ("results.token_data", "list[list[float]]", _MS,
     "generate: each generation (requests generated together): its prefill and first "
     "token, then each later token, from the token before", "", ""),
    ("results.generate_cache", "bool", "",
     "generate: decoding reused a cache (keys and values, or a recurrent state); false: "
     "each token ran the whole sequence again", "", ""),
)
