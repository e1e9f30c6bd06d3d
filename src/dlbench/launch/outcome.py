"""What a sweep gives back: each experiment's :class:`Outcome` and the
:class:`SweepResult` of the whole sweep.

Apart from the sweep loop (:mod:`dlbench.launch.sweep`) so that what reports on
outcomes (the progress lines of :mod:`dlbench.launch.progress_bar`) need not import the
loop that makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Outcome", "SweepResult"]


@dataclass
class Outcome:
    """What became of one experiment of the sweep."""

    record: dict[str, Any]
    ran: bool  # False when an earlier result was kept (exp.rerun) or it was skipped
    seconds: float = 0.0
    skipped: bool = False  # not run: a smaller batch ran out of memory (launch.oom_memo)

    @property
    def status(self) -> str:
        """The experiment's ``exp.status``."""
        return str(self.record.get("exp.status", ""))


@dataclass
class SweepResult:
    """Every experiment's outcome, in plan order; ``interrupted`` after Ctrl-C/SIGTERM,
    ``stopped`` after SIGUSR1 (the experiments after the last one here never started)."""

    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False
    stopped: bool = False

    @property
    def failed(self) -> list[Outcome]:
        """Outcomes that did not end ok."""
        return [o for o in self.outcomes if o.status != "ok"]
