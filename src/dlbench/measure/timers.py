"""How a batch is timed: on the host, with device events, or from dispatch-ahead blocks.

The timing loop (:mod:`dlbench.measure.timing`) runs every batch through a
:class:`BatchTimer` and asks it for the batches' times only where a policy must read
them (the auto-stop rule at its check points, auto warm-up) and at the end. Each
timer keeps one time per batch; they differ in what they make the host wait for:

- :class:`HostTimer` (``host``): read the clock, run the step, synchronise the device,
  read the clock again. Exact for a device that runs as the host calls it (a CPU),
  but on an asynchronous device (CUDA) the device idles while the host launches the
  next step after each synchronisation: 5% of ResNet-50's throughput at batch 64 on
  an H100.
- :class:`EventTimer` (``cuda_events``): a timing event is recorded on the device's
  stream before the first batch and after every batch; a batch's time is the
  device's time between the event before it and the event after it. The host
  never waits inside the run; it synchronises only when times are read. The events
  are chained (the event after batch *i* is the one before batch *i+1*), so any idle
  time of the device between two batches (a host too slow to launch) is counted in
  the batch after it, as a host clock would count it; after a read, a fresh start
  event is recorded, so the policy's own check is not counted, as on the host.
- :class:`DispatchTimer` (``jax_dispatch``): for a framework without device events
  (JAX), the host dispatches batches ahead and blocks only every
  :data:`BLOCK_EVERY` batches and where times are read; every batch of one block gets
  the block's mean time. The approximation: the spread within a block is lost (the
  statistics see block means, as the confidence interval's batch means do anyway),
  and the device idles for one host round trip per block rather than per batch.

Example::

    timer = EventTimer(lambda: torch.cuda.Event(enable_timing=True), torch.cuda.synchronize)
    for index in range(100):
        timer.run(step, index)
    timer.read()   # 100 times, ms, after one synchronisation
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Protocol

Step = Callable[[int], None]
Sync = Callable[[], None]
Clock = Callable[[], int]

#: ``results.timing_method`` values, one per timer.
TIMING_METHODS = ("host", "cuda_events", "jax_dispatch")

#: Batches a :class:`DispatchTimer` dispatches before it blocks to take a time.
BLOCK_EVERY = 10


class DeviceEvent(Protocol):
    """What :class:`EventTimer` needs of a device event (``torch.cuda.Event``)."""

    def record(self) -> None:
        """Put the event on the device's current stream."""

    def elapsed_time(self, end: DeviceEvent) -> float:
        """Milliseconds of device time from this event to ``end`` (both completed)."""
        ...


class BatchTimer(ABC):
    """Runs steps and keeps one time (ms) per step, handed out by :meth:`read`."""

    #: The ``results.timing_method`` of the times this timer takes.
    method: str = ""

    @abstractmethod
    def run(self, step: Step, index: int) -> None:
        """Run batch ``index`` with ``step`` and note its time (maybe still unknown)."""

    @abstractmethod
    def read(self) -> list[float]:
        """The times of the batches run since the last read, in order, in milliseconds;
        the device has finished all of them when it returns."""


class HostTimer(BatchTimer):
    """Times each step on the host clock, synchronising the device inside the interval."""

    method = "host"

    def __init__(self, synchronize: Sync, clock: Clock = time.perf_counter_ns) -> None:
        self.synchronize = synchronize
        self.clock = clock
        self._times: list[float] = []

    def run(self, step: Step, index: int) -> None:
        clock = self.clock
        start = clock()
        step(index)
        self.synchronize()
        self._times.append((clock() - start) / 1e6)

    def read(self) -> list[float]:
        times, self._times = self._times, []
        return times


class EventTimer(BatchTimer):
    """Times each step with device events; synchronises only in :meth:`read`.

    ``new_event`` makes a timing event (``torch.cuda.Event(enable_timing=True)``);
    ``synchronize`` waits for the device.
    """

    method = "cuda_events"

    def __init__(self, new_event: Callable[[], DeviceEvent], synchronize: Sync) -> None:
        self.new_event = new_event
        self.synchronize = synchronize
        self._last: DeviceEvent | None = None
        # Each pending batch's events: the one before it and the one after it.
        self._pending: list[tuple[DeviceEvent, DeviceEvent]] = []

    def run(self, step: Step, index: int) -> None:
        before = self._last
        if before is None:
            before = self.new_event()
            before.record()
        step(index)
        after = self.new_event()
        after.record()
        self._pending.append((before, after))
        self._last = after

    def read(self) -> list[float]:
        if not self._pending:
            return []
        self.synchronize()
        times = [float(before.elapsed_time(after)) for before, after in self._pending]
        self._pending = []
        self._last = None  # the next batch starts after whatever the caller does now
        return times


class DispatchTimer(BatchTimer):
    """Dispatches steps ahead and blocks every ``block_every`` steps and in
    :meth:`read`; each step of a block gets the block's mean time."""

    method = "jax_dispatch"

    def __init__(self, synchronize: Sync, clock: Clock = time.perf_counter_ns,
                 block_every: int = BLOCK_EVERY) -> None:
        if block_every < 1:
            raise ValueError(f"block_every={block_every}: at least 1")
        self.synchronize = synchronize
        self.clock = clock
        self.block_every = block_every
        self._start: int | None = None
        self._count = 0
        self._times: list[float] = []

    def run(self, step: Step, index: int) -> None:
        if self._start is None:
            self._start = self.clock()
        step(index)
        self._count += 1
        if self._count >= self.block_every:
            self._block()
            # Chained: the host dispatches the next step right away, and the device's
            # wait for it belongs to the next block.
            self._start = self.clock()

    def _block(self) -> None:
        if not self._count or self._start is None:
            return
        self.synchronize()
        each = (self.clock() - self._start) / 1e6 / self._count
        self._times.extend([each] * self._count)
        self._count = 0

    def read(self) -> list[float]:
        self._block()
        self._start = None
        times, self._times = self._times, []
        return times
