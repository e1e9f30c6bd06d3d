"""How far the worker got, written to its log so a dead worker can be placed.

The worker writes ``__results.progress__={"phase": ..., "batch": ...}`` when it enters
a phase (``setup``, ``warmup``, ``timed``, ``finish``), and a daemon thread adds the
batch the timing loop is on every :data:`PROGRESS_SECONDS`, only when it changed.
The thread reads the loop's own ``index`` from the main thread's frames, so the timed
loop does no extra work per batch: nothing is called, stored or written inside it.
When the worker is killed (a signal, the kernel's out-of-memory killer, a segfault)
the runner reads the last progress line and says where it died.

It also tells an out-of-memory error from other errors
(:func:`is_out_of_memory`), and says how much memory the process held
(:func:`peak_rss_text`), for the experiment's failure message.
"""

from __future__ import annotations

import resource
import sys
import threading
from collections.abc import Iterable
from types import FrameType, TracebackType
from typing import Any

from dlbench.measure import timing
from dlbench.results.logfile import LogWriter
from dlbench.results.progress import PROGRESS_KEY

#: Seconds between two looks at the batch the timing loop is on.
PROGRESS_SECONDS = 2.0

# The loop functions whose ``index`` local is the batch being run.
_LOOP_CODES = frozenset({timing._timed_step.__code__, timing._warm_up.__code__})

# Words in an exception's type or message that mean a framework ran out of memory:
# CUDA/ROCm ("CUDA out of memory", torch.OutOfMemoryError), XLA ("RESOURCE_EXHAUSTED"),
# TensorFlow (ResourceExhaustedError), ONNX Runtime ("Failed to allocate memory").
_OOM_TYPES = ("MemoryError", "OutOfMemoryError", "ResourceExhaustedError")
_OOM_WORDS = ("out of memory", "resource_exhausted", "failed to allocate memory",
              "cublas_status_alloc_failed")


def batch_in_frames(frames: Iterable[FrameType]) -> int | None:
    """The batch index of the innermost timing-loop frame among ``frames``."""
    found = None
    for frame in frames:
        if frame.f_code in _LOOP_CODES:
            index = frame.f_locals.get("index")
            if isinstance(index, int):
                found = index
    return found


def _stack(frame: FrameType | None) -> list[FrameType]:
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames[::-1]  # outermost first, like a traceback


def batch_in_traceback(tb: TracebackType | None) -> int | None:
    """The batch the timing loop was on when the exception of ``tb`` was raised."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return batch_in_frames(frames)


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


class ProgressWriter:
    """Writes the worker's phase at each change, and the loop's batch at a low rate."""

    def __init__(self, log: LogWriter, interval: float = PROGRESS_SECONDS) -> None:
        self.log = log
        self.interval = interval
        self.phase = ""
        self._written: tuple[str, int | None] = ("", None)
        self._main = threading.main_thread().ident
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def enter(self, phase: str, batch: int | None = None) -> None:
        """Note that the worker now runs ``phase`` (one of :data:`PHASE_NAMES`)."""
        self.phase = phase
        self._write(batch)

    def _write(self, batch: int | None) -> None:
        with self._lock:
            if (self.phase, batch) == self._written:
                return
            value: dict[str, Any] = {"phase": self.phase}
            if batch is not None:
                value["batch"] = batch
            self.log.write(PROGRESS_KEY, value)
            self._written = (self.phase, batch)

    def current(self) -> dict[str, Any]:
        """The phase, and the batch the timing loop is on if it is running."""
        value: dict[str, Any] = {"phase": self.phase}
        frame = sys._current_frames().get(self._main or 0)
        batch = batch_in_frames(_stack(frame))
        if batch is not None:
            value["batch"] = batch
        return value

    def _run(self) -> None:
        # Early looks come faster (0.1 s, doubling up to the interval), so that a
        # worker that dies soon after starting is placed too.
        wait = min(0.1, self.interval)
        while not self._stop.wait(wait):
            wait = min(wait * 2, self.interval)
            if self.phase in ("warmup", "timed"):
                self._write(self.current().get("batch"))

    def start(self) -> None:
        """Start looking at the timing loop every ``interval`` seconds."""
        self._thread = threading.Thread(target=self._run, name="dlbench-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
