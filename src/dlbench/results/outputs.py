"""Where a command may write its ``--output``: never over a file dlbench needs.

A report, an export, a baseline, a chart or a history page is written where
``--output`` says, replacing what is there. :func:`check_output` refuses, before
anything is read or written, a destination that is one of dlbench's own files or
one of the command's inputs:

- an SQLite file (a run's ``results.sqlite``, a history) or its ``-wal``, ``-shm``
  or ``-journal`` companion, and the default history even before it exists;
- anything in a run directory's ``logs/`` or ``experiments/`` folder (or any of the
  files dlbench writes there, :data:`~dlbench.config.validate_logs.RUN_DIR_FILES`);
- an existing experiment log anywhere (a file with a ``__exp.`` parameter line);
- an input of the same command (a ``--input``, a ``--baseline`` file, a parsed log).

Paths are compared resolved, symbolic links followed, as the write would follow them.

Example::

    check_output("report.html", ["runs/sweep1"])          # fine
    check_output("runs/sweep1/results.sqlite", ["runs/sweep1"])  # ResultsError
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dlbench.config.validate_logs import RUN_DIR_FILES, RUN_LOCK_FILENAME
from dlbench.errors import ResultsError
from dlbench.results.sqlite_files import is_sqlite_file
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


def _is_experiment_log(path: Path) -> bool:
    """Whether ``path`` is an existing file whose first lines carry log parameters."""
    try:
        with open(path, "rb") as file:
            head = file.read(_LOG_SNIFF_BYTES)
    except OSError:
        return False
    return head.startswith(b"__exp.") or b"\n__exp." in head


def _why_not(target: Path, inputs: list[Path], history: Path | None) -> str | None:
    """Why ``target`` (resolved) must not be written over, or None."""
    if target in inputs:
        return "is an input of this command"
    if target.is_dir():
        return "is a directory; give a file name"
    if history is not None and target == history:
        return "is the history store"
    if is_sqlite_file(target):
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
    if _is_experiment_log(target):
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
    list). ``history`` is the path of a history store the command knows of (the
    default one, when it is not a URL). Reads no more than the first bytes of the
    file already at ``output``; writes nothing."""
    target = Path(output).expanduser().resolve()
    # A URL (a PostgreSQL history) is no file to protect.
    resolved = [Path(p).expanduser().resolve() for p in map(str, inputs) if "://" not in p]
    known = Path(history).expanduser().resolve() if history and "://" not in history else None
    why = _why_not(target, resolved, known)
    if why is not None:
        raise ResultsError(f"{flag} {output}: {why}; writing there would "
                           "destroy it: give another file")
