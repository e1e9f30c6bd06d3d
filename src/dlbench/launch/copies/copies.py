"""N users per node: copies of one experiment run at the same time, each on its share.

``exp.parallel_jobs=N`` runs N copies of a one-replica experiment together, as Mila's
training benchmarks did to imitate N users sharing a node: copy k gets the k-th GPU
of ``exp.gpus`` (none on the CPU), its own contiguous set of the node's usable cores,
and its share of the memory. What the copies achieve together is the node's
throughput: the experiment's ``results.throughput`` is their sum.

How a copy is held to its share (cgroups, affinity and rlimits, or the container
engine) is :mod:`dlbench.launch.copies.limits`.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.config.run_params import copy_count, gpu_list
from dlbench.launch.copies.cgroups import own_cgroup1_memory_dir, own_cgroup2_dir
from dlbench.measure.combine import COPIES, combine_results, found_batch_outcome
from dlbench.measure.sysinfo import cpu_list_text, split_cores
from dlbench.results.keys.lookup import KEY_PREFIXES
from dlbench.results.values import is_number

_MIB = 2**20


def usable_cores() -> list[int]:
    """The cores this process may run on, in order."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def node_memory_bytes() -> int:
    """This node's memory, or less when the runner's own cgroup is limited to less."""
    total = int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    for path in (own_cgroup2_dir(), own_cgroup1_memory_dir()):
        if path is None:
            continue
        for name in ("memory.max", "memory.limit_in_bytes"):
            with contextlib.suppress(OSError, ValueError):
                total = min(total, int((path / name).read_text().strip()))
    return total


@dataclass(frozen=True)
class Share:
    """What copy ``number`` of ``count`` gets."""

    number: int  # 1 to count
    count: int
    cpus: tuple[int, ...]
    memory_bytes: int
    gpu: str  # "" on the CPU

    @property
    def memory_mb(self) -> int:
        """The memory share in MiB."""
        return self.memory_bytes // _MIB


def plan_shares(
    experiment: Mapping[str, Any],
    cores: Sequence[int] | None = None,
    memory_bytes: int | None = None,
) -> list[Share]:
    """Each copy's share of this node (``cores`` and ``memory_bytes`` default to what
    this process may use)."""
    count = copy_count(experiment)
    core_sets = split_cores(usable_cores() if cores is None else cores, count)
    own = int(experiment.get("exp.parallel_memory_mb", 0) or 0) * _MIB
    memory = own or (node_memory_bytes() if memory_bytes is None else memory_bytes) // count
    gpus = gpu_list(experiment)
    return [Share(k + 1, count, tuple(core_sets[k]), memory, gpus[k] if gpus else "")
            for k in range(count)]


def copy_experiment(
    experiment: Mapping[str, Any], share: Share, limits: str = ""
) -> dict[str, Any]:
    """Copy ``share.number``'s experiment: its own GPU, log file and thread count, and
    its share and what holds it there (``limits``) written down as ``exp.copy*``, so
    that the copy's log and record say what it was given."""
    copy = dict(experiment)
    copy["exp.log_file"] = f"{experiment['exp.log_file']}.copy{share.number}"
    copy["exp.gpus"] = share.gpu
    copy["exp.copy"] = share.number
    copy["exp.copy_cpus"] = cpu_list_text(share.cpus)
    copy["exp.copy_memory_mb"] = share.memory_mb
    copy["exp.copy_limits"] = limits
    info = FRAMEWORKS.get(str(experiment["exp.framework"]))
    # The framework's own thread pool would otherwise size itself to the whole node:
    # some frameworks count the machine's cores, not the ones this process may use.
    threads = info.knob_param("threads") if info is not None else None
    if threads is not None and copy.get(threads) == 0:
        copy[threads] = len(share.cpus)
    return copy


def copy_env(env: Mapping[str, str], share: Share) -> dict[str, str]:
    """The copy's environment: OpenMP's threads, one per core of its share."""
    return {**env, "OMP_NUM_THREADS": str(len(share.cpus))}


