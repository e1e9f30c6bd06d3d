"""Paired comparison of two configurations measured interleaved (``dlbench run
--interleave``): process k of A ran next to process k of B.

On a shared machine the speed drifts between processes by more than the difference
being looked for; Welch's test on pooled batches sees that drift as noise at best
and, since batches within one process are correlated, as a difference at worst.
Interleaved, the drift is common to the two members of a pair, so each pair's ratio
cancels it. Each process is summarised by its median batch time (a hiccup of the
machine moves a mean, not a median); the ratio B/A is the geometric mean of the
pairs' ratios and its p-value is the paired t-test on their logarithms (two-sided,
n - 1 degrees of freedom), so the verdict rests on processes, the independent draws,
never on batches.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from dlbench.results.keys.table import REPEAT_ORDER_INTERLEAVED as INTERLEAVED
from dlbench.results.stats import mean, percentile, sample_std
from dlbench.results.values import is_number

__all__ = ["INTERLEAVED", "is_batch_time_statistic", "paired_ratio", "paired_values",
           "process_medians"]

#: The results that are a statistic of one distribution of batch times (the mean, a
#: percentile, the extremes), so that the batch times themselves are their samples; not
#: their spread (``results.time_std``, ``results.time_cv``) nor ``results.time_to_target``.
_BATCH_TIME_STATISTIC = re.compile(r"results\.time(?:_p[0-9]+|_min|_max)?")


def is_batch_time_statistic(metric: str) -> bool:
    """Whether the batch times (``results.time_data``) are the samples of ``metric``."""
    return _BATCH_TIME_STATISTIC.fullmatch(metric) is not None


def process_medians(record: Mapping[str, Any]) -> list[float] | None:
    """Each process's median batch time, from the pooled ``results.time_data`` split
    by ``results.repeat_num_batches``; None when the record cannot be split."""
    times = record.get("results.time_data")
    counts = record.get("results.repeat_num_batches")
    if not isinstance(times, list) or not isinstance(counts, list) or not counts:
        return None
    if not all(isinstance(c, int) and c > 0 for c in counts) or sum(counts) != len(times):
        return None
    medians, start = [], 0
    for count in counts:
        medians.append(float(percentile(times[start:start + count], 50)))
        start += count
    return medians


def paired_values(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], metric: str
) -> tuple[list[float], list[float]] | None:
    """Per-process values of ``metric`` on each side, pair by pair, when the sides are
    one interleaved record each with as many processes; else None."""
    if len(a) != 1 or len(b) != 1:
        return None
    if not is_batch_time_statistic(metric) and metric != "results.throughput":
        return None
    sides = []
    for record in (a[0], b[0]):
        medians = process_medians(record)
        if record.get("results.repeat_order") != INTERLEAVED or medians is None:
            return None
        if metric == "results.throughput":
            batch = record.get("exp.effective_batch")
            if not is_number(batch) or not all(m > 0 for m in medians):
                return None
            medians = [float(batch) * 1000.0 / m for m in medians]
        sides.append(medians)
    if len(sides[0]) != len(sides[1]) or len(sides[0]) < 2:
        return None
    return sides[0], sides[1]


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The ratio B/A (geometric mean of the pairs' ratios) and the two-sided p-value
    of the paired t-test on the log ratios. All ratios equal: p is 1.0 when they are 1,
    else 0.0 (the test is undefined without spread)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("paired_ratio needs two equally long sides of at least 2 values")
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    average = mean(logs)
    spread = sample_std(logs)
    if spread == 0:
        return math.exp(average), 1.0 if average == 0 else 0.0
    from scipy import stats  # type: ignore[import-untyped]  # costly import; only here

    t = average / (spread / math.sqrt(len(logs)))
    return math.exp(average), float(2 * stats.t.sf(abs(t), len(logs) - 1))
