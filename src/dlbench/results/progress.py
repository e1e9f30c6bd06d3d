"""Two log keys the worker and the runner share: how far the worker got, and the
kind of a failure.

``results.progress`` is ``{"phase": P}`` or ``{"phase": P, "batch": N}``, written by
the worker as it goes (:mod:`dlbench.worker.progress`); ``P`` is one of
:data:`PHASE_NAMES`. The last one in the log says where a worker that died was.

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
