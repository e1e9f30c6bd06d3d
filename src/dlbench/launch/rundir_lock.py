"""One runner per run directory at a time.

Two ``dlbench run`` with the same ``--out`` would start the same experiments twice,
write two workers' output into one log and race over each experiment's input file.
A runner therefore holds an exclusive lock on ``<run dir>/dlbench.lock``
(:data:`~dlbench.config.validate_logs.RUN_LOCK_FILENAME`) while it runs, and a second
one is refused before it starts anything. The lock is ``flock(2)``'s, which the
operating system drops when its holder's file is closed, whether the runner ended,
crashed or was killed with SIGKILL: a run directory is never left locked, and the
same command resumes the sweep. The file itself stays, holding the last runner's pid
for the message.

Example::

    with lock_run_directories([Path("runs/sweep1")]):
        ...  # run the sweep
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from dlbench.config.validate_logs import RUN_LOCK_FILENAME
from dlbench.errors import PathError


def _holder(fd: int) -> str:
    """The pid the current holder wrote in the lock file, as a phrase, or ''."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""


def lock_run_directory(run_dir: Path) -> int:
    """Lock ``run_dir`` (created if need be) for this process; the open file
    descriptor, which holds the lock until it is closed. PathError, in one line, when
    another process holds it or the lock file cannot be made."""
    path = run_dir / RUN_LOCK_FILENAME
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        # O_CLOEXEC: a worker started by this runner must not inherit the lock and keep
        # the directory locked after the runner died.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as error:
        raise PathError(f"run directory {run_dir}: cannot create its lock file {path} "
                        f"({error.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise PathError(f"run directory {run_dir} is in use by another dlbench run{holder}: "
                        "one runner at a time; wait for it to end, or give another --out"
                        ) from None
    except OSError as error:  # a file system without locks: run as before, unguarded
        if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP):
            os.close(fd)
            raise
        return fd
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


@contextlib.contextmanager
def lock_run_directories(run_dirs: Iterable[Path]) -> Iterator[None]:
    """Hold the lock of every run directory in ``run_dirs`` (each once, in sorted
    order, so that two runners never wait on each other) for the block."""
    fds: list[int] = []
    try:
        for run_dir in sorted({Path(d) for d in run_dirs}):
            fds.append(lock_run_directory(run_dir))
        yield
    finally:
        for fd in fds:
            os.close(fd)
