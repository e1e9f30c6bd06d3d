"""Statistics of per-batch times.

All figures are computed from the raw, unrounded batch times, which are kept in the
record as ``results.time_data`` so that every summary can be recomputed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean. ``values`` must not be empty."""
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (divisor n - 1); 0.0 for fewer than two values."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks.

    This is the method numpy calls ``linear`` (its default), so figures agree with
    what a user computes from ``results.time_data`` with numpy or pandas.
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


def ci95_half_width(values: Sequence[float]) -> float | None:
    """Half-width of a 95 % confidence interval of the mean of ``values`` by the
    method of batch means, or None for fewer than 4 values.

    Consecutive batch times are correlated (caches, clocks, the allocator), so the
    textbook interval ``t·sd/√n`` is too narrow. The series is cut into
    ``k = ⌊√n⌋`` contiguous groups (at least 2; trailing values that do not fill a
    group are left out); the group means are close to independent, and the interval
    is ``t(k-1) · sd(group means) / √k``.
    """
    n = len(values)
    if n < 4:
        return None
    groups = max(2, math.isqrt(n))
    size = n // groups
    means = [mean(values[i * size:(i + 1) * size]) for i in range(groups)]
    return t_quantile_975(groups - 1) * sample_std(means) / math.sqrt(groups)


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


def throughput(effective_batch: int, mean_time_ms: float) -> float:
    """Samples per second: ``effective_batch × 1000 / mean_time_ms`` (DESIGN.md)."""
    if mean_time_ms <= 0:
        raise ValueError(f"mean batch time must be positive, got {mean_time_ms}")
    return effective_batch * 1000.0 / mean_time_ms
