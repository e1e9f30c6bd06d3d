"""The JAX backend's answers beyond timing: the profiling window and the memory
breakdown. A mixin of :class:`dlbench.backends.jax.JaxBackend`, kept apart so
that the timed path stays short; everything here runs after the timed batches.

Profiling (``exp.profile=jax``): ``jax.profiler.start_trace``/``stop_trace`` into
``<log>.jax_trace/`` (``plugins/profile/<time>/``: the XPlane ``*.xplane.pb`` that
TensorBoard's profile plug-in and xprof read, and a Chrome/Perfetto
``*.trace.json.gz``). The XPlane is read back with ``jax.profiler.ProfileData``: on the
CPU the operators are XLA's thunks (events carrying an ``hlo_op``), ranked by host
self time, and the utilisation is the time any of them ran over the window's wall
time; on a GPU the kernels of the device's stream lines, named by their ``hlo_op``,
ranked by device time (untested on hardware here).

Memory: weights are the parameters' bytes; gradients the bytes of
``jax.grad``'s result, its shapes and dtypes found by ``jax.eval_shape`` (XLA keeps the
real ones inside the compiled step, never as arrays); optimizer state the bytes of
Optax's state; activations the residuals JAX saves for the backward pass of one step
on one replica's share of the batch (``saved_residuals``, the parameters themselves
left out), the counterpart of what PyTorch's autograd saves;
``results.memory.temp_bytes`` XLA's own figure for the compiled step's temporary
buffers (``memory_analysis``); the peak from the device's allocator (``memory_stats``,
GPUs only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from dlbench.backends.trace_summary import RawEvent, XPlaneProfiling

__all__ = ["JaxExtras", "saved_activation_bytes", "tree_bytes"]

_CPU_PEAK_NOTE = "no allocator peak on the CPU: see results.use.rss_mb_max for the process"


def tree_bytes(tree: Any) -> int:
    """Bytes of every array (or ``jax.ShapeDtypeStruct``) in ``tree``: elements times
    element size, one copy of each (a replicated array counts once)."""
    return sum(int(np.prod(leaf.shape, dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
               for leaf in jax.tree.leaves(tree))


def saved_activation_bytes(loss: Callable[..., Any], params: Any, *inputs: Any) -> int | None:
    """Bytes of the residuals JAX saves for the backward pass of ``loss(params,
    *inputs)``, leaving out the parameters (saved as they are, they are weights);
    None when this JAX has no ``saved_residuals``."""
    try:
        from jax._src.ad_checkpoint import saved_residuals  # what print_saved_residuals prints
    except ImportError:
        return None

    def of_params(params: Any, *inputs: Any) -> Any:
        return loss(params, *inputs)

    total = 0
    for aval, source in saved_residuals(of_params, params, *inputs):
        # The parameters come in as the argument named "params" (its leaves
        # "params['Dense_0']['kernel']", ...).
        if source == "from the argument params" or source.startswith(
                "from the argument params["):
            continue
        total += int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize
    return total


def _xplane_events(paths: Iterable[Path]) -> list[RawEvent]:
    """Every event of the XPlane files, with the op it belongs to (its ``hlo_op``)."""
    events = []
    for path in paths:
        data = jax.profiler.ProfileData.from_file(str(path))
        for plane in data.planes:
            for line in plane.lines:
                for event in line.events:
                    stats = dict(event.stats)
                    start = float(event.start_ns) / 1000.0
                    events.append(RawEvent(
                        plane.name, line.name, event.name, start,
                        start + float(event.duration_ns) / 1000.0,
                        str(stats["hlo_op"]) if "hlo_op" in stats else None))
    return events


class JaxExtras(XPlaneProfiling):
    """Profiling and memory for a backend that has the attributes below."""

    params: Any
    devices: list[Any]
    training: bool
    compiled: Any
    state: dict[str, Any]
    variables: Any
    inputs: Any
    targets: Any
    #: ``loss(params, inputs, targets)`` of one training step (the dropout key and the
    #: batch statistics of the current state), set up by the backend.
    step_loss: Callable[..., Any] | None = None

    PROFILER = "jax"
    TRACE_SUFFIX = ".jax_trace"
    NO_OPERATORS_NOTE = "the JAX trace holds no XLA operator events: no top_ops or utilization"

    def _start_trace(self, directory: Path) -> None:
        jax.profiler.start_trace(str(directory), create_perfetto_trace=True)

    def _stop_trace(self) -> None:
        jax.profiler.stop_trace()

    def _trace_events(self, paths: list[Path]) -> list[RawEvent]:
        return _xplane_events(paths)

    def memory_breakdown(self) -> dict[str, Any]:
        """Weights, gradients, optimizer state and saved activations of one step, in
        bytes, from shapes (nothing runs); XLA's temporary buffers; the GPU peak."""
        notes = []
        params = self.state["params"] if self.training else self.variables["params"]
        results: dict[str, Any] = {"results.memory.weights_bytes": tree_bytes(params)}
        if self.training and self.step_loss is not None:
            # One replica's share of the batch, as each device holds it (the batch is
            # split along its first axis), so that the figures are per replica as
            # PyTorch's processes report them.
            share = len(self.devices)
            inputs, targets = jax.tree.map(
                lambda a: jax.ShapeDtypeStruct((a.shape[0] // share, *a.shape[1:]), a.dtype),
                (self.inputs, self.targets))
            grads = jax.eval_shape(jax.grad(self.step_loss), params, inputs, targets)
            results["results.memory.gradients_bytes"] = tree_bytes(grads)
            results["results.memory.optimizer_bytes"] = tree_bytes(self.state["opt_state"])
            saved = saved_activation_bytes(self.step_loss, params, inputs, targets)
            if saved is None:
                notes.append("this JAX does not list saved residuals: no activations_bytes")
            else:
                results["results.memory.activations_bytes"] = saved
        else:
            # Inference computes no gradients and saves nothing for a backward pass.
            results.update({"results.memory.gradients_bytes": 0,
                            "results.memory.optimizer_bytes": 0,
                            "results.memory.activations_bytes": 0})
        analysis = self.compiled.memory_analysis()
        temp = getattr(analysis, "temp_size_in_bytes", None)
        if temp is not None:
            results["results.memory.temp_bytes"] = int(temp)
        peaks = [stats.get("peak_bytes_in_use") for stats in
                 (device.memory_stats() for device in self.devices) if stats]
        if any(peak is not None for peak in peaks):
            results["results.memory.peak_bytes"] = max(int(p) for p in peaks if p is not None)
        elif self.devices[0].platform == "cpu":
            notes.append(_CPU_PEAK_NOTE)
        else:
            notes.append(f"JAX's {self.devices[0].platform} client reports no allocator peak")
        if notes:
            results["results.memory.note"] = "; ".join(notes)
        return results
