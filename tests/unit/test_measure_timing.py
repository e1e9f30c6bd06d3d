"""The timing loop's policies, driven by a simulated clock so answers are exact."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

import dlbench.measure.timing as timing
from dlbench.measure.timing import AutoStop, AutoWarmup, run_batches, warmup_settled


class SimulatedDevice:
    """A step that advances a fake clock by a given duration (ms) per batch index."""

    def __init__(self, duration_ms: Callable[[int], float]) -> None:
        self.duration_ms = duration_ms
        self.now_ns = 0
        self.steps: list[int] = []

    def step(self, index: int) -> None:
        self.steps.append(index)
        self.now_ns += round(self.duration_ms(index) * 1e6)

    def sync(self) -> None:
        pass

    def clock(self) -> int:
        return self.now_ns


def _stop(**overrides: float) -> AutoStop:
    values = {"min_batches": 10, "min_seconds": 0.05, "max_seconds": 10.0,
              "target_ci": 0.01, "max_batches": 10_000, **overrides}
    return AutoStop(**values)  # type: ignore[arg-type]


def test_fixed_counts_report_fixed() -> None:
    device = SimulatedDevice(lambda i: 2.0)
    result = run_batches(device.step, device.sync, 3, 5, clock=device.clock)
    assert result.times_ms == [2.0] * 5
    assert result.num_warmup == 3
    assert result.stop_reason == "fixed"
    assert result.warmup_times_ms == []  # a fixed warm-up is not timed
    assert device.steps == list(range(8))


def test_steady_workload_stops_at_the_first_check() -> None:
    # Every batch takes exactly 10 ms, so the CI is 0 at the first check: batch 10,
    # when min_batches (10) and min_seconds (0.05 s; 10 batches = 0.1 s) are both met.
    device = SimulatedDevice(lambda i: 10.0)
    result = run_batches(device.step, device.sync, 0, _stop(), clock=device.clock)
    assert result.stop_reason == "ci_reached"
    assert len(result.times_ms) == 10
    assert result.elapsed_s == pytest.approx(0.1)


def test_min_duration_holds_the_stop_back() -> None:
    # CI is 0 from the start, but 0.5 s of 10 ms batches is 50 batches.
    device = SimulatedDevice(lambda i: 10.0)
    result = run_batches(device.step, device.sync, 0, _stop(min_seconds=0.5),
                         clock=device.clock)
    assert result.stop_reason == "ci_reached"
    assert len(result.times_ms) == 50


def test_noisy_workload_runs_to_max_duration() -> None:
    # Times uniform in [5, 45] ms: cv ~ 0.46, so ±1% needs thousands of batches; the
    # limit of 0.5 s stops it first, at the first batch that ends past 0.5 s.
    rng = random.Random(1)
    device = SimulatedDevice(lambda i: rng.uniform(5.0, 45.0))
    result = run_batches(device.step, device.sync, 0, _stop(max_seconds=0.5),
                         clock=device.clock)
    assert result.stop_reason == "max_duration"
    total_s = sum(result.times_ms) / 1000
    assert total_s >= 0.5
    assert total_s - result.times_ms[-1] / 1000 < 0.5


def test_max_batches_caps_the_run() -> None:
    rng = random.Random(2)
    device = SimulatedDevice(lambda i: rng.uniform(1.0, 30.0))
    result = run_batches(device.step, device.sync, 0, _stop(max_batches=25),
                         clock=device.clock)
    assert result.stop_reason == "max_batches"
    assert len(result.times_ms) == 25


def test_ci_is_checked_rarely(monkeypatch: pytest.MonkeyPatch) -> None:
    # Checking every batch would cost O(n^2); the rule checks every n // 20 batches,
    # about 20 ln(n / 20) checks: ~100 for 2000 batches, not ~2000.
    calls: list[int] = []

    def never_narrow(values: list[float]) -> float:
        calls.append(len(values))
        return 1e9

    monkeypatch.setattr(timing, "ci95_half_width", never_narrow)
    device = SimulatedDevice(lambda i: 1.0)
    result = run_batches(device.step, device.sync, 0,
                         _stop(min_seconds=0.0, max_batches=2000), clock=device.clock)
    assert result.stop_reason == "max_batches"
    assert calls[0] == 10  # not before min_batches
    assert len(calls) < 130
    assert calls == sorted(set(calls))


def test_warmup_settled_rule_by_hand() -> None:
    # window 2, tolerance 2%: previous mean (10+10)/2 = 10; last (9.9+9.9)/2 = 9.9,
    # 1% faster -> settled; last 9.7 (3% faster) -> not settled.
    assert warmup_settled([10.0, 10.0, 9.9, 9.9], window=2, tolerance=0.02)
    assert not warmup_settled([10.0, 10.0, 9.7, 9.7], window=2, tolerance=0.02)
    assert not warmup_settled([10.0, 10.0, 10.0], window=2, tolerance=0.02)  # too few


def test_auto_warmup_runs_until_times_stop_falling() -> None:
    # The fake's warm-up shape: 5 ms + 200 ms * 0.5**i. Windows of 5, tolerance 2%.
    device = SimulatedDevice(lambda i: 5.0 + 200.0 * 0.5**i)
    result = run_batches(device.step, device.sync, AutoWarmup(max_batches=50), 5,
                         clock=device.clock)
    extra = [t - 5.0 for t in result.warmup_times_ms]
    assert not result.warmup_capped
    # Settled once the previous window's extra is ~2% of 5 ms (about 0.1 ms): i ~ 19.
    assert 15 <= result.num_warmup <= 25
    assert extra[0] == pytest.approx(200.0)
    assert all(t == pytest.approx(5.0, abs=0.01) for t in result.times_ms)
    assert result.times_ms and device.steps[result.num_warmup] == result.num_warmup


def test_auto_warmup_cap() -> None:
    device = SimulatedDevice(lambda i: 1000.0 / (i + 1))  # keeps falling
    result = run_batches(device.step, device.sync, AutoWarmup(max_batches=12), 3,
                         clock=device.clock)
    assert result.num_warmup == 12
    assert result.warmup_capped


def test_markers_surround_the_timed_batches() -> None:
    events: list[str] = []
    device = SimulatedDevice(lambda i: 1.0)

    def step(index: int) -> None:
        events.append(f"step{index}")
        device.step(index)

    def mark(name: str, batch: int) -> None:
        events.append(f"{name}@{batch}")

    run_batches(step, device.sync, 2, 2, clock=device.clock, mark=mark)
    # Each mark says which batch comes next: the first timed one, one past the last.
    assert events == ["step0", "step1", "timed_start@2", "step2", "step3", "timed_end@4"]
