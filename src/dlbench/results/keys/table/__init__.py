"""Every ``results.*``, ``sys.*`` and ``hw.*`` key dlbench writes, with its type,
unit, meaning, format and aggregation: the data of :mod:`dlbench.results.keys.lookup`.

A name may hold placeholders (``<i>``, ``<series>``...), defined in
:data:`PLACEHOLDERS`, for families of keys such as one per GPU. A value may always be
``null`` where it cannot be computed (a CV of a zero mean, no CI below 4 batches).
"""

from __future__ import annotations

from dlbench.results.keys.table.endpoint import ENDPOINT_KEYS
from dlbench.results.keys.table.profile import PROFILE_KEYS
from dlbench.results.keys.table.scenarios import SERVING_ROWS
from dlbench.results.keys.types import AGGREGATES, ResultKey

__all__ = ["AGGREGATES", "PLACEHOLDERS", "REPEAT_ORDER_INTERLEAVED", "RESULT_KEYS", "ResultKey"]


#: What each placeholder of a key name stands for: a regular expression.
PLACEHOLDERS: dict[str, tuple[str, str]] = {
    "i": (r"[0-9]+", "a GPU's index, 0, 1, ..."),
    "series": (
        r"cpu_percent|rss_mb|host_memory_used_mb|system_cpu_percent|other_cpu_percent"
        r"|gpu[0-9]+_(?:util_percent|memory_used_mb|power_w|temperature_c|sm_clock_mhz"
        r"|other_processes)",
        "a monitor series with a mean and a maximum: cpu_percent, rss_mb, "
        "host_memory_used_mb, system_cpu_percent, other_cpu_percent, and per GPU "
        "gpu<i>_util_percent, gpu<i>_memory_used_mb, gpu<i>_power_w, "
        "gpu<i>_temperature_c, gpu<i>_sm_clock_mhz, gpu<i>_other_processes"),
}

_MS = "ms"

