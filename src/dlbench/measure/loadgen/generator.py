"""The load generator: inference scenarios in the manner of MLPerf's LoadGen.

A scenario decides when queries are issued to the system under test and how each
query's latency is counted; the system is one callable, ``serve(samples)``, which
returns when that many samples are done (the worker passes a closure running the
backend's step and synchronising the device). Everything is timed here, once,
outside the backends. Each scenario is a module of
:mod:`dlbench.measure.loadgen.scenarios`, found by its name (:func:`run`); this
module holds what they share: the clocks, and the server's Poisson schedule and
dynamic batcher (:func:`serve_schedule`), where a query's latency runs from its
*scheduled* arrival, not from when the issuer got to it, so a slow system cannot hide
its queue (no coordinated omission).

The issuer is single-threaded and runs in real time: it waits (:class:`RealClock`)
until the next arrival or the batcher's deadline, then serves. With a
:class:`VirtualClock` that ``serve`` advances, the same code simulates a system of
known service times exactly and in no time: the tests' known answers.

A run ends, as in LoadGen, once both ``min_queries`` queries and ``min_duration_s``
seconds are reached (server: once the schedule, generated to reach both, is served).
Its validity is judged by :mod:`dlbench.measure.loadgen.results`. The settings and
measurements of a run are a scenario's contract, in
:mod:`dlbench.measure.loadgen.scenarios.base`, and importable here too.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Sequence

import numpy as np

from dlbench.measure.loadgen.scenarios.base import (
    Clock,
    ScenarioRun,
    ScenarioSettings,
    Serve,
    load_scenario,
)

__all__ = ["Clock", "RealClock", "ScenarioRun", "ScenarioSettings", "Serve", "VirtualClock",
           "poisson_schedule", "run", "serve_schedule", "server_query_count"]

# Sleep until this close to a deadline, then spin: time.sleep alone overshoots by
# 50-100 µs, which would show as queueing delay that no query suffered.
_SPIN_SECONDS = 0.0003


class RealClock:
    """``time.perf_counter``; waits by sleeping, then spinning the last 0.3 ms."""

    def now(self) -> float:
        """The current time, seconds."""
        return time.perf_counter()

    def wait_until(self, deadline: float) -> None:
        """Sleep, then spin, until ``deadline``."""
        remaining = deadline - time.perf_counter()
        if remaining > _SPIN_SECONDS:
            time.sleep(remaining - _SPIN_SECONDS)
        while time.perf_counter() < deadline:
            pass


class VirtualClock:
    """Simulated time: it moves only when a simulated ``serve`` calls :meth:`advance`
    or the issuer waits. Runs are then exact and take no real time.

    >>> clock = VirtualClock()
    >>> clock.advance(0.5); clock.wait_until(2.0); clock.now()
    2.0
    """

    def __init__(self, start: float = 0.0) -> None:
        self.time = start

    def now(self) -> float:
        """The simulated time, seconds."""
        return self.time

    def wait_until(self, deadline: float) -> None:
        """Jump to ``deadline`` if it is ahead."""
        self.time = max(self.time, deadline)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass (what a simulated ``serve`` does)."""
        if seconds < 0:
            raise ValueError(f"cannot advance a clock by {seconds} s")
        self.time += seconds


def poisson_schedule(qps: float, count: int, seed: int) -> np.ndarray:
    """``count`` arrival times (s) of a Poisson process of rate ``qps``: exponential
    gaps from a seeded generator, the first arrival at 0. The gaps are then scaled by
    one factor so that the last arrival is at exactly ``(count - 1) / qps``: the
    schedule's rate is the target, not the target give or take 1/sqrt(count) (3% at
    1000 queries). Conditioned so, the arrivals between the first and the last are
    those of a Poisson process given its count: independent, uniform in time.

    >>> poisson_schedule(10.0, 5, seed=0)[[0, -1]].tolist()
    [0.0, 0.4]
    """
    if count < 1:
        raise ValueError("a schedule needs at least one query")
    gaps = np.random.default_rng(seed).exponential(1.0 / qps, size=count - 1)
    arrivals = np.concatenate(([0.0], np.cumsum(gaps)))
    if count > 1:
        arrivals *= ((count - 1) / qps) / arrivals[-1]
        arrivals[-1] = (count - 1) / qps  # exactly, not to the last rounding
    return arrivals


def server_query_count(settings: ScenarioSettings) -> int:
    """Queries in a server schedule: enough for ``min_queries`` and for the last
    arrival to be scheduled at or after ``min_duration_s``."""
    count = max(settings.min_queries, math.ceil(settings.min_duration_s * settings.target_qps))
    while (count - 1) / settings.target_qps < settings.min_duration_s:
        count += 1  # exactly as the rule will compute it, rounding included
    return count


def run(settings: ScenarioSettings, serve: Serve, clock: Clock | None = None) -> ScenarioRun:
    """Run the scenario of ``settings`` against ``serve``; real time by default."""
    clock = clock if clock is not None else RealClock()
    return load_scenario(settings.scenario).issue(settings, serve, clock)


def _lost_at(settings: ScenarioSettings, planned: int) -> int | None:
    """How many queries over the bound decide that the percentile cannot be under it
    whatever the rest do: with the percentile read at index floor(n p) of the sorted
    latencies, n - floor(n p) overs. None without a bound."""
    if settings.latency_bound_s <= 0:
        return None
    return planned - math.floor(planned * settings.percentile / 100.0 + 1e-9)


def serve_schedule(settings: ScenarioSettings, arrivals: Sequence[float], serve: Serve,
                   clock: Clock) -> ScenarioRun:
    """The server's issuer and dynamic batcher on given ``arrivals`` (seconds from the
    start, ascending): the server scenario on its Poisson schedule, or a test's."""
    count = len(arrivals)
    result = ScenarioRun(settings, planned=count)
    lost_at = _lost_at(settings, count)
    overs = 0
    queue: deque[int] = deque()
    start = clock.now()
    # Absolute times on the clock: waiting until one and comparing with it is exact,
    # where differences from the start would round and never come due.
    due = [start + arrival for arrival in arrivals]
    next_arrival = 0
    while next_arrival < count or queue:
        now = clock.now()
        while next_arrival < count and due[next_arrival] <= now:
            queue.append(next_arrival)
            next_arrival += 1
        if not queue:
            clock.wait_until(due[next_arrival])
            continue
        deadline = due[queue[0]] + settings.max_queue_delay_s
        if (len(queue) < settings.max_batch and now < deadline
                and next_arrival < count):
            # Hold the batch open for company, until it is full or the oldest
            # query has waited long enough, whichever comes first.
            clock.wait_until(min(due[next_arrival], deadline))
            continue
        batch = [queue.popleft() for _ in range(min(len(queue), settings.max_batch))]
        began = clock.now()
        serve(len(batch))
        done = clock.now()
        result.service.append(done - began)
        result.batch_sizes.append(len(batch))
        for index in batch:
            latency = done - due[index]
            result.latencies.append(latency)
            result.waits.append(began - due[index])
            overs += lost_at is not None and latency > settings.latency_bound_s
        result.last_start = arrivals[batch[-1]]  # not due - start: that rounds
        result.end = done - start
        if lost_at is not None and overs >= lost_at:
            result.stopped_early = True  # the bound is lost: the rest would only cost time
            break
    return result
