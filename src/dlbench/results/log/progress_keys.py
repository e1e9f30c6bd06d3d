"""Two log keys the worker and the runner share: how far the worker got, and the
kind of a failure.

``results.progress`` is written by the worker as it goes
(:mod:`dlbench.worker.heartbeat`): at each phase change and, while batches run, at
most every 2 s. Its value is a dict:

- ``phase``: one of :data:`PHASE_NAMES`; always there;
- ``batch``: the batch the timing loop is on, counted from 0 over warm-up and timed
  batches;
- ``elapsed``: seconds since the phase began;
- ``done``: batches finished in this phase;
- ``total``: batches this phase runs (a fixed count), or ``max``: the most it may run
  (``auto`` warm-up), or ``max_seconds``: the most seconds it may take (``auto``
  timed batches);
- in the timed phase, ``samples``: what the finished timed batches processed, in the
  backend's throughput unit times seconds (``done x exp.effective_batch x`` the
  unit's per-sample count), and ``unit``: that unit (``images/s``, ``tokens/s``), so
  that ``samples / elapsed`` is the throughput so far.

Only ``phase`` is certain; the rest is there when the worker knew it. The last value
in the log says where a worker that died was; the runner also reads the values as
they come to show a live status and to move an ``auto`` timeout
(:mod:`dlbench.launch.live`, :mod:`dlbench.launch.deadline`).

``results.failure_kind`` says what kind of failure ended an experiment: ``oom`` (out
of memory) and ``exception`` are written by the worker; ``signal``, ``exit``,
``timeout`` and ``interrupted`` by the runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Log key of the worker's progress.
PROGRESS_KEY = "results.progress"

#: Log key of the failure's kind.
FAILURE_KIND_KEY = "results.failure_kind"

#: The worker's phases, and how a failure message names them.
PHASE_NAMES = {"setup": "set-up", "warmup": "warm-up", "timed": "the timed batches",
               "finish": "the end of the run"}

#: How a live status line names each phase.
PHASE_LABELS = {"setup": "set-up", "warmup": "warm-up", "timed": "timed",
                "finish": "finishing"}


def where_text(progress: Any) -> str:
    """``in the timed batches at batch 12`` from a ``results.progress`` value, or empty
    for anything else."""
    if not isinstance(progress, Mapping) or progress.get("phase") not in PHASE_NAMES:
        return ""
    text = f"in {PHASE_NAMES[str(progress['phase'])]}"
    batch = progress.get("batch")
    if isinstance(batch, int) and not isinstance(batch, bool):
        text += f" at batch {batch}"
    return text


def count(progress: Mapping[str, Any], key: str) -> int | None:
    """``progress[key]`` when it is a whole number >= 0, else None (a value from a log
    may be anything)."""
    value = progress.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def number(progress: Mapping[str, Any], key: str) -> float | None:
    """``progress[key]`` when it is a finite number >= 0, else None."""
    value = progress.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e300:
        return float(value)
    return None


def phase_text(progress: Any) -> str:
    """``timed 40/100``, ``warm-up 2 (at most 50)``, ``timed 40 (at most 60 s)``,
    ``set-up`` from a ``results.progress`` value; empty for anything else."""
    if not isinstance(progress, Mapping) or progress.get("phase") not in PHASE_LABELS:
        return ""
    text = PHASE_LABELS[str(progress["phase"])]
    done = count(progress, "done")
    if done is None or progress["phase"] not in ("warmup", "timed"):
        return text
    total, most, seconds = (count(progress, "total"), count(progress, "max"),
                            number(progress, "max_seconds"))
    if total is not None:
        return f"{text} {done}/{total}"
    if most is not None:
        return f"{text} {done} (at most {most})"
    if seconds is not None:
        return f"{text} {done} (at most {seconds:g} s)"
    return f"{text} {done}"


def rate(progress: Any) -> tuple[float, str] | None:
    """The throughput of the timed batches so far and its unit, e.g. ``(12.3,
    'images/s')``, from a ``results.progress`` value; None before a timed batch has
    finished or when the value does not say."""
    if not isinstance(progress, Mapping) or progress.get("phase") != "timed":
        return None
    samples, elapsed, unit = (number(progress, "samples"), number(progress, "elapsed"),
                              progress.get("unit"))
    if samples is None or not elapsed or not samples or not isinstance(unit, str):
        return None
    return samples / elapsed, unit
