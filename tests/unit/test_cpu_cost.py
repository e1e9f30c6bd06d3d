"""The work bound of tests/cpu_cost.py, on a fake clock: a ratio of CPU times."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.cpu_cost import CostBound, cpu_seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """A thread CPU clock that advances only when a test says so (``clock[0] += s``)."""
    now = [0.0]
    monkeypatch.setattr(time, "thread_time", lambda: now[0])
    return now


def _costs(clock: list[float], seconds: Iterator[float]) -> Callable[[], None]:
    def call() -> None:
        clock[0] += next(seconds)
    return call


def test_reference_is_the_least_of_its_repeats_after_a_first_call(clock: list[float]) -> None:
    # The first call (imports, caches) is left out; then 3 repeats: 0.2, 0.1, 0.3 s.
    bound = CostBound(_costs(clock, iter([9.0, 0.2, 0.1, 0.3])), factor=10, repeats=3)
    assert bound.reference_seconds == pytest.approx(0.1)
    assert bound.reference_seconds == pytest.approx(0.1)  # measured once


def test_a_call_within_the_factor_passes_and_one_beyond_fails(clock: list[float]) -> None:
    bound = CostBound(_costs(clock, iter([0.0, 0.1])), factor=10, repeats=1)
    bound.check(_costs(clock, iter([1.0])), "ten times")  # 1.0 / 0.1 = 10: at the bound
    with pytest.raises(AssertionError, match=r"over: 11 times the reference's CPU time"):
        bound.check(_costs(clock, iter([1.1])), "over")


def test_an_exception_of_the_call_comes_through_after_the_check(clock: list[float]) -> None:
    bound = CostBound(_costs(clock, iter([0.0, 0.1])), factor=10, repeats=1)

    def fails() -> None:
        clock[0] += 0.5
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        bound.check(fails)

    def fails_slowly() -> None:
        clock[0] += 5.0
        raise ValueError("refused")

    with pytest.raises(AssertionError, match="50 times"):
        bound.check(fails_slowly)


def test_cpu_seconds_and_a_zero_reference(clock: list[float]) -> None:
    assert cpu_seconds(_costs(clock, iter([0.25]))) == 0.25
    # A reference below the timer's grain counts as one microsecond, never zero.
    bound = CostBound(lambda: None, factor=2, repeats=2)
    assert bound.reference_seconds == 1e-6


@pytest.mark.parametrize(("factor", "repeats"), [(1.0, 5), (0.5, 5), (10.0, 0)])
def test_bad_bounds_are_refused(factor: float, repeats: int) -> None:
    with pytest.raises(ValueError, match="factor above 1"):
        CostBound(lambda: None, factor=factor, repeats=repeats)
