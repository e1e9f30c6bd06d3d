"""A record read as Mila's per-GPU reports: each copy's own value, and its ``train_item``.

Mila's training benchmarks ran a single-GPU benchmark once per GPU of a node, all
copies at the same time, and each copy wrote a report of its own; ``mlbench-report``
put every report of a benchmark (each GPU of each run) in one list and compared the
mean of their ``train_item.avg`` with a one-GPU target. dlbench keeps such a run as one
record (``exp.parallel_jobs``) whose ``results.throughput`` is the node's, the sum of
the copies'; a scorecard therefore reads the record as its copies:

- :func:`copy_values`: each copy's own value of a metric, from the record's list of
  them (``results.copy_throughput``, ``results.copy_time``...); where the record keeps
  no list (``exp.repeat`` with copies), the copies' mean, a summed key divided by the
  number of copies.
- :func:`train_items`: each copy's ``train_item``, from its timed batches.

Mila's ``train_item`` of one report: the report timed ``repeat`` observations of
``number`` batches each (its first observations dropped), each observation of
``items = batch_size * number`` samples taking ``time`` seconds; then
``avg = items / mean time``, ``max = items / shortest time``, ``min = items / longest
time``, ``range = max - min`` (items/s). dlbench times every batch, so an observation
here is one timed batch (Mila's ``number`` = 1), its items what one step processes in
the record's unit (``results.throughput * results.time / 1000``), and the warm-up
batches are the dropped observations. With ``exp.repeat``, the batches of every
process of the record are one report's, as the observations of Mila's one process.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.config.run_params import copy_count
from dlbench.config.scenarios.registry import BATCH
from dlbench.report.aggregate import as_number
from dlbench.results.keys.lookup import lookup

#: The per-record value Mila's ``train_item`` is about (items/s).
THROUGHPUT = "results.throughput"
_TIME = "results.time"
# Two means of the same batch times, summed in another order, agree to about 1e-15.
_SAME_MEAN = 1e-9


@dataclass(frozen=True)
class TrainItem:
    """Mila's ``train_item`` of one report, items/s."""

    avg: float
    min: float
    max: float

    @property
    def range(self) -> float:
        """``max - min``."""
        return self.max - self.min


def train_item(items: float, times_ms: Sequence[float]) -> TrainItem:
    """Mila's ``train_item`` of ``items`` per observation, observed ``times_ms`` long.

    ``train_item(32, [7000.0, 8000.0, 9000.0])``: avg 32 / 8 s = 4.0, max 32 / 7 s =
    4.571, min 32 / 9 s = 3.556 items/s. ``ValueError`` without times, or with a time
    that is not above 0.
    """
    if not times_ms or min(times_ms) <= 0:
        raise ValueError(f"train_item needs times above 0 ms, got {list(times_ms)[:5]}")
    per_second = 1000.0 * items
    return TrainItem(avg=per_second * len(times_ms) / math.fsum(times_ms),
                     min=per_second / max(times_ms), max=per_second / min(times_ms))


def copies_of(record: Mapping[str, Any]) -> int:
    """How many copies ran the record: its ``results.copy_throughput`` list, else
    ``results.copies``, else what its ``exp.parallel_jobs`` asked for."""
    listed = record.get("results.copy_throughput")
    if isinstance(listed, list) and listed:
        return len(listed)
    copies = record.get("results.copies")
    if isinstance(copies, int) and not isinstance(copies, bool) and copies > 0:
        return copies
    try:
        return max(copy_count(record), 1)
    except (TypeError, ValueError):  # not a value dlbench writes: one process
        return 1


