"""The runner's progress lines: a bar, the experiment, its outcome, and an ETA.

One line per finished experiment, e.g.::

    [#####...............] 2/8 ok          exp.replica_batch=8: 9.92 images/s (17.4 s) ETA 0:01:28

(While an experiment runs, :mod:`dlbench.launch.live` shows what it is doing.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dlbench.results.noise import join_reasons
from dlbench.results.text_table import MISSING, experiment_label, format_number
from dlbench.results.values import is_number
from dlbench.textsafe import safe_text

if TYPE_CHECKING:
    from dlbench.launch.outcome import Outcome

Reporter = Callable[[str], None]


def stability_note(record: Mapping[str, Any], shown: int = 2) -> str:
    """`` (unstable: cv 12.0% > 5%; ...)`` for an unstable result, else empty; at
    most ``shown`` reasons in full, then what each of the others is about
    (``and 1 more reason: warm-up visible``; all are in the record)."""
    reasons = record.get("results.unstable_reasons")
    if record.get("results.stable") is not False or not isinstance(reasons, list):
        return ""
    return f" (unstable: {join_reasons([str(r) for r in reasons], shown)})" if reasons else ""


def headline(record: Mapping[str, Any]) -> str:
    """The figure an ok experiment is summed up by, from what its record has: the
    throughput and its unit (``9.92 images/s``); for exp.phase=train_to_accuracy,
    which has no throughput, the time to target or the accuracy reached
    (``time to target 3.41 s (accuracy 0.933 after 3 epochs)``, ``target 0.9 not
    reached: accuracy 0.62 after 8 epochs``); ``-`` when it has neither (an ok record
    holds no promise of either key: a partial log, an older or hand-written record)."""
    throughput = record.get("results.throughput")
    if is_number(throughput):
        unit = record.get("results.throughput_unit") or "samples/s"
        return f"{float(throughput):.2f} {unit}"
    final = record.get("results.accuracy_final")
    if not is_number(final):
        return MISSING
    curve = record.get("results.accuracy_curve")
    epochs = len(curve) if isinstance(curve, list) else None
    after = f" after {epochs} epoch{'s' if epochs != 1 else ''}" if epochs else ""
    accuracy = f"accuracy {format_number(float(final))}{after}"
    to_target = record.get("results.time_to_target")
    if is_number(to_target):
        return f"time to target {format_number(float(to_target))} s ({accuracy})"
    target = record.get("exp.target_accuracy")
    shown = f" {format_number(float(target))}" if is_number(target) else ""
    return f"target{shown} not reached: {accuracy}"


def _format_duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def format_clock(seconds: float) -> str:
    """``0:41``, ``12:05``, ``1:02:03``: a time as a clock shows it, hours only when
    there are any."""
    whole = max(0, int(seconds))
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


class Progress:
    """A progress bar and ETA, one line per finished experiment."""

    WIDTH = 20
    #: Characters of a failure's message shown (the start says what and where).
    DETAIL_WIDTH = 240

    def __init__(self, total: int, report: Reporter, label_keys: Sequence[str]) -> None:
        self.total = total
        self.report = report
        self.label_keys = label_keys
        self.finished = 0
        self.run_seconds: list[float] = []

    def label(self, record: Mapping[str, Any]) -> str:
        """The parameters that tell ``record``'s experiment apart from the others (its
        model when none varies); not yet made terminal-safe."""
        return experiment_label(record, self.label_keys)

    def title(self, experiment: Mapping[str, Any]) -> str:
        """``3/8: exp.replica_batch=32``: the experiment about to run, numbered as its
        end line will be."""
        return f"{self.finished + 1}/{self.total}: {self.label(experiment)}"

    def done(self, outcome: Outcome) -> None:
        """Print the line of a finished experiment."""
        self.finished += 1
        if outcome.ran:
            self.run_seconds.append(outcome.seconds)
        filled = self.WIDTH * self.finished // max(self.total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        remaining = self.total - self.finished
        if remaining == 0:
            eta = "done"
        elif self.run_seconds:
            eta = "ETA " + _format_duration(
                sum(self.run_seconds) / len(self.run_seconds) * remaining
            )
        else:
            eta = "ETA ?"
        r = outcome.record
        label = self.label(r)
        if outcome.status == "ok":
            detail = headline(r) + stability_note(r)
        else:
            detail = str(r.get("exp.status_msg", ""))
            if len(detail) > self.DETAIL_WIDTH:  # the whole message is in the record
                detail = detail[: self.DETAIL_WIDTH - 1] + "…"
        if outcome.skipped:
            status, took = outcome.status, "not run"
        elif outcome.ran:
            status, took = outcome.status, f"{outcome.seconds:.1f} s"
        else:
            status, took = f"{outcome.status} (kept)", "earlier run"
        # Parameter values and worker messages may hold escape sequences: shown escaped.
        self.report(safe_text(
            f"[{bar}] {self.finished}/{self.total} {status:<11} {label}: {detail} "
            f"({took}) {eta}"
        ))