#: The timing results the worker writes (``results/stats.py``, ``worker/``).
_TIMING = [
    ResultKey("results.time", "float", _MS,
              "mean time of a timed batch (a step, across replicas)", ".2f", "mean",
              better="lower"),
    ResultKey("results.time_std", "float", _MS,
              "sample standard deviation of the batch times", ".3g", "pooled", better="lower"),
    ResultKey("results.time_cv", "float", "",
              "coefficient of variation: results.time_std / results.time", ".3g", "pooled",
              better="lower"),
    ResultKey("results.time_min", "float", _MS, "shortest timed batch", ".2f", "pooled",
              better="lower"),
    ResultKey("results.time_max", "float", _MS, "longest timed batch", ".2f", "pooled",
              better="lower"),
    *(ResultKey(f"results.time_p{p}", "float", _MS,
                f"{p}th percentile of the batch times (linear interpolation)", ".2f", "pooled",
                better="lower")
      for p in (50, 90, 95, 99)),
    ResultKey("results.ci95", "float", _MS,
              "half-width of the 95 % confidence interval of results.time (batch means; "
              "between processes with exp.repeat)", ".3g", "pooled", better="lower",
              repeats="recomputed"),
    ResultKey("results.ci95_rel", "float", "",
              "results.ci95 as a fraction of results.time", ".2%", "pooled", better="lower",
              repeats="recomputed"),
    ResultKey("results.time_data", "list[float]", _MS,
              "every timed batch, in order", "", "concat"),
    ResultKey("results.warmup_time_data", "list[float]", _MS,
              "every warm-up batch, in order (adaptive warm-up)", "", "none"),
    ResultKey("results.warmup_settled", "bool", "",
              "the adaptive warm-up settled before its cap", "", "none"),
    ResultKey("results.throughput", "float", "samples/s",
              "exp.effective_batch x 1000 / results.time, in results.throughput_unit "
              "(copies: the sum; exp.repeat: recomputed from the combined time; scenarios: "
              "samples served / results.timed_seconds; serving: "
              "results.output_tokens_per_s)", ".2f",
              "sum", better="higher", repeats="recomputed"),
    ResultKey("results.throughput_unit", "str", "",
              "what results.throughput counts per second (samples, tokens...)", "", "first"),
    ResultKey("results.num_batches", "int", "", "timed batches", "d", "sum"),
    ResultKey("results.num_warmup_batches", "int", "", "warm-up batches", "d", "sum"),
    ResultKey("results.stop_reason", "str", "",
              "why the timed loop stopped: fixed, ci_reached, max_duration, max_batches "
              "(comma-joined over processes)", "", "concat"),
    ResultKey("results.timed_seconds", "float", "s",
              "wall time of the timed batches (scenarios: of the run)", ".3g", "none"),
    ResultKey("results.start_time", "str", "ISO 8601",
              "when the worker started", "", "min"),
    ResultKey("results.end_time", "str", "ISO 8601",
              "when the worker (or the runner, for a killed worker) finished", "", "max"),
    ResultKey("results.flops_per_sample", "float", "FLOP",
              "floating-point operations of one sample's step", ".3g", "first"),
    ResultKey("results.flops_per_sample_framework", "float", "FLOP",
              "the framework's own count of results.flops_per_sample (a cross-check)",
              ".3g", "first"),
    ResultKey("results.flops_source", "str", "",
              "where results.flops_per_sample comes from: architecture (the model's, the "
              "same in every framework), configuration (a Hugging Face model's, from its "
              "configuration) or framework:<counter>", "", "first"),
    ResultKey("results.tflops", "float", "TFLOP/s",
              "results.flops_per_sample x samples per second / 1e12 (copies: the sum; "
              "exp.repeat: recomputed)", ".3g", "sum", better="higher", repeats="recomputed"),
    ResultKey("results.mfu", "float", "",
              "model FLOP utilisation: results.tflops / results.mfu_peak_tflops (copies: "
              "their sum over the devices they had, one GPU each or the one CPU they "
              "shared; exp.repeat: recomputed)", ".1%", "recomputed", better="higher"),
    ResultKey("results.mfu_peak_tflops", "float", "TFLOP/s",
              "the device's peak the MFU is relative to", ".4g", "first"),
    ResultKey("results.mfu_peak_source", "str", "",
              "where results.mfu_peak_tflops comes from", "", "first"),
    ResultKey("results.loss_last", "float", "",
              "the last training loss (training only)", ".4g", "none", better="lower"),
    ResultKey("results.compile_time", "float", "s",
              "tracing, compiling or session creation before the first batch", ".3g",
              "none", better="lower"),
    ResultKey("results.export_time", "float", "s",
              "exporting the model to ONNX (onnxruntime; null when cached)", ".3g", "none",
              better="lower"),
    ResultKey("results.export_cached", "bool", "",
              "the ONNX export came from onnxruntime.export_cache", "", "none"),
    ResultKey("results.stable", "bool", "",
              "no reason to distrust the result (see results.unstable_reasons)", "", "all"),
    ResultKey("results.unstable_reasons", "list[str]", "",
              "why the result is unstable (CV, CI, warm-up, drift, contention)", "",
              "concat"),
    ResultKey("results.progress", "dict", "",
              'how far the worker got: {"phase": P, "batch": N, "elapsed": S, "done": D, '
              '"total": T, ...} (fields in dlbench.results.log.progress_keys)', "",
              "none"),
    ResultKey("results.failure_kind", "str", "",
              "what ended a failed experiment: oom, exception, signal, exit, timeout, "
              "interrupted", "", "none"),
    ResultKey("results.loss_data", "list[float]", "",
              "every training step's loss, warm-up steps first, in order (Mila's "
              "batch_loss; training only)", "", "none"),
    ResultKey("results.throughput_batch_mean", "float", "samples/s",
              "mean over the timed batches of each one's exp.effective_batch x 1000 / its "
              "time, in results.throughput_unit (results.throughput is of the mean time)",
              ".2f", "sum", better="higher", repeats="recomputed"),
    ResultKey("results.mfu_note", "str", "",
              "why results.mfu is null though a peak was found: it came out above 1, so the "
              "peak (results.mfu_peak_source) is wrong", "", "first"),
    ResultKey("results.timing_method", "str", "",
              "how the batch times were taken: host (clock around a synchronised step), "
              "cuda_events (events on the device's stream), jax_dispatch (blocks of "
              "steps dispatched ahead, each step the block's mean)", "", "first"),
    ResultKey("results.peak_sustained_tflops", "float", "TFLOP/s",
              "the device's matmul peak in exp.dtype that dlbench peak measured, "
              "sustained (median batch)", ".4g", "first"),
    ResultKey("results.peak_burst_tflops", "float", "TFLOP/s",
              "the same peak, burst (best batch)", ".4g", "first"),
]

#: Data-parallel runs: one element per replica.
_RANKS = [
    ResultKey("results.rank_time", "list[float]", _MS,
              "each replica's mean batch time", "", "none"),
    ResultKey("results.rank_throughput", "list[float]", "samples/s",
              "each replica's own throughput: exp.replica_batch x 1000 / its time", "",
              "none"),
    ResultKey("results.rank_time_data", "list[list[float]]", _MS,
              "each replica's batch times", "", "none"),
]

