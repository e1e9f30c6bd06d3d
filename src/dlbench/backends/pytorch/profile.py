"""The profiling window of the PyTorch backend.

``exp.profile=torch``: ``torch.profiler`` with CPU activities (and CUDA on a GPU),
shapes and memory recorded, exported as a Chrome/Perfetto trace (``.trace.json.gz``,
which chrome://tracing and ui.perfetto.dev open); the record gets the top operators
by self time and, on a GPU, the compute utilisation
(:mod:`dlbench.measure.profile_summary`; on the CPU the worker measures it).

``exp.profile=nsys|ncu``: the worker already runs under the tool
(:mod:`dlbench.launch.command`); the window is ``cudaProfilerStart``/``Stop``, which
``nsys --capture-range=cudaProfilerApi`` and ``ncu --profile-from-start off`` obey,
inside an NVTX range named ``dlbench.profile``. Untested on hardware here.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity

from dlbench.errors import WorkerError
from dlbench.measure.profile_summary import OperatorTime, busy_ms, top_operators

__all__ = ["Window"]


def _self_device_us(average: Any) -> float:
    # Renamed from self_cuda_time_total in PyTorch 2.4.
    value = getattr(average, "self_device_time_total", None)
    if value is None:
        value = getattr(average, "self_cuda_time_total", 0.0)
    return float(value or 0.0)


class Window:
    """One profiling window: :meth:`start`, the steps, :meth:`stop`."""

    def __init__(self, tool: str, device: torch.device, trace_path: str, top: int) -> None:
        if tool not in ("torch", "nsys", "ncu"):
            raise WorkerError(f"exp.profile={tool} is not supported by the PyTorch backend; "
                              f"supported: torch, nsys, ncu")
        if tool != "torch" and device.type != "cuda":
            raise WorkerError(f"exp.profile={tool} needs a CUDA device (exp.gpus)")
        self.tool = tool
        self.device = device
        self.trace_path = trace_path
        self.top = top
        self.profiler: Any = None

    def start(self) -> None:
        """Open the window."""
        if self.tool != "torch":
            torch.cuda.nvtx.range_push("dlbench.profile")
            torch.cuda.profiler.start()
            return
        activities = [ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        self.profiler = torch.profiler.profile(
            activities=activities, record_shapes=True, profile_memory=True)
        self.profiler.start()

    def stop(self, wall_ms: float) -> dict[str, Any]:
        """Close the window (whose steps took ``wall_ms``) and summarise it."""
        if self.tool != "torch":
            torch.cuda.profiler.stop()
            torch.cuda.nvtx.range_pop()
            suffix = ".nsys-rep" if self.tool == "nsys" else ".ncu.csv"
            return {"results.profile.trace": self.trace_path + suffix}
        self.profiler.stop()
        path = self.trace_path + ".trace.json.gz"
        self.profiler.export_chrome_trace(path)
        on_device = self.device.type == "cuda"
        operators = [
            OperatorTime(str(a.key), int(a.count), float(a.self_cpu_time_total),
                         _self_device_us(a))
            for a in self.profiler.key_averages()
        ]
        wanted = DeviceType.CUDA if on_device else DeviceType.CPU
        intervals = [(e.time_range.start, e.time_range.end) for e in self.profiler.events()
                     if e.device_type == wanted]
        busy = busy_ms(intervals)
        results: dict[str, Any] = {
            "results.profile.trace": path,
            "results.profile.top_ops": top_operators(operators, wall_ms, self.top, on_device),
            "results.profile.busy_ms": busy,
        }
        if on_device:  # on the CPU the worker measures it from CPU time (worker/extras.py)
            results["results.profile.utilization"] = busy / wall_ms if wall_ms > 0 else None
            results["results.profile.utilization_basis"] = "device_kernels"
        return results
