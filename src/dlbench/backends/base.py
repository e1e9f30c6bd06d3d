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
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.errors import WorkerError


class NonFiniteLoss(WorkerError):
    """The training loss became NaN or infinite."""

    def __init__(self, batch: int) -> None:
        super().__init__(f"loss is NaN at batch {batch}")
        self.batch = batch


class Backend(ABC):
    """One framework's way of running an experiment.

    The worker calls, in order: ``setup`` once; ``step`` then ``synchronize`` for
    every warm-up and timed batch; ``finish`` once (checks that need the device's
    results, such as a non-finite loss); ``environment`` for the record;
    ``teardown`` always, even after an error.
    """

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
        """Floating-point operations of one sample in the phase measured (forward for
        inference; forward and backward for training), counted once at set-up; None
        when unknown."""
        return None

    def gather_times(self, times_ms: list[float]) -> list[list[float]]:
        """Every replica's per-batch times (ms), in rank order, given this replica's;
        every replica receives all of them. A single process returns ``[times_ms]``."""
        return [list(times_ms)]

    def teardown(self) -> None:  # noqa: B027 - optional hook
        """Release what ``setup`` took. Called even when a step failed."""


def load_backend(params: Mapping[str, Any]) -> Backend:
    """Import the backend of ``params['exp.framework']`` and construct it."""
    info = FRAMEWORKS[str(params["exp.framework"])]
    module = importlib.import_module(info.module)
    backend_class = module.BACKEND
    backend = backend_class(params)
    if not isinstance(backend, Backend):
        raise TypeError(f"{info.module}.BACKEND is not a dlbench Backend")
    return backend
