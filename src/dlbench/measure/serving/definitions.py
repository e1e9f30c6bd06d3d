"""dlbench's one definition of each serving figure, computed from the raw records of
the requests (:class:`~dlbench.measure.serving.records.RequestRecord`).

The ``endpoint`` framework (requests over HTTP) and the in-process ``exp.phase=generate``
(``worker/generate.py``) both turn what they measured into records and call
:func:`serving_results`, so a key means the same in both. Other tools define some of
these figures differently (``results.tpot_*`` is vLLM's TPOT, what aiperf calls
ITL); :mod:`dlbench.measure.serving.peers` gives the same records in their terms.

The clocks of a request (ns from the run's start):

- TTFT: from the request's **scheduled** moment (not from when it was sent, so a
  client that falls behind cannot hide the queue it made) to its first event that
  carried text (a role-only first chunk announces an answer, it is not one);
- latency: from the scheduled moment to its last text event;
- TPOT: (last text event - first text event) / (output tokens - 1), one value per
  request: the pace a user sees, each request counted once;
- ITL: the gaps between consecutive text events, pooled over every request (per
  event, not per token: a server that sends 4 tokens per chunk shows gaps 4 tokens
  long); ``itl_request`` is the distribution of each request's mean gap, so that
  long answers do not outweigh short ones.

Every distribution is over the requests sent after the warm-up that succeeded, in
issue order, and its percentiles follow LoadGen's rule (the sorted value at index
``floor(n q / 100)``, :func:`dlbench.results.stats.loadgen_percentile`), computed
here with NumPy on the same index so that 10^5 requests take milliseconds. Rates are
over the steady-state window (:func:`steady_window`): the output tokens whose text
events fall inside it, each event carrying an equal share of its request's tokens.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, pairwise
from typing import Any

import numpy as np

from dlbench.measure.serving.records import RequestRecord

__all__ = ["SLOs", "SteadyWindow", "chunk_gaps_ms", "latency_ms", "serving_results",
           "steady_window", "tpot_ms", "ttft_ms"]

_NS_PER_MS = 1e6
_NS_PER_S = 1e9
#: The client's CPU use (percent of one core) from which it may have delayed requests:
#: a process that busy cannot wake on time for every deadline.
_CLIENT_CPU_LIMIT = 90.0


@dataclass(frozen=True)
class SLOs:
    """Service-level objectives a request must meet to count as good, ms; 0: none."""

    ttft_ms: float = 0.0
    tpot_ms: float = 0.0
    latency_ms: float = 0.0


@dataclass(frozen=True)
class SteadyWindow:
    """The steady-state window, ns from the run's start, both ends included."""

    start_ns: int
    end_ns: int

    @property
    def seconds(self) -> float:
        """Its length in seconds."""
        return (self.end_ns - self.start_ns) / _NS_PER_S


def ttft_ms(r: RequestRecord) -> float | None:
    """Time to first token: the first text event less the scheduled moment, ms; None
    when no event carried text.

    >>> ttft_ms(RequestRecord(0, scheduled_ns=0, sent_ns=1_000_000, chunk_ns=[5_000_000]))
    5.0
    """
    return (r.chunk_ns[0] - r.scheduled_ns) / _NS_PER_MS if r.chunk_ns else None


def tpot_ms(r: RequestRecord) -> float | None:
    """Time per output token after the first: (last text event - first text event) /
    (output tokens - 1), ms; None when fewer than two output tokens, or fewer than two
    text events (a whole answer in one event has no measurable pace).

    >>> tpot_ms(RequestRecord(0, 0, 0, chunk_ns=[10_000_000, 40_000_000],
    ...                       usage_output_tokens=4))
    10.0
    """
    tokens, _ = r.output_tokens()
    if tokens < 2 or len(r.chunk_ns) < 2:
        return None
    return (r.chunk_ns[-1] - r.chunk_ns[0]) / (tokens - 1) / _NS_PER_MS


def latency_ms(r: RequestRecord) -> float | None:
    """End-to-end latency: the last text event less the scheduled moment, ms; None
    when no event carried text."""
    return (r.chunk_ns[-1] - r.scheduled_ns) / _NS_PER_MS if r.chunk_ns else None


