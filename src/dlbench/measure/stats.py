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


def summarize_times(times_ms: Sequence[float]) -> dict[str, float]:
    """The ``results.time*`` summary of batch times in milliseconds."""
    return {
        "results.time": mean(times_ms),
        "results.time_std": sample_std(times_ms),
        "results.time_min": min(times_ms),
        "results.time_max": max(times_ms),
        "results.time_p50": percentile(times_ms, 50),
        "results.time_p90": percentile(times_ms, 90),
        "results.time_p99": percentile(times_ms, 99),
    }


def throughput(effective_batch: int, mean_time_ms: float) -> float:
    """Samples per second: ``effective_batch × 1000 / mean_time_ms`` (DESIGN.md)."""
    if mean_time_ms <= 0:
        raise ValueError(f"mean batch time must be positive, got {mean_time_ms}")
    return effective_batch * 1000.0 / mean_time_ms
