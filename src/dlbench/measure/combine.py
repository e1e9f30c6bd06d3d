"""Several processes' results of one experiment made into one, by each key's declared rule.

An experiment is measured by several processes in two ways: ``exp.parallel_jobs``
copies that ran at the same time on one node (:data:`COPIES`), and ``exp.repeat``
processes that ran one after another (:data:`REPEATS`). Every ``results.*``, ``sys.*``
and ``hw.*`` key declares how its values combine (``ResultKey.aggregate``, and
``ResultKey.repeats`` where repeats differ, as a throughput does: copies add up to the
node's, repeats measure the same thing again); :func:`combine_results` applies those
rules and nothing else, so the rules are read in one place:

- ``mean``, ``sum``, ``max``, ``min``: of the processes' numbers (``max``/``min`` also
  of texts, such as ISO 8601 times); a boolean is not a number;
- ``all``, ``any``: of booleans; ``first``: the first process's value;
- ``concat``: lists joined in process order (a list of texts, such as the reasons a
  result is unstable, with each text labelled by its process), texts comma-joined
  once each;
- ``pooled``: the statistic of every process's batch times together
  (:func:`~dlbench.results.stats.summarize_times` of the joined ``results.time_data``);
- ``recomputed``: computed again from the combined figures (:data:`_RECOMPUTED`);
- ``none``: not combined; each process's own log keeps it.

A value some process lacks, or that does not fit its rule, is left out of the
combined record rather than guessed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dlbench.config.registry import found_batch_parameters
from dlbench.measure.peak.peaks import checked_mfu
from dlbench.results.keys.lookup import KEY_PREFIXES, lookup
from dlbench.results.stats import mean, sample_std, summarize_times, t_quantile_975
from dlbench.results.values import is_number

__all__ = ["COPIES", "REPEATS", "combine_repeats", "combine_results", "found_batch_outcome",
           "rule_of"]

#: Processes that ran at the same time, each on its share of one node.
COPIES = "copies"
#: Processes that ran one after another, each a fresh draw of the same measurement.
REPEATS = "repeats"

_Values = Sequence[Any]


def rule_of(name: str, axis: str) -> str:
    """How the values of ``name`` combine over ``axis`` (:data:`COPIES` or
    :data:`REPEATS`), as its key declares; ``none`` for an undeclared key."""
    key = lookup(name)
    if key is None:
        return "none"
    return (key.repeats or key.aggregate) if axis == REPEATS else key.aggregate


def _numbers(values: _Values) -> list[float] | None:
    return [float(v) for v in values] if all(is_number(v) for v in values) else None


def _ordered(values: _Values) -> bool:
    """Numbers, or texts (ISO 8601 times order as texts), but not a mix."""
    return _numbers(values) is not None or all(isinstance(v, str) for v in values)


def _sum(values: _Values) -> Any:
    numbers = _numbers(values)
    if numbers is None:
        return None
    if all(isinstance(v, int) for v in values):
        return sum(int(v) for v in values)
    return math.fsum(numbers)


def _concat(values: _Values, label: str) -> Any:
    if all(isinstance(v, list) for v in values):
        if all(isinstance(item, str) for v in values for item in v):
            return [f"{label} {k}: {item}" for k, v in enumerate(values, start=1) for item in v]
        return [item for v in values for item in v]
    if all(isinstance(v, str) for v in values):
        return ",".join(dict.fromkeys(values))
    return None


def _mean_of_numbers(values: _Values) -> Any:
    numbers = _numbers(values)
    return None if numbers is None else mean(numbers)


_PLAIN: dict[str, Callable[[_Values], Any]] = {
    "mean": _mean_of_numbers,
    "sum": _sum,
    "max": lambda v: max(v) if _ordered(v) else None,
    "min": lambda v: min(v) if _ordered(v) else None,
    "all": lambda v: all(v) if all(isinstance(x, bool) for x in v) else None,
    "any": lambda v: any(v) if all(isinstance(x, bool) for x in v) else None,
}


def _scaled_by_time(name: str, processes: Sequence[Mapping[str, Any]],
                    combined: Mapping[str, Any]) -> Any:
    """A figure proportional to 1 / time (a throughput, TFLOP/s, an MFU) at the
    combined ``results.time``: the first process's value times its time over it."""
    first = processes[0]
    value, own, time = first.get(name), first.get("results.time"), combined.get("results.time")
    if not (is_number(value) and is_number(own) and is_number(time)) or not time:
        return None
    return float(value) * float(own) / float(time)


