"""N users per node: copies of one experiment run at the same time, each on its share.

``exp.parallel_jobs=N`` runs N copies of a one-replica experiment together, as Mila's
training benchmarks did to imitate N users sharing a node: copy k gets the k-th GPU
of ``exp.gpus`` (none on the CPU), its own contiguous set of the node's usable cores,
and its share of the memory. What the copies achieve together is the node's
throughput: the experiment's ``results.throughput`` is their sum.

How a copy is held to its share, best first:

- cgroup v2: a child cgroup per copy with ``cpuset.cpus`` and ``memory.max``, the
  copy moved into it before it runs. Needs a writable cgroup2 file system in which
  the ``cpuset`` and ``memory`` controllers can be enabled below the runner's own
  cgroup (root, or a delegated subtree).
- otherwise the copy's CPU affinity and a memory rlimit, set between fork and exec.
- a copy that is a docker or podman container is held by the engine itself
  (``--cpuset-cpus``, ``--memory``: see :mod:`dlbench.launch.container`): the
  container's processes are not the client's children.

Each copy's log starts with a ``dlbench:`` line that says which of these held it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import select
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.measure.stats import mean, summarize_times
from dlbench.measure.sysinfo import cpu_list_text, split_cores

#: ``exp.parallel_jobs=gpus``: one copy per GPU of ``exp.gpus``.
PER_GPU = "gpus"

#: Engines whose containers are not children of the command that starts them.
_DETACHED_ENGINES = ("docker", "podman")

#: Text in a failed copy's message that says an allocation failed.
_ALLOCATION_FAILURES = ("MemoryError", "can't allocate memory", "Cannot allocate memory",
                        "out of memory", "bad_alloc")

_MIB = 2**20


def copy_count(experiment: Mapping[str, Any]) -> int:
    """How many copies ``exp.parallel_jobs`` asks for (1: the experiment runs alone)."""
    value = experiment.get("exp.parallel_jobs", 1)
    if value == PER_GPU:
        return len(gpu_list(experiment))
    return int(value or 1)


def gpu_list(experiment: Mapping[str, Any]) -> list[str]:
    """The GPUs of ``exp.gpus``, in order."""
    return [g for g in str(experiment.get("exp.gpus", "")).split(",") if g]


def usable_cores() -> list[int]:
    """The cores this process may run on, in order."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def node_memory_bytes() -> int:
    """This node's memory, or less when the runner's own cgroup is limited to less."""
    total = int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    for path in (_own_cgroup2_dir(), _own_cgroup1_memory_dir()):
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


