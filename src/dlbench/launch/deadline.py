"""``exp.timeout``: when a worker is out of time.

A number is a fixed limit in seconds from the worker's start (0: none). ``auto`` (the
default) scales with what the experiment asks for, and moves as the worker reports
its progress (``results.progress``, :mod:`dlbench.results.log.progress_keys`):

1. Before a batch time is known: :data:`SETUP_S` for set-up (framework import, model
   build) plus :data:`FIRST_BATCH_S` for the first batch (where compilation happens):
   the worker is stopped 600 s after its start, or 300 s after its batches began,
   whichever is later.
2. Once batches have finished, their pace (seconds per batch, from the latest
   progress line) gives the time the batches left take; the worker is stopped
   :data:`MARGIN` times that plus :data:`GRACE_S` after the latest progress line. The
   batches left are the warm-up's (with ``exp.num_warmup_batches=auto``, up to
   ``exp.max_warmup_batches``) and the timed ones (with ``exp.num_batches=auto``,
   what is left of ``exp.max_duration`` plus one batch).
3. After the batches (the ``finish`` phase): :data:`FINISH_S` from its start.

A launcher that cannot read progress while the worker runs (a Slurm job's time limit
is set before it starts) uses :func:`timeout_bound`: the same rule for batches of
:data:`BOUND_BATCH_S` each, 2,100 s with the default batch counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.results.log.progress_keys import count, number

#: The word that asks for the scaling timeout.
AUTO = "auto"
#: Seconds for set-up: framework import and model build.
SETUP_S = 300.0
#: Seconds for the first batch, where a framework compiles.
FIRST_BATCH_S = 300.0
#: Seconds for the end of the run (gathering, statistics, the last log lines).
FINISH_S = 300.0
#: How many times the measured time of the batches left the worker may take.
MARGIN = 2.0
#: Seconds added to the scaled time left: noise, a slow last batch, the end of the run.
GRACE_S = 120.0
#: The batch time :func:`timeout_bound` assumes, before any is measured.
BOUND_BATCH_S = 30.0
#: Seconds without a progress line after which the runner says so (or 3 batches, when
#: a batch takes longer): before an ``auto`` timeout (at least GRACE_S) stops it.
SILENT_S = 60.0


def fixed_timeout(experiment: Mapping[str, Any]) -> float | None:
    """The fixed ``exp.timeout`` in seconds (0: no limit), or None for ``auto``."""
    value = experiment.get("exp.timeout", AUTO)
    return None if value == AUTO else float(value)


def _warmup_batches(experiment: Mapping[str, Any]) -> int:
    if experiment["exp.num_warmup_batches"] == AUTO:
        return int(experiment["exp.max_warmup_batches"])
    return int(experiment["exp.num_warmup_batches"])


def _timed_seconds(experiment: Mapping[str, Any], pace: float, done: int,
                   elapsed: float) -> float:
    """Seconds the timed batches still take, ``done`` of them having run for
    ``elapsed`` seconds, at ``pace`` seconds a batch."""
    if experiment["exp.num_batches"] == AUTO:  # stops at max_duration, one batch past it
        return max(0.0, float(experiment["exp.max_duration"]) - elapsed) + pace
    return max(0, int(experiment["exp.num_batches"]) - done) * pace


def time_left(experiment: Mapping[str, Any], phase: str, done: int, elapsed: float,
              pace: float) -> float:
    """Seconds the batches left take at ``pace`` seconds a batch, the worker being in
    ``phase`` with ``done`` of its batches run in ``elapsed`` seconds."""
    if phase == "warmup":
        warmup = max(0, _warmup_batches(experiment) - done) * pace
        return warmup + _timed_seconds(experiment, pace, 0, 0.0)
    if phase == "timed":
        return _timed_seconds(experiment, pace, done, elapsed)
    return 0.0


def timeout_bound(experiment: Mapping[str, Any]) -> float:
    """Seconds a worker of ``experiment`` may run, known before it starts: the fixed
    ``exp.timeout`` (0: no limit), or ``auto``'s rule for batches of
    :data:`BOUND_BATCH_S` seconds."""
    fixed = fixed_timeout(experiment)
    if fixed is not None:
        return fixed
    batches = time_left(experiment, "warmup", 0, 0.0, BOUND_BATCH_S)
    return SETUP_S + FIRST_BATCH_S + MARGIN * batches + GRACE_S


class Deadline:
    """When one worker of ``experiment``, started at ``started`` (monotonic seconds),
    is out of time; :meth:`note` each progress value as it arrives."""

    def __init__(self, experiment: Mapping[str, Any], started: float) -> None:
        self.experiment = experiment
        self.started = started
        fixed = fixed_timeout(experiment)
        self.auto = fixed is None
        self.at: float | None
        if fixed is None:
            self.at = started + SETUP_S + FIRST_BATCH_S
        else:
            self.at = started + fixed if fixed > 0 else None
        #: Seconds per batch, measured from the latest progress value that had one.
        self.pace: float | None = None

    def note(self, progress: Mapping[str, Any], now: float) -> None:
        """Take in a progress value read at ``now``: the pace, and with ``auto`` the
        deadline."""
        phase = progress.get("phase")
        done, elapsed = count(progress, "done"), number(progress, "elapsed")
        if phase in ("warmup", "timed") and done and elapsed:
            self.pace = elapsed / done
        if not self.auto or self.at is None or phase not in ("warmup", "timed", "finish"):
            return
        if phase == "finish":
            self.at = now + FINISH_S
        elif self.pace is None:
            self.at = max(self.at, now + FIRST_BATCH_S)
        else:
            left = time_left(self.experiment, str(phase), done or 0, elapsed or 0.0, self.pace)
            self.at = now + MARGIN * left + GRACE_S

    def expired(self, now: float) -> bool:
        """Whether the worker has run out of time at ``now``."""
        return self.at is not None and now >= self.at

    def silence_limit(self) -> float:
        """Seconds without a progress line that are worth a word: :data:`SILENT_S`, or
        three batches when a batch takes longer."""
        return max(SILENT_S, 3 * (self.pace or 0.0))
