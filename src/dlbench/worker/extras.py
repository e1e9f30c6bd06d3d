"""What the worker measures after the timed batches: the profiling window and the
memory breakdown. Neither runs inside the timed loop, so a profiled run keeps its
timing clean; the record says so (``results.profile.when=after_timed``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dlbench.backends.base import Backend

__all__ = ["measure_memory", "profile_window"]


def profile_window(
    params: Mapping[str, Any], backend: Backend, first_index: int, log_path: str
) -> dict[str, Any]:
    """Run ``exp.profile_start`` untimed steps, then ``exp.profile_batches`` steps inside
    the profiler's window, numbered on from ``first_index``; ``results.profile.*``.
    The profiler's output goes next to the log (``<log>.trace.json.gz`` and the like)."""
    tool = str(params.get("exp.profile", "none"))
    if tool == "none":
        return {}
    index = first_index
    for _ in range(int(params["exp.profile_start"])):
        backend.step(index)
        index += 1
    backend.synchronize()
    count = int(params["exp.profile_batches"])
    backend.start_profile(tool, log_path)
    began = time.perf_counter()
    for _ in range(count):
        backend.step(index)
        index += 1
    backend.synchronize()
    wall_ms = (time.perf_counter() - began) * 1000.0
    results = backend.stop_profile(wall_ms)
    results.update({"results.profile.tool": tool, "results.profile.when": "after_timed",
                    "results.profile.batches": count, "results.profile.wall_ms": wall_ms})
    return results


def measure_memory(params: Mapping[str, Any], backend: Backend) -> dict[str, Any]:
    """``results.memory.*`` when ``exp.memory_breakdown`` is on."""
    if not params.get("exp.memory_breakdown", True):
        return {}
    return backend.memory_breakdown()
