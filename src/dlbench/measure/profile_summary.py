"""What a profiling window's events say, as numbers for the record.

Pure functions over plain tuples, so that every framework's profiler (and a test)
feeds them the same way:

- :func:`busy_ms`: the time at least one operator or kernel ran, overlaps counted
  once. On a GPU, TBD's compute utilisation is this (device kernels) over the wall
  time of the profiled steps, so it never exceeds 1 when the events lie inside the
  window. On the CPU an operator's interval is wall time from its start to its end,
  preempted time included: a starved process reads as busy as an idle machine's;
- :func:`cpu_utilization`: the CPU's utilisation instead, from the process's CPU
  time over the window, which counts only the time it ran;
- :func:`top_operators`: the operators that took the most self time, with their call
  counts and their share of the window.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

__all__ = ["OperatorTime", "busy_ms", "cpu_utilization", "top_operators"]


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


def cpu_utilization(cpu_ms: float, wall_ms: float, cpus: int) -> float | None:
    """The share of the CPUs a process may run on that it used over a window:
    ``cpu_ms`` (its CPU time, every thread, user and system) over ``wall_ms`` x
    ``cpus``, at most 1 (CPU time advances in clock ticks, so a busy window can read a
    tick over); None for an empty window or no CPU.

    1 means every CPU the process may run on ran it for the whole window; a process
    that sleeps, waits or is preempted for half of it on one CPU reads 0.5, whatever
    its operators' wall-clock intervals cover.

    >>> cpu_utilization(500.0, 1000.0, 1), cpu_utilization(800.0, 1000.0, 2)
    (0.5, 0.4)
    """
    if not wall_ms > 0 or cpus < 1:
        return None
    return min(1.0, max(0.0, cpu_ms) / (wall_ms * cpus))


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
