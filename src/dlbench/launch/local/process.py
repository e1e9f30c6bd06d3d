"""Start a worker as a local child process, and stop it for good when needed.

The worker runs in a session of its own, so a Ctrl-C at the terminal reaches only the
runner, which then decides what happens to the worker; and a timeout can kill the
worker's whole process group (its data-loader or compile subprocesses too). On Linux
the worker also gets SIGKILL when the runner dies, even by ``kill -9``, so no worker
outlives its runner.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import IO, Protocol

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent ``parent_pid`` dies (Linux; elsewhere
    nothing). Runs in a child after fork; the death signal survives exec."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def start_worker(
    command: list[str], log: IO[bytes], env: Mapping[str, str],
    setup: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``command`` with stdout and stderr appended to ``log``; ``setup`` runs in
    the child between fork and exec (a parallel copy's cores and memory limit)."""
    parent = os.getpid()
    linux = sys.platform.startswith("linux")

    def preexec() -> None:
        die_with_parent(parent)
        if setup is not None:
            setup()

    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(env),
        start_new_session=True,
        preexec_fn=preexec if linux or setup else None,  # safe: the runner starts no threads
    )


class WorkerProcess(Protocol):
    """What the runner needs of a worker process: a ``subprocess.Popen``, or a worker
    forked by the fork server (:class:`~dlbench.launch.forkserver.client.ForkedWorker`)."""

    pid: int

    @property
    def returncode(self) -> int | None:
        """The exit status once it ended (``-SIGNAL`` when killed), else None."""

    def poll(self) -> int | None:
        """The exit status, or None while it runs."""

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the end; ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""


def kill_worker(process: WorkerProcess, grace_seconds: float = 3.0) -> None:
    """Stop the worker and everything it started: SIGTERM to its process group, then
    SIGKILL if it is still there after ``grace_seconds``."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    # Anything left in the group (grandchildren that ignored SIGTERM) goes too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
