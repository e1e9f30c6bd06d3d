"""The change-point detector (E-divisive means with a permutation test) on series whose
answer is known: a 5 % step at a known run over 60 runs, and no step at all.

The noise is 2 % (standard deviation over the mean) per run, what per-run means of a
benchmark on a shared machine show; docs/history.md gives the detection and false
alarm rates measured over 300 seeds at 2 % and 5 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from dlbench.report.history.changepoint import ChangePoint, detect_change_points, segment_means

RUNS = 60
STEP_AT = 40
NOISE = 0.02
STEP = 0.05


def _series(seed: int, step: float = 0.0, at: int = STEP_AT, n: int = RUNS) -> list[float]:
    rng = np.random.default_rng(1000 + seed)
    values = 100.0 * (1.0 + NOISE * rng.standard_normal(n))
    values[at:] *= 1.0 - step
    return [float(v) for v in values]


@pytest.mark.parametrize("seed", range(5))
def test_a_5_percent_step_is_found_where_it_is_and_nowhere_else(seed: int) -> None:
    points = detect_change_points(_series(seed, STEP), seed=seed)
    assert len(points) == 1, points
    (point,) = points
    # A step of 2.5 standard deviations is placed within two runs of where it is.
    assert abs(point.index - STEP_AT) <= 2
    assert -0.075 < point.change < -0.03
    assert point.p_value <= 0.01


@pytest.mark.parametrize("seed", range(5))
def test_a_series_without_a_step_has_no_change_point(seed: int) -> None:
    assert detect_change_points(_series(seed), seed=seed) == []


def test_the_step_is_found_at_the_newest_runs_too() -> None:
    # Five runs after it: the detector needs min_size (4) runs on either side.
    (point,) = detect_change_points(_series(1, STEP, at=55), seed=1)
    assert abs(point.index - 55) <= 2 and point.change < 0


def test_two_steps_give_two_change_points_with_their_segment_means() -> None:
    values = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0] * 3 + [120.0, 121.0, 119.0] * 4
    values += [90.0, 91.0, 89.0] * 4
    points = detect_change_points(values, seed=0)
    assert [p.index for p in points] == [18, 30]
    assert points[0].mean_before == pytest.approx(100.0)
    assert points[0].mean_after == pytest.approx(120.0)
    assert points[0].change == pytest.approx(0.2)
    assert points[1].mean_before == pytest.approx(120.0)
    assert points[1].change == pytest.approx(90.0 / 120.0 - 1.0)
    means = segment_means(values, points)
    assert means[:18] == [pytest.approx(100.0)] * 18
    assert means[18:30] == [pytest.approx(120.0)] * 12
    assert means[30:] == [pytest.approx(90.0)] * 12


def test_one_outlier_is_not_a_change() -> None:
    values = _series(2)
    values[30] *= 0.7
    assert detect_change_points(values, seed=0) == []


def test_the_same_series_and_seed_give_the_same_answer() -> None:
    values = _series(3, STEP)
    assert detect_change_points(values, seed=7) == detect_change_points(values, seed=7)


def test_the_p_value_is_bounded_by_the_permutations() -> None:
    (point,) = detect_change_points(_series(0, 0.2), permutations=49, p_threshold=0.05, seed=0)
    assert point.p_value == pytest.approx(1 / 50)


def test_short_and_constant_series_have_no_change_point() -> None:
    assert detect_change_points([1.0, 2.0, 3.0]) == []
    assert detect_change_points([]) == []
    assert detect_change_points([5.0] * 30) == []


def test_change_is_nan_for_a_zero_mean_before() -> None:
    point = ChangePoint(index=3, p_value=0.01, statistic=1.0, mean_before=0.0, mean_after=1.0)
    assert np.isnan(point.change)


@pytest.mark.parametrize(
    ("values", "options", "message"),
    [
        ([1.0, float("nan")], {}, "finite"),
        ([[1.0, 2.0]], {}, "one-dimensional"),
        ([1.0], {"p_threshold": 0.0}, "p_threshold"),
        ([1.0], {"permutations": 0}, "permutations"),
        ([1.0], {"min_size": 1}, "min_size"),
    ],
)
def test_bad_input_is_refused(values: list[float], options: dict[str, float],
                              message: str) -> None:
    with pytest.raises(ValueError, match=message):
        detect_change_points(values, **options)  # type: ignore[arg-type]
