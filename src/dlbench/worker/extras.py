"""What the worker measures after the timed batches: the profiling window and the
memory breakdown. Neither runs inside the timed loop, so a profiled run keeps its
timing clean; the record says so (``results.profile.when=after_timed``)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from dlbench.backends.base import Backend, run_steps
from dlbench.measure.profile_summary import cpu_utilization

__all__ = ["measure_memory", "profile_window"]


def profile_window(
    params: Mapping[str, Any], backend: Backend, first_index: int, log_path: str
) -> dict[str, Any]:
    """Run ``exp.profile_start`` untimed steps, then ``exp.profile_batches`` steps inside
    the profiler's window, numbered on from ``first_index``; ``results.profile.*``.
    The profiler's output goes next to the log (``<log>.trace.json.gz`` and the like).

    On the CPU (no ``exp.gpus``), ``results.profile.utilization`` is this process's
    CPU time over the window's wall time x the CPUs it may run on (basis
    ``cpu_time``, :func:`~dlbench.measure.profile_summary.cpu_utilization`), not the
    operators' wall-clock intervals, which count a preempted process as busy; on a
    GPU it is the backend's (device kernels over wall time)."""
    tool = str(params.get("exp.profile", "none"))
    if tool == "none":
        return {}
    index = run_steps(backend, first_index, int(params["exp.profile_start"]))
    count = int(params["exp.profile_batches"])
    backend.start_profile(tool, log_path)
    # Every thread of this process, user and system time: what it really ran.
    cpu_began = time.process_time()
    began = time.perf_counter()
    run_steps(backend, index, count)
    wall_ms = (time.perf_counter() - began) * 1000.0
    cpu_ms = (time.process_time() - cpu_began) * 1000.0
    results = backend.stop_profile(wall_ms)
    cpus = _usable_cpus()
    results.update({"results.profile.tool": tool, "results.profile.when": "after_timed",
                    "results.profile.batches": count, "results.profile.wall_ms": wall_ms,
                    "results.profile.cpu_ms": cpu_ms, "results.profile.cpus": cpus})
    if not params.get("exp.gpus"):
        results["results.profile.utilization"] = cpu_utilization(cpu_ms, wall_ms, cpus)
        results["results.profile.utilization_basis"] = "cpu_time"
    return results


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, as the monitor counts them)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def measure_memory(params: Mapping[str, Any], backend: Backend) -> dict[str, Any]:
    """``results.memory.*`` when ``exp.memory_breakdown`` is on."""
    if not params.get("exp.memory_breakdown", True):
        return {}
    return backend.memory_breakdown()
