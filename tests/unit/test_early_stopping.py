"""Early stopping and LoadGen's percentile rule: known answers, and the binomial
arithmetic checked against scipy."""

from __future__ import annotations

import pytest
from scipy.stats import binom  # type: ignore[import-untyped]

from dlbench.measure.loadgen.early_stopping import (
    binomial_cdf,
    bound_holds,
    largest_passing_overs,
    min_queries,
    percentile_estimate,
)
from dlbench.results.stats import loadgen_percentile


def test_min_queries_known_answers() -> None:
    # The counts LoadGen's early stopping is known for: a server run at the 99th
    # percentile with no query over the bound, and the estimates of the 90th (single
    # stream) and 99th percentiles (MLPerf's multi-stream min_query_count, 662).
    assert min_queries(0, 0.99) == 459
    assert min_queries(0, 0.90) == 44
    assert min_queries(1, 0.90) == 64
    assert min_queries(1, 0.99) == 662
    assert min_queries(1, 0.999) == 6636


@pytest.mark.parametrize(("k", "n", "q"), [(0, 10, 0.5), (3, 500, 0.01), (12, 100, 0.1),
                                           (150, 20000, 0.01), (0, 100000, 0.01)])
def test_binomial_cdf_matches_scipy(k: int, n: int, q: float) -> None:
    assert binomial_cdf(k, n, q) == pytest.approx(float(binom.cdf(k, n, q)), rel=1e-9,
                                                  abs=1e-300)


def test_min_queries_is_the_first_passing_count() -> None:
    for overs, p in [(0, 0.99), (3, 0.99), (10, 0.9), (40, 0.97)]:
        n = min_queries(overs, p)
        assert binom.cdf(overs, n, 1 - p) <= 0.01 < binom.cdf(overs, n - 1, 1 - p)


def test_largest_passing_overs_inverts_min_queries() -> None:
    for n, p in [(44, 0.9), (100, 0.9), (662, 0.99), (5000, 0.99), (100000, 0.9)]:
        t = largest_passing_overs(n, p)
        assert min_queries(t, p) <= n < min_queries(t + 1, p), (n, p, t)
    assert largest_passing_overs(43, 0.9) == -1  # too few for any conclusion
    assert largest_passing_overs(0, 0.9) == -1


def test_percentile_estimate_sets_aside_the_slowest() -> None:
    values = [float(v) for v in range(1, 64)]  # 63: one short of an estimate at p90
    assert percentile_estimate(values, 0.9) is None
    values.append(64.0)
    assert percentile_estimate(values, 0.9) == 64.0  # t = 1: the largest itself
    many = [float(v) for v in range(1, 1001)]
    t = largest_passing_overs(1000, 0.9)
    estimate = percentile_estimate(many, 0.9)
    assert estimate == 1000 - t + 1  # the t-th largest
    assert estimate > loadgen_percentile(many, 90)  # conservative


def test_bound_holds_counts_overs() -> None:
    under = [0.001] * 459
    assert bound_holds(under, 0.002, 0.99) == (True, 0, 0)
    assert bound_holds(under[:458], 0.002, 0.99) == (False, 0, 459)
    three_over = [0.001] * 497 + [0.005] * 3
    assert bound_holds(three_over, 0.002, 0.99) == (False, 3, min_queries(3, 0.99))


def test_loadgen_percentile_rule() -> None:
    values = list(range(1, 101))
    # Index floor(n q / 100): the 91st smallest of 100 at q=90, where nearest rank
    # gives the 90th; the same as nearest rank when n q / 100 is not whole.
    assert loadgen_percentile(values, 90) == 91
    assert loadgen_percentile(values, 50) == 51
    assert loadgen_percentile(values, 99) == 100
    assert loadgen_percentile(list(range(1, 11)), 99) == 10
    assert loadgen_percentile([3.0, 1.0, 2.0], 50) == 2.0  # floor(1.5) = 1: sorted
    assert loadgen_percentile(list(range(1, 1001)), 99.9) == 1000
    for bad in (0, 100):
        with pytest.raises(ValueError):
            loadgen_percentile(values, bad)
