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
from collections.abc import Mapping
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    # Runs in the child between fork and exec. The death signal survives exec.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def worker_command(exp_json: Path, python: str | None = None) -> list[str]:
    """The argument list that runs the worker on ``exp_json``."""
    return [python or sys.executable, "-m", "dlbench.worker", str(exp_json)]


def worker_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: the parent's, unbuffered, so output lines reach the
    log in the order they were written."""
    env = dict(os.environ if base is None else base)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_worker(
    command: list[str], log: IO[bytes], env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """Start ``command`` with stdout and stderr appended to ``log``."""
    parent = os.getpid()
    preexec = (lambda: _die_with_parent(parent)) if sys.platform.startswith("linux") else None
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(env),
        start_new_session=True,
        preexec_fn=preexec,  # safe here: the runner starts no threads
    )


def kill_worker(process: subprocess.Popen[bytes], grace_seconds: float = 3.0) -> None:
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
