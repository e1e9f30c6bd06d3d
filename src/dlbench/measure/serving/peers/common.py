"""What every peer's definitions share: the types a peer's figures come in
(:class:`Context`, :class:`Figure`, :class:`Peer`), which requests count as ended, and
the helpers each tool's module computes with (the clocks' ends and starts, numpy's
summary of a list, one figure per statistic)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np

from dlbench.measure.serving.definitions import SLOs
from dlbench.measure.serving.records import RequestRecord

NS_PER_MS = 1e6
NS_PER_S = 1e9
#: A request whose answer came to an end, whatever its ending: none of the peers
#: checks for the stream's ``[DONE]``.
ENDED = frozenset({"", "no_done"})
#: What vLLM's chat client and SGLang's client also count as a success: any answer of
#: HTTP 200 read without an exception, with no text or an error object in the stream.
READ_WITHOUT_EXCEPTION = ENDED | {"empty", "server_error"}

Value: TypeAlias = float | int | str | None


@dataclass(frozen=True)
class Context:
    """What the records alone do not say: the run's API (``endpoint.api``), its
    scenario (``exp.scenario``) and its SLOs (``endpoint.slo_*_ms``)."""

    api: str = "chat"
    scenario: str = "batch"
    slos: SLOs = field(default_factory=SLOs)


@dataclass(frozen=True)
class Figure:
    """One figure as a peer reports it."""

    #: The name the peer gives it (its result file's key, or its summary's line).
    name: str
    #: None where the peer would report nothing (no request, no SLO given).
    value: Value
    #: The peer's unit (``ms``, ``s``, ``tokens/s``...), not converted.
    unit: str
    #: The peer's definition, in one line.
    definition: str
    #: The dlbench key a reader would set it beside (the same name, or the same idea).
    dlbench_key: str | None = None
    #: True when that key is defined the same way (values can still differ where the
    #: peer counts another set of requests as completed, or by its unit).
    same_meaning: bool = False


@dataclass(frozen=True)
class Peer:
    """A tool whose definitions :func:`~dlbench.measure.serving.peers.peer_figures`
    reproduces."""

    name: str
    title: str
    #: The upstream files the definitions were read from, and the commit.
    source: str
    compute: Callable[[Sequence[RequestRecord], Context], list[Figure]]


def after_warmup(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """The requests after dlbench's warm-up, in issue order."""
    return sorted((r for r in records if not r.warmup), key=lambda r: r.index)


def end_ns(r: RequestRecord) -> int:
    """When the answer ended: ``[DONE]`` or the stream's end, else its last event seen,
    else its send (a request that failed before any byte)."""
    if r.done_ns is not None:
        return r.done_ns
    if r.chunk_ns:
        return r.chunk_ns[-1]
    return r.first_event_ns if r.first_event_ns is not None else r.sent_ns


def schedule_start_ns(measured: Sequence[RequestRecord]) -> int:
    """Where a peer's clock starts when it starts with its schedule: the scheduled
    moment of the first measured request (the peer's own clock starts up to one
    inter-arrival gap earlier: an open loop's first request is due after a gap)."""
    return min(r.scheduled_ns for r in measured)


def to_ms(ns: float) -> float:
    """Nanoseconds in milliseconds."""
    return ns / NS_PER_MS


def per_s(count: float, seconds: float) -> float | None:
    """``count / seconds``; None for a duration of 0 (one request, or none timed)."""
    return count / seconds if seconds > 0 else None


_NUMPY_STATS: dict[str, Callable[[np.ndarray], float]] = {
    "mean": lambda a: float(np.mean(a)),
    "median": lambda a: float(np.median(a)),
    "std": lambda a: float(np.std(a)),  # divisor n, numpy's default
    "min": lambda a: float(np.min(a)),
    "max": lambda a: float(np.max(a)),
}


def numpy_summary(values: Sequence[float], stats: Sequence[str],
                  empty: float | None) -> dict[str, float | None]:
    """``values`` summarised as numpy summarises them: mean, median, standard
    deviation (divisor n), min, max and ``p<q>`` by linear interpolation (numpy's
    default ``percentile``); ``empty`` for each when there are no values (vLLM and
    SGLang print 0, the others nothing)."""
    if len(values) == 0:
        return dict.fromkeys(stats, empty)
    a = np.asarray(values, dtype=float)
    return {s: _NUMPY_STATS[s](a) if s in _NUMPY_STATS else float(np.percentile(a, float(s[1:])))
            for s in stats}


_DLBENCH_STAT = {"mean": "mean", "avg": "mean", "median": "p50", "p50": "p50", "p90": "p90",
                 "p99": "p99", "max": "max"}


def _dlbench_key(figure: str | None, stat: str) -> str | None:
    """The dlbench key of ``figure`` (``ttft``, ``tpot``, ``itl``, ``latency``) at
    ``stat``, when dlbench reports that statistic."""
    suffix = _DLBENCH_STAT.get(stat)
    if figure is None or suffix is None or (suffix == "max" and figure != "latency"):
        return None
    return f"results.{figure}_{suffix}"


def stat_figures(name: str | Callable[[str], str], summary: Mapping[str, float | None],
                 unit: str, definition: str, figure: str | None, same: Sequence[str] = ()
                 ) -> list[Figure]:
    """One figure per statistic of ``summary``, named by ``name`` (a template of
    ``{stat}``, or a function of it), set beside dlbench's ``figure`` at that statistic
    (the same meaning for the statistics in ``same``)."""
    def named(stat: str) -> str:
        return name.format(stat=stat) if isinstance(name, str) else name(stat)

    return [Figure(named(stat), value, unit, definition, _dlbench_key(figure, stat),
                   stat in same and _dlbench_key(figure, stat) is not None)
            for stat, value in summary.items()]


def slo_note(ctx: Context) -> str:
    """The SLOs given, as ``TTFT <= 200 ms, ...``; empty when none is."""
    given = [f"{name} <= {value:g} ms" for name, value in (
        ("TTFT", ctx.slos.ttft_ms), ("TPOT", ctx.slos.tpot_ms),
        ("latency", ctx.slos.latency_ms)) if value > 0]
    return ", ".join(given)
