"""``exp.replica_batch=auto``: the largest batch that runs, found in the worker.

Probing runs in the worker's own process: each probe sets the backend up at one
batch size, runs ``exp.auto_batch_steps`` steps and tears it down; running out of
memory (:func:`dlbench.worker.heartbeat.is_out_of_memory`: a ``MemoryError``, CUDA's
out-of-memory error) is caught and counts as "does not fit", any other error ends the
experiment. A caught out-of-memory error leaves the process usable (the allocator
frees the failed step's tensors once the error is dropped), so probing in the worker
is simpler than starting a probe worker per batch and finds the same batch. The batches
are 1, 2, 4, ... until one does not fit (or ``exp.auto_batch_max``), then bisection
between the largest that fits and the smallest that does not.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any

from dlbench.backends.base import load_backend, run_steps
from dlbench.config.params import MAX_REPLICA_BATCH
from dlbench.config.registry import found_batch_parameters
from dlbench.errors import WorkerError
from dlbench.worker.heartbeat import is_out_of_memory

__all__ = ["find_largest_batch", "largest_batch", "probe_batch"]

#: One probe: (batch, fits, why not), in the order they ran.
Probe = dict[str, Any]


def largest_batch(fits: Callable[[int], bool], maximum: int) -> int:
    """The largest batch from 1 to ``maximum`` for which ``fits`` is true, assuming
    every smaller batch fits too: doubling, then bisection. WorkerError when batch 1
    does not fit.

    >>> largest_batch(lambda b: b <= 40, 4096)
    40
    """
    best, failed = 0, None
    batch = 1
    while batch <= maximum:
        if not fits(batch):
            failed = batch
            break
        best = batch
        batch *= 2
    if best == 0:
        raise WorkerError("exp.replica_batch=auto: batch 1 already runs out of memory")
    if failed is None:
        if best == maximum or fits(maximum):
            return maximum
        failed = maximum
    while failed - best > 1:
        middle = (best + failed) // 2
        if fits(middle):
            best = middle
        else:
            failed = middle
    return best


def probe_batch(params: Mapping[str, Any], batch: int, steps: int) -> str:
    """Set the backend up at ``batch`` and run ``steps`` steps: "" when it fits, the
    out-of-memory message when it does not; any other error is raised."""
    probe = {**params, **found_batch_parameters(params, batch)}
    backend = load_backend(probe)
    try:
        backend.setup()
        run_steps(backend, 0, steps)
    except Exception as error:  # only running out of memory is an answer
        if not is_out_of_memory(error):
            raise
        return f"{type(error).__name__}: {error}"[:300]
    finally:
        backend.teardown()
        del backend
        gc.collect()  # the failed step's tensors go before the next probe allocates
    return ""


def find_largest_batch(params: Mapping[str, Any]) -> tuple[int, list[Probe]]:
    """The largest batch of ``params``'s experiment that runs, and every probe."""
    probes: list[Probe] = []
    steps = int(params["exp.auto_batch_steps"])

    def fits(batch: int) -> bool:
        error = probe_batch(params, batch, steps)
        probes.append({"batch": batch, "fits": not error, "error": error or None})
        return not error

    # The plan refuses a larger exp.auto_batch_max; an input file written by hand
    # still probes no batch the plan would refuse.
    maximum = min(int(params["exp.auto_batch_max"]), MAX_REPLICA_BATCH)
    return largest_batch(fits, maximum), probes
