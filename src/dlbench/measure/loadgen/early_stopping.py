"""Early stopping: how many queries a latency percentile needs, and what it is worth.

MLPerf's LoadGen no longer asks for a fixed, large number of queries per run. It asks
a binomial question instead: if each query independently had probability ``1 - p``
of landing above the ``p``-th percentile, how unlikely is what we saw? With ``n``
queries of which ``t`` are "over", the run is accepted when

    P[Binomial(n, 1 - p) <= t] <= 1 - confidence        (confidence = 0.99)

i.e. seeing so few overs would be a 1-in-100 accident if the percentile were worse
than claimed. The same test serves two purposes:

- server: ``t`` counts the queries over the latency bound; the bound is met with 99%
  confidence when the inequality holds (:func:`bound_holds`);
- single- and multi-stream: the largest ``t`` for which it holds says how many of the
  slowest queries may be set aside, and the next one is a 99%-confidence upper
  estimate of the percentile (:func:`percentile_estimate`). It counts the estimate
  itself among the ``t``, as LoadGen does, which is one query more conservative than
  the textbook order-statistic bound.

Known answers (LoadGen's own figures): a server run at the 99th percentile with no
query over the bound needs 459 queries; a 90th-percentile estimate needs 64 queries,
a 99th-percentile one 662 (LoadGen's multi-stream ``min_query_count``).

Everything here is pure arithmetic on counts; no scipy, so the worker stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: LoadGen's confidence level for every early-stopping decision.
CONFIDENCE = 0.99


def _check(p: float, confidence: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"percentile fraction {p} outside (0, 1)")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence} outside (0, 1)")


def _cdf_terms(n: int, q: float) -> tuple[float, float]:
    """The log of P[X = 0] for X ~ Binomial(n, q), and log(q / (1 - q)): the start and
    the constant part of the ratio between consecutive terms. Kept in logs because
    ``(1 - q) ** n`` underflows for the run lengths LoadGen uses."""
    return n * math.log1p(-q), math.log(q) - math.log1p(-q)


def binomial_cdf(k: int, n: int, q: float) -> float:
    """P[X <= k] for X ~ Binomial(n, q), by summing the terms from 0 to ``k``.

    >>> round(binomial_cdf(0, 10, 0.5), 6)
    0.000977
    """
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    log_term, log_odds = _cdf_terms(n, q)
    total = 0.0
    for x in range(k + 1):
        total += math.exp(log_term)
        log_term += math.log((n - x) / (x + 1)) + log_odds
    return min(total, 1.0)


def largest_passing_overs(n: int, p: float, confidence: float = CONFIDENCE) -> int:
    """The largest ``t`` with P[Binomial(n, 1 - p) <= t] <= 1 - confidence, or -1
    when even ``t = 0`` fails (too few queries for any conclusion). The CDF grows
    with ``t``, so one pass from 0 upwards finds it."""
    _check(p, confidence)
    log_term, log_odds = _cdf_terms(n, 1.0 - p)
    total = 0.0
    for x in range(n + 1):
        total += math.exp(log_term)
        if total > 1.0 - confidence:
            return x - 1
        if x < n:
            log_term += math.log((n - x) / (x + 1)) + log_odds
    return n


def min_queries(overs: int, p: float, confidence: float = CONFIDENCE) -> int:
    """The fewest queries ``n`` for which ``overs`` queries over the ``p``-th
    percentile still pass: P[Binomial(n, 1 - p) <= overs] <= 1 - confidence.

    >>> min_queries(0, 0.99), min_queries(1, 0.90), min_queries(1, 0.99)
    (459, 64, 662)
    """
    _check(p, confidence)
    low = overs + 1  # the CDF falls as n grows: double, then bisect
    high = low
    while binomial_cdf(overs, high, 1.0 - p) > 1.0 - confidence:
        low, high = high + 1, high * 2
    while low < high:
        middle = (low + high) // 2
        if binomial_cdf(overs, middle, 1.0 - p) <= 1.0 - confidence:
            high = middle
        else:
            low = middle + 1
    return high


def percentile_estimate(latencies: Sequence[float], p: float,
                        confidence: float = CONFIDENCE) -> float | None:
    """A ``confidence`` upper estimate of the ``p``-th percentile (``p`` a fraction)
    of ``latencies``: the ``t``-th largest value, ``t`` the largest count that
    passes; None when there are too few for an estimate (fewer than
    ``min_queries(1, p)``)."""
    overs = largest_passing_overs(len(latencies), p, confidence)
    if overs < 1:
        return None
    return sorted(latencies)[len(latencies) - overs]


def bound_holds(latencies: Sequence[float], bound: float, p: float,
                confidence: float = CONFIDENCE) -> tuple[bool, int, int]:
    """Whether the queries over ``bound`` are few enough for the ``p``-th percentile
    to be under it with ``confidence``; also how many were over, and how many queries
    that count of overs would need (0 when the answer is already yes)."""
    overs = sum(1 for value in latencies if value > bound)
    if binomial_cdf(overs, len(latencies), 1.0 - p) <= 1.0 - confidence:
        return True, overs, 0
    return False, overs, min_queries(overs, p, confidence)
