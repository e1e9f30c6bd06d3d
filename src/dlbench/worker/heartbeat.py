"""How far the worker got, written to its log so a dead worker can be placed.

The worker writes ``__results.progress__={"phase": ..., "batch": ...}`` when it enters
a phase (``setup``, ``warmup``, ``timed``, ``finish``), and a daemon thread adds the
batch the timing loop is on every :data:`PROGRESS_SECONDS`, only when it changed.
The thread reads that batch from the writer's :attr:`ProgressWriter.position`, which
the timing loop keeps (:class:`~dlbench.measure.timing.LoopPosition`: one attribute
stored per batch, before its timer starts); nothing is called or written per batch.
When the worker is killed (a signal, the kernel's out-of-memory killer, a segfault)
the runner reads the last progress line and says where it died; while the worker
runs, the runner shows the lines as a live status and moves an ``auto`` timeout.

Each value also says how far the phase has to go and how long it has run (the fields
are listed in :mod:`dlbench.results.log.progress_keys`). What that needs is given to the
writer: the experiment's parameters (batch counts, ``exp.effective_batch``) and the
backend whose throughput unit counts a timed batch's samples, by :meth:`describe`,
and the index of the first timed batch when the timed phase is entered (the timing
loop's ``mark`` passes it). A writer told nothing (a test) gives the phase and batch
only.

It also tells an out-of-memory error from other errors
(:func:`is_out_of_memory`), and says how much memory the process held
(:func:`peak_rss_text`), for the experiment's failure message.
"""

from __future__ import annotations

import resource
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from dlbench.measure.timing import LoopPosition
from dlbench.results.log.file import LogWriter
from dlbench.results.log.progress_keys import PROGRESS_KEY

#: The word that asks for an automatic batch count.
AUTO = "auto"

#: Seconds between two looks at the batch the timing loop is on.
PROGRESS_SECONDS = 2.0

