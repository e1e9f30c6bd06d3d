"""Log files → records.

A record is the flat dict of every ``__name__=<json>`` line in one log, the last
occurrence of a key winning. The parser never raises for what is inside a file:
a log is written by a process that may have been killed, may share the file with a
framework printing binary junk, and may be read while still being written. Problems
come back as :class:`ParseWarning` values for the caller to show; only a path that
does not exist is an error.

Example::

    records, warnings = parse_logs(["runs/sweep1"], recursive=True)
    for warning in warnings:
        print(warning)
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.errors import ResultsError
from dlbench.results.logfile import LINE_RE


@dataclass(frozen=True)
class ParseWarning:
    """Something in a log that could not be read; ``line`` is 1-based, 0 for the file."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        if self.line <= 0:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"


def _parse_text(text: str, path: str) -> tuple[dict[str, Any], list[ParseWarning]]:
    record: dict[str, Any] = {}
    warnings: list[ParseWarning] = []
    seen_key_line = False
    # Split on "\n" only: str.splitlines would also break on \x0b, \x1c, U+2028...
    # which a framework's output (or decoded garbage) may contain mid-line.
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        found = LINE_RE.match(line)
        if found is None:
            continue
        seen_key_line = True
        name, value_text = found.group("name"), found.group("value")
        try:
            value = json.loads(value_text)
        except ValueError as exc:
            # Most often the last line of a killed run. An earlier occurrence of the
            # key, if any, is kept: it is the last value known to be whole.
            kept = " (an earlier value is kept)" if name in record else ""
            warnings.append(
                ParseWarning(
                    path,
                    number,
                    f"value of {name} is not valid JSON ({exc}); key skipped{kept}",
                )
            )
            continue
        record[name] = value
    if not seen_key_line:
        warnings.append(ParseWarning(path, 0, "no __name__=value lines: not a dlbench log"))
    return record, warnings


def _read_log(path: Path) -> tuple[dict[str, Any], list[ParseWarning]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        return {}, [ParseWarning(str(path), 0, f"cannot read: {reason}; skipped")]
    # A framework may have written binary junk into the log; undecodable bytes
    # become U+FFFD and at worst spoil their own line.
    return _parse_text(data.decode("utf-8", errors="replace"), str(path))


def parse_log(path: str | Path) -> tuple[dict[str, Any], list[ParseWarning]]:
    """Read one log file into a record, with warnings for lines that could not be read.

    The record is empty when the file holds no log lines or cannot be read (both
    reported as warnings). A path that does not exist raises ``ResultsError``.
    """
    path = Path(path)
    if not path.exists():
        raise ResultsError(f"log file {path} does not exist")
    if path.is_dir():
        raise ResultsError(f"{path} is a directory; use parse_logs to read the logs in it")
    return _read_log(path)


def _logs_in_directory(
    directory: Path, recursive: bool, pattern: str, warnings: list[ParseWarning]
) -> list[Path]:
    if not recursive:
        try:
            entries = list(directory.iterdir())
        except OSError as exc:
            warnings.append(ParseWarning(str(directory), 0, f"cannot list: {exc.strerror}"))
            return []
        return sorted(p for p in entries if p.is_file() and fnmatch.fnmatch(p.name, pattern))

    def on_error(exc: OSError) -> None:
        # An unreadable subdirectory hides its logs; say so rather than drop them quietly.
        where = exc.filename if exc.filename is not None else directory
        warnings.append(ParseWarning(str(where), 0, f"cannot list: {exc.strerror}"))

    found: list[Path] = []
    for root, _dirs, files in os.walk(directory, onerror=on_error):
        found.extend(Path(root, name) for name in files if fnmatch.fnmatch(name, pattern))
    return sorted(found)


def parse_logs(
    paths: Sequence[str | Path], recursive: bool = False, pattern: str = "*.log"
) -> tuple[list[dict[str, Any]], list[ParseWarning]]:
    """Read log files and directories of them into records, one per log with any key.

    A file is read whatever its name. A directory contributes the files matching
    ``pattern`` directly inside it, or anywhere beneath it with ``recursive``, in
    sorted order so the output is deterministic. A file given twice is read once.
    A path that does not exist raises ``ResultsError`` before anything is read;
    everything else (unreadable files, corrupt lines, logs with no keys) is a warning.
    A record whose run was killed (no ``exp.status``) is returned as it is.
    """
    if isinstance(paths, (str, Path)):
        raise TypeError("parse_logs takes a sequence of paths, not one path")
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise ResultsError(f"log path does not exist: {', '.join(missing)}")
    warnings: list[ParseWarning] = []
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files.extend(_logs_in_directory(path, recursive, pattern, warnings))
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
