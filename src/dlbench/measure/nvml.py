"""NVIDIA GPUs through NVML (the ``nvidia-ml-py`` package): opening it, and sampling
every GPU for the resource monitor.

Machines without an NVIDIA driver are normal: :func:`load_nvml` then returns the
reason instead of raising, and the caller skips its GPU part with one note. A metric
a GPU does not support reads None and is not asked for again.

Example::

    nvml, why = load_nvml()
    if nvml is not None:
        gpus = GpuSampler(nvml)
        gpus.sample(ours={os.getpid()})  # {"gpu0_util_percent": 97, ...}
        gpus.close()
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]

#: NVML clock event ("throttle") reason bits, from nvml.h.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def load_nvml() -> tuple[Any, str | None]:
    """``(pynvml, None)`` with NVML initialised, or ``(None, why not)``.

    The caller owns one ``nvmlShutdown``. Any failure (no package, no driver, no
    GPU) is a reason, never an exception: machines without NVIDIA GPUs are normal.
    """
    try:
        nvml: Any = importlib.import_module("pynvml")
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        nvml.nvmlInit()
    except Exception as error:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        return None, f"NVML unavailable ({error})"
    return nvml, None


def throttle_names(mask: int) -> list[str]:
    """The names of the reason bits set in an NVML clock event mask."""
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


class GpuSampler:
    """Per-GPU samples through NVML; a metric a GPU does not support reads None."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        count = nvml.nvmlDeviceGetCount()
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self.unsupported: set[tuple[int, str]] = set()
        self.energy_base: dict[int, float] = {}
        # Renamed in NVML 12: "clocks event reasons" was "clocks throttle reasons".
        self.reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or (
            nvml.nvmlDeviceGetCurrentClocksThrottleReasons)

    def _read(self, index: int, function: str, *args: Any) -> Any:
        """``nvml.<function>(handle, *args)``, or None where the GPU lacks it."""
        if (index, function) in self.unsupported:
            return None
        call = self.reasons if function == "reasons" else getattr(self.nvml, function)
        try:
            return call(self.handles[index], *args)
        except Exception as error:
            # Not supported by this GPU or driver: never ask again. Anything else (a
            # timeout, a GPU that fell off the bus) costs only this sample's value.
            if type(error).__name__ in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
                self.unsupported.add((index, function))
            return None

    def sample(self, ours: set[int]) -> Row:
        """One sample of every GPU; ``ours`` are the worker's pids."""
        row: Row = {}
        pids: list[set[int]] = []
        for i in range(len(self.handles)):
            util = self._read(i, "nvmlDeviceGetUtilizationRates")
            memory = self._read(i, "nvmlDeviceGetMemoryInfo")
            power = self._read(i, "nvmlDeviceGetPowerUsage")  # mW
            energy = self._read(i, "nvmlDeviceGetTotalEnergyConsumption")  # mJ since load
            row[f"gpu{i}_util_percent"] = None if util is None else util.gpu
            row[f"gpu{i}_memory_used_mb"] = None if memory is None else memory.used / 2**20
            row[f"gpu{i}_power_w"] = None if power is None else power / 1000.0
            # Sensor 0 is NVML_TEMPERATURE_GPU; clock 1 is NVML_CLOCK_SM.
            row[f"gpu{i}_temperature_c"] = self._read(i, "nvmlDeviceGetTemperature", 0)
            row[f"gpu{i}_sm_clock_mhz"] = self._read(i, "nvmlDeviceGetClockInfo", 1)
            row[f"gpu{i}_throttle"] = self._read(i, "reasons")
            if energy is not None:
                base = self.energy_base.setdefault(i, energy / 1000.0)
                row[f"gpu{i}_energy_j"] = energy / 1000.0 - base
            processes = self._read(i, "nvmlDeviceGetComputeRunningProcesses")
            pids.append({p.pid for p in processes or ()})
        # In a container NVML reports the host's pids, so none of ours match: then one
        # process on each busy GPU is taken to be ours.
        matched = any(p & ours for p in pids)
        for i, on_gpu in enumerate(pids):
            if matched:
                row[f"gpu{i}_used"] = bool(on_gpu & ours)
                row[f"gpu{i}_other_processes"] = len(on_gpu - ours)
            else:
                row[f"gpu{i}_used"] = bool(on_gpu)
                row[f"gpu{i}_other_processes"] = max(0, len(on_gpu) - 1)
        return row

    def close(self) -> None:
        """Shut NVML down (once, however often this is called)."""
        if self.nvml is not None:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()
        self.nvml = None  # NVML counts its inits: shut down exactly once


def reason_shares(masks: Iterable[int]) -> dict[str, float]:
    """Each throttle reason seen, with the share of samples it was active in."""
    masks = list(masks)
    counts: dict[str, int] = {}
    for mask in masks:
        for name in throttle_names(int(mask)):
            counts[name] = counts.get(name, 0) + 1
    return {name: count / len(masks) for name, count in counts.items()}