def _between_processes(name: str, processes: Sequence[Mapping[str, Any]],
                       combined: Mapping[str, Any]) -> Any:
    """The 95 % interval of ``results.time`` between processes, ``t(N-1) sd / sqrt(N)``:
    each process is one draw, whatever its batch count (one process: none)."""
    means = _numbers([p.get("results.time") for p in processes])
    if means is None or len(means) < 2:
        return None
    half_width = t_quantile_975(len(means) - 1) * sample_std(means) / math.sqrt(len(means))
    if name == "results.ci95":
        return half_width
    average = mean(means)
    return half_width / average if average else None


def _mfu(name: str, processes: Sequence[Mapping[str, Any]], combined: Mapping[str, Any],
         devices: int) -> Any:
    """The share of the devices' peak the processes used together: copies add their
    MFUs over the devices they had (N GPUs, or the one CPU they all shared); repeats
    scale it with their combined time."""
    if devices == 0:
        return _scaled_by_time(name, processes, combined)
    values = _numbers([p.get(name) for p in processes])
    return None if values is None else math.fsum(values) / devices


def _samples_per_joule(processes: Sequence[Mapping[str, Any]]) -> Any:
    """Samples over energy, both summed over the processes."""
    rates = _numbers([p.get("results.use.samples_per_joule") for p in processes])
    energies = _numbers([p.get("results.use.energy_j") for p in processes])
    if rates is None or energies is None:
        return None
    energy = math.fsum(energies)
    samples = math.fsum(r * e for r, e in zip(rates, energies, strict=True))
    return samples / energy if energy else None


def _batch_weighted_mean(name: str, processes: Sequence[Mapping[str, Any]]) -> Any:
    """A mean over batches, of every process's batches together: each process's own
    mean weighted by its number of timed batches."""
    values = _numbers([p.get(name) for p in processes])
    counts = [len(t) if isinstance(t := p.get("results.time_data"), list) else 0
              for p in processes]
    if values is None or not all(counts):
        return None
    return math.fsum(v * n for v, n in zip(values, counts, strict=True)) / sum(counts)


_Processes = Sequence[Mapping[str, Any]]


def _found_batches(processes: _Processes) -> list[int] | None:
    """The batch each process found with exp.replica_batch=auto, or None unless every
    process found one."""
    batches = [p.get("results.auto_batch") for p in processes]
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in batches):
        return None
    return batches  # type: ignore[return-value]


def _agreed_batch(processes: _Processes) -> Any:
    """The batch every process found; None when they differ (none is the experiment's)."""
    batches = _found_batches(processes)
    return batches[0] if batches and len(set(batches)) == 1 else None

#: How each key declared ``recomputed`` (on some axis) is computed again, after every
#: other key is combined: ``(name, processes, combined, devices) -> value or None``.
_RECOMPUTED: dict[str, Callable[[str, _Processes, Mapping[str, Any], int], Any]] = {
    "results.throughput": lambda n, p, c, d: _scaled_by_time(n, p, c),
    "results.tflops": lambda n, p, c, d: _scaled_by_time(n, p, c),
    "results.throughput_batch_mean": lambda n, p, c, d: _batch_weighted_mean(n, p),
    "results.ci95": lambda n, p, c, d: _between_processes(n, p, c),
    "results.ci95_rel": lambda n, p, c, d: _between_processes(n, p, c),
    "results.mfu": _mfu,
    "results.use.samples_per_joule": lambda n, p, c, d: _samples_per_joule(p),
    "results.auto_batch": lambda n, p, c, d: _agreed_batch(p),
    "results.auto_batches": lambda n, p, c, d: _found_batches(p),
}

#: Recomputed keys no process writes, each listing every process's value of the key it
#: names: computed when some process has that key.
_LISTED = {"results.auto_batches": "results.auto_batch"}


