"""Where a command may write its ``--output``: never over a file dlbench needs, and
never in place of a device.

A report, an export, a baseline, a chart or a history page is written where
``--output`` says. What is there decides how (:func:`writes_in_place`, the one place
that decides it for every file dlbench writes):

- nothing, or a regular file: the file is written beside it and renamed into place,
  so a reader sees the old file or the whole new one, never half of one;
- a character device (``/dev/null``, ``/dev/stdout`` on a terminal), a FIFO (a named
  pipe) or a socket: it is opened and written in place, never replaced or removed;
- a directory or a block device (a disk): refused.

:func:`check_output` refuses, before anything is read or written, a destination that
is one of dlbench's own files or one of the command's inputs:

- an SQLite file (a run's ``results.sqlite``, a history) or its ``-wal``, ``-shm``
  or ``-journal`` companion, and the default history even before it exists;
- anything in a run directory's ``logs/`` or ``experiments/`` folder (or any of the
  files dlbench writes there, :data:`~dlbench.config.validate_logs.RUN_DIR_FILES`);
- an existing experiment log anywhere (a file with a ``__exp.`` parameter line);
- an input of the same command (a ``--input``, a ``--baseline`` file, a parsed log).

Paths are compared resolved, symbolic links followed, as the write follows them
(:func:`resolved_path`; a loop of links is one line naming the flag). Only a regular
file is ever read to tell what it is: reading a FIFO would wait for a writer.

Example::

    check_output("report.html", ["runs/sweep1"])          # fine
    check_output("runs/sweep1/results.sqlite", ["runs/sweep1"])  # ResultsError
    check_output("/dev/null")                             # fine: written in place
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from dlbench.config.validate_logs import RUN_DIR_FILES, RUN_LOCK_FILENAME
from dlbench.errors import ResultsError
from dlbench.results.sqlite_files import SQLITE_HEADER, is_sqlite_file, read_head
from dlbench.results.store import STORE_FILENAME

#: The folders of a run directory that hold what dlbench itself wrote: the logs and
#: the workers' inputs.
RUN_FOLDERS = ("logs", "experiments")

_SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")

#: How much of an existing file is read to tell whether it is an experiment log.
_LOG_SNIFF_BYTES = 1 << 16


def is_run_directory(path: Path) -> bool:
    """Whether ``path`` looks like a run directory: it holds a results store, an
    ``experiments/`` folder or a runner's lock file."""
    return ((path / STORE_FILENAME).is_file() or (path / "experiments").is_dir()
            or (path / RUN_LOCK_FILENAME).is_file())


def resolved_path(path: str | Path, flag: str = "--output") -> Path:
    """``path`` absolute, ``~`` expanded and symbolic links followed, as a write to it
    follows them; ResultsError naming ``flag`` when its links form a loop."""
    try:
        return Path(path).expanduser().resolve()
    # Python 3.11 and 3.12 raise RuntimeError for a loop, 3.13 OSError (ELOOP).
    except (RuntimeError, OSError) as error:
        raise _unfollowed(path, flag, error) from None


def _unfollowed(path: str | Path, flag: str, error: Exception) -> ResultsError:
    why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return ResultsError(f"{flag} {path}: cannot be followed to a file or folder ({why}); "
                        "give a path without a loop of symbolic links")


def writes_in_place(path: str | Path, flag: str = "--output") -> bool:
    """Whether the output ``path`` is written in place: True for a character device, a
    FIFO or a socket, which must never be replaced; False for a regular file or a path
    where nothing is yet, which are replaced whole. ResultsError naming ``flag`` for a
    directory, a block device or a loop of symbolic links. Looks with ``os.stat`` only,
    never by opening ``path``; the kernel follows the links, ``/dev/stdout``'s to a
    pipe too (which :func:`resolved_path` cannot name)."""
    try:
        mode = os.stat(Path(path).expanduser()).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _unfollowed(path, flag, error) from None
        return False  # nothing there (or nothing visible): the write says what is wrong
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    what = ("is a directory" if stat.S_ISDIR(mode) else
            "is a block device (a disk), which writing would destroy" if stat.S_ISBLK(mode)
            else "is neither a file, a character device nor a FIFO")
    raise ResultsError(f"{flag} {path}: {what}; give a file name")


def _why_not(target: Path, inputs: list[Path | None], history: Path | None
             ) -> str | None:
    """Why ``target`` (resolved) must not be written over, or None."""
    if target in inputs:
        return "is an input of this command"
    if history is not None and target == history:
        return "is the history store"
    head = read_head(target, _LOG_SNIFF_BYTES)
    if head.startswith(SQLITE_HEADER):
        return "is an SQLite database (a results store or a history)"
    for companion in _SQLITE_COMPANIONS:
        base = target.name.removesuffix(companion)
        if base != target.name and is_sqlite_file(target.with_name(base)):
            return f"belongs to the SQLite database {target.with_name(base)}"
    for folder in target.parents:
        if is_run_directory(folder):
            first = target.relative_to(folder).parts[0]
            if first in RUN_FOLDERS or first in RUN_DIR_FILES:
                return f"is in {first} of the run directory {folder}, which dlbench writes"
            break
    if head.startswith(b"__exp.") or b"\n__exp." in head:
        return "is an experiment log"
    return None


def check_output(
    output: str | Path,
    inputs: Iterable[str | Path] = (),
    *,
    flag: str = "--output",
    history: str | None = None,
) -> None:
    """Refuse, with a one-line ResultsError naming ``flag``, an output path that
    would replace one of dlbench's own files or one of ``inputs`` (see the module's
    list), or a directory or a block device (:func:`writes_in_place`); a loop of
    symbolic links is one line too. ``history`` is the path of a history store the
    command knows of (the default one, when it is not a URL). Reads no more than the
    first bytes of a regular file already at ``output`` (or at the database it would be
    a companion of); writes nothing."""
    # A URL (a PostgreSQL history) is no file to protect.
    resolved = [_resolved_input(p) for p in map(str, inputs) if "://" not in p]
    known = _resolved_input(history) if history and "://" not in history else None
    if writes_in_place(output, flag):
        # A device, a FIFO or a socket is written, never replaced: no file of dlbench's
        # can be lost to it, but an input is still not the output.
        target = _resolved_input(str(output))
        why = "is an input of this command" if target and target in resolved else None
    else:
        why = _why_not(resolved_path(output, flag), resolved, known)
    if why is not None:
        raise ResultsError(f"{flag} {output}: {why}; writing there would "
                           "destroy it: give another file")


def _resolved_input(path: str | Path) -> Path | None:
    """An input path resolved as :func:`resolved_path` does; None when its links form a
    loop (it is then no file that an output could be)."""
    try:
        return Path(path).expanduser().resolve()
    except (RuntimeError, OSError):
        return None