def chunk_gaps_ms(r: RequestRecord) -> list[float]:
    """The gaps between the request's consecutive text events, ms (one fewer than its
    events).

    >>> chunk_gaps_ms(RequestRecord(0, 0, 0, chunk_ns=[1_000_000, 3_000_000, 6_000_000]))
    [2.0, 3.0]
    """
    return [(b - a) / _NS_PER_MS for a, b in pairwise(r.chunk_ns)]


def steady_window(records: Sequence[RequestRecord]) -> SteadyWindow | None:
    """From the scheduled moment of the first request after the warm-up to that of
    the last request issued: while requests were still being issued, so the load was
    what the scenario asked for (before it, the warm-up; after it, the drain). When
    every counted request was due at the same moment (offline, or one request), the
    window runs to the last text event instead, the whole run. None without a counted
    request, or when that too is empty."""
    counted = [r for r in records if not r.warmup]
    if not counted:
        return None
    start = min(r.scheduled_ns for r in counted)
    end = max(r.scheduled_ns for r in records)
    if end <= start:
        end = max((r.chunk_ns[-1] for r in counted if r.chunk_ns), default=start)
    return SteadyWindow(start, end) if end > start else None


def _percentiles(values: np.ndarray, quantiles: Sequence[float]) -> list[float]:
    """``values`` at each of ``quantiles`` (percent) by LoadGen's rule: the sorted
    value at index ``floor(n q / 100)``, as :func:`dlbench.results.stats.loadgen_percentile`
    reads it (its tolerance included), found by partial sorting."""
    n = len(values)
    indices = [min(math.floor(n * q / 100.0 + 1e-9), n - 1) for q in quantiles]
    chosen = np.partition(values, sorted(set(indices)))
    return [float(chosen[i]) for i in indices]


def _summary(prefix: str, values: np.ndarray, quantiles: Sequence[int], *,
             mean: float | None = None, with_max: bool = False) -> dict[str, Any]:
    """``results.<prefix>_mean``, ``_p<q>`` for each of ``quantiles`` (and ``_max``) of
    ``values`` (ms), None when there are none; ``mean`` when the caller has it exactly."""
    out: dict[str, Any] = {}
    empty = len(values) == 0
    if mean is None and not empty:
        mean = math.fsum(values.tolist()) / len(values)
    out[f"results.{prefix}_mean"] = None if empty else mean
    figures = [None] * len(quantiles) if empty else _percentiles(values, quantiles)
    for q, figure in zip(quantiles, figures, strict=True):
        out[f"results.{prefix}_p{q}"] = figure
    if with_max:
        out[f"results.{prefix}_max"] = None if empty else float(values.max())
    return out


@dataclass
class _Served:
    """The counted requests that succeeded with some text, as columns (issue order)."""

    scheduled: np.ndarray  # int64 ns
    first: np.ndarray  # first text event
    last: np.ndarray  # last text event
    events: np.ndarray  # text events per request
    tokens: np.ndarray  # output tokens per request (int64)
    flat: np.ndarray  # every text event of every request, request after request

    @classmethod
    def of(cls, served: Sequence[RequestRecord]) -> _Served:
        events = np.fromiter((len(r.chunk_ns) for r in served), np.int64, len(served))
        return cls(
            scheduled=np.fromiter((r.scheduled_ns for r in served), np.int64, len(served)),
            first=np.fromiter((r.chunk_ns[0] for r in served), np.int64, len(served)),
            last=np.fromiter((r.chunk_ns[-1] for r in served), np.int64, len(served)),
            events=events,
            tokens=np.fromiter((r.output_tokens()[0] for r in served), np.int64,
                               len(served)),
            flat=np.fromiter(chain.from_iterable(r.chunk_ns for r in served), np.int64,
                             int(events.sum())))

    def pooled_gaps(self) -> np.ndarray:
        """Every gap between consecutive text events of one request, ns."""
        gaps = np.diff(self.flat)
        starts = np.cumsum(self.events)[:-1]  # where each request after the first begins
        keep = np.ones(len(gaps), dtype=bool)
        keep[starts - 1] = False  # the gap from one request's last event to the next's first
        return gaps[keep]

    def tokens_in(self, window: SteadyWindow, chosen: np.ndarray) -> float:
        """Output tokens of the ``chosen`` requests whose text events fall in ``window``,
        each event carrying its request's tokens / its events."""
        share = np.repeat(np.where(chosen, self.tokens / self.events, 0.0), self.events)
        inside = (self.flat >= window.start_ns) & (self.flat <= window.end_ns)
        return float(share[inside].sum())


