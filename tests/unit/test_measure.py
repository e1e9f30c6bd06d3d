"""Known-answer vectors for the statistics and the timing loop."""

from __future__ import annotations

import math

import pytest

from dlbench.measure.timing import run_batches
from dlbench.results.stats import mean, percentile, sample_std, summarize_times, throughput


def test_summary_of_four_times_by_hand() -> None:
    # mean = 100/4 = 25; squared deviations 225+25+25+225 = 500; sd = sqrt(500/3)
    # percentiles by linear interpolation at rank (n-1)*q/100 over [10, 20, 30, 40]:
    # p50 rank 1.5 -> 25; p90 rank 2.7 -> 37; p99 rank 2.97 -> 39.7
    summary = summarize_times([40.0, 10.0, 30.0, 20.0])
    assert summary["results.time"] == 25.0
    assert summary["results.time_std"] == pytest.approx(math.sqrt(500 / 3))
    assert summary["results.time_p50"] == pytest.approx(25.0)
    assert summary["results.time_p90"] == pytest.approx(37.0)
    assert summary["results.time_p99"] == pytest.approx(39.7)
    assert summary["results.time_min"] == 10.0
    assert summary["results.time_max"] == 40.0


def test_single_value() -> None:
    assert sample_std([5.0]) == 0.0
    assert percentile([5.0], 99) == 5.0
    assert mean([5.0]) == 5.0


def test_percentile_extremes_and_bad_input() -> None:
    assert percentile([3.0, 1.0, 2.0], 0) == 1.0
    assert percentile([3.0, 1.0, 2.0], 100) == 3.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)
    with pytest.raises(ValueError):
        mean([])


def test_throughput_formula() -> None:
    # effective batch 32 in 250 ms -> 32 * 1000 / 250 = 128 samples/s
    assert throughput(32, 250.0) == 128.0
    with pytest.raises(ValueError):
        throughput(32, 0.0)


def test_timing_loop_times_only_timed_batches() -> None:
    ticks = iter(range(0, 10**9, 1_000_000))  # each clock read advances 1 ms
    calls: list[tuple[str, int]] = []

    def step(index: int) -> None:
        calls.append(("step", index))

    def sync() -> None:
        calls.append(("sync", -1))

    times = run_batches(step, sync, 2, 3, clock=lambda: next(ticks)).times_ms
    assert times == [1.0, 1.0, 1.0]
    # warm-up steps 0 and 1 run before timing; every timed step is synchronised
    assert [i for kind, i in calls if kind == "step"] == [0, 1, 2, 3, 4]
    assert calls[2] == ("sync", -1)
    assert calls[-1] == ("sync", -1)


def test_t_quantiles_agree_with_scipy() -> None:
    from scipy import stats

    from dlbench.results.stats import t_quantile_975

    for df in (1, 2, 5, 10, 29, 30, 31, 50, 100, 1000):
        assert t_quantile_975(df) == pytest.approx(stats.t.ppf(0.975, df), abs=2e-3)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_ci95_by_batch_means_by_hand() -> None:
    from dlbench.results.stats import ci95_half_width

    # n = 9 -> k = 3 groups of 3: means 2, 5, 8; their sd = 3; t(2) = 4.303
    # half-width = 4.303 * 3 / sqrt(3) = 7.4530...
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert ci95_half_width(values) == pytest.approx(4.303 * 3 / math.sqrt(3))
    # n = 10 -> k = 3 groups of 3, the 10th value is left out: same answer
    assert ci95_half_width([*values, 1000.0]) == pytest.approx(4.303 * 3 / math.sqrt(3))
    assert ci95_half_width([1.0, 2.0, 3.0]) is None
    assert ci95_half_width([5.0] * 16) == 0.0


def test_ci_is_wider_for_correlated_than_for_shuffled_times() -> None:
    import random

    from dlbench.results.stats import ci95_half_width

    # A slow drift (strong autocorrelation): batch means see it, t*sd/sqrt(n) would not.
    drifting = [10.0 + i * 0.01 for i in range(400)]
    shuffled = drifting[:]
    random.Random(0).shuffle(shuffled)
    wide, narrow = ci95_half_width(drifting), ci95_half_width(shuffled)
    assert wide is not None and narrow is not None
    assert wide > 3 * narrow


def test_summary_has_cv_p95_and_ci() -> None:
    summary = summarize_times([10.0, 20.0, 30.0, 40.0])
    # cv = sd / mean = sqrt(500/3) / 25; p95 at rank 2.85 -> 30 + 0.85 * 10 = 38.5
    assert summary["results.time_cv"] == pytest.approx(math.sqrt(500 / 3) / 25)
    assert summary["results.time_p95"] == pytest.approx(38.5)
    # n = 4 -> 2 groups of 2: means 15 and 35, sd = 14.142..., t(1) = 12.706
    assert summary["results.ci95"] == pytest.approx(12.706 * math.sqrt(200) / math.sqrt(2))
    assert summary["results.ci95_rel"] == pytest.approx(summary["results.ci95"] / 25)
