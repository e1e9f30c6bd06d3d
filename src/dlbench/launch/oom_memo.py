"""DLBS's failed-batch memo: after an experiment runs out of memory at a replica batch,
larger batches of the same configuration are skipped instead of each being tried.

DLBS kept, next to the logs, one file per framework, device type and model holding
the smallest batch that failed, and skipped every batch as large. dlbench keys the
memo more narrowly, on every parameter that defines the measurement except the batch
size and the batch counts and durations of the timing loop (``exp.phase``,
``exp.dtype``, ``exp.gpus``, ``exp.image_size``, framework options and ``user.*``
values included): an out-of-memory error in training says nothing about inference,
nor about another precision or image size. Only an out-of-memory failure counts
(``results.failure_kind`` is ``oom``); a batch that failed for another reason does not
make larger ones fail.

The memo is built from the run directory's store, so it holds when a sweep is
resumed; an experiment that ran out of memory is itself run again under its
``exp.rerun`` policy, and when it now fits, the batches above it run too.

Example::

    memo = OutOfMemoryMemo(store.records(where=OOM_QUERY))
    blocker = memo.blocker(experiment)   # the failed record, or None
    memo.note(record)                    # after each experiment
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from dlbench.config.identity import identity_parameters
from dlbench.results.log.progress_keys import FAILURE_KIND_KEY

#: Parameters that define the measurement but not the memory it needs.
_NOT_MEMORY = frozenset({
    "exp.replica_batch", "exp.effective_batch", "exp.num_warmup_batches",
    "exp.max_warmup_batches", "exp.num_batches", "exp.min_batches", "exp.max_batches",
    "exp.min_duration", "exp.max_duration", "exp.target_ci", "exp.repeat", "exp.cv_threshold",
})


def memory_key(experiment: Mapping[str, Any]) -> str:
    """The configuration whose larger batches an out-of-memory failure rules out: the
    experiment's identity (what ``exp.id`` hashes, :mod:`dlbench.config.identity`)
    less the batch size and the timing loop's counts."""
    names = identity_parameters(experiment, derived=True, user=True, carried=True,
                                exclude=_NOT_MEMORY)
    key = {name: experiment[name] for name in names}
    return json.dumps(key, sort_keys=True, default=str)


#: The records :func:`ran_out_of_memory` accepts, as a store query (selected in SQL, so
#: a runner resuming a large run directory reads only those).
OOM_QUERY = {"exp.status": "failure", FAILURE_KIND_KEY: "oom"}


def ran_out_of_memory(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is an experiment that failed out of memory."""
    return record.get("exp.status") == "failure" and record.get(FAILURE_KIND_KEY) == "oom"


def _batch(record: Mapping[str, Any]) -> int | None:
    value = record.get("exp.replica_batch")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class OutOfMemoryMemo:
    """The experiments of one run directory that ran out of memory, by configuration."""

    def __init__(self, records: Iterable[Mapping[str, Any]] = ()) -> None:
        self._failed: dict[str, dict[str, Any]] = {}  # exp.id -> its record
        for record in records:
            self.note(record)

    def note(self, record: Mapping[str, Any]) -> None:
        """Take in ``record``, the latest outcome of its experiment."""
        exp_id = str(record.get("exp.id"))
        if ran_out_of_memory(record) and _batch(record) is not None:
            self._failed[exp_id] = dict(record)
        else:
            self._failed.pop(exp_id, None)

    def blocker(self, experiment: Mapping[str, Any]) -> dict[str, Any] | None:
        """The record of another experiment of the same configuration that ran out of
        memory at a replica batch no larger than ``experiment``'s (the smallest such
        batch), or None when ``experiment`` should run."""
        batch = _batch(experiment)
        if batch is None:
            return None
        key = memory_key(experiment)
        found = [record for exp_id, record in self._failed.items()
                 if exp_id != str(experiment.get("exp.id"))
                 and (_batch(record) or 0) <= batch and memory_key(record) == key]
        return min(found, key=lambda r: _batch(r) or 0) if found else None


def skipped_record(experiment: Mapping[str, Any], blocker: Mapping[str, Any]) -> dict[str, Any]:
    """The record of ``experiment`` skipped because of ``blocker``'s failure."""
    message = (f"skipped: replica batch {blocker['exp.replica_batch']} of the same "
               f"configuration ran out of memory (exp.id {blocker['exp.id']}), so "
               f"{experiment['exp.replica_batch']} would too")
    return {**experiment, "exp.status": "skipped", "exp.status_msg": message}