def _good(data: _Served, tpot: np.ndarray, slos: SLOs) -> np.ndarray:
    """Which served requests met every SLO given (a request of one token, with no
    TPOT, cannot miss the TPOT objective)."""
    good = np.ones(len(data.first), dtype=bool)
    if slos.ttft_ms > 0:
        good &= (data.first - data.scheduled) / _NS_PER_MS <= slos.ttft_ms
    if slos.tpot_ms > 0:
        good &= ~(tpot > slos.tpot_ms)  # NaN (no TPOT) is not over
    if slos.latency_ms > 0:
        good &= (data.last - data.scheduled) / _NS_PER_MS <= slos.latency_ms
    return good


def _tokens_source(served: Sequence[RequestRecord]) -> str | None:
    sources = {r.output_tokens()[1] for r in served}
    if not sources:
        return None
    return sources.pop() if len(sources) == 1 else "mixed"


def _token_counts(served: Sequence[RequestRecord]) -> dict[str, Any]:
    """How far the server's count of output tokens is from the client tokenizer's."""
    both = [(r.usage_output_tokens, r.client_output_tokens) for r in served
            if r.usage_output_tokens is not None and r.client_output_tokens is not None]
    diff = sum(u - c for u, c in both) if both else None
    client = sum(c for _, c in both)
    return {"results.token_count_diff": diff,
            "results.token_count_diff_rel": diff / client if diff is not None and client
            else None}


def _rates(data: _Served, window: SteadyWindow | None, good: np.ndarray) -> dict[str, Any]:
    """Tokens and requests per second of the window; goodput of the good requests.
    None when there is no window, or no request succeeded."""
    names = ("results.output_tokens_per_s", "results.requests_per_s",
             "results.goodput_tokens_per_s", "results.goodput_requests_per_s")
    if window is None or window.seconds <= 0 or not len(good):
        return dict.fromkeys(names, None)  # no request succeeded: no pace was measured
    seconds = window.seconds
    everyone = np.ones(len(good), dtype=bool)
    ended = (data.last >= window.start_ns) & (data.last <= window.end_ns)
    return dict(zip(names, (data.tokens_in(window, everyone) / seconds,
                            int(ended.sum()) / seconds,
                            data.tokens_in(window, good) / seconds,
                            int((ended & good).sum()) / seconds), strict=True))


def _validity(results: dict[str, Any], slos: SLOs, failed: Counter[str],
              max_client_lag_ms: float, client_cpu_percent: float | None) -> list[str]:
    """Why the run is not valid, one sentence per gate it fails (MLPerf's for
    language models: the 99th percentiles of TTFT and TPOT under their objectives),
    plus failed requests and a client that did not keep up."""
    reasons = []
    sent, ok = results["results.requests"], results["results.requests_ok"]
    if not sent:
        reasons.append("no request was sent after the warm-up")
    elif results["results.ttft_mean"] is None:
        reasons.append(f"none of the {sent} requests after the warm-up succeeded with text")
    if failed:
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(failed.items()))
        reasons.append(f"{sent - ok} of {sent} requests failed ({kinds})")
    for figure, slo, name in (("ttft", slos.ttft_ms, "endpoint.slo_ttft_ms"),
                              ("tpot", slos.tpot_ms, "endpoint.slo_tpot_ms")):
        p99 = results[f"results.{figure}_p99"]
        if slo > 0 and p99 is not None and p99 > slo:
            reasons.append(f"the 99th percentile {figure.upper()}, {p99:.3f} ms, is over "
                           f"{name}={slo:g}")
    lag = results["results.client_lag_p99"]
    if lag is not None and lag > max_client_lag_ms:
        reasons.append(f"the client fell behind its schedule: its 99th percentile lag, "
                       f"{lag:.3f} ms, is over endpoint.max_client_lag_ms="
                       f"{max_client_lag_ms:g}")
    if client_cpu_percent is not None and client_cpu_percent >= _CLIENT_CPU_LIMIT:
        reasons.append(f"the client used {client_cpu_percent:.0f} % of a CPU core (from "
                       f"{_CLIENT_CPU_LIMIT:g} % it may send late): run it on a freer machine")
    return reasons


