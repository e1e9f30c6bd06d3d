"""Log files → records.

A record is the flat dict of every ``__name__=<json>`` line in one log (the grammar
is DLBS's; see :mod:`dlbench.results.log.scan`), the last occurrence of a key winning.
A log may be gzip-compressed (``.gz``). The parser never raises for what is inside a
file: a log is written by a process that may have been killed, may share the file
with a framework printing binary junk, and may be read while still being written.
Problems come back as :class:`ParseWarning` values for the caller to show, and a
damaged value is never read as a whole one; only a path that does not exist is an
error.

Many logs are read in parallel, one worker process per core, and
:func:`iter_logs` hands their records over one by one in file order, so that a caller
writing them out never holds them all.

Example::

    records, warnings = parse_logs(["runs/sweep1"], recursive=True)
    for warning in warnings:
        print(warning)
"""

from __future__ import annotations

import fnmatch
import functools
import gzip
import multiprocessing
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar, cast

from dlbench.config.devices import usable_cores
from dlbench.errors import ResultsError
from dlbench.results.log.scan import MAX_LINE_BYTES, ParseWarning, scan_bytes, scan_stream
from dlbench.results.memory import no_cyclic_gc

__all__ = ["LOG_PATTERNS", "ParseWarning", "iter_logs", "iter_logs_as", "parse_log",
           "parse_logs", "stream_logs"]

#: The files a directory contributes: plain and gzip-compressed logs.
LOG_PATTERNS = ("*.log", "*.log.gz")

#: Fewer logs than this are read in this process: starting workers costs more.
PARALLEL_MIN_FILES = 256

#: Logs a worker reads per task: enough to pay for the round trip, few enough to
#: keep every worker busy to the end.
_TASK_FILES = 64

Parsed = tuple[dict[str, Any], list[ParseWarning]]


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        # GzipFile is a binary stream with readline(limit), all scan_stream needs.
        return cast("IO[bytes]", gzip.open(path, "rb"))
    return path.open("rb")


def _read_log(path: Path, raw_lists: bool = False) -> tuple[dict[str, Any], list[ParseWarning]]:
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            return {}, [ParseWarning(str(path), 0, "is a directory, not a log; skipped")]
        if not stat.S_ISREG(mode):
            # Opening a FIFO would wait forever for a writer.
            return {}, [ParseWarning(str(path), 0, "not a regular file; skipped")]
        if not path.name.endswith(".gz") and os.stat(path).st_size <= MAX_LINE_BYTES:
            # Read whole: scan_bytes reads a clean log in one pass.
            return scan_bytes(path.read_bytes(), str(path), raw_lists=raw_lists)
        with _open(path) as stream:
            return scan_stream(stream, str(path))
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        return {}, [ParseWarning(str(path), 0, f"cannot read: {reason}; skipped")]


def parse_log(path: str | Path) -> tuple[dict[str, Any], list[ParseWarning]]:
    """Read one log file into a record, with warnings for lines that could not be read.

    The record is empty when the file holds no log lines or cannot be read (both
    reported as warnings). A ``.gz`` file is gunzipped. A path that does not exist,
    or a directory, raises ``ResultsError``.
    """
    path = Path(path)
    if not path.exists():
        raise ResultsError(f"log file {path} does not exist")
    if path.is_dir():
        raise ResultsError(f"{path} is a directory; use parse_logs to read the logs in it")
    return _read_log(path)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def _logs_in_directory(
    directory: Path, recursive: bool, patterns: Sequence[str], warnings: list[ParseWarning]
) -> list[Path]:
    if not recursive:
        try:
            # scandir: whether an entry is a directory comes with the listing, not a
            # stat per entry (thousands of logs in one folder).
            with os.scandir(directory) as listing:
                entries = sorted((entry.name, entry.is_dir()) for entry in listing)
        except OSError as exc:
            warnings.append(ParseWarning(str(directory), 0, f"cannot list: {exc.strerror}"))
            return []
        found = []
        for name, is_dir in entries:
            if not _matches(name, patterns):
                continue
            if is_dir:
                warnings.append(ParseWarning(
                    str(directory / name), 0, "is a directory, not a log; skipped "
                                              "(--recursive reads the logs beneath it)"))
            else:
                found.append(directory / name)  # not a regular file: _read_log says so
        return found

    def on_error(exc: OSError) -> None:
        # An unreadable subdirectory hides its logs; say so rather than drop them quietly.
        where = exc.filename if exc.filename is not None else directory
        warnings.append(ParseWarning(str(where), 0, f"cannot list: {exc.strerror}"))

    found = []
    for root, _dirs, files in os.walk(directory, onerror=on_error):
        found.extend(Path(root, name) for name in files if _matches(name, patterns))
    return sorted(found)