def copy_values(record: Mapping[str, Any], metric: str) -> list[float]:
    """Each copy's own value of ``metric`` (one per GPU report); the one value of a
    record without copies; [] when the record has no number in ``metric``.

    Where the record lists no copy's value (``results.copy_<name>``), a key the copies
    sum (declared so, as ``results.throughput``) gives one value, the copies' mean.
    """
    value = as_number(record.get(metric))
    if value is None:
        return []
    count = copies_of(record)
    if count <= 1:
        return [value]
    own = record.get(f"results.copy_{metric.removeprefix('results.')}")
    if isinstance(own, list) and len(own) == count:
        numbers = [as_number(v) for v in own]
        if all(n is not None for n in numbers):
            return [float(n) for n in numbers if n is not None]
    key = lookup(metric)
    return [value / count] if key is not None and key.aggregate == "sum" else [value]


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= _SAME_MEAN * max(abs(a), abs(b))


def _split(data: list[float], means: list[float]) -> list[list[float]] | None:
    """``data`` cut, in order, into one run of batches per mean in ``means``: equal
    parts when they fit, else each part ending where its mean is its copy's (copies
    that stopped after different counts); None when no cut gives every mean."""
    count = len(means)
    if len(data) % count == 0:
        size = len(data) // count
        parts = [data[k * size:(k + 1) * size] for k in range(count)]
        if all(_same(math.fsum(p) / len(p), m) for p, m in zip(parts, means, strict=True)):
            return parts
    parts, start = [], 0
    for number, wanted in enumerate(means):
        if number == count - 1:
            end = len(data)
        else:
            total, end = 0.0, 0
            for stop in range(start, len(data)):
                total += data[stop]
                if _same(total / (stop - start + 1), wanted):
                    end = stop + 1
                    break
        part = data[start:end]
        if not part or not _same(math.fsum(part) / len(part), wanted):
            return None
        parts.append(part)
        start = end
    return parts


def copy_batch_times(record: Mapping[str, Any]) -> list[list[float]] | None:
    """Each copy's timed batch times, ms, from ``results.time_data`` (copies' batches
    in copy order) and each copy's batch count (``results.copy_num_batches``; in an
    older record, each copy's mean, ``results.copy_time``); None where the record
    does not hold them (no batch times; ``exp.repeat`` with copies keeps no copy's
    mean)."""
    data = record.get("results.time_data")
    if not isinstance(data, list) or not data:
        return None
    times = [as_number(t) for t in data]
    if any(t is None for t in times):
        return None
    batches = [float(t) for t in times if t is not None]
    if copies_of(record) <= 1:
        return [batches]
    counts = record.get("results.copy_num_batches")
    if isinstance(counts, list) and len(counts) == copies_of(record) and \
            all(isinstance(c, int) and c > 0 for c in counts) and sum(counts) == len(batches):
        starts = [sum(counts[:k]) for k in range(len(counts))]
        return [batches[s:s + c] for s, c in zip(starts, counts, strict=True)]
    # A record written before copies listed their batch counts: cut by their means.
    means = record.get("results.copy_time")
    if not isinstance(means, list) or len(means) != copies_of(record):
        return None
    numbers = [as_number(m) for m in means]
    if any(m is None for m in numbers):
        return None
    return _split(batches, [float(m) for m in numbers if m is not None])


def train_items(record: Mapping[str, Any]) -> list[TrainItem]:
    """Each copy's ``train_item`` (Mila's one report per GPU; one for a record without
    copies); [] where the record lacks each copy's batch times or batch size, or is
    not a run of training or inference steps (a serving scenario, generation)."""
    if record.get("exp.scenario", BATCH) not in (BATCH, None) or \
            record.get("exp.phase") == "generate":
        return []
    batches = copy_batch_times(record)
    if batches is None:
        return []
    rates, means = copy_values(record, THROUGHPUT), copy_values(record, _TIME)
    if not len(rates) == len(means) == len(batches):
        return []
    items: list[TrainItem] = []
    for rate, mean_ms, times in zip(rates, means, batches, strict=True):
        if min(times) <= 0:
            return []
        # What one step processes, in the unit of results.throughput.
        items.append(train_item(rate * mean_ms / 1000.0, times))
    return items
