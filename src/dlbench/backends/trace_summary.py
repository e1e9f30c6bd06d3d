"""A profiler trace's events as the record's summary, for the frameworks whose
profilers write an XPlane (``*.xplane.pb``: JAX's ``jax.profiler``, TensorFlow's
``tf.profiler``).

Each backend reads its trace with what its framework ships (JAX's
``jax.profiler.ProfileData``, TensorFlow's ``xplane_pb2``) and hands over plain
:class:`RawEvent` tuples: every event, on which plane (``/host:CPU``,
``/device:GPU:0``) and line (a thread, a stream), when, and the operator it belongs
to when the event says. This module needs no framework:

- :func:`operator_events`: which events are operators and which count as busy. On a
  GPU, the kernels of the device planes' stream lines, named by the operator that
  launched them (busy: any kernel ran). On the CPU, the host plane's XLA operators
  (events named by their ``hlo_op``) and, for TensorFlow, its graph operators (events named
  ``node:OpType``, counted by op type, as PyTorch's ``aten::`` operators are);
- :func:`self_operator_times`: each operator's self time (an operator nested in
  another on the same line is subtracted from its parent) and call count, summed
  by name, as :class:`dlbench.measure.profile_summary.OperatorTime`;
- :func:`summarize`: ``results.profile.top_ops``, ``busy_ms`` and, on a device,
  ``utilization`` and its basis, with the functions PyTorch's window uses;
- :func:`new_traces`: the ``*.xplane.pb`` files a window wrote into a directory that
  may hold earlier windows' (a repeated experiment writes next to the same log);
- :class:`XPlaneProfiling`: the profiling window itself, opened and closed the same
  way for both frameworks, each starting, stopping and reading its own profiler.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from dlbench.errors import WorkerError
from dlbench.measure.profile_summary import OperatorTime, busy_ms, top_operators

__all__ = ["RawEvent", "TraceEvent", "XPlaneProfiling", "new_traces", "operator_events",
           "self_operator_times", "summarize"]

#: A TensorFlow graph operator's event on the host: ``node/name:OpType`` (node names
#: hold no colon or space; profiler events such as ``Foo::Bar`` or ``Eager: x`` do).
_TF_OP = re.compile(r"^[^\s:]+:([A-Za-z_][A-Za-z0-9_]*)$")


class RawEvent(NamedTuple):
    """One event of an XPlane: plane and line names, name, start and end (us), and
    the operator it belongs to when a stat names one (``hlo_op``, ``tf_op``)."""

    plane: str
    line: str
    name: str
    start_us: float
    end_us: float
    op: str | None


class TraceEvent(NamedTuple):
    """One operator's run: its name, the trace line (thread or stream) it ran on, and
    its start and end in microseconds on the trace's clock."""

    name: str
    line: str
    start_us: float
    end_us: float


def operator_events(
    events: Iterable[RawEvent], tf_ops: bool
) -> tuple[list[TraceEvent], list[TraceEvent], bool]:
    """The operator events, the busy events and whether they are a device's.

    >>> ops, busy, on_device = operator_events([
    ...     RawEvent("/host:CPU", "python", "EagerExecute", 0, 9, None),
    ...     RawEvent("/host:CPU", "tf_Compute/1", "dense/MatMul:_MklMatMul", 1, 3, None),
    ...     RawEvent("/host:CPU", "tf_Compute/2", "dense/Relu:Relu", 4, 5, None)],
    ...     tf_ops=True)
    >>> [(e.name, e.line) for e in ops], busy == ops, on_device
    ([('_MklMatMul', 'tf_Compute/1'), ('Relu', 'tf_Compute/2')], True, False)

    Where XLA ran, its operators (events named by their ``hlo_op``) are the work:

    >>> operator_events([
    ...     RawEvent("/host:CPU", "python", "__inference_f_1:__inference_f_1", 0, 9, None),
    ...     RawEvent("/host:CPU", "eigen", "MemoryAllocation", 4, 5, "fusion.2"),
    ...     RawEvent("/host:CPU", "eigen", "fusion.2", 4, 8, "fusion.2")], tf_ops=True)[0]
    [TraceEvent(name='fusion.2', line='eigen', start_us=4, end_us=8)]
    """
    kernels: list[TraceEvent] = []
    host: list[TraceEvent] = []
    xla: list[TraceEvent] = []
    for event in events:
        if event.plane.startswith("/device:GPU"):
            # Stream lines hold the kernels and copies; other lines are derived views.
            if event.line.startswith("Stream"):
                name = event.op.rsplit(":", 1)[-1] if event.op and tf_ops else event.op
                kernels.append(TraceEvent(name or event.name, f"{event.plane}/{event.line}",
                                          event.start_us, event.end_us))
        elif event.plane == "/host:CPU":
            # An XLA operator's own event is named after it; other events that carry
            # its name (allocations on its behalf) are not operator time.
            if event.op and event.op == event.name:
                xla.append(TraceEvent(event.op, event.line, event.start_us, event.end_us))
            elif tf_ops and (match := _TF_OP.match(event.name)):
                host.append(TraceEvent(match.group(1), event.line, event.start_us,
                                       event.end_us))
    if kernels:
        return kernels, kernels, True
    # A graph compiled by XLA shows as the call of its function (a graph operator that
    # spans the whole step) around XLA's operators: the latter are the work.
    operators = xla or host
    return operators, operators, False