def wait_copies(
    processes: Sequence[subprocess.Popen[bytes]], timeout: float | None
) -> tuple[int | None, bool]:
    """Wait until every copy ended, one failed, or ``timeout`` seconds passed.

    Returns the index of the first copy that exited with a non-zero status (None when
    none did) and whether time ran out. Sleeps on the processes' pidfds where Linux
    has them, so a copy that ends wakes the runner at once.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    running = list(range(len(processes)))
    while running:
        for index in list(running):
            code = processes[index].poll()
            if code is None:
                continue
            running.remove(index)
            if code != 0:
                return index, False
        if not running:
            break
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return None, True
        _sleep_until_one_ends([processes[i] for i in running],
                              1.0 if remaining is None else min(remaining, 1.0))
    return None, False


def _sleep_until_one_ends(processes: Sequence[subprocess.Popen[bytes]], seconds: float) -> None:
    fds: list[int] = []
    try:
        for process in processes:
            fds.append(os.pidfd_open(process.pid))
        select.select(fds, [], [], seconds)
    except (AttributeError, OSError):  # no pidfd (not Linux, or a kernel before 5.3)
        time.sleep(min(seconds, 0.05))
    finally:
        for fd in fds:
            os.close(fd)


def combine_copies(
    experiment: Mapping[str, Any], copies: Sequence[Mapping[str, Any]], mechanism: str
) -> dict[str, Any]:
    """One record from the records of the copies that ran ``experiment`` together.

    Every declared key combines by its rule over copies
    (:func:`~dlbench.measure.combine.combine_results`): ``results.throughput`` is the
    node's, the sum of the copies' throughputs, what the N users get together;
    ``results.time`` is the mean of the copies' mean batch times; the spread
    (``time_std``, percentiles) is over all copies' batches, kept in
    ``results.time_data`` in copy order; monitor summaries, energies and memory peaks
    by their own rules. Each copy's figures stay in lists (``results.copy_*``) and its
    log (``results.copy_log_files``).
    """
    first = copies[0]
    # The copies' parameters are the experiment's; every declared key (results.*, sys.*,
    # hw.*) combines by its own rule (dlbench.measure.combine).
    record = {k: v for k, v in first.items() if not k.startswith(KEY_PREFIXES)}
    record.update(experiment)
    devices = len(copies) if gpu_list(experiment) else 1
    record.update(combine_results(copies, COPIES, devices=devices, label="copy"))
    record.update(found_batch_outcome(record))  # exp.replica_batch=auto: the batch found
    record["results.copies"] = len(copies)
    record["results.copy_time"] = [float(c["results.time"]) for c in copies]
    record["results.copy_num_batches"] = [len(c["results.time_data"]) for c in copies]
    record["results.copy_throughput"] = [float(c["results.throughput"]) for c in copies]
    tflops = [c.get("results.tflops") for c in copies]
    if all(is_number(t) for t in tflops):
        record["results.copy_tflops"] = [float(t) for t in tflops]  # type: ignore[arg-type]
    record["results.copy_cpus"] = [c.get("exp.copy_cpus") for c in copies]
    record["results.copy_gpus"] = [c.get("exp.gpus") for c in copies]
    record["results.copy_cpu_affinity"] = [c.get("sys.cpu_affinity") for c in copies]
    record["results.copy_log_files"] = [str(c["exp.log_file"]) for c in copies]
    record["results.copy_isolation"] = mechanism
    record["exp.status"], record["exp.status_msg"] = "ok", ""
    return record


#: The worker's out-of-memory lead: ``out of memory in set-up (peak RSS 39.5 MiB): ``.
_WORKER_OOM = re.compile(r"^out of memory(?P<where>[^(:]*?)(?: \(peak RSS [^)]*\))?: ")


def with_memory_cap(message: str, cap: str) -> str:
    """A failed copy's ``message`` as one line that names the memory ``cap`` it hit
    (:meth:`~dlbench.launch.copies.limits.Limits.out_of_memory`): ``out of memory in
    set-up: over the copy's memory cap of 200 MiB (...): MemoryError (at ...)``. The
    worker's own ``out of memory`` lead is replaced, not repeated, and its peak RSS
    dropped: next to the cap it reads as the amount that hit it, which it need not be."""
    found = _WORKER_OOM.match(message)
    if found is None:  # e.g. killed by the kernel: no lead of the worker's
        return f"out of memory: {cap}: {message}"
    return f"out of memory{found.group('where').rstrip()}: {cap}: {message[found.end():]}"


def copies_outcome(
    experiment: Mapping[str, Any],
    copies: Sequence[Mapping[str, Any]],
    first_failed: int | None,
    memory_notes: Sequence[str],
    mechanism: str,
) -> dict[str, Any]:
    """The experiment's record from its copies' records: combined when every copy
    ended ok, else the first failed copy's status and reason (``copy k of N: ...``,
    with ``memory_notes[k]`` when it ran out of its memory share)."""
    failed = [k for k, c in enumerate(copies) if c.get("exp.status") != "ok"]
    if not failed:
        return combine_copies(experiment, copies, mechanism)
    index = first_failed if first_failed in failed else failed[0]
    copy = copies[index]
    record = {k: v for k, v in copy.items() if not k.startswith("results.")}
    record.update(experiment)
    status, message = str(copy["exp.status"]), str(copy.get("exp.status_msg", ""))
    if status == "failure":  # a timeout or an interrupt is every copy's, not one's
        if memory_notes[index]:
            message = with_memory_cap(message, memory_notes[index])
        message = f"copy {index + 1} of {len(copies)}: {message}"
    record["results.copies"] = len(copies)
    record["results.copy_isolation"] = mechanism
    record["results.copy_log_files"] = [str(c["exp.log_file"]) for c in copies]
    record["exp.status"], record["exp.status_msg"] = status, message
    return record
