"""Holding each copy of an experiment to its share of the node (see
:mod:`dlbench.launch.copies.copies`), best first:

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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from dlbench.launch.copies.cgroups import own_cgroup2_dir
from dlbench.launch.copies.copies import Share
from dlbench.measure.sysinfo import cpu_list_text

#: Engines whose containers are not children of the command that starts them.
_DETACHED_ENGINES = ("docker", "podman")

#: Text in a failed copy's message that says an allocation failed. OpenBLAS's own:
#: loading NumPy under a small cap on a machine of many cores (its buffers per thread).
_ALLOCATION_FAILURES = ("MemoryError", "can't allocate memory", "Cannot allocate memory",
                        "out of memory", "bad_alloc", "Memory allocation still failed")

_MIB = 2**20


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
        base = cgroup_dir if cgroup_dir is not None else own_cgroup2_dir()
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
        """Which cap a failed copy hit, when it ran out of its memory share (e.g. ``over
        the copy's memory cap of 200 MiB (exp.parallel_memory_mb; RLIMIT_DATA ...)``);
        else empty. :func:`~dlbench.launch.copies.copies.copies_outcome` puts it in the
        copy's message."""
        cap = f"over the copy's memory cap of {share.memory_mb} MiB (exp.parallel_memory_mb; "
        cgroup = self._cgroups.get(share.number)
        if cgroup is not None:
            with contextlib.suppress(OSError, ValueError):
                events = dict(line.split() for line in
                              (cgroup / "memory.events").read_text().splitlines())
                if int(events.get("oom_kill", 0)) > 0:
                    return cap + "killed by the kernel at its cgroup's memory.max)"
        if any(text in message for text in _ALLOCATION_FAILURES):
            if self.mechanism == "rlimit":
                # RLIMIT_DATA counts what was allocated, resident or not: a copy can hit
                # it with a peak RSS far below the cap, so the RSS is not the figure.
                return cap + "RLIMIT_DATA, which counts memory allocated, resident or not)"
            if self.mechanism == "cgroup":
                return cap + "its cgroup's memory.max)"
            return cap + f"{self.mechanism} --memory)"
        return ""