# Words in an exception's type or message that mean a framework ran out of memory:
# CUDA/ROCm ("CUDA out of memory", torch.OutOfMemoryError), XLA ("RESOURCE_EXHAUSTED"),
# TensorFlow (ResourceExhaustedError), ONNX Runtime ("Failed to allocate memory").
_OOM_TYPES = ("MemoryError", "OutOfMemoryError", "ResourceExhaustedError")
_OOM_WORDS = ("out of memory", "resource_exhausted", "failed to allocate memory",
              "cublas_status_alloc_failed")


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` (or an exception it was raised from) is running out of
    host or device memory."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names = {cls.__name__ for cls in type(current).__mro__}
        if names.intersection(_OOM_TYPES):
            return True
        text = str(current).lower()
        if any(word in text for word in _OOM_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def peak_rss_text() -> str:
    """The process's peak resident memory so far, e.g. ``1.2 GiB``."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = float(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit in ("B", "KiB") else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def phase_plan(phase: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """What ``phase`` will run, as ``results.progress`` says it: ``total`` (a fixed
    count), ``max`` (the most batches of an ``auto`` warm-up) or ``max_seconds`` (the
    most seconds of ``auto`` timed batches); empty when unknown."""
    if params is None or phase not in ("warmup", "timed"):
        return {}
    try:
        if phase == "warmup":
            if params["exp.num_warmup_batches"] == AUTO:
                return {"max": int(params["exp.max_warmup_batches"])}
            return {"total": int(params["exp.num_warmup_batches"])}
        if params["exp.num_batches"] == AUTO:
            return {"max_seconds": float(params["exp.max_duration"])}
        return {"total": int(params["exp.num_batches"])}
    except (KeyError, TypeError, ValueError):  # a partial set of parameters: say less
        return {}


def samples_per_batch(params: Mapping[str, Any] | None, backend: Any) -> tuple[float, str] | None:
    """What one timed batch processes in the backend's throughput unit (samples times
    the unit's per-sample count, as ``results.throughput`` counts it), and the unit."""
    if params is None or backend is None:
        return None
    try:
        unit, per_sample = backend.throughput_unit()
        return int(params["exp.effective_batch"]) * float(per_sample), str(unit)
    except Exception:  # a backend that cannot say yet: no throughput so far, no failure
        return None


class ProgressWriter:
    """Writes the worker's phase at each change, and the loop's batch at a low rate."""

    def __init__(self, log: LogWriter, interval: float = PROGRESS_SECONDS) -> None:
        self.log = log
        self.interval = interval
        self._params: Mapping[str, Any] | None = None  # the experiment's (describe)
        self._backend: Any = None  # what counts a timed batch's samples (describe)
        self.phase = ""
        self._written: tuple[str, int | None] = ("", None)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._began = time.monotonic()  # when the phase began
        self._plan: dict[str, Any] = {}  # the phase's totals (phase_plan)
        self._first: int | None = None  # the phase's first batch index, when known
        self._per_batch: tuple[float, str] | None = None  # samples_per_batch
        #: The batch the timing loop is on: give it to ``run_batches(position=...)``.
        self.position = LoopPosition()

    def describe(self, params: Mapping[str, Any], backend: Any = None) -> None:
        """What the phases entered from now on run: the experiment's ``params`` (its
        batch counts, ``exp.effective_batch``) and the ``backend`` whose
        ``throughput_unit`` counts a timed batch's samples (read once, on entering the
        first timed phase)."""
        with self._lock:
            self._params = params
            self._backend = backend

    def enter(self, phase: str, batch: int | None = None, first: int | None = None) -> None:
        """Note that the worker now runs ``phase`` (one of :data:`PHASE_NAMES`), on the
        main thread; for the timed phase, ``first`` is the index of its first batch
        (without it, the value says no batches done)."""
        with self._lock:
            self.phase = phase
            self.position.batch = None  # a loop of this phase sets it again
            self._began = time.monotonic()
            self._plan = phase_plan(phase, self._params)
            self._first = 0 if phase == "warmup" else None
            if phase == "timed":
                self._first = first
                if self._per_batch is None:
                    self._per_batch = samples_per_batch(self._params, self._backend)
            self._write(batch)

    def value(self, batch: int | None) -> dict[str, Any]:
        """The ``results.progress`` value of the current phase at ``batch``."""
        value: dict[str, Any] = {"phase": self.phase,
                                 "elapsed": round(time.monotonic() - self._began, 3)}
        if batch is not None:
            value["batch"] = batch
        if self._first is not None:  # on entering the phase (no batch yet), none done
            done = max(0, batch - self._first) if batch is not None else 0
            value["done"] = done
            value.update(self._plan)
            if self.phase == "timed" and self._per_batch is not None:
                value["samples"] = done * self._per_batch[0]
                value["unit"] = self._per_batch[1]
        return value

    def _write(self, batch: int | None) -> None:
        # Called with the lock held, so that a phase change and a look at the loop
        # never interleave (a warm-up batch written under the timed phase).
        if (self.phase, batch) == self._written:
            return
        self.log.write(PROGRESS_KEY, self.value(batch))
        self._written = (self.phase, batch)

    def current(self) -> dict[str, Any]:
        """The phase, and the batch the timing loop is on if it is running."""
        value: dict[str, Any] = {"phase": self.phase}
        batch = self._batch()
        if batch is not None:
            value["batch"] = batch
        return value

    def _batch(self) -> int | None:
        return self.position.batch if self.phase in ("warmup", "timed") else None

    def _run(self) -> None:
        # Early looks come faster (0.1 s, doubling up to the interval), so that a
        # worker that dies soon after starting is placed too.
        wait = min(0.1, self.interval)
        while not self._stop.wait(wait):
            wait = min(wait * 2, self.interval)
            with self._lock:
                if self.phase in ("warmup", "timed"):
                    self._write(self._batch())

    def start(self) -> None:
        """Start looking at the timing loop every ``interval`` seconds."""
        self._thread = threading.Thread(target=self._run, name="dlbench-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
