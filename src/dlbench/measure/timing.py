"""The timing loop shared by every framework, the fake workload and ``dlbench peak``.

Each timed batch gets its own time, taken by a timer (:mod:`dlbench.measure.timers`):
by default on the host (the clock is read, the step is launched, the device is
synchronised, the clock is read again, which makes the time the device's rather than
the launch's); on CUDA from events recorded on the device's stream, and for JAX from
blocks of batches dispatched ahead, so that the host waits for the device only where
a policy reads the times (auto warm-up, the auto-stop rule's check points) and at the
end. :attr:`Timing.method` says which.

How many batches run is a policy, decided between batches and never inside one:

- warm-up: a fixed count of untimed batches, or :class:`AutoWarmup`, which times
  each warm-up batch and stops once batch times no longer fall;
- timed batches: a fixed count, or :class:`AutoStop`, which runs at least a minimum
  time and count, then stops once the 95% confidence interval of the mean is narrow
  enough, or at a time (or batch) limit.

Example::

    timing = run_batches(step, sync, AutoWarmup(max_batches=50),
                         AutoStop(min_batches=10, min_seconds=1, max_seconds=60,
                                  target_ci=0.01, max_batches=10_000))
    timing.times_ms, timing.stop_reason   # [...], "ci_reached"
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dlbench.measure.timers import BatchTimer, Clock, HostTimer, Step, Sync
from dlbench.results.stats import ci95_half_width, mean

#: Called with ``"timed_start"`` and ``"timed_end"`` around the timed batches (the
#: resource monitor takes a sample there), and the index of the batch that comes next
#: (the first timed one; one past the last); never inside a timed interval.
Marker = Callable[[str, int], None]


class LoopPosition:
    """The batch the timing loop is on, for whoever watches the loop from outside it
    (the worker's progress thread; the failure message of a batch that raised).

    The loop stores each batch's index here before the batch starts, outside the
    timed interval: one attribute store per batch, nothing called.
    """

    __slots__ = ("batch",)

    def __init__(self) -> None:
        self.batch: int | None = None


@dataclass(frozen=True)
class AutoWarmup:
    """Warm up until batch times stop falling.

    After each warm-up batch, once there are ``2 * window`` of them: warm-up ends
    when the mean of the last ``window`` batches is no longer below the mean of the
    ``window`` before by more than ``tolerance`` (relative), or after
    ``max_batches``. Noise ends warm-up early rather than late (a noisy window is as
    likely to be slower as faster), which is why the stability verdict also looks for
    warm-up left in the timed batches.
    """

    max_batches: int
    window: int = 5
    tolerance: float = 0.02


@dataclass(frozen=True)
class AutoStop:
    """Stop the timed batches when the mean is known well enough.

    The 95% confidence interval of the mean (batch means, see
    :func:`~dlbench.results.stats.ci95_half_width`) is computed only once at least
    ``min_batches`` batches and ``min_seconds`` have run, and then only every
    ``max(1, n // CHECK_FRACTION)`` batches: each check reads all ``n`` times, so
    checking every batch would cost O(n²) in a long run; this way the amortised cost
    is constant and the run overshoots by at most 1/CHECK_FRACTION.
    """

    min_batches: int
    min_seconds: float
    max_seconds: float
    target_ci: float
    max_batches: int

    CHECK_FRACTION = 20


@dataclass
class Timing:
    """What the loop ran: every timed batch, and why it stopped."""

    times_ms: list[float]
    num_warmup: int
    stop_reason: str
    #: Times of the warm-up batches when they were timed (auto warm-up), else empty.
    warmup_times_ms: list[float] = field(default_factory=list)
    #: True when auto warm-up reached its cap without batch times settling.
    warmup_capped: bool = False
    #: Wall-clock seconds of the timed section, loop overhead and CI checks included.
    elapsed_s: float = 0.0
    #: How the batch times were taken (``results.timing_method``): see measure.timers.
    method: str = "host"


def warmup_settled(times_ms: list[float], window: int, tolerance: float) -> bool:
    """True when the last ``window`` times are not faster than the ``window`` before
    by more than ``tolerance`` (relative); False with fewer than ``2 * window``."""
    if len(times_ms) < 2 * window:
        return False
    last = mean(times_ms[-window:])
    previous = mean(times_ms[-2 * window:-window])
    return last >= previous * (1.0 - tolerance)


def _timed_step(timer: BatchTimer, step: Step, index: int, position: LoopPosition) -> None:
    position.batch = index  # before the timer starts: not part of the batch's time
    timer.run(step, index)


def _warm_up(
    step: Step, synchronize: Sync, warmup: int | AutoWarmup, timer: BatchTimer,
    position: LoopPosition,
) -> tuple[int, list[float], bool]:
    if isinstance(warmup, int):
        # A fixed warm-up is not timed: there is nothing to decide from its times.
        for index in range(warmup):
            position.batch = index
            step(index)
        synchronize()
        return warmup, [], False
    times: list[float] = []
    index = 0
    while index < warmup.max_batches:
        _timed_step(timer, step, index, position)
        index += 1
        if index < 2 * warmup.window:
            continue  # nothing to decide yet: no need to wait for the device
        times.extend(timer.read())
        if warmup_settled(times, warmup.window, warmup.tolerance):
            return index, times, False
    times.extend(timer.read())
    return index, times, True


def run_batches(
    step: Step,
    synchronize: Sync,
    warmup: int | AutoWarmup,
    stop: int | AutoStop,
    clock: Clock = time.perf_counter_ns,
    mark: Marker | None = None,
    timer: BatchTimer | None = None,
    position: LoopPosition | None = None,
) -> Timing:
    """Warm up, then run timed batches until ``stop`` says so.

    ``step`` receives the batch index counted from 0 over warm-up and timed batches.
    ``warmup`` and ``stop`` are counts or the automatic policies above. ``timer``
    takes the batch times (default: :class:`~dlbench.measure.timers.HostTimer` with
    ``synchronize`` and ``clock``); ``clock`` also times the whole timed section.
    ``position`` is kept at the batch being run, warm-up batches included.
    """
    if timer is None:
        timer = HostTimer(synchronize, clock)
    if position is None:
        position = LoopPosition()
    num_warmup, warmup_times, capped = _warm_up(step, synchronize, warmup, timer, position)
    if mark is not None:
        mark("timed_start", num_warmup)
    times: list[float] = []
    began = clock()
    if isinstance(stop, int):
        for index in range(num_warmup, num_warmup + stop):
            _timed_step(timer, step, index, position)
        reason = "fixed"
    else:
        reason = _run_until(step, timer, stop, clock, times, num_warmup, began, position)
    times.extend(timer.read())  # the end: the one wait for the device a fixed count has
    elapsed = (clock() - began) / 1e9
    if mark is not None:
        mark("timed_end", num_warmup + len(times))
    return Timing(times, num_warmup, reason, warmup_times, capped, elapsed, timer.method)


def _run_until(
    step: Step, timer: BatchTimer, stop: AutoStop, clock: Clock,
    times: list[float], index: int, began: int, position: LoopPosition,
) -> str:
    """Run until ``stop`` says so. Counts and durations are the host's, and need no
    wait; the device is waited for (``timer.read``) only at the CI's check points."""
    next_check = 0
    max_batches = max(1, stop.max_batches)
    count = 0
    while True:
        _timed_step(timer, step, index, position)
        index += 1
        count += 1
        elapsed = (clock() - began) / 1e9
        if count >= max_batches:
            return "max_batches"
        if elapsed >= stop.max_seconds:
            return "max_duration"
        if count < stop.min_batches or elapsed < stop.min_seconds or count < next_check:
            continue
        times.extend(timer.read())
        half_width = ci95_half_width(times)
        average = mean(times)
        if half_width is not None and average > 0 and half_width / average <= stop.target_ci:
            return "ci_reached"
        next_check = count + max(1, count // stop.CHECK_FRACTION)
