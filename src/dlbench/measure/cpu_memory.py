"""CPU and memory counters that the resource monitor samples, read through psutil.

:func:`busy_seconds` is each logical CPU's busy time since boot (the host's CPU use
over an interval is the difference of two readings); :class:`ProcessTree` is the CPU
time and resident memory of a process and all its descendants (the worker and
whatever it starts: data-loading processes, compilers), found by :func:`tree_pids`.

Example::

    tree = ProcessTree(os.getpid())
    tree.sample()                       # primes the CPU counters
    cpu_seconds, rss_mb, pids = tree.sample()
"""

from __future__ import annotations

from pathlib import Path

import psutil


def busy_seconds() -> list[float]:
    """Seconds each logical CPU has been busy since boot: neither idle nor waiting
    for I/O (psutil's rule; Linux counts guest time inside user time too)."""
    busy = []
    for times in psutil.cpu_times(percpu=True):
        total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
        busy.append(total - times.idle - getattr(times, "iowait", 0.0))
    return busy


def tree_pids(pid: int) -> list[int]:
    """``pid`` and all its descendants.

    Reads ``/proc/<pid>/task/<tid>/children``, which costs a few reads of our own
    tree, instead of scanning every process on the machine; falls back to psutil
    where the kernel lacks that file.
    """
    found = [pid]
    index = 0
    while index < len(found):
        try:
            tasks = list(Path(f"/proc/{found[index]}/task").iterdir())
        except OSError:
            if index == 0:  # no /proc (or we are gone): ask psutil
                return _psutil_tree(pid)
            tasks = []  # a child that exited while we read: skip it
        for task in tasks:
            try:
                found.extend(int(c) for c in (task / "children").read_text().split())
            except FileNotFoundError:
                if index == 0 and task.name == str(pid):  # kernel without the file
                    return _psutil_tree(pid)
            except (OSError, ValueError):
                continue
        index += 1
    return found


def _psutil_tree(pid: int) -> list[int]:
    try:
        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return [pid]


class ProcessTree:
    """CPU time and resident memory of a process and its descendants."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.processes: dict[int, psutil.Process] = {}
        self.cpu_seconds: dict[int, float] = {}

    def sample(self) -> tuple[float, float, set[int]]:
        """CPU seconds used since the previous sample, RSS in MiB, and the pids."""
        used = rss = 0.0
        pids = set(tree_pids(self.pid))
        seen: dict[int, float] = {}
        for pid in pids:
            try:
                process = self.processes.get(pid) or psutil.Process(pid)
                with process.oneshot():
                    times = process.cpu_times()
                    memory = process.memory_info()
            except psutil.Error:  # exited between listing and reading
                continue
            self.processes[pid] = process
            seen[pid] = times.user + times.system
            # A process first seen now most likely started since the last sample.
            used += seen[pid] - self.cpu_seconds.get(pid, 0.0)
            rss += memory.rss
        self.cpu_seconds = seen
        self.processes = {pid: p for pid, p in self.processes.items() if pid in seen}
        return used, rss / 2**20, pids
