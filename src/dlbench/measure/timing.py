"""The timing loop shared by every framework.

Warm-up batches run first and are not timed. Each timed batch is timed on its own:
the clock is read, the step is launched, the device is synchronised, the clock is
read again. Synchronising inside the measured interval makes the time the device's
rather than the launch's (on CUDA a launch returns long before the kernels finish).
"""

from __future__ import annotations

import time
from collections.abc import Callable

Step = Callable[[int], None]
Sync = Callable[[], None]


def time_batches(
    step: Step,
    synchronize: Sync,
    num_warmup: int,
    num_batches: int,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> list[float]:
    """Run ``num_warmup`` untimed then ``num_batches`` timed steps; return each timed
    step's duration in milliseconds.

    ``step`` receives the batch index counted from 0 over warm-up and timed batches.
    """
    for index in range(num_warmup):
        step(index)
    synchronize()
    times_ms: list[float] = []
    for index in range(num_warmup, num_warmup + num_batches):
        start = clock()
        step(index)
        synchronize()
        times_ms.append((clock() - start) / 1e6)
    return times_ms
