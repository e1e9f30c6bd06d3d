"""The TensorFlow backend's answers beyond timing: the profiling window and the memory
breakdown. A mixin of :class:`dlbench.backends.tensorflow.TensorFlowBackend`,
kept apart so that the timed path stays short; everything here runs after the timed
batches.

Profiling (``exp.profile=tensorflow``): ``tf.profiler.experimental.start``/``stop``
into ``<log>.tf_trace/`` (``plugins/profile/<time>/<host>.xplane.pb``, which
TensorBoard's profile plug-in and xprof open; TensorFlow writes no Chrome trace). The
XPlane is read back with the protocol buffer TensorFlow ships (``xplane_pb2``): on the
CPU the graph's operators (``node:OpType`` events of the executor's threads, summed
by op type) or, with ``tensorflow.xla``, XLA's operators, ranked by host self time,
and the utilisation is the time any of them ran over the window's wall time; on a GPU
the kernels of the device's stream lines, named by the operator that launched them,
ranked by device time (untested on hardware here).

Memory: weights are the trainable variables' bytes (the parameters that
``sys.model_params`` counts; batch norm's moving statistics are not weights, as
PyTorch's buffers are not parameters); gradients the bytes of the gradients one eager
``tf.GradientTape`` step computes on this replica's batch (an embedding's are sparse:
its ``IndexedSlices`` count as values and indices); optimizer state every variable of
the Keras optimizer (momentum or Adam's moments, its iteration counter and learning
rate, a loss-scale optimizer's scale). TensorFlow does not expose the tensors a tape
keeps for the backward pass, so there is no activations figure in training (the note
says so). The peak is the GPU allocator's (``tf.config.experimental.get_memory_info``);
the CPU has none.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import tensorflow as tf

from dlbench.backends.trace_summary import RawEvent, XPlaneProfiling
from dlbench.models.tensorflow.workloads import Batch, KerasWorkload

__all__ = ["TensorFlowExtras", "tensor_bytes", "variables_bytes"]

_NO_ACTIVATIONS = ("TensorFlow does not expose the tensors GradientTape keeps for the "
                   "backward pass: no activations_bytes")
_CPU_PEAK_NOTE = "no allocator peak on the CPU: see results.use.rss_mb_max for the process"


def tensor_bytes(value: Any) -> int:
    """Bytes of a tensor or variable (elements times element size), or of an
    ``IndexedSlices`` (its values and indices)."""
    if isinstance(value, tf.IndexedSlices):
        return tensor_bytes(value.values) + tensor_bytes(value.indices)
    size: int = tf.as_dtype(value.dtype).size
    return int(value.shape.num_elements()) * size


def variables_bytes(variables: Iterable[Any]) -> int:
    """Bytes of ``variables``, each counted once."""
    unique = {id(v): v for v in variables}
    return sum(tensor_bytes(v) for v in unique.values())


def _stat_text(plane: Any, stat: Any) -> str:
    """A string stat's value, given inline or by reference to the plane's metadata."""
    if stat.HasField("ref_value"):
        return str(plane.stat_metadata[stat.ref_value].name)
    return str(stat.str_value)


def _xplane_events(paths: Iterable[Path]) -> list[RawEvent] | None:
    """Every event of the XPlane files, with the operator a stat names (``hlo_op``; on
    a GPU also ``tf_op``, the graph operator that launched a kernel; on the host
    ``tf_op`` marks allocations too, so there only the event's name counts); None
    when this TensorFlow does not ship the XPlane protocol buffer."""
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:
        return None
    events = []
    for path in paths:
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            names = ("hlo_op", "tf_op") if plane.name.startswith("/device:") else ("hlo_op",)
            op_stats = {key for key, meta in plane.stat_metadata.items() if meta.name in names}
            for line in plane.lines:
                base_ps = line.timestamp_ns * 1000
                for event in line.events:
                    meta = plane.event_metadata[event.metadata_id]
                    op = next((_stat_text(plane, s) for s in (*event.stats, *meta.stats)
                               if s.metadata_id in op_stats), None)
                    start = (base_ps + event.offset_ps) / 1e6
                    events.append(RawEvent(plane.name, line.name, meta.name, start,
                                           start + event.duration_ps / 1e6, op))
    return events


class TensorFlowExtras(XPlaneProfiling):
    """Profiling and memory for a backend that has the attributes below."""

    params: Any
    devices: list[str]
    gpus: str
    training: bool
    model: Any
    optimizer: Any
    workload: KerasWorkload
    batch: Batch
    strategy: tf.distribute.Strategy | None

    PROFILER = "tensorflow"
    TRACE_SUFFIX = ".tf_trace"
    TF_OPS = True
    NO_OPERATORS_NOTE = ("the TensorFlow trace holds no operator events: no top_ops or "
                         "utilization")
    NO_READER_NOTE = ("this TensorFlow ships no XPlane reader "
                      "(tensorflow.tsl.profiler.protobuf): no top_ops or utilization; open "
                      "the trace in TensorBoard")

    def _start_trace(self, directory: Path) -> None:
        tf.profiler.experimental.start(str(directory))

    def _stop_trace(self) -> None:
        tf.profiler.experimental.stop()

    def _trace_events(self, paths: list[Path]) -> list[RawEvent] | None:
        return _xplane_events(paths)

    def _replica_batch(self) -> tuple[Any, Any]:
        """The first replica's inputs and targets (the whole batch on one device)."""
        strategy = self.strategy
        if strategy is None:
            inputs, targets = self.batch
            return inputs, targets
        first = tf.nest.map_structure(
            lambda value: strategy.experimental_local_results(value)[0], self.batch)
        return first[0], first[1]

    def memory_breakdown(self) -> dict[str, Any]:
        """Weights and optimizer state from the variables; gradients from one eager,
        untimed step of this replica's batch; the GPU allocator's peak."""
        notes = []
        variables = self.model.trainable_variables
        results: dict[str, Any] = {"results.memory.weights_bytes": variables_bytes(variables)}
        if self.training:
            inputs, targets = self._replica_batch()
            with tf.device(self.devices[0]), tf.GradientTape() as tape:
                loss = self.workload.loss(self.model(inputs, training=True), targets)
            grads = tape.gradient(loss, variables)
            results["results.memory.gradients_bytes"] = sum(
                tensor_bytes(g) for g in grads if g is not None)
            results["results.memory.optimizer_bytes"] = variables_bytes(
                self.optimizer.variables)
            notes.append(_NO_ACTIVATIONS)
        else:
            # Inference computes no gradients and keeps nothing for a backward pass.
            results.update({"results.memory.gradients_bytes": 0,
                            "results.memory.optimizer_bytes": 0,
                            "results.memory.activations_bytes": 0})
        if self.gpus:
            peaks = [tf.config.experimental.get_memory_info(device.split("device:")[-1])
                     .get("peak") for device in self.devices]
            results["results.memory.peak_bytes"] = max(int(p or 0) for p in peaks)
        else:
            notes.append(_CPU_PEAK_NOTE)
        if notes:
            results["results.memory.note"] = "; ".join(notes)
        return results
