"""The worker's untimed passes (:func:`dlbench.backends.base.run_steps`) and the XPlane
profiling window that JAX's and TensorFlow's backends share
(:class:`dlbench.backends.trace_summary.XPlaneProfiling`), in-process with recording
fakes: no framework is imported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dlbench.backends.base import Backend, run_steps
from dlbench.backends.trace_summary import RawEvent, XPlaneProfiling
from dlbench.errors import WorkerError


class _Recorder(Backend):
    """Writes down each step's number and each synchronisation, in order."""

    def __init__(self) -> None:
        super().__init__({})
        self.calls: list[str] = []

    def setup(self) -> None:
        pass

    def step(self, index: int) -> None:
        self.calls.append(f"step {index}")

    def synchronize(self) -> None:
        self.calls.append("sync")


def test_run_steps_numbers_on_from_first_then_synchronises_once() -> None:
    backend = _Recorder()
    assert run_steps(backend, 3, 2) == 5
    assert backend.calls == ["step 3", "step 4", "sync"]
    # No step: the same next number, and the device is still waited for.
    assert run_steps(backend, 5, 0) == 5
    assert backend.calls[-1:] == ["sync"] and len(backend.calls) == 4


class _FakeXPlane(XPlaneProfiling):
    """A profiler that writes one new ``*.xplane.pb`` per window and reads back the
    events it was given (None: no reader)."""

    PROFILER = "fakeprof"
    TRACE_SUFFIX = ".fake_trace"
    NO_OPERATORS_NOTE = "no operators"
    NO_READER_NOTE = "no reader"

    def __init__(self, events: list[RawEvent] | None) -> None:
        self.params = {"exp.profile_top": 5}
        self.events = events
        self.read: list[Path] = []
        self.windows = 0

    def _start_trace(self, directory: Path) -> None:
        directory.mkdir(exist_ok=True)

    def _stop_trace(self) -> None:
        assert self._trace_dir is not None
        self.windows += 1
        (self._trace_dir / f"window{self.windows}.xplane.pb").write_bytes(b"")

    def _trace_events(self, paths: list[Path]) -> list[RawEvent] | None:
        self.read = paths
        return self.events


# One XLA operator on the host, 4 us long.
_FUSION = RawEvent("/host:CPU", "eigen", "fusion.2", 4.0, 8.0, "fusion.2")


def test_the_window_summarises_only_the_files_it_wrote(tmp_path: Path) -> None:
    window = _FakeXPlane([_FUSION])
    log = str(tmp_path / "exp.log")
    window.start_profile("fakeprof", log)
    window.stop_profile(1.0)
    window.start_profile("fakeprof", log)
    results = window.stop_profile(1.0)
    trace = tmp_path / "exp.log.fake_trace"
    assert results["results.profile.trace"] == str(trace)
    assert window.read == [trace / "window2.xplane.pb"]  # not the first window's
    assert results["results.profile.busy_ms"] == pytest.approx(0.004)
    assert [op["name"] for op in results["results.profile.top_ops"]] == ["fusion.2"]
    assert "results.profile.utilization" not in results  # the CPU's is the worker's


@pytest.mark.parametrize(("events", "note"), [(None, "no reader"), ([], "no operators")])
def test_a_trace_without_operators_says_why(tmp_path: Path, events: list[RawEvent] | None,
                                            note: str) -> None:
    window = _FakeXPlane(events)
    window.start_profile("fakeprof", str(tmp_path / "exp.log"))
    assert window.stop_profile(1.0) == {
        "results.profile.trace": str(tmp_path / "exp.log.fake_trace"),
        "results.profile.note": note}


def test_another_profiler_or_no_window_is_refused(tmp_path: Path) -> None:
    window = _FakeXPlane([])
    with pytest.raises(WorkerError, match=re.escape(
            "exp.profile=torch is not supported by the fakeprof backend; supported: fakeprof")):
        window.start_profile("torch", str(tmp_path / "exp.log"))
    with pytest.raises(WorkerError, match="the profiling window was never opened"):
        window.stop_profile(1.0)
