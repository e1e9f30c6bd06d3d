"""The framework interface: what the worker asks of every backend.

A backend sets up a model and its data on a device, runs one step at a time,
synchronises the device so that a step's time is the device's and not the launch's,
and tears down. The worker owns the timing loop; a backend never times itself, so
every framework is measured by the same code.

Backends are imported lazily, by module path from ``dlbench.config.catalog``, and
only inside the worker process: the runner never imports a framework.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from dlbench.errors import NonFiniteLoss as NonFiniteLoss  # importable here too, where it began
from dlbench.errors import WorkerError
from dlbench.measure.timers import BatchTimer, HostTimer


class Backend(ABC):
    """One framework's way of running an experiment.

    The worker calls, in order: ``setup`` once; ``step`` then ``synchronize`` for
    every warm-up and timed batch; ``finish`` once (checks that need the device's
    results, such as a non-finite loss); ``environment`` for the record;
    ``teardown`` always, even after an error.
    """

    #: The name of the counter behind :meth:`flops_per_sample` (``results.flops_source``
    #: is ``framework:<name>`` where it stands in for the architecture's count); empty:
    #: the framework's id.
    flops_counter: ClassVar[str] = ""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.params = params

    @abstractmethod
    def setup(self) -> None:
        """Build the model, optimizer and synthetic data on the device."""

    @abstractmethod
    def step(self, index: int) -> None:
        """Run batch ``index`` (counted from 0 over warm-up and timed batches).

        May return before the device has finished: the worker calls
        :meth:`synchronize` before it reads the clock.
        """

    def synchronize(self) -> None:  # noqa: B027 - optional hook; CPU needs no sync
        """Wait until the device has finished all work queued so far (no-op on CPU)."""

    def batch_timer(self) -> BatchTimer:
        """The timer of the warm-up and timed batches (``dlbench.measure.timers``): by
        default the host's clock around :meth:`step` and :meth:`synchronize`. A
        backend on an asynchronous device returns one that lets the device run ahead
        (CUDA events; blocks of dispatched steps)."""
        return HostTimer(self.synchronize)

    def finish(self, num_steps: int) -> dict[str, Any]:
        """Check the results of ``num_steps`` steps (raise :class:`NonFiniteLoss`
        if the loss diverged) and return extra ``results.*`` values for the record."""
        return {}

    def environment(self) -> dict[str, Any]:
        """``sys.*``/``hw.*`` values: framework version and build, device names."""
        return {}

    def throughput_unit(self) -> tuple[str, float]:
        """The unit of ``results.throughput`` and how many of it one sample holds:
        ``("samples/s", 1.0)``, or ``("tokens/s", seq_len)`` for a language model."""
        return "samples/s", 1.0

    def flops_per_sample(self) -> float | None:
        """The framework's own count of the floating-point operations of one sample in
        the phase measured (forward for inference; forward and backward for training),
        counted once at set-up; None when unknown. The worker records it as
        ``results.flops_per_sample_framework``, a cross-check of the architecture's
        count (``dlbench.models.flops``), which stands for every framework."""
        return None

    def gather_times(self, times_ms: list[float]) -> list[list[float]]:
        """Every replica's per-batch times (ms), in rank order, given this replica's;
        every replica receives all of them. A single process returns ``[times_ms]``."""
        return [list(times_ms)]

    def memory_breakdown(self) -> dict[str, Any]:
        """``results.memory.*`` after the timed batches: bytes of weights, gradients,
        optimizer state, activations saved for backward, the device allocator's peak.
        May run one untimed step. What the framework cannot count, the note says."""
        return {"results.memory.note": "this framework gives no memory breakdown"}

    def start_profile(self, tool: str, trace_path: str) -> None:
        """Open the profiling window of ``exp.profile=tool`` (its output, if any, goes
        to ``trace_path``); the worker then runs the window's steps."""
        raise WorkerError(f"exp.profile={tool} is not supported by this backend")

    def stop_profile(self, wall_ms: float) -> dict[str, Any]:
        """Close the window, whose steps took ``wall_ms``; ``results.profile.*``."""
        return {}

    def start_epoch(self) -> int:
        """exp.phase=train_to_accuracy: start a pass over the training data and return
        its number of batches, which the worker then runs with :meth:`step`."""
        raise WorkerError("exp.phase=train_to_accuracy is not supported by this backend")

    def evaluate(self) -> float:
        """exp.phase=train_to_accuracy: the accuracy (0 to 1) on the held-out data."""
        raise WorkerError("exp.phase=train_to_accuracy is not supported by this backend")

    def teardown(self) -> None:  # noqa: B027 - optional hook
        """Release what ``setup`` took. Called even when a step failed."""


@runtime_checkable
class DrivesLoad(Protocol):
    """A backend whose system under test is measured by the load it sends, not by
    steps the worker times: a server over HTTP (``exp.framework=endpoint``). The worker
    calls :meth:`load_results` after ``setup`` instead of the timing loop."""

    def load_results(self, progress: Any, mark: Any) -> dict[str, Any]:
        """Send the experiment's load and return its ``results.*``; ``progress`` is the
        worker's progress writer, ``mark(name, count)`` marks the timed section's
        ``timed_start`` and ``timed_end`` for the monitor."""
        ...


def run_steps(backend: Backend, first: int, count: int) -> int:
    """Run ``count`` steps of ``backend``, numbered from ``first``, then wait for the
    device; the number of the next step. The worker's untimed passes (a profiling
    window's, an epoch's, a batch-size probe's) run this way; the timed loop is
    :func:`dlbench.measure.timing.run_batches`."""
    for index in range(first, first + count):
        backend.step(index)
    backend.synchronize()
    return first + count


def load_backend(params: Mapping[str, Any]) -> Backend:
    """Import the backend of ``params['exp.framework']`` and construct it: the
    ``BACKEND`` of the module ``exp.framework_module`` names (the parent's declaration,
    so a framework the parent registered at run time is found here too), else of the
    module this process's catalog declares."""
    # Imported here, not at the top: a one-module framework imports this module while
    # the catalog is loading its declaration.
    from dlbench.config.catalog import FRAMEWORKS

    path = str(params.get("exp.framework_module")
               or FRAMEWORKS[str(params["exp.framework"])].module)
    module = importlib.import_module(path)
    backend_class = module.BACKEND
    backend = backend_class(params)
    if not isinstance(backend, Backend):
        raise TypeError(f"{path}.BACKEND is not a dlbench Backend")
    return backend
