"""Statistics: the one mean, sample standard deviation and percentile of dlbench,
and the summaries of per-batch times built on them.

The worker (``results.time*``), the parent (repeats and parallel copies) and every
report (means and spreads of repeated measurements, the scorecard's sd% quantile)
compute their figures here, so a number means the same wherever it is shown. The
module lives in ``results`` because both the worker side (``measure``) and
``report`` may import it (docs/design.md, "The import rule").

All figures are computed from the raw, unrounded batch times, which are kept in the
record as ``results.time_data`` so that every summary can be recomputed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean. ``values`` must not be empty."""
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def mean_or_none(values: Sequence[float]) -> float | None:
    """:func:`mean`, or None when there are no values (a table cell left empty)."""
    return mean(values) if values else None


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (divisor n - 1); 0.0 for fewer than two values.

    The deviations from :func:`mean` are squared one by one, each square correctly
    rounded (``d * d``; Python's ``d ** 2`` is the C library's ``pow``, one unit in
    the last place off for about one value in a thousand), and summed exactly.

    >>> sample_std([10.0, 12.0, 14.0])
    2.0
    """
    n = len(values)
    if n < 2:
        return 0.0
    # NumPy is loaded when a spread is computed, not by each module that imports this
    # one for its other figures (``dlbench plan`` starts without it).
    import numpy as np

    deviations = np.asarray(values, dtype=float) - mean(values)
    return math.sqrt(math.fsum((deviations * deviations).tolist()) / (n - 1))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks.

    This is the method numpy calls ``linear`` (its default), so figures agree with
    what a user computes from ``results.time_data`` with numpy or pandas, to the last
    bit or one unit in it: ``numpy.percentile`` rounds the interpolation its own way
    (from the upper rank when past the middle), which would change the last bit of
    about one stored percentile in nine, so the rule stays written out here
    (docs/design.md, "Statistics").

    >>> percentile([10.0, 20.0, 30.0, 40.0], 50)
    25.0
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} outside 0..100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def loadgen_percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0 < q < 100) by LoadGen's rule: the sorted value at
    index ``floor(n * q / 100)``, a value that was measured (no interpolation).

    MLPerf LoadGen reports serving latencies this way; ``results.latency_p*`` and the
    generation figures (``results.ttft_p*``) follow it so that they compare with
    LoadGen's. Batch times use :func:`percentile` (numpy's rule).

    >>> loadgen_percentile(list(range(1, 101)), 90)
    91
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 < q < 100.0:
        raise ValueError(f"percentile {q} outside (0, 100)")
    index = math.floor(len(values) * q / 100.0 + 1e-9)
    return sorted(values)[min(index, len(values) - 1)]


# Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom.

    Tabulated up to 30; beyond, the Cornish-Fisher expansion around the normal
    quantile (error below 1e-4), so the worker needs no scipy.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def _group_statistic(values: Sequence[float], statistic: str) -> list[float]:
    """The ``statistic`` (``mean`` or ``median``) of each of ``k = max(2, ⌊√n⌋)``
    contiguous groups of ``values`` (trailing values that fill no group left out)."""
    groups = max(2, math.isqrt(len(values)))
    size = len(values) // groups
    parts = [values[i * size:(i + 1) * size] for i in range(groups)]
    if statistic == "mean":
        return [mean(part) for part in parts]
    return [percentile(part, 50) for part in parts]


def ci95_half_width(values: Sequence[float]) -> float | None:
    """Half-width of a 95 % confidence interval of the mean of ``values`` by the
    method of batch means, or None for fewer than 4 values.

    Consecutive batch times are correlated (caches, clocks, the allocator), so the
    textbook interval ``t·sd/√n`` is too narrow. The series is cut into
    ``k = ⌊√n⌋`` contiguous groups (at least 2; trailing values that do not fill a
    group are left out); the group means are close to independent, and the interval
    is ``t(k-1) · sd(group means) / √k``.
    """
    if len(values) < 4:
        return None
    means = _group_statistic(values, "mean")
    return t_quantile_975(len(means) - 1) * sample_std(means) / math.sqrt(len(means))


def median_ci95_half_width(values: Sequence[float]) -> float | None:
    """Half-width of a 95 % confidence interval of the median batch time, by batch
    medians, or None for fewer than 4 values.

    The batch-means interval of :func:`ci95_half_width` with each group's median in
    place of its mean: ``t(k-1) · sd(group medians) / √k`` over ``k = ⌊√n⌋``
    contiguous groups. A group's median ignores the few batches a shared machine
    makes several times slower (an interrupted thread), which move a group's mean
    and so widen the mean's interval; contiguous groups keep consecutive batches'
    correlation inside a group, as for the mean. Relative to the median of all
    values it is ``results.ci95_median_rel``.

    >>> median_ci95_half_width([10.0, 10.0, 10.0, 10.0, 50.0, 10.0, 10.0, 10.0, 10.0])
    0.0
    """
    if len(values) < 4:
        return None
    medians = _group_statistic(values, "median")
    return t_quantile_975(len(medians) - 1) * sample_std(medians) / math.sqrt(len(medians))


def summarize_times(times_ms: Sequence[float]) -> dict[str, float | None]:
    """The ``results.time*`` summary of batch times in milliseconds."""
    average = mean(times_ms)
    sd = sample_std(times_ms)
    ci95 = ci95_half_width(times_ms)
    return {
        "results.time": average,
        "results.time_std": sd,
        "results.time_cv": sd / average if average else None,
        "results.time_min": min(times_ms),
        "results.time_max": max(times_ms),
        "results.time_p50": percentile(times_ms, 50),
        "results.time_p90": percentile(times_ms, 90),
        "results.time_p95": percentile(times_ms, 95),
        "results.time_p99": percentile(times_ms, 99),
        "results.ci95": ci95,
        "results.ci95_rel": ci95 / average if ci95 is not None and average else None,
    }


def step_times(rank_times_ms: Sequence[Sequence[float]]) -> list[float]:
    """The time of each data-parallel step across replicas: the slowest replica's.

    Replicas meet in every step's gradient all-reduce, so a step is over for the
    whole run only when its slowest replica is done.

    >>> step_times([[10.0, 12.0], [11.0, 9.0]])
    [11.0, 12.0]
    """
    lengths = {len(times) for times in rank_times_ms}
    if len(lengths) != 1:
        raise ValueError(f"replicas timed different numbers of steps: {sorted(lengths)}")
    return [max(step) for step in zip(*rank_times_ms, strict=True)]


def rank_results(rank_times_ms: Sequence[Sequence[float]], replica_batch: int) -> dict[str, Any]:
    """Per-replica figures of a data-parallel run: each replica's mean batch time, its
    own throughput (``replica_batch × 1000 / time``) and its batch times."""
    times = [mean(t) for t in rank_times_ms]
    return {
        "results.rank_time": times,
        "results.rank_throughput": [throughput(replica_batch, t) for t in times],
        "results.rank_time_data": [list(t) for t in rank_times_ms],
    }


def throughput(effective_batch: int, mean_time_ms: float) -> float:
    """Samples per second: ``effective_batch × 1000 / mean_time_ms`` (DESIGN.md)."""
    if mean_time_ms <= 0:
        raise ValueError(f"mean batch time must be positive, got {mean_time_ms}")
    return effective_batch * 1000.0 / mean_time_ms


def throughput_batch_mean(effective_batch: int, times_ms: Sequence[float]) -> float:
    """The mean over batches of each batch's own throughput,
    ``mean(effective_batch × 1000 / t_i)``, samples per second.

    ``results.throughput`` is :func:`throughput` of the mean time, a harmonic-style
    mean of the per-batch throughputs; this arithmetic one is what a study that
    reports "throughput as a mean over batches" computes. It is never the smaller
    (Jensen's inequality), and the slow batches weigh less in it.

    >>> throughput_batch_mean(10, [10.0, 40.0])
    625.0
    """
    if not times_ms:
        raise ValueError("throughput of no batches")
    if min(times_ms) <= 0:
        raise ValueError(f"batch times must be positive, got {min(times_ms)}")
    return mean([effective_batch * 1000.0 / t for t in times_ms])