def _own_cgroup_path(controller: str) -> str | None:
    """This process's cgroup in the cgroup v1 hierarchy of ``controller``, or in the
    cgroup v2 hierarchy when ``controller`` is empty."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if controller and controller in controllers.split(","):
            return path
        if not controller and hierarchy == "0" and not controllers:
            return path
    return None


def _mount_point(fstype: str, option: str | None = None) -> Path | None:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = right.split()
        if fields and fields[0] == fstype and (option is None or option in fields[-1].split(",")):
            return Path(left.split()[4])
    return None


def _own_cgroup2_dir() -> Path | None:
    mount, own = _mount_point("cgroup2"), _own_cgroup_path("")
    return None if mount is None or own is None else mount / own.lstrip("/")


def _own_cgroup1_memory_dir() -> Path | None:
    mount, own = _mount_point("cgroup", "memory"), _own_cgroup_path("memory")
    return None if mount is None or own is None else mount / own.lstrip("/")


class Limits:
    """Holds the copies of one experiment to their shares; a context manager that
    removes what it created.

    ``cgroup_dir`` is the cgroup v2 directory to create the copies' cgroups under
    (default: the runner's own cgroup, when cgroup v2 can be used there; a test
    passes a folder of its own).
    """

    def __init__(
        self,
        experiment: Mapping[str, Any],
        shares: Sequence[Share],
        cgroup_dir: Path | None = None,
    ) -> None:
        self.shares = list(shares)
        self.engine = (str(experiment.get("exp.container_engine"))
                       if experiment.get("exp.docker") else "")
        self._cgroups: dict[int, Path] = {}
        self._enabled: list[str] = []
        self._base: Path | None = None
        self._runner_leaf: Path | None = None
        self.why_not_cgroup = ""
        if self.engine in _DETACHED_ENGINES:
            self.mechanism = self.engine
            return
        base = cgroup_dir if cgroup_dir is not None else _own_cgroup2_dir()
        self.why_not_cgroup = (self._open_cgroups(base) if base is not None
                               else "no cgroup2 file system is mounted")
        self.mechanism = "cgroup" if not self.why_not_cgroup else "rlimit"

    def __enter__(self) -> Limits:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    # cgroup v2 ---------------------------------------------------------------

    def _open_cgroups(self, base: Path) -> str:
        """Create a cgroup per copy under ``base``; why not, or empty when done."""
        try:
            available = (base / "cgroup.controllers").read_text().split()
        except OSError as error:
            return f"cannot read {base / 'cgroup.controllers'}: {error.strerror}"
        missing = [c for c in ("cpuset", "memory") if c not in available]
        if missing:
            return (f"cgroup v2 at {base} offers no {' or '.join(missing)} controller "
                    f"(bound to cgroup v1, or not delegated)")
        self._base = base
        problem = self._enable_controllers(base)
        if problem:
            self.close()
            return problem
        try:
            for share in self.shares:
                path = base / f"dlbench-{os.getpid()}-copy{share.number}"
                path.mkdir(exist_ok=True)
                self._cgroups[share.number] = path
                (path / "cpuset.cpus").write_text(cpu_list_text(share.cpus))
                (path / "memory.max").write_text(str(share.memory_bytes))
                # The share is memory, not memory plus swap: over it the copy is
                # stopped, not slowed down by paging.
                with contextlib.suppress(OSError):
                    (path / "memory.swap.max").write_text("0")
        except OSError as error:
            self.close()
            return f"cannot set up a cgroup under {base}: {error.strerror}"
        return ""

    def _enable_controllers(self, base: Path) -> str:
        control = base / "cgroup.subtree_control"
        try:
            enabled = control.read_text().split()
        except OSError as error:
            return f"cannot read {control}: {error.strerror}"
        wanted = [c for c in ("cpuset", "memory") if c not in enabled]
        if not wanted:
            return ""
        text = " ".join(f"+{c}" for c in wanted)
        try:
            control.write_text(text)
        except OSError as error:
            if error.errno != errno.EBUSY:
                return f"cannot enable {' and '.join(wanted)} in {control}: {error.strerror}"
            # cgroup v2 lets a cgroup that holds processes (the runner) give controllers
            # to its children only at the root: move the runner into a leaf of its own.
            try:
                self._runner_leaf = base / f"dlbench-{os.getpid()}-runner"
                self._runner_leaf.mkdir(exist_ok=True)
                (self._runner_leaf / "cgroup.procs").write_text(str(os.getpid()))
                control.write_text(text)
            except OSError as again:
                return (f"cannot enable {' and '.join(wanted)} in {control}: "
                        f"{again.strerror} (other processes share the runner's cgroup)")
        self._enabled = wanted
        return ""

    def close(self) -> None:
        """Remove the cgroups created, and put the runner back where it was."""
        for path in self._cgroups.values():
            with contextlib.suppress(OSError):
                path.rmdir()
        self._cgroups.clear()
        if self._base is not None and self._enabled:
            with contextlib.suppress(OSError):
                (self._base / "cgroup.subtree_control").write_text(
                    " ".join(f"-{c}" for c in self._enabled))
            self._enabled = []
        if self._base is not None and self._runner_leaf is not None:
            with contextlib.suppress(OSError):
                (self._base / "cgroup.procs").write_text(str(os.getpid()))
                self._runner_leaf.rmdir()
            self._runner_leaf = None

    # What each copy gets -------------------------------------------------------

    def setup(self, share: Share) -> Callable[[], None]:
        """What runs in copy ``share``'s process between fork and exec."""
        cpus = set(share.cpus)
        procs = self._cgroups[share.number] / "cgroup.procs" if self._cgroups else None
        data_limit: int | None = None
        if self.mechanism == "rlimit":
            # RLIMIT_DATA, not RLIMIT_AS: since Linux 4.7 it counts the memory a
            # process can write (heap and private anonymous mappings), which is what
            # a share of memory means. RLIMIT_AS counts address space reserved with
            # nothing behind it, and CUDA, JAX and the JIT compilers reserve far more
            # of that than any share, so they would fail before using any memory.
            hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
            data_limit = (share.memory_bytes if hard == resource.RLIM_INFINITY
                          else min(share.memory_bytes, hard))

        def in_child() -> None:
            try:
                if procs is not None:
                    procs.write_text(str(os.getpid()))
                # Docker and podman copies: the client's affinity only keeps the
                # client off the other copies' cores; the container gets its own.
                if hasattr(os, "sched_setaffinity"):
                    os.sched_setaffinity(0, cpus)
                if data_limit is not None:
                    resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))
            except OSError as error:  # the reason goes to the copy's log (our stderr)
                os.write(2, f"dlbench: cannot hold copy {share.number} to its share: "
                            f"{error}\n".encode())
                raise

        return in_child

    def note(self, share: Share) -> str:
        """What holds copy ``share`` to its share (``exp.copy_limits``, one line at the
        top of the copy's log)."""
        if self.mechanism == "cgroup":
            return f"cgroup v2 {self._cgroups[share.number]} (cpuset.cpus, memory.max)"
        if self.mechanism in _DETACHED_ENGINES:
            return f"{self.mechanism} (--cpuset-cpus, --memory of the container)"
        return (f"CPU affinity and RLIMIT_DATA, per process; cgroup v2 not usable: "
                f"{self.why_not_cgroup}")

    def out_of_memory(self, share: Share, message: str) -> str:
        """Why a failed copy failed, when it ran out of its memory share; else empty."""
        cgroup = self._cgroups.get(share.number)
        if cgroup is not None:
            with contextlib.suppress(OSError, ValueError):
                events = dict(line.split() for line in
                              (cgroup / "memory.events").read_text().splitlines())
                if int(events.get("oom_kill", 0)) > 0:
                    return (f"out of memory: the copy may use {share.memory_mb} MiB, "
                            f"exp.parallel_memory_mb, enforced by its cgroup's memory.max")
        if any(text in message for text in _ALLOCATION_FAILURES):
            held = "RLIMIT_DATA" if self.mechanism == "rlimit" else self.mechanism
            return (f"out of memory: the copy may use {share.memory_mb} MiB, "
                    f"exp.parallel_memory_mb, enforced by {held}")
        return ""


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

    ``results.throughput`` is the node's: the sum of the copies' throughputs, what
    the N users get together. ``results.time`` is the mean of the copies' mean batch
    times; the spread (``time_std``, percentiles) is over all copies' batches, kept
    in ``results.time_data`` in copy order. Each copy's figures stay in lists
    (``results.copy_*``) and its log (``results.copy_log_files``).
    """
    first = copies[0]
    record = {k: v for k, v in first.items() if not k.startswith("results.")}
    for own in ("sys.cpu_affinity", "hw.cpu_affinity_count"):  # each copy's, not the node's
        record.pop(own, None)
    record.update(experiment)
    times = [float(c["results.time"]) for c in copies]
    pooled = [float(t) for c in copies for t in c["results.time_data"]]
    record.update(summarize_times(pooled))
    record["results.time"] = mean(times)
    record["results.time_data"] = pooled
    record["results.copies"] = len(copies)
    record["results.copy_time"] = times
    record["results.copy_throughput"] = [float(c["results.throughput"]) for c in copies]
    record["results.throughput"] = sum(record["results.copy_throughput"])
    if "results.throughput_unit" in first:
        record["results.throughput_unit"] = first["results.throughput_unit"]
    tflops = [c.get("results.tflops") for c in copies]
    if all(isinstance(t, (int, float)) for t in tflops):
        record["results.copy_tflops"] = tflops
        record["results.tflops"] = sum(float(t) for t in tflops if t is not None)
    mfu = [c.get("results.mfu") for c in copies]
    if all(isinstance(m, (int, float)) for m in mfu):
        values = [float(m) for m in mfu if m is not None]
        # The node's share of its peak: each GPU copy has a device (and a peak) of its
        # own, so the mean; CPU copies share the one CPU whose peak each was measured
        # against, so the sum.
        record["results.mfu"] = mean(values) if gpu_list(experiment) else sum(values)
    record["results.copy_cpus"] = [c.get("exp.copy_cpus") for c in copies]
    record["results.copy_gpus"] = [c.get("exp.gpus") for c in copies]
    record["results.copy_cpu_affinity"] = [c.get("sys.cpu_affinity") for c in copies]
    record["results.copy_log_files"] = [str(c["exp.log_file"]) for c in copies]
    record["results.copy_isolation"] = mechanism
    record["results.num_batches"] = sum(int(c.get("results.num_batches") or 0) for c in copies)
    record["results.num_warmup_batches"] = sum(
        int(c.get("results.num_warmup_batches") or 0) for c in copies)
    reasons = dict.fromkeys(str(c.get("results.stop_reason")) for c in copies)
    record["results.stop_reason"] = ",".join(reasons)
    starts = [str(c["results.start_time"]) for c in copies if c.get("results.start_time")]
    ends = [str(c["results.end_time"]) for c in copies if c.get("results.end_time")]
    record["results.start_time"] = min(starts) if starts else None
    record["results.end_time"] = max(ends) if ends else None
    unstable = [f"copy {k}: {reason}" for k, c in enumerate(copies, start=1)
                for reason in (c.get("results.unstable_reasons") or [])]
    record["results.stable"] = all(c.get("results.stable") is not False for c in copies)
    record["results.unstable_reasons"] = unstable
    record["exp.status"], record["exp.status_msg"] = "ok", ""
    return record


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
        message = f"copy {index + 1} of {len(copies)}: {message}"
        if memory_notes[index]:
            message += f" ({memory_notes[index]})"
    record["results.copies"] = len(copies)
    record["results.copy_isolation"] = mechanism
    record["results.copy_log_files"] = [str(c["exp.log_file"]) for c in copies]
    record["exp.status"], record["exp.status_msg"] = status, message
    return record
