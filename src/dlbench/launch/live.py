"""What a running experiment is doing, while it runs: a live status from its log.

The worker writes ``results.progress`` lines into its log as it goes
(:mod:`dlbench.worker.heartbeat`). While the runner waits for a worker it reads the
lines added since its last look (:class:`LogTail`; the log is append-only and
flushed) and shows them (:class:`LiveStatus`)::

    running 3/8: exp.replica_batch=32 — timed 40/100, 12.30 images/s so far, 0:41 elapsed

On a terminal that line is redrawn in place (carriage return, clear to the end of the
line), cut to the terminal's width so that it never wraps. Elsewhere (a log file,
CI) it is printed as a plain line once the experiment has run
:data:`PLAIN_SECONDS` (``DLBENCH_PROGRESS_SECONDS``), then at most that often and
at each phase change; ``DLBENCH_PROGRESS_SECONDS=0`` prints none. A worker that has
written no progress line for a while (:meth:`Deadline.silence_limit
<dlbench.launch.deadline.Deadline.silence_limit>`) is named once, on a line of its
own. The end-of-experiment line (:mod:`dlbench.launch.progress_bar`) is unchanged.

:class:`Watch` does this for the worker processes of one experiment (several for
``exp.parallel_jobs``, shown as one line: the copy furthest behind and the copies'
summed throughput) and applies their ``exp.timeout`` (:mod:`dlbench.launch.deadline`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from dlbench.errors import ConfigError
from dlbench.launch.copies.copies import wait_copies
from dlbench.launch.deadline import Deadline
from dlbench.launch.local.process import WorkerProcess
from dlbench.launch.progress_bar import Reporter, format_clock
from dlbench.results.log.file import LINE_RE
from dlbench.results.log.progress_keys import PROGRESS_KEY, count, phase_text, rate
from dlbench.textsafe import safe_text

#: Environment variable: seconds between two plain progress lines when the output is
#: not a terminal; 0 for none.
PLAIN_SECONDS_ENV = "DLBENCH_PROGRESS_SECONDS"
#: Its default.
PLAIN_SECONDS = 30.0
#: Seconds between two looks at the logs while workers run.
POLL_S = 0.5

_MARKER = f"__{PROGRESS_KEY}__".encode()
_PHASE_ORDER = {"setup": 0, "warmup": 1, "timed": 2, "finish": 3}


def plain_seconds(env: Mapping[str, str]) -> float:
    """``DLBENCH_PROGRESS_SECONDS`` from ``env``, or :data:`PLAIN_SECONDS`; a value that
    is not a number >= 0 raises a one-line :class:`~dlbench.errors.ConfigError`."""
    text = env.get(PLAIN_SECONDS_ENV, "").strip()
    if not text:
        return PLAIN_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < 1e9:
        raise ConfigError(f"{PLAIN_SECONDS_ENV}={text!r}: expected seconds between two progress "
                          "lines, a number >= 0 (0: none), e.g. 30")
    return seconds


class LogTail:
    """The ``results.progress`` values a growing log gains, read from where the last
    look stopped."""

    #: Bytes read at one look at most (the rest waits for the next look), and the
    #: longest unfinished line kept for the next look.
    CHUNK = 1 << 22

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._rest = b""  # an unfinished last line
        self._skip = False  # inside a line too long to keep: up to its end

    def read(self) -> list[dict[str, Any]]:
        """The progress values of the lines completed since the last call."""
        try:
            with open(self.path, "rb") as log:
                log.seek(self.offset)
                data = log.read(self.CHUNK)
        except OSError:  # not created yet, or gone: nothing new
            return []
        self.offset += len(data)
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        if self._skip and lines:
            lines.pop(0)
            self._skip = False
        if len(self._rest) > self.CHUNK:  # a framework's endless line: not a log line
            self._rest, self._skip = b"", True
        values = []
        for line in lines:
            if _MARKER not in line:
                continue
            match = LINE_RE.match(line.decode("utf-8", "replace"))
            if match is None or match["name"] != PROGRESS_KEY:
                continue
            try:
                value = json.loads(match["value"])
            except ValueError:  # a damaged line: the parser reports it, the status skips it
                continue
            if isinstance(value, dict):
                values.append(value)
        return values


class LiveStatus:
    """Shows one status line at a time: redrawn in place on ``terminal``, else through
    ``report`` as plain lines every ``interval`` seconds and at phase changes."""

    def __init__(self, report: Reporter, terminal: TextIO | None, interval: float) -> None:
        self.report = report
        self.terminal = terminal
        self.interval = interval
        self._drawn = ""
        self._last = 0.0  # when the last plain line was printed (or the experiment began)
        self._printed = False  # a plain line was printed for this experiment

    @classmethod
    def for_stderr(cls, report: Reporter, interval: float) -> LiveStatus:
        """The status for ``dlbench run``, whose lines go to stderr: redrawn when stderr
        is a terminal (not ``TERM=dumb``), else plain lines every ``interval`` seconds
        (:func:`plain_seconds`)."""
        tty = sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
        return cls(report, sys.stderr if tty else None, interval)

    def begin(self, now: float) -> None:
        """A new experiment starts at ``now``: plain lines wait :attr:`interval` again."""
        self._last, self._printed = now, False

    def show(self, text: str, now: float, phase_changed: bool = False) -> None:
        """Show ``text`` as the current status."""
        text = safe_text(text)  # parameter values may hold escape sequences
        if self.terminal is not None:
            if text != self._drawn:
                self.terminal.write("\r" + self._fit(text) + "\x1b[K")
                self.terminal.flush()
                self._drawn = text
            return
        if self.interval <= 0:
            return
        if now - self._last >= self.interval or (phase_changed and self._printed):
            self.report(text)
            self._last, self._printed = now, True

    def note(self, text: str) -> None:
        """A line that stays (a silent worker), above the status."""
        self.clear()
        self.report(safe_text(text))

    def clear(self) -> None:
        """Take the status line off the terminal, so that the next line starts clean."""
        if self.terminal is not None and self._drawn:
            self.terminal.write("\r\x1b[K")
            self.terminal.flush()
            self._drawn = ""

    def wrap(self, report: Reporter) -> Reporter:
        """``report``, clearing the status line before each line it prints."""

        def cleared(line: str) -> None:
            self.clear()
            report(line)

        return cleared

    def _fit(self, text: str) -> str:
        assert self.terminal is not None
        try:
            width = os.get_terminal_size(self.terminal.fileno()).columns
        except (OSError, ValueError, AttributeError):
            width = 0
        if width < 20:  # unknown (a new pseudo-terminal says 0): a common width
            width = 80
        # One column short: a line that fills the last column wraps on some terminals.
        return text if len(text) < width else text[: max(width - 2, 1)] + "…"


class _Worker:
    """What the runner knows of one worker process from its log."""

    def __init__(self, experiment: Mapping[str, Any], log: Path, now: float) -> None:
        self.tail = LogTail(log)
        self.deadline = Deadline(experiment, now)
        self.value: dict[str, Any] | None = None
        self.seen = now  # when the last progress line arrived (or the worker started)
        self.warned = False  # said that it is silent, since its last line

    def look(self, now: float) -> bool:
        """Read new progress lines; True when the phase changed."""
        values = self.tail.read()
        if not values:
            return False
        before = self.value.get("phase") if self.value else None
        for value in values:
            self.deadline.note(value, now)
        self.value, self.seen, self.warned = values[-1], now, False
        return self.value.get("phase") != before


def _wait_some(processes: Sequence[WorkerProcess], timeout: float) -> tuple[int | None, bool]:
    """:func:`~dlbench.launch.copies.copies.wait_copies` (the index of the first process that
    failed, and whether some still run after ``timeout`` seconds), which sleeps on
    pidfds; a worker forked by the fork server is waited for on the server's socket,
    which says at once when it ended."""
    if len(processes) == 1 and not isinstance(processes[0], subprocess.Popen):
        try:
            code = processes[0].wait(timeout)
        except subprocess.TimeoutExpired:
            return None, True
        return (None if code == 0 else 0), False
    return wait_copies(cast("Sequence[subprocess.Popen[bytes]]", processes), timeout)


def _behind(worker: _Worker) -> tuple[int, int]:
    value = worker.value or {}
    return _PHASE_ORDER.get(str(value.get("phase")), -1), count(value, "done") or 0


class Watch:
    """The worker processes of one experiment, as they run: their live status, their
    silences and their ``exp.timeout``.

    ``title`` names the experiment (``3/8: exp.model=resnet50``); ``workers`` are each
    process's experiment and log, all started at about the time the watch is made.
    """

    def __init__(self, status: LiveStatus, title: str,
                 workers: Sequence[tuple[Mapping[str, Any], Path]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.status = status
        self.title = title
        self.clock = clock
        self.started = clock()
        self.workers = [_Worker(experiment, log, self.started) for experiment, log in workers]
        #: Seconds the workers ran, once :meth:`wait` returned.
        self.ran = 0.0
        status.begin(self.started)

    def poll(self) -> None:
        """Read what the workers wrote since the last look and show it."""
        now = self.clock()
        changed = False
        for worker in self.workers:
            changed = worker.look(now) or changed
        for number, worker in enumerate(self.workers, 1):
            silent = now - worker.seen
            if not worker.warned and silent >= worker.deadline.silence_limit():
                who = f" copy {number}" if len(self.workers) > 1 else ""
                last = phase_text(worker.value) or "nothing yet"
                batch = count(worker.value or {}, "batch")
                last += f" at batch {batch}" if batch is not None else ""
                self.status.note(f"{self.title}{who}: no progress for "
                                 f"{format_clock(silent)} (last: {last})")
                worker.warned = True
        self.status.show(self.text(now), now, changed)

    def text(self, now: float) -> str:
        """The status line at ``now``."""
        behind = min(self.workers, key=_behind)
        where = phase_text(behind.value) or "starting"
        if len(self.workers) > 1:
            where = f"{len(self.workers)} copies, slowest at {where}"
        rates = [r for r in (rate(worker.value) for worker in self.workers) if r is not None]
        units = {unit for _, unit in rates}
        if len(rates) == len(self.workers) and len(units) == 1:  # copies: their sum
            where += f", {sum(value for value, _ in rates):.2f} {units.pop()} so far"
        return f"running {self.title} — {where}, {format_clock(now - self.started)} elapsed"

    def expired(self) -> bool:
        """Whether a worker has run past its ``exp.timeout``."""
        now = self.clock()
        return any(worker.deadline.expired(now) for worker in self.workers)

    def wait(self, processes: Sequence[WorkerProcess]) -> tuple[int | None, bool]:
        """Wait until every process ended, one failed, or time ran out, showing the
        status meanwhile; the index of the first that failed (None when none did), and
        whether time ran out. A Ctrl-C (KeyboardInterrupt) passes through."""
        try:
            while True:
                failed, waiting = _wait_some(processes, POLL_S)
                if not waiting:
                    return failed, False
                self.poll()
                if self.expired():
                    return None, True
        finally:
            self.ran = self.clock() - self.started
            self.status.clear()
