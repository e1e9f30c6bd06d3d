"""The fork server: ``python -m dlbench.launch.forkserver.server FD MODULE...``.

A long-lived process that the local runner starts (:mod:`dlbench.launch.forkserver.client`).
It imports the worker's modules once (``MODULE...``: ``dlbench.worker.experiment``
and the experiment's backend, named as strings like ``launch/command.py`` names the
worker, so that nothing here is imported by the parent; plus whatever the backend
lists in its ``FORK_PRELOAD``), then, for each request on the socket ``FD``, forks a
child that becomes the worker as ``python -m dlbench.worker EXP.json`` would (it calls
the worker's entry function, :data:`WORKER_ENTRY`, telling it that it was forked):
a session of its own, SIGKILL when the server dies (which dies with the runner),
stdin from ``/dev/null``, stdout and stderr appended to the experiment's log, the
experiment's environment and working directory applied before the worker reads
anything, fresh random seeds, and its exit status reported back.

The server itself stays single-threaded in Python and never runs a framework
operation, so no thread pool and no GPU context exist when it forks: before each
fork it checks that no Python thread was started and, when PyTorch is loaded, that
CUDA is not initialised; before forking a worker that will use a GPU, also that the
CUDA driver (``libcuda``) is not initialised in the server (a device query such as
``torch.cuda.is_available()`` initialises the driver without PyTorch counting CUDA as
initialised, and a child of such a process cannot start CUDA). The driver may be
loaded, as importing PyTorch's CUDA build loads it: the driver is asked, without
initialising it, whether ``cuInit`` was called. Otherwise it refuses
and the runner starts a plain worker. The server asks PyTorch for NVML's device count
(``PYTORCH_NVML_BASED_CUDA_CHECK=1``, which does not load the driver) should an import
query the devices; each child gets the experiment's own environment back.

Messages are JSON lines. Request: ``{"argv": [...], "log": PATH, "env": {...},
"cwd": DIR, "gpu": BOOL}``; answers: ``{"pid": N}`` (or ``{"error": TEXT}``), then ``{"exit":
CODE}`` when the child ended (``-SIGNAL`` when a signal killed it, as
``subprocess.Popen.returncode``). The first message, once the imports are done, is
``{"ready": true}`` or ``{"error": TEXT}``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import importlib
import io
import json
import os
import random
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from dlbench.launch.local.process import die_with_parent


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall((json.dumps(message) + "\n").encode())


#: The module whose ``main(argv, start=...)`` a forked child calls: the worker's, named as
#: a string (as ``launch/command.py`` names it) so that the parent imports nothing of it.
#: The call, not the environment, tells the worker it was forked (``sys.worker_start``):
#: an environment variable could come from the user's environment.
WORKER_ENTRY = "dlbench.worker.experiment"

#: The CUDA driver's library, as it appears among a process's mappings once loaded.
CUDA_DRIVER = "libcuda.so"
#: What the driver answers to any call but ``cuInit`` before ``cuInit`` was called.
CUDA_ERROR_NOT_INITIALIZED = 3

#: Asks the loaded driver library at a path for its current context: the driver's
#: answer code. Replaced in tests.
DriverProbe = Callable[[str], int]


def cuda_driver_path(maps: str = "/proc/self/maps") -> str:
    """The path of the CUDA driver library mapped into this process (``maps``: the
    process's memory map), or ``""`` when it is not loaded or the map cannot be read."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if CUDA_DRIVER in line:
                    return line.split(maxsplit=5)[-1].strip()
    except OSError:
        pass
    return ""


def _current_context(path: str) -> int:
    # RTLD_NOLOAD: only a library already loaded is opened, nothing new is loaded.
    # cuCtxGetCurrent never initialises the driver: before cuInit it answers
    # CUDA_ERROR_NOT_INITIALIZED, after it 0 (success, with or without a context).
    driver = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
    context = ctypes.c_void_p()
    return int(driver.cuCtxGetCurrent(ctypes.byref(context)))


def cuda_driver_initialised(maps: str = "/proc/self/maps",
                            probe: DriverProbe = _current_context) -> bool:
    """Whether the CUDA driver is loaded in this process and initialised (``cuInit``
    was called, e.g. by a device query): a forked child of such a process cannot
    start CUDA. Merely loaded is harmless (importing PyTorch 2.11's CUDA build maps
    the library without calling it). A driver that cannot be asked counts as
    initialised."""
    path = cuda_driver_path(maps)
    if not path:
        return False
    try:
        return probe(path) != CUDA_ERROR_NOT_INITIALIZED
    except (OSError, AttributeError):
        return True


def _unsafe_to_fork(threads_at_start: int, gpu: bool = False,
                    maps: str = "/proc/self/maps",
                    probe: DriverProbe = _current_context) -> str:
    """Why forking now would not give a clean worker, or ``""``; ``gpu``: the worker
    will use a GPU, so the CUDA driver must not be initialised here either."""
    if threading.active_count() > 1:
        return f"{threading.active_count()} Python threads are running"
    if os.path.isdir("/proc/self/task"):
        native = len(os.listdir("/proc/self/task"))
        if native > threads_at_start:  # e.g. an intra-op pool some import started
            return f"{native} threads (more than the {threads_at_start} after the imports)"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_initialized():
        return "CUDA is initialised in the fork server"
    if gpu and cuda_driver_initialised(maps, probe):
        return ("the CUDA driver is initialised in the fork server: a forked worker could "
                "not start CUDA")
    return ""


def _child(request: dict[str, Any], sock: socket.socket, ready_w: int) -> None:
    """Become the worker; never returns."""
    code = 1
    try:
        os.close(sock.fileno())  # the server's end: only the server answers on it
        os.setsid()
        die_with_parent(int(request["server"]))
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.write(ready_w, b"1")  # the runner may signal the process group from now on
        os.close(ready_w)
        # PYTHONUNBUFFERED=1, as the plain worker runs: text reaches the log as written.
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True,
                                      errors="backslashreplace")
        # A fresh interpreter draws new seeds; children of one server would share them.
        random.seed()
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed()
        worker = importlib.import_module(WORKER_ENTRY)
        sys.argv = [str(worker.__file__), *request["argv"]]  # as ``python -m`` sets it
        try:
            code = int(worker.main(list(request["argv"]), start="forked"))
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        atexit._run_exitfuncs()  # what a normal interpreter exit would run
    except BaseException:  # anything the worker did not handle ends it as failed
        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _serve_one(request: dict[str, Any], sock: socket.socket, threads: int) -> None:
    """Fork the worker of ``request``, report its pid, wait for it, report its status."""
    why = _unsafe_to_fork(threads, bool(request.get("gpu")))
    if why:
        _send(sock, {"error": why})
        return
    ready_r, ready_w = os.pipe()
    request["server"] = os.getpid()
    # The imports' objects out of the collector's reach: a collection in the child
    # would otherwise write to every page holding one, copying the server's whole heap
    # (copy-on-write) in the middle of the child's batches.
    gc.freeze()
    try:
        pid = os.fork()
    except OSError as error:  # out of processes or memory: the runner starts a plain one
        os.close(ready_r)
        os.close(ready_w)
        _send(sock, {"error": f"cannot fork: {error}"})
        return
    if pid == 0:
        os.close(ready_r)
        _child(request, sock, ready_w)
    os.close(ready_w)
    os.read(ready_r, 1)  # set up (its own session) or already dead: either way, answer
    os.close(ready_r)
    _send(sock, {"pid": pid})
    _, status = os.waitpid(pid, 0)
    _send(sock, {"exit": os.waitstatus_to_exitcode(status)})


def serve(fd: int, modules: list[str]) -> int:
    """Import ``modules``, then serve requests on socket ``fd`` until it closes."""
    sock = socket.socket(fileno=fd)
    # A device query during the imports then reads NVML rather than loading the CUDA
    # driver here; the children get the experiment's environment back.
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        for name in modules:
            module = importlib.import_module(name)
            for extra in getattr(module, "FORK_PRELOAD", ()):
                importlib.import_module(extra)
    except Exception as error:
        _send(sock, {"error": f"cannot import {name}: {type(error).__name__}: {error}"})
        return 1
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    why = _unsafe_to_fork(threads)
    _send(sock, {"error": why} if why else {"ready": True})
    if why:
        return 1
    reader = sock.makefile("rb")
    for line in reader:
        _serve_one(json.loads(line), sock, threads)
    return 0


def main(argv: list[str]) -> int:
    """Entry point: ``argv`` is ``[FD, MODULE...]`` (the runner makes this process die
    with it, as it does a plain worker)."""
    if len(argv) < 1:
        print("usage: python -m dlbench.launch.forkserver.server FD MODULE...", file=sys.stderr)
        return 2
    return serve(int(argv[0]), argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
