"""Batch timers on a simulated asynchronous device: the host returns from a step at once
while the device runs it on its own clock, as CUDA does. Event timing must give the
same per-batch times as host timing, and wait for the device only where times are read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.backends.fake import FakeBackend
from dlbench.measure.timers import BatchTimer, DispatchTimer, EventTimer, HostTimer
from dlbench.measure.timing import AutoStop, AutoWarmup, run_batches
from dlbench.results.log.file import LogWriter
from dlbench.worker.experiment import timed_batches
from dlbench.worker.heartbeat import ProgressWriter
from tests.integration.worker import plan_one


class SimulatedStream:
    """One device stream: work runs in the order queued, each item starting when the
    device is free and the host has launched it; the host pays ``launch_ms`` per step
    and does not wait. ``syncs`` holds how many steps had been queued at each wait."""

    def __init__(self, launch_ms: float = 0.0) -> None:
        self.launch_ns = round(launch_ms * 1e6)
        self.host_ns = 0
        self.device_free_ns = 0
        self.synced_ns = 0
        self.queued = 0
        self.syncs: list[int] = []

    def enqueue(self, milliseconds: float) -> None:
        self.host_ns += self.launch_ns
        start = max(self.device_free_ns, self.host_ns)
        self.device_free_ns = start + round(milliseconds * 1e6)
        self.queued += 1

    def synchronize(self) -> None:
        self.host_ns = max(self.host_ns, self.device_free_ns)
        self.synced_ns = self.host_ns
        self.syncs.append(self.queued)

    def clock(self) -> int:
        return self.host_ns

    def event(self) -> SimulatedEvent:
        return SimulatedEvent(self)


class SimulatedEvent:
    """A timing event: it completes when the device reaches it; its time can be read
    only once the host has waited for it (CUDA raises otherwise)."""

    def __init__(self, stream: SimulatedStream) -> None:
        self.stream = stream
        self.at_ns: int | None = None

    def record(self) -> None:
        self.at_ns = max(self.stream.device_free_ns, self.stream.host_ns)

    def elapsed_time(self, end: SimulatedEvent) -> float:
        assert self.at_ns is not None and end.at_ns is not None
        if max(self.at_ns, end.at_ns) > self.stream.synced_ns:
            raise RuntimeError("event read before the host waited for it")
        return (end.at_ns - self.at_ns) / 1e6


def _duration(index: int) -> float:
    # 2.00, 2.01, 2.02... ms: never equal, so the confidence interval is never zero.
    return (2000 + 10 * index) / 1000


def _run(timer_kind: str, warmup: int | AutoWarmup, stop: int | AutoStop,
         launch_ms: float = 0.0) -> tuple[Any, SimulatedStream]:
    stream = SimulatedStream(launch_ms)

    def step(index: int) -> None:
        stream.enqueue(_duration(index))

    timer: BatchTimer = (
        EventTimer(stream.event, stream.synchronize) if timer_kind == "events"
        else HostTimer(stream.synchronize, stream.clock))
    result = run_batches(step, stream.synchronize, warmup, stop, clock=stream.clock,
                         timer=timer)
    return result, stream


def test_event_times_equal_host_times_for_known_step_times() -> None:
    host, _ = _run("host", 3, 20)
    events, stream = _run("events", 3, 20)
    expected = [_duration(i) for i in range(3, 23)]
    assert host.times_ms == expected
    assert events.times_ms == expected
    assert (host.method, events.method) == ("host", "cuda_events")
    # One wait after the fixed warm-up, one at the end: none inside the run.
    assert stream.syncs == [3, 23]


def test_event_timer_waits_only_at_the_auto_stop_check_points() -> None:
    # target_ci=0 is never reached with unequal times. Checks start at min_batches=40
    # and come every max(1, count // 20) = 2 batches: 40, 42, ..., 58; at 60 the cap.
    stop = AutoStop(min_batches=40, min_seconds=0.0, max_seconds=1e9, target_ci=0.0,
                    max_batches=60)
    host, _ = _run("host", 0, stop)
    events, stream = _run("events", 0, stop)
    assert events.stop_reason == host.stop_reason == "max_batches"
    assert events.times_ms == host.times_ms == [_duration(i) for i in range(60)]
    # The fixed warm-up of 0 waits once with nothing queued; then the check points.
    assert stream.syncs == [0, *range(40, 60, 2), 60]


def test_auto_warmup_waits_only_once_it_can_decide() -> None:
    warmup = AutoWarmup(max_batches=12, window=2)
    events, stream = _run("events", warmup, 3)
    host, _ = _run("host", warmup, 3)
    assert events.warmup_times_ms == host.warmup_times_ms
    assert events.num_warmup == host.num_warmup
    assert stream.syncs[0] == 4  # 2 * window batches before the first read


def test_a_slow_launch_stalls_the_device_under_host_timing_only() -> None:
    # Launching takes 0.5 ms of host time. Synchronising after each 2 ms step leaves
    # the device idle during every launch: 2.5 ms a batch. With events the host
    # launches ahead, and only the first batch waits for its launch.
    stream_ms = 2.0

    def run(timer_kind: str) -> tuple[Any, SimulatedStream]:
        stream = SimulatedStream(launch_ms=0.5)
        timer: BatchTimer = (
            EventTimer(stream.event, stream.synchronize) if timer_kind == "events"
            else HostTimer(stream.synchronize, stream.clock))
        result = run_batches(lambda i: stream.enqueue(stream_ms), stream.synchronize, 0,
                             10, clock=stream.clock, timer=timer)
        return result, stream

    host, _ = run("host")
    events, _ = run("events")
    assert host.times_ms == [2.5] * 10
    assert events.times_ms == [2.5] + [2.0] * 9
    assert host.elapsed_s == pytest.approx(0.025)
    assert events.elapsed_s == pytest.approx(0.0205)


def test_dispatch_timer_gives_each_block_its_mean() -> None:
    stream = SimulatedStream()
    timer = DispatchTimer(stream.synchronize, stream.clock, block_every=4)
    for index, milliseconds in enumerate([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]):
        timer.run(lambda i, ms=milliseconds: stream.enqueue(ms), index)
    assert stream.syncs == [4]  # the host blocked once, after the first block
    assert timer.read() == [2.5] * 4 + [5.5] * 2
    assert stream.syncs == [4, 6]
    assert timer.read() == []


def test_dispatch_timer_refuses_an_empty_block() -> None:
    with pytest.raises(ValueError, match="block_every=0"):
        DispatchTimer(lambda: None, block_every=0)


class AsyncFake(FakeBackend):
    """The fake workload on the simulated asynchronous device: each step queues
    ``fake.step_ms`` of device work and returns at once."""

    stream = SimulatedStream()

    def step(self, index: int) -> None:
        self.stream.enqueue(self.step_s * 1000.0)

    def synchronize(self) -> None:
        self.stream.synchronize()

    def batch_timer(self) -> BatchTimer:
        return EventTimer(self.stream.event, self.synchronize)


def test_worker_times_the_fake_workload_with_device_events(tmp_path: Path) -> None:
    params = plan_one(tmp_path, "exp.framework=fake", "fake.step_ms=7",
                      "exp.num_batches=12", "exp.num_warmup_batches=2")
    backend = AsyncFake(params)
    backend.stream = SimulatedStream()
    backend.setup()
    marks: list[str] = []
    with LogWriter(str(tmp_path / "log.txt")) as log:
        timing = timed_batches(backend, 2, 12, ProgressWriter(log),
                               lambda name, batch: marks.append(f"{name}@{batch}"))
    assert timing.times_ms == [7.0] * 12
    assert timing.method == "cuda_events"
    assert backend.stream.syncs == [2, 14]  # after the warm-up and at the end
    assert marks == ["timed_start@2", "timed_end@14"]
