"""Log files → records.

A record is the flat dict of every ``__name__=<json>`` line in one log (the grammar
is DLBS's; see :mod:`dlbench.results.logscan`), the last occurrence of a key winning.
A log may be gzip-compressed (``.gz``). The parser never raises for what is inside a
file: a log is written by a process that may have been killed, may share the file
with a framework printing binary junk, and may be read while still being written.
Problems come back as :class:`ParseWarning` values for the caller to show, and a
damaged value is never read as a whole one; only a path that does not exist is an
error.

Example::

    records, warnings = parse_logs(["runs/sweep1"], recursive=True)
    for warning in warnings:
        print(warning)
"""

from __future__ import annotations

import fnmatch
import gzip
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, cast

from dlbench.errors import ResultsError
from dlbench.results.logscan import ParseWarning, scan_stream

__all__ = ["LOG_PATTERNS", "ParseWarning", "parse_log", "parse_logs"]

#: The files a directory contributes: plain and gzip-compressed logs.
LOG_PATTERNS = ("*.log", "*.log.gz")


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        # GzipFile is a binary stream with readline(limit), all scan_stream needs.
        return cast("IO[bytes]", gzip.open(path, "rb"))
    return path.open("rb")


def _read_log(path: Path) -> tuple[dict[str, Any], list[ParseWarning]]:
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            return {}, [ParseWarning(str(path), 0, "is a directory, not a log; skipped")]
        if not stat.S_ISREG(mode):
            # Opening a FIFO would wait forever for a writer.
            return {}, [ParseWarning(str(path), 0, "not a regular file; skipped")]
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
            entries = list(directory.iterdir())
        except OSError as exc:
            warnings.append(ParseWarning(str(directory), 0, f"cannot list: {exc.strerror}"))
            return []
        found = []
        for entry in sorted(entries):
            if not _matches(entry.name, patterns):
                continue
            if entry.is_dir():
                warnings.append(ParseWarning(
                    str(entry), 0, "is a directory, not a log; skipped (--recursive reads "
                                   "the logs beneath it)"))
            else:
                found.append(entry)  # not a regular file: _read_log says so
        return found

    def on_error(exc: OSError) -> None:
        # An unreadable subdirectory hides its logs; say so rather than drop them quietly.
        where = exc.filename if exc.filename is not None else directory
        warnings.append(ParseWarning(str(where), 0, f"cannot list: {exc.strerror}"))

    found = []
    for root, _dirs, files in os.walk(directory, onerror=on_error):
        found.extend(Path(root, name) for name in files if _matches(name, patterns))
    return sorted(found)


def parse_logs(
    paths: Sequence[str | Path],
    recursive: bool = False,
    pattern: str | Sequence[str] = LOG_PATTERNS,
) -> tuple[list[dict[str, Any]], list[ParseWarning]]:
    """Read log files and directories of them into records, one per log with any key.

    A file is read whatever its name (gunzipped when it ends in ``.gz``). A directory
    contributes the files matching ``pattern`` (one glob or several; default
    ``*.log`` and ``*.log.gz``) directly inside it, or anywhere beneath it with
    ``recursive``, in sorted order so the output is deterministic. A file given twice
    is read once. A path that does not exist raises ``ResultsError`` before anything
    is read; everything else (unreadable files, damaged lines, logs with no keys) is
    a warning, and never costs the records of the other files. A record without its
    worker's closing status gets ``exp.status`` ``incomplete`` and a warning.
    """
    if isinstance(paths, (str, Path)):
        raise TypeError("parse_logs takes a sequence of paths, not one path")
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise ResultsError(f"log path does not exist: {', '.join(missing)}")
    patterns = (pattern,) if isinstance(pattern, str) else tuple(pattern)
    warnings: list[ParseWarning] = []
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files.extend(_logs_in_directory(path, recursive, patterns, warnings))
        else:
            files.append(path)
    records: list[dict[str, Any]] = []
    seen: set[Path] = set()
    for path in files:
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        record, file_warnings = _read_log(path)
        warnings.extend(file_warnings)
        if record:
            records.append(record)
    return records, warnings
