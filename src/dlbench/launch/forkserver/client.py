"""The local runner's fork server: the framework imported once per sweep, not once per
experiment.

A one-batch PyTorch experiment spends most of its worker's life importing PyTorch
(and ``torch._dynamo``, which an optimizer's first step imports). With
``exp.fork_server=auto`` the runner starts one long-lived process,
:mod:`dlbench.launch.forkserver.server`, that imports the worker's modules once, and
asks it, per experiment, to fork a child that becomes the worker. The child is as
isolated as a plain worker: a session of its own, its output appended to the
experiment's log, the experiment's environment, SIGKILL when its parent dies (the
server, which dies with the runner), killed by the runner's timeout through its
process group as before. Parent and worker still meet only through the experiment's
input file and its log.

Used only where forking is safe and gives the same worker (:func:`unsuitable`): the
local launcher, a one-replica experiment of a framework known to survive a fork
(:data:`FORK_SAFE_MODULES`), no container, no parallel copies, no Nsight tool wrapping
the worker, no ``exp.repeat`` (whose processes are meant to be fresh draws of memory
layout and allocator state, which forks of one server are not), and the same
environment as the server's (a different one starts a new server).

GPUs: CUDA cannot survive a fork of a process that initialised it, but the server
never does (it runs no framework operation, and checks before each fork that CUDA is
not initialised and, for a GPU experiment, that the CUDA driver is not initialised
either),
so a child may initialise CUDA itself, as a fresh worker does. Frameworks whose child
may do so are :data:`GPU_FORK_SAFE_MODULES` (PyTorch, which starts CUDA lazily); the
others run GPU experiments, and CPU experiments on a machine whose GPU they could see,
in plain workers. The request tells the server whether the child will use a GPU.

A server that cannot start, refuses, or dies makes the rest of the sweep run plain
workers, with one warning; an experiment whose server died under it is run again in a
plain worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from dlbench.config.devices import cuda_device_visible
from dlbench.config.run_params import copy_count, repeat_count
from dlbench.launch.command import note_worker_env, uses_torchrun, worker_argv, worker_env
from dlbench.launch.local.process import WorkerProcess, die_with_parent, start_worker

__all__ = ["FORK_SAFE_MODULES", "GPU_FORK_SAFE_MODULES", "ForkServer", "ForkServerError",
           "ForkedWorker", "Forks", "unsuitable", "uses_gpu"]

#: Backends whose framework survives a fork of a process that imported it (and ran
#: nothing): PyTorch's thread pools and CUDA start lazily, on first use.
FORK_SAFE_MODULES = frozenset({"dlbench.backends.pytorch"})
#: Of those, the backends whose forked child may initialise CUDA itself: importing
#: PyTorch does not initialise CUDA, so the server's children start it as a fresh
#: process would. JAX starts its GPU client, and TensorFlow its devices, in ways not
#: measured under a fork yet: their GPU experiments run plain workers.
GPU_FORK_SAFE_MODULES = frozenset({"dlbench.backends.pytorch"})
#: The worker's own module, imported by the server beside the backend.
WORKER_MODULE = "dlbench.worker.experiment"
#: Seconds a new server may take to import its modules before the runner gives up on it.
READY_SECONDS = 300.0


class ForkServerError(Exception):
    """The fork server could not start, refused a request, or died."""


def uses_gpu(experiment: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    """Whether ``experiment``'s worker uses a GPU or could see one (and a framework
    could start CUDA on it): what the server must check before it forks it."""
    return bool(str(experiment.get("exp.gpus", ""))) or cuda_device_visible(env)


def unsuitable(experiment: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Why ``experiment`` runs in a plain worker rather than a forked one, or ``""``
    when the fork server may start it."""
    if str(experiment.get("exp.fork_server", "auto")) != "auto":
        return "exp.fork_server=never"
    if not sys.platform.startswith("linux"):
        return "not Linux"
    module = str(experiment.get("exp.framework_module", ""))
    if module not in FORK_SAFE_MODULES:
        return "framework not known to survive a fork"
    if uses_gpu(experiment, env) and module not in GPU_FORK_SAFE_MODULES:
        return "a GPU is used or visible, and this framework's CUDA is not known to start " \
               "in a forked child"
    if experiment.get("exp.docker"):
        return "in a container"
    if uses_torchrun(experiment) or copy_count(experiment) > 1:
        return "several processes"
    if repeat_count(experiment) > 1:
        # Repeats are there to draw a fresh process each (memory layout, allocator
        # state); children of one server would all start from the server's.
        return "exp.repeat > 1"
    if str(experiment.get("exp.profile", "none")) in ("nsys", "ncu"):
        return "under an Nsight tool"
    return ""


