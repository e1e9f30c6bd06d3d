"""Operator breakdowns of profiled records, per step, and how they changed from A to B.

A profiled record carries ``results.profile.top_ops``: the operators with the most
self time inside the profiling window (``results.profile.batches`` steps), each with
``name``, ``calls``, ``self_device_ms``, ``self_host_ms`` and ``share`` of the
window's wall time. The worker ranks them by device time on a GPU and host time on
the CPU (``results.profile.utilization_basis``); this module reads the same time, so
the numbers shown are the ones the ranking used.

Times and calls are divided by the window's batches, so that runs profiled over
different windows compare per step. A share of the window is a share of the mean
step, since every step of the window is alike.

Example::

    ops = record_operators(record)        # [OperatorStep("aten::mm", 85.1, 0.477, 3.0), ...]
    changes = compare_operators(side_a, side_b)
    changes[0].change_text()              # "+18.2%"
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.results.stats import mean
from dlbench.results.values import is_number as _is_number

TOP_OPS = "results.profile.top_ops"
BASIS = "results.profile.utilization_basis"
BATCHES = "results.profile.batches"


@dataclass(frozen=True)
class OperatorStep:
    """One operator of one record: self time per step (ms), its share of the step
    (None when the record has none) and calls per step."""

    name: str
    self_ms: float
    share: float | None
    calls: float


@dataclass(frozen=True)
class OperatorChange:
    """One operator's self time per step (ms) in A and in B; None on the side whose
    top operators do not list it."""

    name: str
    a_ms: float | None
    b_ms: float | None

    @property
    def change_pct(self) -> float | None:
        """``(b / a - 1) * 100``; None when a side lacks the operator or A is 0."""
        if self.a_ms is None or self.b_ms is None or self.a_ms == 0:
            return None
        return (self.b_ms / self.a_ms - 1.0) * 100.0

    def change_text(self) -> str:
        """``+18.2%``, ``-3.0%``, ``only in A``, ``only in B`` (or ``-`` when A is 0)."""
        if self.b_ms is None:
            return "only in A"
        if self.a_ms is None:
            return "only in B"
        pct = self.change_pct
        return "-" if pct is None else f"{pct:+.1f}%"


def time_basis(record: Mapping[str, Any]) -> str:
    """``device`` when the record's operators were ranked by device (kernel) time,
    else ``host``."""
    if record.get(BASIS) == "device_kernels":
        return "device"
    if record.get(BASIS) in ("cpu_time", "cpu_operators"):  # the latter: older records
        return "host"
    ops = record.get(TOP_OPS)
    on_device = isinstance(ops, list) and any(
        isinstance(op, dict) and _is_number(op.get("self_device_ms")) and op["self_device_ms"] > 0
        for op in ops)
    return "device" if on_device else "host"


def window_batches(record: Mapping[str, Any]) -> int | None:
    """The profiling window's batches, or None when the record does not say."""
    batches = record.get(BATCHES)
    return int(batches) if _is_number(batches) and batches >= 1 else None


def has_operators(record: Mapping[str, Any]) -> bool:
    """Whether the record lists at least one operator with a self time."""
    return bool(record_operators(record))


def record_operators(record: Mapping[str, Any]) -> list[OperatorStep]:
    """The record's top operators, largest self time first, per step (per window when
    the record does not say how many batches the window had). Entries without a name
    or a numeric self time are skipped; an operator named twice is summed."""
    ops = record.get(TOP_OPS)
    if not isinstance(ops, list):
        return []
    field = "self_device_ms" if time_basis(record) == "device" else "self_host_ms"
    per = window_batches(record) or 1
    totals: dict[str, list[float]] = {}
    shares: dict[str, float | None] = {}
    for op in ops:
        if not isinstance(op, dict) or not isinstance(op.get("name"), str):
            continue
        self_ms = op.get(field)
        if not _is_number(self_ms) or not math.isfinite(self_ms):
            continue
        calls = op.get("calls")
        total = totals.setdefault(op["name"], [0.0, 0.0])
        total[0] += float(self_ms)
        total[1] += float(calls) if _is_number(calls) else 0.0
        share = op.get("share")
        share = float(share) if _is_number(share) and math.isfinite(share) else None
        before = shares.get(op["name"], 0.0)
        shares[op["name"]] = None if share is None or before is None else before + share
    steps = [OperatorStep(name, ms / per, shares[name], calls / per)
             for name, (ms, calls) in totals.items()]
    # Stable: equal times keep the profiler's order.
    return sorted(steps, key=lambda s: -s.self_ms)


def _side_means(records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Per operator, the mean self ms per step over the records that list it."""
    seen: dict[str, list[float]] = {}
    for record in records:
        for op in record_operators(record):
            seen.setdefault(op.name, []).append(op.self_ms)
    return {name: mean(values) for name, values in seen.items()}


def compare_operators(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
) -> list[OperatorChange] | None:
    """The operators of one configuration in A and B, matched by name, or None unless
    both sides have a record with top operators.

    Repeats on a side are pooled (the mean over the records that list the operator).
    Operators on both sides come first, by the size of their change in ms, largest
    first; then those listed on one side only, by their time. "Only in A" means only
    that B's top operators (``exp.profile_top``) do not list it.
    """
    means_a = _side_means([r for r in a if has_operators(r)])
    means_b = _side_means([r for r in b if has_operators(r)])
    if not means_a or not means_b:
        return None
    both = [OperatorChange(n, means_a[n], means_b[n]) for n in means_a if n in means_b]
    one = [OperatorChange(n, means_a[n], None) for n in means_a if n not in means_b]
    one += [OperatorChange(n, None, means_b[n]) for n in means_b if n not in means_a]
    both.sort(key=lambda c: -abs((c.b_ms or 0.0) - (c.a_ms or 0.0)))
    one.sort(key=lambda c: -(c.a_ms if c.a_ms is not None else c.b_ms or 0.0))
    return [*both, *one]


def operator_bases(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The time bases (``host``, ``device``) of the records that list operators."""
    return sorted({time_basis(r) for r in records if has_operators(r)})
