"""Measuring a device's peaks with PyTorch, for ``dlbench peak``.

Dense matmul throughput per dtype (square ``n × n`` matmuls, ``2n³`` FLOPs each,
timed by the one timing loop, with CUDA events on a GPU; the median batch is the
sustained peak, the best the burst one) and memory
bandwidth (a large device-to-same-device copy), through PyTorch's tensors on the
CPU or a CUDA device. What is measured is stored and looked up by
:mod:`dlbench.measure.peak.peaks`, which imports no framework.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime, timezone
from typing import Any

from dlbench.measure.peak.peaks import DEFAULT_COPY_MIB, DEFAULT_SIZE, datasheet
from dlbench.measure.timers import BatchTimer, EventTimer
from dlbench.measure.timing import AutoStop, run_batches
from dlbench.results.stats import percentile


def _clock_batches(step: Any, sync: Any, seconds: float,
                   timer: BatchTimer | None = None) -> list[float]:
    """Time ``step`` through the timing loop for ``seconds`` (at least 3 batches
    unless one batch alone takes longer) after one untimed batch."""
    stop = AutoStop(min_batches=3, min_seconds=seconds, max_seconds=seconds,
                    target_ci=0.0, max_batches=100_000)
    return run_batches(step, sync, 1, stop, timer=timer).times_ms


def _device_timer(dev: Any, sync: Any) -> BatchTimer | None:
    """CUDA events on a GPU (the host launches ahead, as the experiments' timing does);
    None, the host's clock, on the CPU."""
    if dev.type != "cuda":
        return None
    import torch

    return EventTimer(lambda: torch.cuda.Event(enable_timing=True), sync)


def _torch_device(device: str) -> tuple[Any, Any]:
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return dev, lambda: torch.cuda.synchronize(dev)
    return dev, lambda: None


def compute_threads() -> int:
    """The threads a CPU matmul runs on: PyTorch's intra-op threads, at most the CPUs
    this process may run on."""
    import torch

    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity else os.cpu_count() or 1
    return max(1, min(int(torch.get_num_threads()), cpus))


def measure_matmul(device: str, dtype: str, size: int, seconds: float) -> dict[str, float]:
    """Dense ``size × size`` matmul throughput: ``{"tflops": median, "best": ...,
    "batches": n}``, TFLOP/s = 2·size³ / time. On the CPU also ``cpu_share``: the
    process's CPU time over wall time x :func:`compute_threads` while the matmuls ran,
    near 1 when nothing else wanted the CPUs (what
    :func:`~dlbench.measure.peak.peaks.contention_problem` judges)."""
    import torch

    dev, sync = _torch_device(device)
    torch_dtype = {"tf32": torch.float32, "float32": torch.float32,
                   "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    a = torch.randn(size, size, device=dev, dtype=torch_dtype)
    b = torch.randn(size, size, device=dev, dtype=torch_dtype)
    out = torch.empty(size, size, device=dev, dtype=torch_dtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    cpu_began, wall_began = time.process_time(), time.perf_counter()
    try:
        times = _clock_batches(lambda _i: torch.matmul(a, b, out=out), sync, seconds,
                               _device_timer(dev, sync))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    cpu_s, wall_s = time.process_time() - cpu_began, time.perf_counter() - wall_began
    flop = 2.0 * size**3
    result = {"tflops": flop / (percentile(times, 50) / 1e3) / 1e12,
              "best": flop / (min(times) / 1e3) / 1e12, "batches": float(len(times))}
    if dev.type == "cpu" and wall_s > 0:
        result["cpu_share"] = cpu_s / (wall_s * compute_threads())
    return result


def measure_copy(device: str, mebibytes: int, seconds: float) -> dict[str, float]:
    """Memory bandwidth of a ``mebibytes`` copy: ``{"gbps": median, "best": ...}``,
    GB/s = 2 · bytes (read and written) / time / 1e9."""
    import torch

    dev, sync = _torch_device(device)
    source = torch.ones(mebibytes * 2**20, dtype=torch.uint8, device=dev)  # pages touched
    target = torch.zeros_like(source)
    times = _clock_batches(lambda _i: target.copy_(source), sync, seconds,
                           _device_timer(dev, sync))
    moved = 2.0 * source.numel()
    return {"gbps": moved / (percentile(times, 50) / 1e3) / 1e9,
            "best": moved / (min(times) / 1e3) / 1e9, "batches": float(len(times))}


def device_name(device: str) -> str:
    """What experiments call ``device``: the CUDA device name, or the CPU model."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return str(torch.cuda.get_device_name(dev))
    from dlbench.measure.sysinfo import host_info

    return str(host_info(gpus=False)["hw.cpu_model"])


def measure_device(
    device: str, dtypes: list[str], seconds: float, size: int | None = None,
    copy_mib: int | None = None,
) -> dict[str, Any]:
    """Measure one device's matmul peaks (``seconds`` per dtype) and copy bandwidth;
    returns the entry :func:`save_peak` stores."""
    import torch

    kind = torch.device(device).type
    size = size or DEFAULT_SIZE.get(kind, 2048)
    copy_mib = copy_mib or DEFAULT_COPY_MIB.get(kind, 256)
    name = device_name(device)
    tflops, best, shares = {}, {}, {}
    for dtype in dtypes:
        result = measure_matmul(device, dtype, size, seconds)
        tflops[dtype], best[dtype] = result["tflops"], result["best"]
        if "cpu_share" in result:
            shares[dtype] = result["cpu_share"]
    copy = measure_copy(device, copy_mib, seconds)
    entry: dict[str, Any] = {
        "device": name,
        "device_type": kind,
        "measured": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "torch": str(torch.__version__),
        "matmul_size": size,
        "tflops": tflops,
        "tflops_best": best,
        "copy_mib": copy_mib,
        "memory_gbps": copy["gbps"],
        "memory_gbps_best": copy["best"],
    }
    if shares:
        entry["threads"] = compute_threads()
        entry["cpu_share"] = shares
    sheet = datasheet(name)
    if sheet is not None:
        entry["datasheet"] = {"label": sheet.label, "tflops": sheet.tflops,
                              "memory_gbps": sheet.memory_gbps}
    return entry