def combine_results(
    processes: Sequence[Mapping[str, Any]], axis: str, *, devices: int = 0,
    label: str = "process",
) -> dict[str, Any]:
    """The declared keys (``results.*``, ``sys.*``, ``hw.*``) of ``processes``, one
    experiment's, combined by each key's rule over ``axis``. ``devices`` is how many
    devices the copies' peaks add up to (one per GPU copy; 1 for copies sharing the
    CPU); 0 for repeats. ``label`` names a process in labelled texts (``copy 2: ...``).
    Keys that are not declared (``exp.*``, framework parameters) are the caller's.
    """
    if not processes:
        raise ValueError("combine_results needs at least one process")
    if axis not in (COPIES, REPEATS):
        raise ValueError(f"axis must be {COPIES!r} or {REPEATS!r}, got {axis!r}")
    batch_times = [p.get("results.time_data") for p in processes]
    pooled: dict[str, Any] = {}
    if all(isinstance(t, list) and t for t in batch_times):
        joined = _numbers([x for t in batch_times for x in t])  # type: ignore[union-attr]
        pooled = dict(summarize_times(joined)) if joined is not None else {}
    names = [n for n in dict.fromkeys([*(k for p in processes for k in p), *pooled])
             if n.startswith(KEY_PREFIXES)]
    combined: dict[str, Any] = {}
    later: list[str] = []
    for name in names:
        rule = rule_of(name, axis)
        if rule == "recomputed" and name in _RECOMPUTED:
            later.append(name)
            continue
        values = [p[name] for p in processes if name in p]
        if rule == "pooled":
            value = pooled.get(name)
        elif rule == "first":
            value = values[0]
        elif len(values) < len(processes):
            continue  # some process lacks it: its own log keeps it
        elif rule == "concat":
            value = _concat(values, label)
        elif rule in _PLAIN:
            value = _PLAIN[rule](values)
        else:
            continue  # none, or a rule this key cannot take
        if value is not None or rule == "first":
            combined[name] = value
    listed = [name for name, source in _LISTED.items() if source in names]
    for name in [*later, *listed]:
        value = _RECOMPUTED[name](name, processes, combined, devices)
        if value is None:  # e.g. one process has no between-process interval
            value = pooled.get(name)
        if value is not None:
            combined[name] = value
    # An MFU above 1 is a wrong peak, whether one process's or the combination's.
    combined.update(checked_mfu(combined))
    return combined


def found_batch_outcome(record: Mapping[str, Any]) -> dict[str, Any]:
    """What ``exp.replica_batch=auto`` found, for the combined ``record`` of several
    processes (its parameters, combined results and verdict): when every process found
    the same batch, the batch parameters (``exp.replica_batch``, ``exp.device_batch``,
    ``exp.effective_batch``) set to it; when they differ, no batch is the experiment's:
    the parameters stay ``auto``, ``results.auto_batches`` keeps each process's and the
    result is marked unstable with the reason. Nothing for an experiment with a batch.

    >>> found_batch_outcome({"exp.replica_batch": "auto", "exp.num_replicas": 1,
    ...                      "results.auto_batch": 40})["exp.effective_batch"]
    40
    """
    if record.get("exp.replica_batch") != "auto":
        return {}
    batch = record.get("results.auto_batch")
    if isinstance(batch, int) and not isinstance(batch, bool):
        return found_batch_parameters(record, batch)
    batches = record.get("results.auto_batches")
    if not isinstance(batches, list):
        return {}
    reasons = record.get("results.unstable_reasons")
    found = ", ".join(map(str, batches))
    return {"results.stable": False, "results.unstable_reasons": [
        *(reasons if isinstance(reasons, list) else []),
        f"the processes found different batches with exp.replica_batch=auto ({found})"]}


#: Per-process values an experiment run by several processes (``exp.repeat``) keeps
#: as lists, ``results.repeat_<name>``.
_PER_PROCESS = ("num_batches", "num_warmup_batches", "stop_reason", "time_cv")


def combine_repeats(processes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``results.*`` of one experiment measured by several independent processes
    (``exp.repeat``), one after another.

    The declared keys combine by their rules over :data:`REPEATS`: ``results.time`` is
    the mean of the processes' means (each process is one draw of whatever a fresh
    process gets: memory layout, clocks, placement; each counts once whatever its
    batch count), ``results.ci95`` the between-process interval, the spread of batch
    times (``time_std``, ``time_cv``, percentiles) is over all processes' batches
    together (``results.time_data``, in process order), and throughput, TFLOP/s and
    MFU are recomputed from the combined time. Added here: the per-process lists
    (``results.repeat_*``) and the between-process spread.
    """
    combined = combine_results(processes, REPEATS)
    means = [float(p["results.time"]) for p in processes]
    average, between_sd = mean(means), sample_std(means)
    combined["results.repeat_times"] = means
    combined["results.repeat_time_std"] = between_sd
    combined["results.repeat_cv"] = between_sd / average if average else None
    for name in _PER_PROCESS:
        combined[f"results.repeat_{name}"] = [p.get(f"results.{name}") for p in processes]
    cvs = [float(p["results.time_cv"]) for p in processes if is_number(p.get("results.time_cv"))]
    combined["results.repeat_within_cv"] = mean(cvs) if cvs else None
    return combined
