"""The result keys of served requests, as rows of
:class:`dlbench.results.keys.table.ResultKey`: name, type, unit, meaning, format, which
way is better. Written by the ``endpoint`` framework (requests over HTTP) and by the
in-process ``exp.phase=generate`` (``worker/generate.py``), both through
:mod:`dlbench.measure.serving.definitions`, where each figure is defined once. Kept
apart so that the key table stays short; :mod:`dlbench.results.keys.table` makes them
keys (none is combined across processes: a serving run is one process); the raw records
and what only an endpoint run writes are :mod:`dlbench.results.keys.table.endpoint`. The
``results.latency_*`` keys are the load generator's, in the table itself, with the
same meaning.

Distributions are over the requests sent after the warm-up that succeeded; their
percentiles follow LoadGen's rule (the sorted value at index floor(n q / 100)).
"""

from __future__ import annotations

_MS = "ms"
_TOKENS = "tokens/s"
_REQUESTS = "requests/s"

_Row = tuple[str, str, str, str, str, str]


def _spread(name: str, what: str, definition: str, quantiles: tuple[int, ...]
            ) -> list[_Row]:
    """``results.<name>_mean`` (``what``, then its ``definition``) and a ``_p<q>`` row
    for each of ``quantiles``; lower is better."""
    return [(f"results.{name}_mean", "float", _MS, f"serving: mean {what}: {definition}",
             ".3f", "lower"),
            *((f"results.{name}_p{q}", "float", _MS,
               f"serving: {q}th percentile of {what} (results.{name}_mean)", ".3f", "lower")
              for q in quantiles)]


_TTFT = ("a request's first event carrying text (never a role-only one) less its "
         "scheduled moment (generate: its arrival in the server scenario, else its "
         "generation's start)")
_TPOT = ("one value per request, (last text event - first text event) / (output tokens - "
         "1), over requests of 2 tokens and 2 text events or more (vLLM's TPOT; aiperf's "
         "inter-token latency)")
_ITL = ("every gap of every request pooled (per event, not per token: a chunk of 4 tokens "
        "is one gap)")
_ITL_REQUEST = ("one value per request of 2 text events or more, so that long answers do "
                "not outweigh short ones")

#: The rows, in the order the docs show them.
SERVING_ROWS: tuple[_Row, ...] = (
    *_spread("ttft", "time to first token", _TTFT, (50, 90, 99)),
    ("results.ttft_data", "list[float]", _MS,
     "serving: each request's time to first token, in issue order", "", ""),
    *_spread("tpot", "time per output token after the first", _TPOT, (50, 90, 99)),
    ("results.tpot_data", "list[float]", _MS,
     "serving: each request's time per output token (results.tpot_mean), in issue order",
     "", ""),
    *_spread("itl", "gap between consecutive text events", _ITL, (50, 90, 99)),
    *_spread("itl_request", "a request's mean gap between its text events", _ITL_REQUEST,
             (50, 99)),
    ("results.client_lag_mean", "float", _MS,
     "endpoint: mean time from when a request could be sent (its scheduled moment, or "
     "its slot under endpoint.max_concurrency) to its sending, the client's own queueing "
     "(every request after the warm-up; counted in TTFT and latency too)",
     ".3f", "lower"),
    ("results.client_lag_p99", "float", _MS,
     "endpoint: 99th percentile of the client's lag (results.client_lag_mean)", ".3f",
     "lower"),
    ("results.output_tokens_per_s", "float", _TOKENS,
     "serving: output tokens of the text events inside the steady-state window, each event "
     "an equal share of its request's tokens, per second of the window (= "
     "results.throughput)", ".2f", "higher"),
    ("results.output_tokens_per_s_run", "float", _TOKENS,
     "serving: every output token of the requests after the warm-up, per second from the "
     "first one's scheduled moment to the last text event (the drain included)", ".2f",
     "higher"),
    ("results.requests_per_s", "float", _REQUESTS,
     "serving: requests after the warm-up whose last text event falls inside the "
     "steady-state window, per second of the window", ".3f", "higher"),
    ("results.request_tokens_per_s_p50", "float", _TOKENS,
     "serving: the median request's output tokens per second of its latency", ".2f",
     "higher"),
    ("results.goodput_requests_per_s", "float", _REQUESTS,
     "serving: results.requests_per_s counting only the requests that met every objective "
     "given (endpoint.slo_ttft_ms, endpoint.slo_tpot_ms, endpoint.slo_latency_ms)", ".3f",
     "higher"),
    ("results.goodput_tokens_per_s", "float", _TOKENS,
     "serving: results.output_tokens_per_s counting only the requests that met every "
     "objective given", ".2f", "higher"),
    ("results.slo_attainment", "float", "",
     "serving: requests that succeeded and met every objective given, as a fraction of "
     "all the requests sent after the warm-up (failed ones included)", ".1%", "higher"),
    ("results.output_tokens_total", "int", "",
     "serving: output tokens of the requests after the warm-up that succeeded", "d", ""),
    ("results.output_tokens_source", "str", "",
     "serving: where the requests' output token counts come from: usage (the server's), "
     "client (the client tokenizer's count of the text), events (one per text event, a "
     "lower bound), or mixed", "", ""),
    ("results.token_count_diff", "int", "",
     "serving: the server's output tokens less the client tokenizer's, summed over the "
     "requests that have both", "d", ""),
    ("results.token_count_diff_rel", "float", "",
     "serving: results.token_count_diff / the client tokenizer's tokens of those requests",
     ".2%", ""),
    ("results.requests", "int", "", "serving: requests sent after the warm-up", "d", ""),
    ("results.requests_ok", "int", "",
     "serving: requests after the warm-up that succeeded", "d", ""),
    ("results.requests_failed", "int", "",
     "serving: requests after the warm-up that failed (see results.error_counts)", "d",
     "lower"),
    ("results.error_counts", "dict", "",
     "serving: failed requests after the warm-up by kind: connect, http, timeout, "
     "stream_cut, malformed, no_done, empty, server_error", "", ""),
    ("results.window_start_s", "float", "s",
     "serving: start of the steady-state window, from the run's start: the scheduled moment "
     "of the first request after the warm-up", ".3f", ""),
    ("results.window_end_s", "float", "s",
     "serving: end of the steady-state window: the scheduled moment of the last request "
     "issued (all due at once: the last text event; generate batch: the last timed token)",
     ".3f", ""),
    ("results.window_seconds", "float", "s", "serving: the steady-state window's length",
     ".3f", ""),
    ("results.client_cpu_percent", "float", "%",
     "endpoint: the client process's CPU time over the run's wall time, percent of one "
     "core", ".1f", ""),
    ("results.client_kept_up", "bool", "",
     "endpoint: the client kept to its schedule: results.client_lag_p99 within "
     "endpoint.max_client_lag_ms and its CPU under 90 % of a core (false: not valid)", "",
     ""),
    ("results.token_data", "list[list[float]]", _MS,
     "generate: each generation (requests generated together): its prefill and first "
     "token, then each later token, from the token before", "", ""),
    ("results.generate_cache", "bool", "",
     "generate: decoding reused a cache (keys and values, or a recurrent state); false: "
     "each token ran the whole sequence again", "", ""),
)