def _same_file(path: Path) -> object:
    """What two paths of one file share (a log named twice, through a link or an
    overlapping argument, is read once): its device and inode, one ``stat`` (where
    ``Path.resolve`` looks up every part of the path); the resolved path where it
    cannot be read."""
    try:
        found = os.stat(path)
    except OSError:
        return str(path.resolve())
    return (found.st_dev, found.st_ino)


_T = TypeVar("_T")


def _keep(record: dict[str, Any]) -> dict[str, Any]:
    return record


def _read_logs(
    paths: list[str], convert: Callable[[dict[str, Any]], _T], raw_lists: bool = False
) -> list[tuple[_T, list[ParseWarning]]]:
    converted = []
    with no_cyclic_gc():
        for path in paths:
            record, warnings = _read_log(Path(path), raw_lists)
            converted.append((convert(record), warnings))
    return converted


def _workers(jobs: int | None, files: int) -> int:
    if jobs is None:
        jobs = usable_cores()
    return max(1, min(jobs, files // _TASK_FILES)) if files >= PARALLEL_MIN_FILES else 1


def _read_in_parallel(
    files: list[Path], jobs: int, convert: Callable[[dict[str, Any]], _T], raw_lists: bool
) -> Iterator[tuple[_T, list[ParseWarning]]]:
    tasks = [[str(p) for p in files[i:i + _TASK_FILES]] for i in range(0, len(files), _TASK_FILES)]
    # fork where it is safe: the workers start in milliseconds, with this module loaded.
    # A process with other threads (a framework's thread pools, which threading does not
    # see, or a monitor) may deadlock a forked child: there, a fork server starts them.
    methods = multiprocessing.get_all_start_methods()
    threaded = threading.active_count() > 1 or any(
        name in sys.modules for name in ("torch", "jax", "tensorflow", "onnxruntime"))
    method = "fork" if "fork" in methods and not threaded else (
        "forkserver" if "forkserver" in methods else None)
    context = multiprocessing.get_context(method)
    with context.Pool(jobs) as pool:
        for converted in pool.imap(
                functools.partial(_read_logs, convert=convert, raw_lists=raw_lists), tasks):
            yield from converted


def iter_logs(
    paths: Sequence[str | Path],
    recursive: bool = False,
    pattern: str | Sequence[str] = LOG_PATTERNS,
    *,
    jobs: int | None = None,
    warnings: list[ParseWarning] | None = None,
) -> Iterator[Parsed]:
    """``(record, warnings)`` of each log :func:`parse_logs` reads, in its order, as
    they are read; a record may be empty (a log with no key). Directories are listed
    before the first is yielded; what listing them warns about is appended to
    ``warnings`` (dropped when None). Many logs are read by ``jobs`` worker processes
    (default: one per core this process may use).
    """
    return iter_logs_as(_keep, paths, recursive, pattern, jobs=jobs, warnings=warnings)


def iter_logs_as(
    convert: Callable[[dict[str, Any]], _T],
    paths: Sequence[str | Path],
    recursive: bool = False,
    pattern: str | Sequence[str] = LOG_PATTERNS,
    *,
    jobs: int | None = None,
    warnings: list[ParseWarning] | None = None,
    raw_lists: bool = False,
) -> Iterator[tuple[_T, list[ParseWarning]]]:
    """:func:`iter_logs` with each record replaced by ``convert(record)``, computed
    where the log is read: in the worker processes when there are several, so that
    work such as encoding records as JSON is shared by the cores too. ``convert``
    must be a module-level function (it is sent to the workers by name). With
    ``raw_lists``, ``convert`` may get lists of numbers as their JSON text
    (:class:`~dlbench.results.log.scan.RawJSON`), for a caller that writes JSON."""
    if isinstance(paths, (str, Path)):
        raise TypeError("iter_logs takes a sequence of paths, not one path")
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise ResultsError(f"log path does not exist: {', '.join(missing)}")
    patterns = (pattern,) if isinstance(pattern, str) else tuple(pattern)
    listing: list[ParseWarning] = [] if warnings is None else warnings
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files.extend(_logs_in_directory(path, recursive, patterns, listing))
        else:
            files.append(path)
    unique: list[Path] = []
    seen: set[object] = set()
    for path in files:
        key = _same_file(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    workers = _workers(jobs, len(unique))
    if workers > 1:
        return _read_in_parallel(unique, workers, convert, raw_lists)
    return ((convert(record), found)
            for record, found in (_read_log(path, raw_lists) for path in unique))


def stream_logs(
    paths: Sequence[str | Path],
    recursive: bool = False,
    pattern: str | Sequence[str] = LOG_PATTERNS,
    *,
    on_warning: Callable[[ParseWarning], object],
    jobs: int | None = None,
) -> Iterator[dict[str, Any]]:
    """The records :func:`parse_logs` returns, one at a time as they are read, each
    warning going to ``on_warning`` as soon as it is known (in :func:`parse_logs`'s
    order). Nothing is read, and nothing raised, before the first record is asked for.

    Example: ``write_records(stream_logs(["runs"], on_warning=print), "all.jsonl")``.
    """
    listing: list[ParseWarning] = []
    parsed = iter_logs(paths, recursive, pattern, jobs=jobs, warnings=listing)
    for warning in listing:
        on_warning(warning)
    for record, warnings in parsed:
        for warning in warnings:
            on_warning(warning)
        if record:
            yield record


def parse_logs(
    paths: Sequence[str | Path],
    recursive: bool = False,
    pattern: str | Sequence[str] = LOG_PATTERNS,
    *,
    jobs: int | None = None,
) -> tuple[list[dict[str, Any]], list[ParseWarning]]:
    """Read log files and directories of them into records, one per log with any key.

    A file is read whatever its name (gunzipped when it ends in ``.gz``). A directory
    contributes the files matching ``pattern`` (one glob or several; default
    ``*.log`` and ``*.log.gz``) directly inside it, or anywhere beneath it with
    ``recursive``, in sorted order so the output is deterministic. A file given twice
    is read once. A path that does not exist raises ``ResultsError`` before anything
    is read; everything else (unreadable files, damaged lines, logs with no keys) is
    a warning, and never costs the records of the other files. A record without its
    worker's closing status gets ``exp.status`` ``incomplete`` and a warning. Many
    logs are read in parallel (``jobs``, see :func:`iter_logs`).
    """
    if isinstance(paths, (str, Path)):
        raise TypeError("parse_logs takes a sequence of paths, not one path")
    warnings: list[ParseWarning] = []
    records: list[dict[str, Any]] = []
    with no_cyclic_gc():
        for record, file_warnings in iter_logs(paths, recursive, pattern, jobs=jobs,
                                               warnings=warnings):
            warnings.extend(file_warnings)
            if record:
                records.append(record)
    return records, warnings