#: ``results.repeat_order`` of an experiment whose processes were interleaved: the
#: launcher writes it, ``dlbench compare`` pairs process k of A with process k of B on it.
REPEAT_ORDER_INTERLEAVED = "interleaved"

#: An experiment measured by several processes (``exp.repeat``), written by the runner.
_REPEATS = [
    ResultKey("results.repeat_times", "list[float]", _MS,
              "each process's results.time", "", "none"),
    ResultKey("results.repeat_order", "str", "",
              f"{REPEAT_ORDER_INTERLEAVED}: dlbench run --interleave ran process k of every "
              "experiment of the sweep before process k+1 of any", "", "none"),
    ResultKey("results.repeat_time_std", "float", _MS,
              "standard deviation of the processes' results.time", ".3g", "none", better="lower"),
    ResultKey("results.repeat_cv", "float", "",
              "between-process CV: results.repeat_time_std / results.time", ".3g", "none",
              better="lower"),
    ResultKey("results.repeat_within_cv", "float", "",
              "mean of the processes' own results.time_cv", ".3g", "none", better="lower"),
    ResultKey("results.repeat_time_cv", "list[float]", "",
              "each process's results.time_cv", "", "none"),
    ResultKey("results.repeat_num_batches", "list[int]", "",
              "each process's results.num_batches", "", "none"),
    ResultKey("results.repeat_num_warmup_batches", "list[int]", "",
              "each process's results.num_warmup_batches", "", "none"),
    ResultKey("results.repeat_stop_reason", "list[str]", "",
              "each process's results.stop_reason", "", "none"),
    ResultKey("results.repeat_log_files", "list[str]", "",
              "each process's own log", "", "none"),
]

#: Copies of an experiment run at once on one node (``exp.parallel_jobs``).
_COPIES = [
    ResultKey("results.copies", "int", "", "how many copies ran at once", "d", "none"),
    ResultKey("results.copy_time", "list[float]", _MS,
              "each copy's results.time", "", "none"),
    ResultKey("results.copy_num_batches", "list[int]", "",
              "each copy's timed batches: how results.time_data splits into copies", "",
              "none"),
    ResultKey("results.copy_throughput", "list[float]", "samples/s",
              "each copy's results.throughput (results.throughput is their sum)", "",
              "none"),
    ResultKey("results.copy_tflops", "list[float]", "TFLOP/s",
              "each copy's results.tflops", "", "none"),
    ResultKey("results.copy_cpus", "list[str]", "", "each copy's CPU list", "", "none"),
    ResultKey("results.copy_gpus", "list[str]", "", "each copy's exp.gpus", "", "none"),
    ResultKey("results.copy_cpu_affinity", "list[str]", "",
              "each copy's sys.cpu_affinity, as the copy saw it", "", "none"),
    ResultKey("results.copy_log_files", "list[str]", "", "each copy's own log", "",
              "none"),
    ResultKey("results.copy_isolation", "str", "",
              "how the copies were held to their shares: cgroup, rlimit or the "
              "container engine", "", "none"),
]

#: The resource monitor (``measure/monitor.py``, ``measure/nvml.py``).
_MONITOR = [
    ResultKey("results.use.time", "list[float]", "s",
              "when each sample was taken, since the monitor started", "", "none"),
    ResultKey("results.use.timed", "list[float]", "s",
              "start and end of the timed batches on the results.use.time clock", "",
              "none"),
    ResultKey("results.use.<series>", "list[float]", "",
              "that series' samples (unit in its name: percent, mb, w, c, mhz)", "",
              "none"),
    ResultKey("results.use.<series>_mean", "float", "",
              "that series' mean over the timed batches", ".4g", "mean"),
    ResultKey("results.use.<series>_max", "float", "",
              "that series' maximum over the timed batches", ".4g", "max"),
    ResultKey("results.use.cpu_energy_j", "float", "J",
              "the CPU packages' energy over the timed batches, from RAPL (its samples, "
              "a list, are written first)", ".4g", "sum", better="lower"),
    ResultKey("results.use.gpu<i>_energy_j", "float", "J",
              "that GPU's energy over the timed batches (its samples, a list, are "
              "written first)", ".4g", "sum", better="lower"),
    ResultKey("results.use.gpu<i>_throttle", "list[int]", "",
              "samples of that GPU's throttle-reason bit mask", "", "none"),
    ResultKey("results.use.gpu<i>_throttle_reasons", "dict", "",
              "share of samples each throttle reason was active in", "", "none"),
    ResultKey("results.use.gpu<i>_used", "bool", "",
              "the worker used that GPU (its samples, a list, are written first)", "",
              "any"),
    ResultKey("results.use.gpu_energy_j", "float", "J",
              "all GPUs' energy over the timed batches", ".4g", "sum", better="lower"),
    ResultKey("results.use.energy_j", "float", "J",
              "CPU and GPU energy over the timed batches", ".4g", "sum", better="lower"),
    ResultKey("results.use.power_w", "float", "W",
              "results.use.energy_j over the timed batches' wall time", ".4g", "mean",
              better="lower"),
    ResultKey("results.use.samples_per_joule", "float", "samples/J",
              "timed samples over results.use.energy_j", ".4g", "recomputed", better="higher"),
    ResultKey("results.use.samples", "int", "",
              "monitor samples inside the timed batches", "d", "sum"),
    ResultKey("results.use.interval_s", "float", "s", "monitor sampling interval", ".3g",
              "first"),
    ResultKey("results.use.cpus_available", "int", "",
              "CPUs the worker may run on (its affinity)", "d", "first"),
]

