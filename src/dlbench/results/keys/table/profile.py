"""The result keys of the profiling window, the memory breakdown, the automatic batch
and time to accuracy (``worker/extras.py``, ``worker/autobatch.py``,
``worker/accuracy.py``); part of :mod:`dlbench.results.keys.table`."""

from __future__ import annotations

from dlbench.results.keys.types import ResultKey

__all__ = ["PROFILE_KEYS"]

_MS = "ms"

#: Profiling window, memory breakdown, automatic batch, time to accuracy
#: (``worker/extras.py``, ``worker/autobatch.py``, ``worker/accuracy.py``).
PROFILE_KEYS = [
    ResultKey("results.profile.tool", "str", "", "the exp.profile that ran", "", "first"),
    ResultKey("results.profile.when", "str", "",
              "when the profiled batches ran: after_timed (never timed batches)", "",
              "first"),
    ResultKey("results.profile.batches", "int", "", "batches inside the profiling window",
              "d", "none"),
    ResultKey("results.profile.trace", "str", "",
              "the profiler's own output next to the log (a .trace.json.gz, an .nsys-rep, "
              "a .jax_trace or .tf_trace directory)", "", "none"),
    ResultKey("results.profile.note", "str", "",
              "what the profile's summary could not give, and why", "", "none"),
    ResultKey("results.profile.wall_ms", "float", _MS,
              "wall time of the profiled batches", ".3g", "none"),
    ResultKey("results.profile.busy_ms", "float", _MS,
              "time any kernel (GPU) or operator (CPU) ran inside the window, overlaps "
              "counted once", ".3g", "none"),
    ResultKey("results.profile.utilization", "float", "",
              "on a GPU, results.profile.busy_ms / results.profile.wall_ms (TBD's compute "
              "utilisation); on the CPU, results.profile.cpu_ms / (results.profile.wall_ms "
              "x results.profile.cpus), at most 1: time preempted or waiting is not busy",
              ".1%", "none"),
    ResultKey("results.profile.utilization_basis", "str", "",
              "how utilization was measured: device_kernels (GPU kernels over wall time) or "
              "cpu_time (the worker's CPU time over wall time x its CPUs); cpu_operators in "
              "older records: CPU operators' wall time, preempted time counted as busy", "",
              "none"),
    ResultKey("results.profile.cpu_ms", "float", _MS,
              "the worker process's CPU time (all threads, user and system) inside the "
              "window", ".3g", "none"),
    ResultKey("results.profile.cpus", "int", "",
              "CPUs the worker may run on (its affinity) during the window", "d", "none"),
    ResultKey("results.profile.top_ops", "list[dict]", "",
              "operators by self time: name, calls, self_ms, share of the window, on "
              "device and host", "", "none"),
    ResultKey("results.profile.ncu", "dict", "%",
              "ncu core utilisation, kernel-duration weighted: fma, fp16, tensor, sfu, "
              "kernels", "", "none"),
    ResultKey("results.memory.weights_bytes", "int", "B", "bytes of the model's parameters",
              "d", "first", better="lower"),
    ResultKey("results.memory.gradients_bytes", "int", "B",
              "bytes of the parameters' gradients after a training step", "d", "first",
              better="lower"),
    ResultKey("results.memory.optimizer_bytes", "int", "B",
              "bytes of the optimizer's state tensors (momentum, Adam's moments)", "d",
              "first", better="lower"),
    ResultKey("results.memory.activations_bytes", "int", "B",
              "bytes of activations saved for backward in one step (parameters excluded)",
              "d", "none", better="lower"),
    ResultKey("results.memory.peak_bytes", "int", "B",
              "the device allocator's peak during the experiment (absent on the CPU)", "d",
              "max", better="lower"),
    ResultKey("results.memory.temp_bytes", "int", "B",
              "temporary buffers of one compiled step after reuse (XLA's memory_analysis, "
              "JAX): activations, gradients, scratch", "d", "first", better="lower"),
    ResultKey("results.memory.note", "str", "",
              "which memory figures the framework could not give, and why", "", "first"),
    ResultKey("results.auto_batch", "int", "",
              "the largest batch that ran with exp.replica_batch=auto (of several "
              "processes: the batch they all found; absent when they differ)", "d",
              "recomputed", better="higher"),
    ResultKey("results.auto_batches", "list[int]", "",
              "with exp.replica_batch=auto, the batch each process found, in process "
              "order (repeats and copies)", "", "recomputed"),
    ResultKey("results.auto_batch_probes", "list[dict]", "",
              "every probe of exp.replica_batch=auto: batch, fits, error", "", "none"),
    ResultKey("results.accuracy_curve", "list[float]", "",
              "held-out accuracy after each epoch (exp.phase=train_to_accuracy)", "",
              "none"),
    ResultKey("results.epoch_seconds", "list[float]", "s",
              "wall time of each epoch's training, evaluation excluded", "", "none"),
    ResultKey("results.accuracy_reached", "bool", "",
              "exp.target_accuracy was reached", "", "all"),
    ResultKey("results.epochs_to_target", "int", "",
              "epochs until the target was reached (null when not)", "d", "none", better="lower"),
    ResultKey("results.time_to_target", "float", "s",
              "training seconds until the target was reached (null when not)", ".3g",
              "none", better="lower"),
    ResultKey("results.accuracy_final", "float", "", "held-out accuracy after the last "
              "epoch", ".2%", "none", better="higher"),
    ResultKey("results.accuracy_data", "str", "",
              "the data set, its split and how its samples were shaped", "", "first"),
]
