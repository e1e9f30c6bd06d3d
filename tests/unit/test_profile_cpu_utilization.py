"""The CPU's utilisation over a profiling window comes from the worker's CPU time, so
a window the process slept or was preempted through never reads busy, whatever the
operators' wall-clock intervals say."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dlbench.backends.base import Backend
from dlbench.measure.profile_summary import cpu_utilization
from dlbench.worker.extras import profile_window

SLEEP_S = 0.015
BURN_S = 0.015
STEPS = 4


@pytest.mark.parametrize(("cpu_ms", "wall_ms", "cpus", "expected"), [
    (500.0, 1000.0, 1, 0.5),       # ran half the window on its one CPU
    (800.0, 1000.0, 2, 0.4),       # 0.8 CPU-seconds a second of 2 CPUs
    (2000.0, 1000.0, 2, 1.0),      # both CPUs the whole time
    (2010.0, 1000.0, 2, 1.0),      # a clock tick over: never above 1
    (0.0, 1000.0, 4, 0.0),         # slept through it
    (-1.0, 1000.0, 1, 0.0),
])
def test_cpu_utilization(cpu_ms: float, wall_ms: float, cpus: int, expected: float) -> None:
    assert cpu_utilization(cpu_ms, wall_ms, cpus) == pytest.approx(expected)


@pytest.mark.parametrize(("wall_ms", "cpus"), [(0.0, 1), (-5.0, 1), (100.0, 0)])
def test_cpu_utilization_of_no_window_or_no_cpu_is_none(wall_ms: float, cpus: int) -> None:
    assert cpu_utilization(10.0, wall_ms, cpus) is None


class _Window(Backend):
    """Steps that sleep ``sleep_s`` and burn ``burn_s`` of CPU time; its profiler says
    operators covered the whole window, as an operator preempted for the whole step
    would read."""

    def __init__(self, params: dict[str, Any], sleep_s: float, burn_s: float) -> None:
        super().__init__(params)
        self.sleep_s, self.burn_s = sleep_s, burn_s

    def setup(self) -> None:
        pass

    def step(self, index: int) -> None:
        time.sleep(self.sleep_s)
        until = time.process_time() + self.burn_s
        while time.process_time() < until:
            pass

    def start_profile(self, tool: str, trace_path: str) -> None:
        pass

    def stop_profile(self, wall_ms: float) -> dict[str, Any]:
        return {"results.profile.busy_ms": wall_ms}


def _window(sleep_s: float, burn_s: float, gpus: str = "") -> dict[str, Any]:
    params = {"exp.profile": "torch", "exp.profile_start": 0, "exp.profile_batches": STEPS,
              "exp.gpus": gpus}
    return profile_window(params, _Window(params, sleep_s, burn_s), 0, "unused.log")


@pytest.fixture
def one_cpu() -> Iterator[None]:
    """This process on one CPU: its utilisation is then its share of that CPU."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs CPU affinity")
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, cores)


def test_a_window_slept_through_reads_idle_though_operators_covered_it(
        one_cpu: None) -> None:
    result = _window(SLEEP_S, 0.0)
    wall = result["results.profile.wall_ms"]
    assert wall >= STEPS * SLEEP_S * 1000
    assert result["results.profile.busy_ms"] == wall  # what operator time would say: 1.0
    assert result["results.profile.cpus"] == 1
    assert result["results.profile.utilization_basis"] == "cpu_time"
    assert result["results.profile.utilization"] < 0.2


def test_a_window_half_asleep_reads_at_most_half(one_cpu: None) -> None:
    result = _window(SLEEP_S, BURN_S)
    wall, cpu = result["results.profile.wall_ms"], result["results.profile.cpu_ms"]
    burned = STEPS * BURN_S * 1000
    assert cpu >= burned
    utilization = result["results.profile.utilization"]
    assert utilization == pytest.approx(cpu / wall)
    # Half the window asleep: 0.5 when nothing else wanted the CPU, less when something
    # did (the burn then takes longer on the wall clock), never more.
    assert utilization <= 0.55
    assert utilization == pytest.approx(burned / wall, rel=0.2)


def test_on_a_gpu_the_backend_gives_the_utilisation() -> None:
    result = _window(0.001, 0.0, gpus="0")
    assert "results.profile.utilization" not in result  # the stub backend gave none
    assert result["results.profile.cpu_ms"] >= 0
