"""The resource monitor: a background thread in the worker that samples resource use,
and the summaries of its samples over the timed section.

Every ``interval`` seconds it records the worker's process tree (CPU %, resident
memory), the host (memory in use, CPU busy), each NVIDIA GPU through NVML
(utilisation, memory, power, temperature, SM clock, throttle reasons, processes)
and, where Linux exposes RAPL, the CPU packages' energy. The timing loop marks the
start and end of its timed batches (:meth:`ResourceMonitor.mark`), and summaries are
computed over that window. A mark only wakes the monitor's thread, which takes the
mark's sample itself: every NVML read (an energy counter took 2.5 ms median, 17.6 ms
at worst, on an H100) happens on that thread, never on the worker's, so none delays a
timed batch or the launch of the first one. The mark's sample is therefore taken a
thread wake-up (well under a millisecond) after the mark; the window is the timed
section shifted by that much.

The sources are read elsewhere: :mod:`dlbench.measure.cpu_memory` (the process tree
and the host's CPUs, through psutil), :mod:`dlbench.measure.nvml` (the GPUs) and
:mod:`dlbench.measure.rapl` (CPU energy); this module combines them into rows, one
per sample, and summarises them.

The thread sleeps between samples. A sample costs well under a millisecond of
Python (the process tree is read from ``/proc/<pid>/task/*/children`` rather than by
scanning every process) and NVML calls release the GIL, so the timed loop is
delayed by at most that, once per interval.

CPU figures follow ``top``: ``cpu_percent`` is the tree's use in % of one core
(200 = two cores busy); ``other_cpu_percent`` is what the rest of the machine used
of the CPUs the worker may run on (its affinity), also in % of one core;
``system_cpu_percent`` is the whole machine's busy share of all CPUs (0-100).

Example::

    monitor = ResourceMonitor(0.5)
    monitor.start()
    ...; monitor.mark("timed_start"); ...; monitor.mark("timed_end")
    monitor.stop()
    monitor.series()   # {"results.use.time": [...], "results.use.cpu_percent": [...], ...}
    monitor.summary()  # {"results.use.cpu_percent_mean": ..., "results.use.rss_mb_max": ...}
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import psutil

from dlbench.measure.cpu_memory import ProcessTree, busy_seconds
from dlbench.measure.nvml import GpuSampler, load_nvml, reason_shares
from dlbench.measure.rapl import RAPL_ROOT, RaplEnergy
from dlbench.results.stats import mean

#: Shortest interval whose CPU percentages count towards a maximum: a few 10 ms ticks.
MIN_RATE_SPAN = 0.03

#: Series summarised by mean and max; the others are counters or bit masks.
_NOT_SUMMARISED = ("time", "cpu_energy_j")
_NOT_SUMMARISED_SUFFIXES = ("_throttle", "_energy_j", "_used")

Row = dict[str, Any]


class ResourceMonitor:
    """Samples resource use every ``interval`` seconds in a daemon thread.

    ``nvml`` and ``rapl_root`` are for tests: a stand-in for ``pynvml`` and another
    sysfs root. Whatever is unavailable is skipped with one line in :attr:`notes`.
    """

    def __init__(
        self, interval: float, pid: int | None = None, nvml: Any = None,
        rapl_root: Path | None = None, gpus: bool = True,
    ) -> None:
        self.interval = interval
        self.tree = ProcessTree(os.getpid() if pid is None else pid)
        self.notes: list[str] = []
        self.rows: list[Row] = []
        self.marks: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # Marks waiting for the thread's sample, and the event that wakes it for them.
        # A queue, not a list under self._lock: the thread holds that lock while it
        # samples (NVML included), and a mark must never wait for it.
        self._pending: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        # This module's RAPL_ROOT, read when a monitor is made: tests move it.
        self._rapl_root = rapl_root or RAPL_ROOT
        self._want_gpus, self._nvml = gpus, nvml
        self.gpus: GpuSampler | None = None
        self.rapl: RaplEnergy | None = None
        affinity = getattr(os, "sched_getaffinity", None)
        self.cpus = sorted(affinity(0)) if affinity else list(range(psutil.cpu_count() or 1))
        self._started = self._last = 0.0

    def start(self) -> None:
        """Open the GPU and energy counters, prime the CPU counters, start sampling."""
        if self._want_gpus:
            nvml, why = (self._nvml, None) if self._nvml is not None else load_nvml()
            if nvml is None:
                self.notes.append(f"monitor: GPU monitoring skipped: {why}")
            else:
                try:
                    self.gpus = GpuSampler(nvml)
                except Exception as error:
                    self.notes.append(f"monitor: GPU monitoring skipped: NVML failed ({error})")
                    with contextlib.suppress(Exception):
                        nvml.nvmlShutdown()
        try:
            self.rapl = RaplEnergy(self._rapl_root)
        except (OSError, ValueError) as error:
            reason = ("RAPL counters are not readable (root only on recent kernels)"
                      if isinstance(error, PermissionError) else str(error))
            self.notes.append(f"monitor: CPU energy skipped: {reason}")
        self._busy = busy_seconds()
        self._totals = (0.0, 0.0, 0.0)  # CPU-seconds: the tree, our CPUs, all CPUs
        self.tree.sample()
        self._started = self._last = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="dlbench-monitor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """Sample every ``interval`` seconds, and at once when a mark asks; when
        stopped, take the marks still waiting and end."""
        due = time.monotonic() + self.interval
        while True:
            self._wake.wait(max(0.0, due - time.monotonic()))
            self._wake.clear()
            stopping = self._stop.is_set()
            names = []
            while not self._pending.empty():
                names.append(self._pending.get_nowait())
            # One sample per mark, even for marks that came together (a timed section
            # shorter than a wake-up): the end's sample must come after the start's.
            for name in names:
                self._sample([name])
            if names or (not stopping and time.monotonic() >= due):
                if not names:
                    self._sample()
                due = time.monotonic() + self.interval
            if stopping:
                return

    def _sample(self, names: list[str] | None = None) -> None:
        """Take one sample; it is the sample of each mark in ``names``."""
        with self._lock:
            now = time.monotonic()
            used, rss_mb, pids = self.tree.sample()
            busy = busy_seconds()
            memory = psutil.virtual_memory()
            seconds = max(now - self._last, 1e-9)
            self._last = now
            delta = [b - a for a, b in zip(self._busy, busy, strict=False)]
            self._busy = busy
            ours = sum(delta[c] for c in self.cpus if c < len(delta))
            self._totals = (self._totals[0] + used, self._totals[1] + ours,
                            self._totals[2] + sum(delta))
            # The kernel's counters advance in ticks, and on some VMs late: one
            # interval may show 0% and the next the catch-up. The series are clamped
            # for reading; means come from the cumulative totals (the "_" keys).
            row: Row = {
                "time": now - self._started,
                "cpu_percent": 100.0 * used / seconds,
                "rss_mb": rss_mb,
                "host_memory_used_mb": (memory.total - memory.available) / 2**20,
                "system_cpu_percent": min(100.0, 100.0 * sum(delta) / seconds / len(delta)),
                "other_cpu_percent": min(100.0 * len(self.cpus),
                                         max(0.0, 100.0 * (ours - used) / seconds)),
                "_tree_s": self._totals[0], "_ours_s": self._totals[1],
                "_all_s": self._totals[2],
            }
            if self.rapl is not None:
                try:
                    row["cpu_energy_j"] = self.rapl.joules()
                except (OSError, ValueError):  # a counter that vanished or misread
                    row["cpu_energy_j"] = None
            if self.gpus is not None:
                row.update(self.gpus.sample(pids))
            self.rows.append(row)
            for name in names or ():
                self.marks[name] = len(self.rows) - 1

    def mark(self, name: str) -> None:
        """Have the monitor's thread take a sample now, remembered as ``name``
        (``timed_start``, ``timed_end``); returns at once. Without a running thread
        (not started, or stopped) the sample is taken here."""
        if self._thread is None:
            self._sample([name])
            return
        self._pending.put(name)
        self._wake.set()

    def stop(self) -> None:
        """Stop the thread (after it has taken the marks' samples) and release NVML.
        Idempotent."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.gpus is not None:
            self.gpus.close()

    def series(self) -> dict[str, list[Any]]:
        """Every sample as ``results.use.<name>`` lists (``results.use.time``: seconds
        since the monitor started), plus ``results.use.timed``: the timed section's
        start and end on that clock."""
        with self._lock:
            rows = list(self.rows)
        names: dict[str, None] = {}
        for row in rows:
            names.update(dict.fromkeys(row))
        out = {f"results.use.{n}": [_rounded(r.get(n)) for r in rows]
               for n in names if not n.startswith("_")}
        if "timed_start" in self.marks and "timed_end" in self.marks:
            out["results.use.timed"] = [
                _rounded(rows[self.marks[k]]["time"]) for k in ("timed_start", "timed_end")]
        return out

    def _bounds(self) -> tuple[list[Row], int, int]:
        """Every row, and the indices of the timed section's start and end marks; -1
        and the last row when the marks are missing (the run failed before or during
        the timed batches: the window is then everything)."""
        with self._lock:
            rows = list(self.rows)
        start, end = self.marks.get("timed_start"), self.marks.get("timed_end")
        if start is None or end is None or end <= start:
            return rows, -1, len(rows) - 1
        return rows, start, end

    def window(self) -> tuple[list[Row], list[float]]:
        """The samples of the timed section, after the start mark up to the end mark
        (a sample's CPU use covers the interval before it), with the seconds each
        covers."""
        rows, start, end = self._bounds()
        times = [0.0, *(r["time"] for r in rows)]  # 0.0: when the counters were primed
        spans = [times[i + 1] - times[i] for i in range(start + 1, end + 1)]
        return rows[start + 1:end + 1], spans

    def summary(self) -> dict[str, Any]:
        """``results.use.*`` summaries of the timed section: ``<name>_mean`` and
        ``<name>_max`` of each series, GPU throttle reasons as the share of samples
        each was active in, and energy (J) and average power (W) when known.

        CPU percentages are rates over the interval before each sample, and a mark
        can fall a millisecond after a periodic sample, where the kernel's 10 ms
        counters read 0 or 100%: their means are total CPU time over total time,
        and their max ignores intervals shorter than :data:`MIN_RATE_SPAN`.
        """
        rows, spans = self.window()
        rates = self._rate_means()
        out: dict[str, Any] = {
            "results.use.samples": len(rows),
            "results.use.interval_s": self.interval,
            "results.use.cpus_available": len(self.cpus),
        }
        names: dict[str, None] = {}
        for row in rows:
            names.update(dict.fromkeys(row))
        for name in names:
            pairs = [(r[name], s) for r, s in zip(rows, spans, strict=True)
                     if isinstance(r.get(name), (int, float))]
            values = [v for v, _ in pairs]
            if name.endswith("_used"):
                out[f"results.use.{name}"] = any(r.get(name) for r in rows)
            elif name.endswith("_throttle"):
                out[f"results.use.{name}_reasons"] = reason_shares(values)
            elif not values or name.startswith("_") or name in _NOT_SUMMARISED or (
                    name.endswith(_NOT_SUMMARISED_SUFFIXES)):
                continue
            elif name in rates:
                out[f"results.use.{name}_mean"] = rates[name]
                steady = [v for v, s in pairs if s >= MIN_RATE_SPAN] or values
                out[f"results.use.{name}_max"] = max(steady)
            else:
                out[f"results.use.{name}_mean"] = mean(values)
                out[f"results.use.{name}_max"] = max(values)
        out.update(self._energy())
        return out

    def _rate_means(self) -> dict[str, float]:
        """Mean CPU rates of the window from the cumulative totals: CPU-seconds over
        seconds, whatever the counters did in between."""
        rows, start, end = self._bounds()
        if end < 0:
            return {}
        base = rows[start] if start >= 0 else {"time": 0.0, "_tree_s": 0.0, "_ours_s": 0.0,
                                                "_all_s": 0.0}
        last, seconds = rows[end], rows[end]["time"] - base["time"]
        if seconds <= 0:
            return {}
        tree = last["_tree_s"] - base["_tree_s"]
        return {
            "cpu_percent": 100.0 * tree / seconds,
            "system_cpu_percent": 100.0 * (last["_all_s"] - base["_all_s"]) / seconds
            / max(len(self._busy), 1),
            "other_cpu_percent": 100.0 * max(0.0, last["_ours_s"] - base["_ours_s"] - tree)
            / seconds,
        }

    def _energy(self) -> dict[str, Any]:
        """Energy between the marks: RAPL and NVML counters, else integrated power."""
        rows, start, end = self._bounds()
        if start < 0:
            return {}
        first, last = rows[start], rows[end]
        out: dict[str, Any] = {}
        cpu = _difference(first.get("cpu_energy_j"), last.get("cpu_energy_j"))
        if cpu is not None:
            out["results.use.cpu_energy_j"] = cpu
        gpu_total = None
        for i in range(len(self.gpus.handles) if self.gpus else 0):
            energy = _difference(first.get(f"gpu{i}_energy_j"), last.get(f"gpu{i}_energy_j"))
            if energy is None:  # no energy counter: integrate the power samples
                energy = _integrate(rows[start:end + 1], f"gpu{i}_power_w")
            if energy is not None:
                out[f"results.use.gpu{i}_energy_j"] = energy
                gpu_total = (gpu_total or 0.0) + energy
        if gpu_total is not None:
            out["results.use.gpu_energy_j"] = gpu_total
        if cpu is not None or gpu_total is not None:
            out["results.use.energy_j"] = total = (cpu or 0.0) + (gpu_total or 0.0)
            seconds = last["time"] - first["time"]
            if seconds > 0:
                out["results.use.power_w"] = total / seconds
        return out


def _rounded(value: Any) -> Any:
    # Series go into the log as JSON: four significant decimals are plenty for
    # percentages, MiB and watts, and keep a long run's log small.
    return round(value, 4) if isinstance(value, float) else value


def _difference(first: Any, last: Any) -> float | None:
    if isinstance(first, (int, float)) and isinstance(last, (int, float)):
        return float(last) - float(first)
    return None


def _integrate(rows: list[Row], name: str) -> float | None:
    """Trapezoidal integral of ``name`` over ``time`` (W·s = J); None without data."""
    points = [(r["time"], r[name]) for r in rows if isinstance(r.get(name), (int, float))]
    if len(points) < 2:
        return None
    return math.fsum((t1 - t0) * (v0 + v1) / 2 for (t0, v0), (t1, v1) in pairwise(points))
