"""The experiment log: ``__name__=<json value>`` lines among a framework's own output.

A worker writes one log per experiment: its parameters first, then its results.
Everything else in the file (the framework's warnings, progress bars, tracebacks) is
ignored by the parser, and the last occurrence of a key wins, so a value can be
updated by writing it again. The writer appends and flushes after every line, so a
run killed at any moment leaves a log whose complete lines can all be read back; a
line it finds cut short by an earlier writer is marked (:data:`CUT_MARK`) before it
goes on, so that the cut value is never read as a whole one.

The line grammar is DLBS's: optional spaces or tabs, ``__``, the name (up to the
first ``__`` followed by optional spaces or tabs and ``=``), then the value: JSON
text, with surrounding whitespace ignored; a value of only whitespace is ``null``.

Example::

    with LogWriter("runs/x/exp.log") as log:
        log.write_many({"exp.model": "resnet50", "exp.replica_batch": 32})
        log.write("results.time", 41.7)
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from dlbench.results.keys.lookup import check_key

#: One log line, as DLBS's log parser reads it: leading spaces or tabs, ``__`` name
#: ``__``, spaces or tabs, ``=``, the value (to the end of the line). The name is
#: non-greedy, so the first ``__=`` (or ``__ =``) ends it; :func:`format_line`
#: refuses names containing ``__=`` or whitespace, which keeps that split unambiguous
#: (names may still contain ``_`` and end in ``_``). Whitespace around the name and
#: the value is not part of them (the parser strips it, as DLBS does).
LINE_RE = re.compile(r"[ \t]*__(?P<name>.+?)__[ \t]*=(?P<value>.*)")

#: What :class:`LogWriter` appends to a last line it finds without its line end (a
#: writer killed mid-line), before starting a new line: it makes the cut value
#: invalid JSON whatever it was (``15`` of ``159.78``), so the parser reports the
#: line instead of reading a wrong number. No quote, so it cannot close a string.
CUT_MARK = " <cut short: its writer stopped mid-line>"


#: Environment variable naming the log the worker with local rank 0 writes, when it
#: is not ``exp.log_file``: set by the Slurm node for its workers on a node that
#: shares the run directory with the first node of a multi-node run.
LOG_FILE_ENV = "DLBENCH_LOG_FILE"

#: dlbench's internal environment variables: set by dlbench for its own children only,
#: never passed on from the environment dlbench was started in (a stray value would
#: send a worker's log elsewhere, or make its record say what did not happen). Declared
#: here, below both the launchers and the worker. ``DLBENCH_WORKER_START`` is no longer
#: set (a forked worker is told so in-process) but stays reserved, so that a value of
#: the user's never reaches a worker. The variables a user may set are the others:
#: ``DLBENCH_HOME``, ``DLBENCH_WORKER_ENV``, ``DLBENCH_STRICT_KEYS``,
#: ``DLBENCH_PROGRESS_SECONDS``.
INTERNAL_ENV = (LOG_FILE_ENV, "DLBENCH_WORKER_START")


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"log key must be a non-empty string, got {name!r}")
    if "__=" in name or any(ch.isspace() for ch in name):
        raise ValueError(
            f"log key {name!r} contains whitespace or '__=' and could not be read back"
        )


def format_line(name: str, value: Any) -> str:
    """Return the log line (newline included) that records ``value`` under ``name``.

    >>> format_line("exp.model", "resnet50")
    '__exp.model__="resnet50"\\n'

    ``value`` must be JSON-serialisable (NaN and infinities are written the way
    Python's ``json`` writes them and read back the same way). A name that could not
    be read back (empty, whitespace, ``__=``) raises ``ValueError``: that is a bug in
    the caller, not a user error.
    """
    _check_name(name)
    # json.dumps escapes newlines inside strings and, with ensure_ascii, every
    # non-ASCII line separator too, so a value always stays on its one line.
    return f"__{name}__={json.dumps(value)}\n"


class LogWriter:
    """Appends log lines to a file, flushing after every write.

    Safe to share between threads (the worker's timing loop and its resource
    monitor both write). Usable as a context manager.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A previous writer killed mid-line leaves a partial last line: mark it as cut
        # (a bare newline would turn "15" of "159.78" into a whole, wrong value), then
        # start a fresh line so that our first key is not glued onto it.
        needs_newline = False
        if self.path.is_file() and self.path.stat().st_size > 0:
            with self.path.open("rb") as existing:
                existing.seek(-1, 2)
                needs_newline = existing.read(1) != b"\n"
        self._file = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        if needs_newline:
            self._append(CUT_MARK + "\n")

    def _append(self, text: str) -> None:
        with self._lock:
            self._file.write(text)
            self._file.flush()

    def write(self, name: str, value: Any) -> None:
        """Append ``__name__=<json value>`` and flush.

        A ``results.*``, ``sys.*`` or ``hw.*`` name must be declared
        (:func:`dlbench.results.keys.lookup.check_key`: an error under
        ``DLBENCH_STRICT_KEYS=1``, else a warning).
        """
        check_key(name)
        self._append(format_line(name, value))

    def write_many(self, values: Mapping[str, Any]) -> None:
        """Append one line per key, in the mapping's order, with a single flush; each
        name is checked as by :meth:`write`, all before the first line is written."""
        for name in values:
            check_key(name)
        self._append("".join(format_line(name, value) for name, value in values.items()))

    def write_text(self, text: str) -> None:
        """Append free text (a note, a traceback); the parser ignores it.

        A newline is added when missing so the next key starts on its own line.
        """
        if not text.endswith("\n"):
            text += "\n"
        self._append(text)

    def close(self) -> None:
        """Close the file; further writes raise ``ValueError``."""
        with self._lock:
            self._file.close()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