#: The host, the software and the framework (``measure/sysinfo.py``, backends).
_ENVIRONMENT = [
    ResultKey("sys.hostname", "str", "", "host name", "", "first"),
    ResultKey("sys.os", "str", "", "kernel: system and release", "", "first"),
    ResultKey("sys.os_release", "str", "", "distribution (os-release PRETTY_NAME)", "",
              "first"),
    ResultKey("sys.python", "str", "", "Python version", "", "first"),
    ResultKey("sys.python_implementation", "str", "", "CPython, PyPy...", "", "first"),
    ResultKey("sys.python_executable", "str", "", "the worker's interpreter", "", "first"),
    ResultKey("sys.dlbench_version", "str", "", "dlbench's version", "", "first"),
    ResultKey("sys.dlbench_git_commit", "str", "",
              "dlbench's git commit, when run from a checkout", "", "first"),
    ResultKey("sys.env", "dict", "",
              "environment variables that change performance, when set", "", "first"),
    ResultKey("sys.worker_start", "str", "",
              "how the worker started: fresh (its own interpreter) or forked (by the "
              "fork server)", "", "first"),
    ResultKey("sys.worker_env", "list[str]", "",
              "names (never values) of the environment variables the worker started with: "
              "the parent's allowed ones, those of DLBENCH_WORKER_ENV, dlbench's own",
              "", "first"),
    ResultKey("sys.cpu_affinity", "str", "", "CPUs the worker may run on, as a list",
              "", "none"),
    ResultKey("sys.cuda_driver_version", "str", "", "CUDA version of the driver", "",
              "first"),
    ResultKey("sys.framework", "str", "", "the framework described (dlbench sysinfo)",
              "", "first"),
    ResultKey("sys.framework_version", "str", "", "the framework's version", "",
              "first"),
    ResultKey("sys.framework_build", "dict", "",
              "how the framework was built (CUDA, cuDNN, oneDNN, threads...)", "", "first"),
    ResultKey("sys.model_params", "int", "", "the model's parameters", "d", "first"),
    ResultKey("sys.nccl_version", "str", "", "NCCL version (PyTorch on GPUs)", "",
              "first"),
    ResultKey("sys.tensorflow_version", "str", "", "TensorFlow version", "", "first"),
    ResultKey("sys.keras_version", "str", "", "Keras version", "", "first"),
    ResultKey("sys.tensorflow_xla", "bool", "", "XLA compilation on", "", "first"),
    ResultKey("sys.jax_version", "str", "", "JAX version", "", "first"),
    ResultKey("sys.jaxlib_version", "str", "", "jaxlib version", "", "first"),
    ResultKey("sys.flax_version", "str", "", "Flax version", "", "first"),
    ResultKey("sys.optax_version", "str", "", "Optax version", "", "first"),
    ResultKey("sys.jax_platform", "str", "", "JAX's platform: cpu, gpu, tpu", "",
              "first"),
    ResultKey("sys.jax_devices", "list[str]", "", "the JAX devices used", "", "first"),
    ResultKey("hw.cpu_model", "str", "", "CPU model name", "", "first"),
    ResultKey("hw.cpu_count", "int", "", "logical CPUs of the host", "d", "first"),
    ResultKey("hw.cpu_cores", "int", "", "physical cores of the host", "d", "first"),
    ResultKey("hw.cpu_freq_mhz", "dict", "MHz", "current, min and max CPU frequency",
              "", "first"),
    ResultKey("hw.cpu_governor", "str", "", "CPU frequency governor of cpu0", "",
              "first"),
    ResultKey("hw.cpu_affinity_count", "int", "", "CPUs the worker may run on", "d",
              "none"),
    ResultKey("hw.memory_gib", "float", "GiB", "host memory", ".2f", "first"),
    ResultKey("hw.device_name", "str", "", "the device the model ran on (cpu, a GPU)",
              "", "first"),
    ResultKey("hw.device_memory_gib", "float", "GiB", "that device's memory", ".2f",
              "first"),
    ResultKey("hw.device_capability", "str", "", "that GPU's compute capability", "",
              "first"),
    ResultKey("hw.gpu_count", "int", "", "NVIDIA GPUs NVML sees", "d", "first"),
    ResultKey("hw.gpus", "list[dict]", "",
              "each GPU: index, name, memory, clocks, power limit, PCI bus...", "",
              "first"),
    ResultKey("hw.gpu_driver", "str", "", "NVIDIA driver version", "", "first"),
    ResultKey("hw.gpu_topology", "dict", "",
              'how each pair of GPUs is connected, {"0-1": "NVLink"...}', "", "first"),
    ResultKey("sys.layout", "str", "",
              "the memory layout the model's 4-D image inputs and activations ran in: "
              "NHWC (channels last) or NCHW; absent for other inputs", "", "first"),
]