def serving_results(records: Sequence[RequestRecord], slos: SLOs = SLOs(),
                    window: SteadyWindow | None = None, *, client_cpu_percent: float | None = None,
                    max_client_lag_ms: float = 10.0) -> dict[str, Any]:
    """Every serving figure of ``records`` (a run's requests, warm-up included) as
    ``results.*`` values: distributions of TTFT, TPOT, ITL and latency, rates over
    ``window`` (:func:`steady_window` of the records when None), goodput under
    ``slos``, errors, the client's self-check and the validity verdict. A figure that
    cannot be computed (no request succeeded) is None; nothing raises."""
    counted = sorted((r for r in records if not r.warmup), key=lambda r: r.index)
    served = [r for r in counted if r.ok and r.chunk_ns]
    failed = Counter(r.error for r in counted if not r.ok)
    if window is None:
        window = steady_window(records)
    data = _Served.of(served)
    results: dict[str, Any] = {
        "results.requests": len(counted),
        "results.requests_ok": len(counted) - sum(failed.values()),
        "results.requests_failed": sum(failed.values()),
        "results.error_counts": dict(sorted(failed.items())),
    }

    ttft = (data.first - data.scheduled) / _NS_PER_MS
    n = len(served)
    results.update(_summary("ttft", ttft, (50, 90, 99),
                            mean=float(np.sum(data.first - data.scheduled)) / n / _NS_PER_MS
                            if n else None))
    results["results.ttft_data"] = ttft.tolist()

    lag_ns = np.fromiter((r.sent_ns - r.released for r in counted), np.int64, len(counted))
    lag = _summary("client_lag", lag_ns / _NS_PER_MS, (99,))
    results.update(lag)

    usable = (data.tokens >= 2) & (data.events >= 2)
    spans = data.last - data.first
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot_all = np.where(usable, spans / (data.tokens - 1) / _NS_PER_MS, np.nan)
    tpot = tpot_all[usable]
    results.update(_summary("tpot", tpot, (50, 90, 99)))
    results["results.tpot_data"] = tpot.tolist()

    gapped = data.events >= 2
    gap_count = int(np.sum(data.events[gapped] - 1))
    results.update(_summary(
        "itl", data.pooled_gaps() / _NS_PER_MS, (50, 90, 99),
        mean=float(np.sum(spans[gapped])) / gap_count / _NS_PER_MS if gap_count else None))
    results.update(_summary("itl_request",
                            spans[gapped] / (data.events[gapped] - 1) / _NS_PER_MS, (50, 99)))

    latency = (data.last - data.scheduled) / _NS_PER_MS
    results.update(_summary("latency", latency, (50, 90, 99), with_max=True,
                            mean=float(np.sum(data.last - data.scheduled)) / n / _NS_PER_MS
                            if n else None))
    results["results.latency_data"] = latency.tolist()
    positive = latency > 0
    per_request = data.tokens[positive] * 1000.0 / latency[positive]
    results["results.request_tokens_per_s_p50"] = (
        _percentiles(per_request, (50,))[0] if len(per_request) else None)

    results["results.output_tokens_source"] = _tokens_source(served)
    results["results.output_tokens_total"] = int(data.tokens.sum())
    results.update(_token_counts(served))

    good = _good(data, tpot_all, slos)
    results.update(_rates(data, window, good))
    results["results.throughput"] = results["results.output_tokens_per_s"]
    results["results.throughput_unit"] = "tokens/s"
    run_ns = int(data.last.max()) - min(r.scheduled_ns for r in counted) if n else 0
    results["results.output_tokens_per_s_run"] = (
        int(data.tokens.sum()) / (run_ns / _NS_PER_S) if run_ns > 0 else None)
    results["results.slo_attainment"] = int(good.sum()) / len(counted) if counted else None
    results["results.window_start_s"] = None if window is None else window.start_ns / _NS_PER_S
    results["results.window_end_s"] = None if window is None else window.end_ns / _NS_PER_S
    results["results.window_seconds"] = None if window is None else window.seconds

    cpu_ok = client_cpu_percent is None or client_cpu_percent < _CLIENT_CPU_LIMIT
    lag_p99 = results["results.client_lag_p99"]
    results["results.client_cpu_percent"] = client_cpu_percent
    results["results.client_kept_up"] = (
        None if lag_p99 is None and client_cpu_percent is None
        else cpu_ok and (lag_p99 is None or lag_p99 <= max_client_lag_ms))
    reasons = _validity(results, slos, failed, max_client_lag_ms, client_cpu_percent)
    results["results.valid"] = not reasons
    results["results.valid_reasons"] = reasons
    return results
