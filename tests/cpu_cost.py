"""How much work a call does, as a ratio to a reference call measured beside it.

A test that wants "this input is handled quickly" (no quadratic or exponential work,
no hang) must not bound seconds: a loaded machine fails it. It compares instead the
CPU time of the call with the CPU time of a reference call (an ordinary input to the
same code), both measured on the calling thread. Another process's load takes this
thread's wall-clock time, not its CPU time, and a slower or faster machine moves both
sides alike, so the ratio is what the code does, not what the machine did. The
factors are wide: the failures they are for grow without bound.

Example::

    PLANNING = CostBound(lambda: plan_experiments(load_spec(params=BASE)), factor=1000)
    PLANNING.check(lambda: plan_experiments(load_spec(params=hostile)), "hostile")
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable


def cpu_seconds(call: Callable[[], object]) -> float:
    """The CPU time of this thread spent in ``call()``; an exception is let through."""
    start = time.thread_time()
    call()
    return time.thread_time() - start


class CostBound:
    """At most ``factor`` times the CPU time of ``reference``, the least of ``repeats``
    calls (the least disturbed), measured once, at the first check."""

    def __init__(self, reference: Callable[[], object], factor: float, repeats: int = 5) -> None:
        if factor <= 1 or repeats < 1:
            raise ValueError("a cost bound needs a factor above 1 and at least one repeat")
        self._reference = reference
        self.factor = factor
        self._repeats = repeats

    @functools.cached_property
    def reference_seconds(self) -> float:
        """The reference call's CPU time (at least one microsecond: the timer's grain)."""
        self._reference()  # first-call costs (imports, caches) are not the reference's
        return max(1e-6, min(cpu_seconds(self._reference) for _ in range(self._repeats)))

    def check(self, call: Callable[[], object], what: str = "") -> None:
        """Run ``call()`` (an exception is let through after the check) and assert that
        it cost at most ``factor`` times the reference."""
        start = time.thread_time()
        try:
            call()
        finally:
            spent = time.thread_time() - start
            ratio = spent / self.reference_seconds
            assert ratio <= self.factor, (
                f"{what}: {ratio:.0f} times the reference's CPU time "
                f"({spent:.3f} s against {self.reference_seconds:.6f} s), bound {self.factor:g}")