#: Inference scenarios, LoadGen's way (``measure/loadgen/``);
#: percentiles by LoadGen's rule: the sorted value at index floor(n q / 100).
_QPS = "queries/s"
_SCENARIO = [
    ResultKey("results.latency_mean", "float", _MS,
              "mean query latency (serving: a request's, from its scheduled moment to its "
              "last text event)", ".3f", better="lower"),
    *(ResultKey(f"results.latency_p{q}", "float", _MS, f"{q}th percentile of query latency",
                ".3f", better="lower") for q in (50, 90, 99)),
    ResultKey("results.latency_max", "float", _MS, "longest query latency", ".3f", better="lower"),
    ResultKey("results.latency_at_percentile", "float", _MS,
              "query latency at exp.latency_percentile", ".3f", better="lower"),
    ResultKey("results.latency_early_stop", "float", _MS,
              "streams: LoadGen's early-stopping estimate of that percentile, a 99% upper "
              "bound (null: too few queries)", ".3f", better="lower"),
    ResultKey("results.latency_data", "list[float]", _MS,
              "every completed query's latency in issue order (server: from its scheduled "
              "arrival; serving: each request after the warm-up that succeeded)"),
    ResultKey("results.wait_mean", "float", _MS,
              "server: mean time from a query's scheduled arrival to its batch's start", ".3f",
              better="lower"),
    ResultKey("results.service_data", "list[float]", _MS,
              "server, offline: each batch's serving time, in order"),
    ResultKey("results.batch_data", "list[int]", "",
              "server, offline: samples in each batch, in order"),
    ResultKey("results.queries", "int", "", "queries completed (offline: samples)", "d"),
    ResultKey("results.qps_achieved", "float", _QPS,
              "completed queries per second (server: LoadGen's (n - 1) / last completion)",
              ".2f", better="higher"),
    ResultKey("results.qps_target", "float", _QPS,
              "server: exp.target_qps, or the highest valid probe's with auto", ".2f",
              better="higher"),
    ResultKey("results.qps_search_start", "float", _QPS,
              "exp.target_qps=auto: the rate the search started from", ".2f"),
    ResultKey("results.valid", "bool", "",
              "the scenario run met every rule (see results.valid_reasons)"),
    ResultKey("results.valid_reasons", "list[str]", "",
              "why the scenario run is not valid: queries, duration, bound, early stopping; "
              "serving: failed requests, TTFT or TPOT over its objective, a client that fell "
              "behind"),
    ResultKey("results.scenario_probes", "list[dict]", "",
              "exp.target_qps=auto: every probe's qps, valid, reasons, queries, planned, "
              "latency_at_percentile, qps_achieved, seconds; an endpoint's search (and "
              "its exp.replica_batch=auto): repeat, load, qps or concurrency, passed, "
              "reasons, valid, requests, slo_attainment, goodput_requests_per_s, "
              "goodput_tokens_per_s, output_tokens_per_s, requests_per_s, ttft_p99, "
              "tpot_p99, latency_p99, client_kept_up, seconds"),
]

#: The whole table, in the order the docs show it.
RESULT_KEYS: tuple[ResultKey, ...] = (
    *_TIMING, *_RANKS, *_REPEATS, *_COPIES, *_MONITOR, *PROFILE_KEYS, *_SCENARIO,
    *(ResultKey(*row[:5], better=row[5]) for row in SERVING_ROWS), *ENDPOINT_KEYS,
    *_ENVIRONMENT)
