"""Failure messages name the failure: which signal and where the worker was, the
exception's type and message, running out of memory with the memory held."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import WorkerError
from dlbench.launch.records import _crash_message, ncu_results
from dlbench.measure.timing import AutoWarmup, LoopPosition, run_batches
from dlbench.results.log.file import LogWriter
from dlbench.results.log.parser import parse_log
from dlbench.results.log.progress_keys import where_text
from dlbench.worker.experiment import _failure_message
from dlbench.worker.heartbeat import (
    ProgressWriter,
    is_out_of_memory,
    peak_rss_text,
)


class OutOfMemoryError(RuntimeError):
    """Named like torch's CUDA out-of-memory error."""


def _chained() -> WorkerError:
    """A framework's own error raised from running out of memory."""
    error = WorkerError("could not build the model")
    error.__cause__ = MemoryError()
    return error


@pytest.mark.parametrize(("error", "oom"), [
    (MemoryError(), True),
    (OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
    (RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"), True),
    (RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate"), True),
    (RuntimeError("[ONNXRuntimeError] : 6 : Failed to allocate memory for requested buffer"),
     True),
    (_chained(), True),
    (RuntimeError("fake failure at batch 3"), False),
    (ImportError("No module named 'jax'"), False),
])
def test_out_of_memory_is_recognised(error: BaseException, oom: bool) -> None:
    assert is_out_of_memory(error) is oom


def _fail_at(batch: int, error: BaseException, warmup: int | AutoWarmup = 2,
             ) -> tuple[BaseException, int | None]:
    """The error a step raised at ``batch``, and the batch the loop's position held."""
    position = LoopPosition()

    def step(index: int) -> None:
        if index == batch:
            raise error

    with pytest.raises(type(error)) as caught:
        run_batches(step, lambda: None, warmup, 5, position=position)
    return caught.value, position.batch


# A fixed warm-up batch, a timed batch, a timed warm-up batch.
@pytest.mark.parametrize(("batch", "warmup"), [(1, 2), (4, 2), (3, AutoWarmup(max_batches=9))])
def test_the_loop_position_holds_the_batch_that_raised(batch: int, warmup: Any) -> None:
    assert _fail_at(batch, RuntimeError("x"), warmup)[1] == batch


def test_failure_messages_keep_type_message_and_place() -> None:
    error, batch = _fail_at(4, RuntimeError("fake failure at batch 4"))
    message = _failure_message(error, "timed", batch)
    assert message.startswith("RuntimeError: fake failure at batch 4 (at ")
    assert message.endswith(", in the timed batches at batch 4")
    imported = _failure_message(ImportError("No module named 'jax'"), "setup")
    assert imported == "ImportError: No module named 'jax', in set-up"


def test_out_of_memory_message_says_so_with_peak_rss_and_step() -> None:
    message = _failure_message(_fail_at(3, MemoryError())[0], "timed", 3)
    assert re.match(r"out of memory in the timed batches at batch 3 \(peak RSS [\d.]+ [MG]iB\): "
                    r"MemoryError \(at test_launch_failure_messages\.py:\d+ in step\)$", message)
    in_setup = _failure_message(MemoryError(), "setup")
    assert in_setup.startswith("out of memory in set-up (peak RSS ") and "MemoryError" in in_setup
    assert "MemoryError: " not in in_setup  # no empty message after the type


def test_peak_rss_text() -> None:
    assert re.fullmatch(r"\d+(\.\d)? (B|KiB|MiB|GiB)", peak_rss_text())


def test_where_text() -> None:
    assert where_text({"phase": "warmup", "batch": 2}) == "in warm-up at batch 2"
    assert where_text({"phase": "setup"}) == "in set-up"
    assert where_text({"phase": "elsewhere"}) == "" and where_text(None) == ""


def test_progress_names_the_batch_the_loop_is_on(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    with LogWriter(tmp_path / "x.log") as log:
        writer = ProgressWriter(log)
        writer.enter("timed")

        def step(index: int) -> None:
            if index == 6:
                seen.append(writer.current())

        run_batches(step, lambda: None, 2, 8, position=writer.position)
    assert seen == [{"phase": "timed", "batch": 6}]


def test_progress_thread_writes_the_batch_at_a_low_rate(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    with LogWriter(path) as log:
        writer = ProgressWriter(log, interval=0.05)
        writer.enter("warmup")
        writer.start()
        try:
            run_batches(lambda index: threading.Event().wait(0.003), lambda: None, 0, 100,
                        position=writer.position)
        finally:
            writer.stop()
    lines = [ln for ln in path.read_text().splitlines() if ln.startswith("__results.progress")]
    assert 2 <= len(lines) <= 15  # a few looks in ~0.3 s, not one per batch
    batch = parse_log(path)[0]["results.progress"]["batch"]
    assert 0 < batch < 100


def test_crash_message_names_signal_place_and_python_error(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    with LogWriter(log) as writer:
        writer.write_text("dlbench: monitor: GPU monitoring skipped: NVML unavailable")
        writer.write("results.progress", {"phase": "timed", "batch": 7})
    assert _crash_message(-9, log, {"phase": "timed", "batch": 7}) == (
        "worker killed by SIGKILL in the timed batches at batch 7")
    with LogWriter(log) as writer:
        writer.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in "
                          "<module>\n    import jax\nImportError: No module named 'jax'\n")
    assert _crash_message(1, log, None) == (
        "worker exited with status 1: ImportError: No module named 'jax'")


def test_ncu_summary_joins_the_record_of_an_ncu_run(tmp_path: Path) -> None:
    log = tmp_path / "e.log"
    assert "no readable CSV" in ncu_results(log)["results.profile.note"]
    sample = Path(__file__).parents[1] / "data" / "ncu" / "core_util.csv"
    (tmp_path / "e.log.ncu.csv").write_text(sample.read_text(encoding="utf-8"), encoding="utf-8")
    summary = ncu_results(log)["results.profile.ncu"]
    assert summary["kernels"] >= 1 and summary["duration_ms"] > 0
