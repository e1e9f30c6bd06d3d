"""What a profiling window's events say, as numbers for the record.

Pure functions over plain tuples, so that every framework's profiler (and a test)
feeds them the same way:

- :func:`busy_ms`: the time at least one operator or kernel ran, overlaps counted
  once. TBD's compute utilisation is this over the wall time of the profiled steps
  (device kernels on a GPU; operators on the CPU), so it never exceeds 1 when the
  events lie inside the window.
- :func:`top_operators`: the operators that took the most self time, with their call
  counts and their share of the window.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

__all__ = ["OperatorTime", "busy_ms", "top_operators"]


class OperatorTime(NamedTuple):
    """One operator's totals over the window: self time on the host and on the device,
    in microseconds (what profilers report), and how often it was called."""

    name: str
    calls: int
    self_host_us: float
    self_device_us: float


def busy_ms(intervals: Iterable[tuple[float, float]]) -> float:
    """Milliseconds covered by the union of ``(start_us, end_us)`` intervals.

    >>> busy_ms([(0, 1000), (500, 1500), (3000, 3500)])
    2.0
    """
    total = 0.0
    end_so_far = float("-inf")
    start_run = 0.0
    for start, end in sorted(intervals):
        if start > end_so_far:
            if end_so_far > float("-inf"):
                total += end_so_far - start_run
            start_run, end_so_far = start, end
        else:
            end_so_far = max(end_so_far, end)
    if end_so_far > float("-inf"):
        total += end_so_far - start_run
    return total / 1000.0


def top_operators(
    operators: Iterable[OperatorTime], wall_ms: float, top: int, by_device: bool
) -> list[dict[str, Any]]:
    """The ``top`` operators by self time (on the device when ``by_device``, else on
    the host), each as ``{"name", "calls", "self_device_ms", "self_host_ms",
    "share"}``: ``share`` is the self time ranked by over the window's wall time.

    >>> top_operators([OperatorTime("aten::mm", 4, 2000.0, 0.0),
    ...                OperatorTime("aten::add", 8, 500.0, 0.0)], 10.0, 1, False)
    [{'name': 'aten::mm', 'calls': 4, 'self_device_ms': 0.0, 'self_host_ms': 2.0, 'share': 0.2}]
    """
    def key(op: OperatorTime) -> float:
        return op.self_device_us if by_device else op.self_host_us

    ranked = sorted((op for op in operators if key(op) > 0), key=key, reverse=True)
    return [
        {"name": op.name, "calls": op.calls, "self_device_ms": op.self_device_us / 1000.0,
         "self_host_ms": op.self_host_us / 1000.0,
         "share": key(op) / 1000.0 / wall_ms if wall_ms > 0 else None}
        for op in ranked[:top]
    ]