def self_operator_times(events: Iterable[TraceEvent], on_device: bool) -> list[OperatorTime]:
    """Per operator name: calls and self time (its duration less that of the
    operators nested in it on the same line), as host or device time.

    >>> ops = self_operator_times([TraceEvent("call", "t", 0, 10),
    ...                            TraceEvent("dot", "t", 2, 6),
    ...                            TraceEvent("dot", "u", 0, 3)], False)
    >>> sorted((op.name, op.calls, op.self_host_us) for op in ops)
    [('call', 1, 6.0), ('dot', 2, 7.0)]
    """
    by_line: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in events:
        by_line[event.line].append(event)
    calls: dict[str, int] = defaultdict(int)
    self_us: dict[str, float] = defaultdict(float)
    for line_events in by_line.values():
        # Outer events first when two start together, so the inner one nests.
        ordered = sorted(line_events, key=lambda e: (e.start_us, -e.end_us))
        stack: list[TraceEvent] = []
        for event in ordered:
            while stack and stack[-1].end_us <= event.start_us:
                stack.pop()
            duration = event.end_us - event.start_us
            calls[event.name] += 1
            self_us[event.name] += duration
            if stack:
                self_us[stack[-1].name] -= duration
            stack.append(event)
    return [
        OperatorTime(name, calls[name], 0.0 if on_device else self_us[name],
                     self_us[name] if on_device else 0.0)
        for name in calls
    ]


def summarize(
    operators: Iterable[TraceEvent], busy: Iterable[TraceEvent], wall_ms: float, top: int,
    on_device: bool,
) -> dict[str, Any]:
    """``results.profile.*`` of a window whose steps took ``wall_ms``: the ``top``
    operators by self time, the time ``busy`` events (kernels on a device,
    operators on the CPU) covered, overlaps once, and on a device that time over the
    wall time (on the CPU the worker's CPU time gives the utilisation)."""
    covered = busy_ms((e.start_us, e.end_us) for e in busy)
    results: dict[str, Any] = {
        "results.profile.top_ops": top_operators(
            self_operator_times(operators, on_device), wall_ms, top, on_device),
        "results.profile.busy_ms": covered,
    }
    if on_device:  # on the CPU the worker measures it from CPU time (worker/extras.py)
        results["results.profile.utilization"] = covered / wall_ms if wall_ms > 0 else None
        results["results.profile.utilization_basis"] = "device_kernels"
    return results


def new_traces(directory: Path, before: set[Path]) -> list[Path]:
    """The ``*.xplane.pb`` files under ``directory`` that are not in ``before``."""
    return sorted(set(directory.rglob("*.xplane.pb")) - before)


class XPlaneProfiling:
    """``exp.profile`` for a backend whose profiler writes an XPlane: a mixin of the
    JAX and TensorFlow backends' extras. The window traces into ``<log><TRACE_SUFFIX>/``
    and is summarised from the files it added there; a subclass names its profiler
    and starts, stops and reads its trace."""

    params: Any
    #: The exp.profile value the backend runs (declared in its
    #: ``FrameworkInfo.profilers``), also the backend's name in messages.
    PROFILER: ClassVar[str]
    #: The suffix of the trace directory next to the log.
    TRACE_SUFFIX: ClassVar[str]
    #: Whether graph operators count (TensorFlow's ``node:OpType``; see
    #: :func:`operator_events`).
    TF_OPS: ClassVar[bool] = False
    #: ``results.profile.note`` of a trace that holds no operator events.
    NO_OPERATORS_NOTE: ClassVar[str]
    #: ``results.profile.note`` when :meth:`_trace_events` has no reader (None).
    NO_READER_NOTE: ClassVar[str] = ""
    _trace_dir: Path | None = None
    _traces_before: set[Path]

    def _start_trace(self, directory: Path) -> None:
        raise NotImplementedError

    def _stop_trace(self) -> None:
        raise NotImplementedError

    def _trace_events(self, paths: list[Path]) -> list[RawEvent] | None:
        """Every event of the XPlane files ``paths``; None when the framework cannot
        read them."""
        raise NotImplementedError

    def start_profile(self, tool: str, trace_path: str) -> None:
        """Open ``exp.profile=<PROFILER>``: a trace into ``<log><TRACE_SUFFIX>/``."""
        if tool != self.PROFILER:
            raise WorkerError(f"exp.profile={tool} is not supported by the {self.PROFILER} "
                              f"backend; supported: {self.PROFILER}")
        self._trace_dir = Path(trace_path + self.TRACE_SUFFIX)
        self._traces_before = set(self._trace_dir.rglob("*.xplane.pb"))
        self._start_trace(self._trace_dir)

    def stop_profile(self, wall_ms: float) -> dict[str, Any]:
        """Close the trace and summarise what it holds."""
        if self._trace_dir is None:
            raise WorkerError("the profiling window was never opened")
        self._stop_trace()
        directory, self._trace_dir = self._trace_dir, None
        results: dict[str, Any] = {"results.profile.trace": str(directory)}
        events = self._trace_events(new_traces(directory, self._traces_before))
        if events is None:
            results["results.profile.note"] = self.NO_READER_NOTE
            return results
        operators, busy, on_device = operator_events(events, tf_ops=self.TF_OPS)
        if not operators:
            results["results.profile.note"] = self.NO_OPERATORS_NOTE
            return results
        results.update(summarize(operators, busy, wall_ms,
                                 int(self.params["exp.profile_top"]), on_device))
        return results