class ForkServer:
    """One running fork server: started with ``env`` (the workers' environment, which
    the framework reads at import) by ``python``, importing ``modules``."""

    def __init__(self, python: str, env: Mapping[str, str], modules: list[str]) -> None:
        self.key = (python, tuple(sorted(env.items())), tuple(modules))
        ours, theirs = socket.socketpair()
        self._sock = ours
        self._buffer = b""
        self.closed = False
        parent = os.getpid()
        try:
            self.process = subprocess.Popen(
                [python, "-m", "dlbench.launch.forkserver.server", str(theirs.fileno()), *modules],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=dict(env), pass_fds=(theirs.fileno(),), start_new_session=True,
                # Safe: the runner starts no threads.
                preexec_fn=lambda: die_with_parent(parent))
        finally:
            theirs.close()
        try:
            message = self.receive(READY_SECONDS)
        except BaseException:  # a Ctrl-C while it imports: no server left behind
            self.close()
            raise
        if not message.get("ready"):
            self.close()
            raise ForkServerError(str(message.get("error") or "did not start in time"))

    def receive(self, timeout: float | None) -> dict[str, Any]:
        """The server's next message; ``{}`` when none came within ``timeout`` seconds.
        Raises :class:`ForkServerError` when the server is gone."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not select.select([self._sock], [], [], remaining)[0]:
                return {}
            data = self._sock.recv(65536)
            if not data:
                self.closed = True
                raise ForkServerError("the fork server exited")
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def fork(self, exp_json: Path, log_path: Path, env: Mapping[str, str],
             gpu: bool = False) -> ForkedWorker:
        """A worker for ``exp_json``, forked by the server, writing to ``log_path``;
        ``gpu``: it will use a GPU (the server then also checks that the CUDA driver is
        not initialised in itself)."""
        request = {"argv": [str(exp_json)], "log": str(log_path),
                   "env": dict(env), "cwd": os.getcwd(), "gpu": gpu}
        try:
            self._sock.sendall((json.dumps(request) + "\n").encode())
        except OSError as error:
            self.closed = True
            raise ForkServerError(f"the fork server is gone ({error})") from error
        answer = self.receive(READY_SECONDS)
        if "pid" not in answer:
            raise ForkServerError(str(answer.get("error", "no answer from the fork server")))
        return ForkedWorker(self, int(answer["pid"]))

    def close(self) -> None:
        """Stop the server: it exits when its socket closes; killed if it does not."""
        self.closed = True
        self._sock.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class ForkedWorker:
    """A worker forked by a :class:`ForkServer`, used like a ``subprocess.Popen``: its
    ``pid`` leads its own process group, and its exit status comes from the server.
    ``lost``: the server died first (the worker died with it, SIGKILL)."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.returncode: int | None = None
        self.lost = False

    def _take(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            try:
                message = self.server.receive(timeout)
            except ForkServerError:
                self.lost = True
                self.returncode = -signal.SIGKILL
            else:
                if "exit" in message:
                    self.returncode = int(message["exit"])
        return self.returncode

    def poll(self) -> int | None:
        """The exit status, or None while the worker runs."""
        return self._take(0.0)

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the worker to end (``subprocess.TimeoutExpired`` after ``timeout``
        seconds); wakes as soon as the server reports it."""
        code = self._take(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout or 0.0)
        return code


class Forks:
    """The runner's fork server, started on the first experiment that may use it and
    replaced when the workers' environment changes; after a failure, none for the
    rest of the runner's life (``warn`` says so once)."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self.server: ForkServer | None = None
        self.broken = False

    def start(self, experiment: Mapping[str, Any], exp_json: Path, log_path: Path,
              env: Mapping[str, str], python: str | None) -> ForkedWorker | None:
        """The forked worker of ``experiment``, or None where a plain one must run."""
        if self.broken or unsuitable(experiment, env):
            return None
        modules = [WORKER_MODULE, str(experiment["exp.framework_module"])]
        key = (python or sys.executable, tuple(sorted(env.items())), tuple(modules))
        try:
            if self.server is not None and (self.server.key != key or self.server.closed):
                self.close()
            if self.server is None:
                self.server = ForkServer(key[0], env, modules)
            return self.server.fork(exp_json, log_path, env, uses_gpu(experiment, env))
        except (ForkServerError, OSError, ValueError) as error:
            self.fail(str(error))
            return None

    def start_worker(self, experiment: Mapping[str, Any], exp_json: Path, log: IO[bytes],
                     python: str | None) -> WorkerProcess:
        """Start the worker of one process of ``experiment`` with its output appended to
        ``log`` (``exp.log_file``): forked where it suits, else ``python -m
        dlbench.worker``."""
        env = worker_env(experiment)
        note_worker_env(log, env)
        forked = self.start(experiment, exp_json, Path(log.name), env, python)
        if forked is not None:
            return forked
        return start_worker(worker_argv(experiment, exp_json, python), log, env)

    def fail(self, why: str) -> None:
        """Give up on the fork server: plain workers from now on."""
        if not self.broken:
            self.warn(f"dlbench: fork server: {why}; running plain workers from here "
                      "(exp.fork_server=never does so from the start)")
        self.broken = True
        self.close()

    def close(self) -> None:
        """Stop the server, if one runs."""
        if self.server is not None:
            server, self.server = self.server, None
            with contextlib.suppress(OSError):
                server.close()
