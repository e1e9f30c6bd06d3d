"""The parameter registry: every parameter dlbench understands, declared once.

A parameter has a name (dotted, in DLBS's namespaces), a type, a default (a value, or
a string with ``${...}`` references and ``$(...)$`` computed values for derived
parameters), optionally a set of allowed values, and a description. Names outside
the registry are accepted only under ``user.``.

``identity`` says whether the parameter defines the measurement, and so takes part
in ``exp.id``: where the log goes or how often to retry does not change the number.
``settable`` is false for values dlbench computes or writes itself.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.config.dlbs_names import is_dlbs_name

#: The types a parameter may declare. ``any`` accepts every JSON value.
PARAM_TYPES = ("str", "int", "float", "bool", "list", "dict", "any")

#: Namespace open to a user's own values and references.
USER_NAMESPACE = "user."


@dataclass(frozen=True)
class Param:
    """One declared parameter."""

    name: str
    type: str
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    identity: bool = True
    settable: bool = True
    special: tuple[str, ...] = ()  # words accepted besides values of the type (`auto`)

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES:
            raise ValueError(f"parameter {self.name}: unknown type {self.type!r}")

    @property
    def derived(self) -> bool:
        """True when the default is computed from other parameters."""
        return isinstance(self.default, str) and ("${" in self.default or "$(" in self.default)

    @property
    def namespace(self) -> str:
        """The part of the name before the first dot (``exp``, ``pytorch``, ...)."""
        return self.name.split(".", 1)[0]


class Registry:
    """A set of declared parameters, looked up by name."""

    def __init__(self, params: Iterable[Param]) -> None:
        self._params: dict[str, Param] = {}
        for param in params:
            if param.name in self._params:
                raise ValueError(f"parameter {param.name} declared twice")
            self._params[param.name] = param

    def __contains__(self, name: object) -> bool:
        return name in self._params

    def __iter__(self) -> Iterator[Param]:
        return iter(self._params.values())

    def __len__(self) -> int:
        return len(self._params)

    def get(self, name: str) -> Param | None:
        """The declared parameter called ``name``, or None."""
        return self._params.get(name)

    def names(self) -> list[str]:
        """All declared names, in declaration order."""
        return list(self._params)

    def defaults(self) -> dict[str, Any]:
        """Every declared parameter's default value (unresolved)."""
        return {p.name: p.default for p in self._params.values()}

    def search(self, name_regex: str | None = None, text_regex: str | None = None) -> list[Param]:
        """Parameters whose name matches ``name_regex`` and whose description matches
        ``text_regex`` (both searched anywhere, case-insensitive).

        >>> [p.name for p in REGISTRY.search(name_regex="^exp.replica_batch$")]
        ['exp.replica_batch']
        """
        name_re = re.compile(name_regex, re.IGNORECASE) if name_regex else None
        text_re = re.compile(text_regex, re.IGNORECASE) if text_regex else None
        return [
            p
            for p in self._params.values()
            if (name_re is None or name_re.search(p.name))
            and (text_re is None or text_re.search(p.help))
        ]

    def namespace(self, namespace: str) -> list[Param]:
        """Parameters under ``namespace.``."""
        return [p for p in self._params.values() if p.namespace == namespace]


def is_user_param(name: str) -> bool:
    """True for names in the free ``user.`` namespace, and for the DLBS names dlbench
    carries without using them (``caffe.fork``, ``exp.proj``: see
    :mod:`dlbench.config.dlbs_names`), which are treated the same way."""
    return (name.startswith(USER_NAMESPACE) and len(name) > len(USER_NAMESPACE)) or (
        is_dlbs_name(name))


def _text_of(name: str) -> str:
    """A reference to ``name`` inside ``$(...)$`` that reads as the value's text
    whether the reference is replaced by the value's text (as DLBS does) or by a
    Python literal: the literal's quotes are stripped."""
    return '"""${' + name + '}""".strip("\'")'


def _title_of(name: str, titles: Mapping[str, str]) -> str:
    """``$(...)$`` giving the title of the id in ``name``, or the id itself if it has none
    (an unknown id is reported by the plan checks, not here)."""
    key = _text_of(name)
    entries = ", ".join(f"{k!r}: {v!r}" for k, v in titles.items())
    return f"$({{{key}: {key}, {entries}}}[{key}])$"


#: Statuses a spec may give exp.status: run the experiment (empty or `ok`), or leave it
#: out of the plan (DLBS's `disabled`, `inactive`).
STATUS_INPUTS = ("", "ok", "disabled", "inactive")


_EXP = [
    Param("exp.framework", "str", "pytorch", "Framework (backend) that runs the experiment.",
          choices=tuple(FRAMEWORKS)),
    Param("exp.model", "str", "resnet50", "Model id from the zoo (see `dlbench help --models`).",
          choices=tuple(MODELS)),
    Param("exp.phase", "str", "training",
          "`training` (forward, loss, backward, optimizer step) or `inference` (forward only).",
          choices=("training", "inference")),
    Param("exp.framework_title", "str", _title_of("exp.framework", {
              k: v.title for k, v in FRAMEWORKS.items()}),
          "Human title of exp.framework (`PyTorch`); derived.", identity=False),
    Param("exp.model_title", "str", _title_of("exp.model", {k: v.title for k, v in MODELS.items()}),
          "Human title of exp.model (`ResNet-50`); derived.", identity=False),
    Param("exp.gpus", "str", "",
          "GPUs in DLBS syntax: empty for CPU, `0` for one GPU, `0,1` for two replicas on GPUs 0 "
          "and 1. DLBS's `0:1,2:3` (two replicas of two GPUs each) is understood by the "
          "derived values and refused by the plan: no dlbench framework runs a replica on "
          "several GPUs."),
    Param("exp.num_local_gpus", "int",
          f"$(len({_text_of('exp.gpus')}.replace(':', ' ').replace(',', ' ').split()))$",
          "GPUs of this node in exp.gpus; derived.", identity=False, settable=False),
    Param("exp.num_gpus", "int", "$(${exp.num_local_gpus} * ${exp.num_nodes})$",
          "GPUs of all nodes: exp.num_local_gpus times exp.num_nodes; derived.",
          identity=False, settable=False),
    Param("exp.device_type", "str", "$('gpu' if ${exp.num_gpus} > 0 else 'cpu')$",
          "`cpu` or `gpu`; derived from exp.gpus.", choices=("cpu", "gpu")),
    Param("exp.num_nodes", "int", 1, "Number of nodes."),
    Param("exp.num_local_replicas", "int",
          f"$(len({_text_of('exp.gpus')}.replace(',', ' ').split()) if ${{exp.num_local_gpus}} "
          f"and {_text_of('exp.parallel_jobs')} == '1' else 1)$",
          "Data-parallel replicas per node: the GPUs in exp.gpus (one with exp.parallel_jobs "
          "> 1, whose copies take one GPU each), or worker processes on CPU."),
    Param("exp.num_replicas", "int", "$(${exp.num_local_replicas} * ${exp.num_nodes})$",
          "All replicas: local replicas times nodes. The scaling axis of reports."),
    Param("exp.replica_batch", "int", 16,
          "Per-replica batch size (samples per step per replica), 1 to 1048576 (2^20)."),
    Param("exp.device_batch", "int", "${exp.replica_batch}",
          "DLBS's older name of exp.replica_batch: setting it sets exp.replica_batch.",
          identity=False),
    Param("exp.effective_batch", "int", "$(${exp.num_replicas} * ${exp.replica_batch})$",
          "Samples per step across all replicas: exp.num_replicas times exp.replica_batch."),
    Param("exp.num_warmup_batches", "int", 3,
          "Batches run before timing starts; they are not timed. `auto`: until batch times "
          "stop falling (at most exp.max_warmup_batches).", special=("auto",)),
    Param("exp.max_warmup_batches", "int", 50,
          "With exp.num_warmup_batches=auto, the most warm-up batches run."),
    Param("exp.num_batches", "int", 20,
          "Timed batches. `auto`: at least exp.min_duration seconds and exp.min_batches "
          "batches, then until the 95% confidence interval of the mean batch time is within "
          "exp.target_ci of it, or exp.max_duration seconds.", special=("auto",)),
    Param("exp.min_batches", "int", 10, "With exp.num_batches=auto, the fewest timed batches."),
    Param("exp.max_batches", "int", 10000,
          "With exp.num_batches=auto, the most timed batches (stop reason `max_batches`); "
          "also what a backend may prepare for."),
    Param("exp.min_duration", "float", 1.0,
          "With exp.num_batches=auto, the fewest seconds of timed batches."),
    Param("exp.max_duration", "float", 60.0,
          "With exp.num_batches=auto, the most seconds of timed batches."),
    Param("exp.target_ci", "float", 0.01,
          "With exp.num_batches=auto, the relative half-width of the 95% confidence interval "
          "of the mean batch time to reach (0.01 = ±1%)."),
    Param("exp.repeat", "int", 1,
          "Independent worker processes that measure the experiment, one after another; the "
          "record keeps each one's figures and the spread between them."),
    Param("exp.cv_threshold", "float", 0.05,
          "Coefficient of variation of batch times above which a result is marked unstable."),
    Param("exp.dtype", "str", "float32",
          "Compute precision: `float32`, or `float16`/`bfloat16` through automatic mixed "
          "precision.", choices=("float32", "float16", "bfloat16")),
    Param("exp.seq_len", "int", 0,
          "Sequence length of sequence models (tokens, time steps); 0 keeps the model's "
          "published length. Ignored by models without sequence input."),
    Param("exp.data_dir", "str", "",
          "Real data instead of synthetic: a folder of class sub-folders of JPEG images for "
          "image models, or a text file for language models. Empty: synthetic data made on "
          "the device."),
    Param("exp.data_workers", "int", 2,
          "Worker processes of the data loader that decode and resize real data."),
    Param("exp.image_size", "int", 0,
          "Side of the input images in pixels for image models; 0 keeps the model's published "
          "size (224, 227 for alexnet). Ignored by models without image input."),
    Param("exp.id", "str", "",
          "Stable hash of the resolved parameters that define the measurement; computed.",
          identity=False, settable=False),
    Param("exp.status", "str", "",
          "Outcome: ok, failure, timeout, interrupted or skipped. In a spec: `disabled` (or "
          "DLBS's `inactive`) leaves the experiment out of the plan, as an extension that "
          "switches experiments off does in DLBS; empty or `ok` keeps it.",
          identity=False),
    Param("exp.status_msg", "str", "", "Why the experiment ended as it did.",
          identity=False, settable=False),
    Param("exp.out_dir", "str", "dlbench-out",
          "Run directory: logs, the results store and the worker inputs go here (`--out`).",
          identity=False),
    Param("exp.log_file", "str",
          "${exp.out_dir}/logs/${exp.framework}-${exp.model}-${exp.phase}-${exp.id}.log",
          "The experiment's log file.", identity=False),
    Param("exp.timeout", "float", 1800.0,
          "Seconds an experiment may run before its worker is killed and it is marked `timeout`; "
          "0 for no limit.", identity=False),
    Param("exp.rerun", "str", "onfail",
          "On a rerun of a sweep into the same run directory: `never` keeps any earlier result, "
          "`onfail` reruns experiments that did not end ok, `always` reruns everything.",
          choices=("never", "onfail", "always"), identity=False),
]

_MONITOR = [
    Param("monitor.enabled", "bool", "$(${monitor.frequency} > 0)$",
          "Sample CPU, memory, GPU and power use in the worker while the experiment runs; "
          "derived: off when monitor.frequency is 0.", identity=False),
    Param("monitor.frequency", "float", 0.5,
          "Seconds between two samples of the monitor (at least 0.01); 0 turns the monitor "
          "off, as in DLBS.", identity=False),
]

_PYTORCH = [
    Param("pytorch.num_threads", "int", 0,
          "Intra-op CPU threads (torch.set_num_threads); 0 keeps PyTorch's default."),
    Param("pytorch.channels_last", "bool", False,
          "Use the channels-last memory format for 4-D inputs and the model."),
    Param("pytorch.compile", "bool", False,
          "Compile the model with torch.compile (compilation happens during warm-up)."),
    Param("pytorch.compile_mode", "str", "default", "Mode passed to torch.compile.",
          choices=("default", "reduce-overhead", "max-autotune")),
    Param("pytorch.cudnn_benchmark", "bool", True,
          "Let cuDNN pick the fastest convolution algorithms (CUDA only)."),
    Param("pytorch.seed", "int", 0,
          "Seed of the initial weights and of the synthetic data (torch.manual_seed)."),
    Param("pytorch.optimizer", "str", "sgd",
          "Optimizer of the training phase: `sgd` (momentum 0.9) or `adam`.",
          choices=("sgd", "adam")),
    Param("pytorch.docker_image", "str", "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
          "Container image of the worker with exp.docker=true when exp.docker_image is empty."),
]

_FAKE = [
    Param("fake.step_ms", "float", 10.0, "Time each step of the fake workload takes, ms."),
    Param("fake.jitter_ms", "float", 0.0,
          "Uniform random jitter added to each fake step, in [0, fake.jitter_ms] ms."),
    Param("fake.warmup_ms", "float", 0.0,
          "Extra time of the first warm-up step, decaying by half each following step: a slow "
          "warm-up to test warm-up handling."),
    Param("fake.memory_mb", "int", 0,
          "MiB the fake workload allocates (and touches) at set-up and holds until the end."),
    Param("fake.failure", "str", "none",
          "Failure to inject at batch fake.failure_batch: `exception` (a Python error), `exit` "
          "(exit status 3), `signal` (SIGKILL itself), `hang` (stops responding), `nan` (a "
          "non-finite loss), `oom` (out of memory: a MemoryError).",
          choices=("none", "exception", "exit", "signal", "hang", "nan", "oom")),
    Param("fake.failure_batch", "int", 0,
          "Batch (counted from 0 across warm-up and timed batches) at which fake.failure happens."),
    Param("fake.failure_rank", "int", -1,
          "In a data-parallel run, the replica (rank) where fake.failure happens; -1: all."),
    Param("fake.seed", "int", 0, "Seed of the jitter's random numbers."),
    Param("fake.flops_per_sample", "float", 0.0,
          "Floating-point operations the fake workload claims per sample (0: unknown), so "
          "that results.tflops and results.mfu have known answers."),
]

# Data-parallel runs through torchrun, several nodes.
_DISTRIBUTED = [
    Param("exp.rendezvous", "str", "",
          "HOST:PORT where the nodes of a multi-node run meet (torchrun's rendezvous "
          "endpoint, on the first node). Empty on one node, where torchrun picks a free port.",
          identity=False),
    Param("exp.rendezvous_backend", "str", "c10d",
          "torchrun's rendezvous: `c10d` (torchrun assigns node ranks itself) or `static` "
          "(each node takes exp.node_rank).", choices=("c10d", "static"), identity=False),
    Param("exp.node_rank", "int", 0,
          "This node's number, 0 to exp.num_nodes - 1: which node's view the record is, and "
          "the node's rank with exp.rendezvous_backend=static.", identity=False),
    Param("exp.dist_backend", "str", "auto",
          "Collective communication of data-parallel replicas: `nccl` across GPUs, `gloo` "
          "across CPU processes; `auto` picks by exp.device_type.",
          choices=("auto", "gloo", "nccl")),
    Param("exp.collective_timeout", "float", 300.0,
          "Seconds a replica waits in a collective (gradient all-reduce, rendezvous) before "
          "it fails, so a lost replica fails its experiment instead of hanging it.",
          identity=False),
]

# N users per node: copies of an experiment run at once, each on its own share.
_PARTITION = [
    Param("exp.parallel_jobs", "int", 1,
          "Copies of a one-replica experiment run at the same time on this node, as N users "
          "sharing it: copy k gets the k-th GPU of exp.gpus (none on the CPU), its own "
          "contiguous set of this node's cores and its share of memory. results.throughput "
          "is then the node's: the sum of the copies' throughputs (results.copy_throughput "
          "lists each). `gpus`: one copy per GPU in exp.gpus.", special=("gpus",)),
    Param("exp.parallel_memory_mb", "int", 0,
          "With exp.parallel_jobs > 1, the memory each copy may use, MiB; 0: this node's "
          "memory divided by the number of copies."),
    Param("exp.copy", "int", 0,
          "Which copy of exp.parallel_jobs this process is, 1 to N (0: not a copy); written "
          "by dlbench into each copy's experiment file.", identity=False, settable=False),
    Param("exp.copy_cpus", "str", "",
          "The cores a copy was given (`0-3,8`); written by dlbench into each copy's "
          "experiment file.", identity=False, settable=False),
    Param("exp.copy_memory_mb", "int", 0,
          "The memory a copy was given, MiB; written by dlbench into each copy's experiment "
          "file.", identity=False, settable=False),
    Param("exp.copy_limits", "str", "",
          "What held a copy to its cores and memory: a cgroup v2, CPU affinity and "
          "RLIMIT_DATA (and why not a cgroup), or the container engine; written by dlbench "
          "into each copy's experiment file, so it is the first thing in the copy's log.",
          identity=False, settable=False),
]

# Running the worker inside a container.

#: The commands each exp.container_engine may be found as on PATH, preferred first.
CONTAINER_ENGINE_COMMANDS = {
    "docker": ("docker",),
    "podman": ("podman",),
    "apptainer": ("apptainer", "singularity"),
}


def container_image(experiment: Mapping[str, Any]) -> str:
    """The image of an experiment with exp.docker=true: exp.docker_image, else the
    framework's own ``<framework>.docker_image``; empty when neither is set."""
    image = str(experiment.get("exp.docker_image") or "")
    framework = str(experiment.get("exp.framework", ""))
    return image or str(experiment.get(f"{framework}.docker_image") or "")


def parse_container_mount(text: str) -> tuple[str, str, bool]:
    """An item of exp.container_mounts, ``HOST[:CONTAINER[:ro|rw]]``, as (host,
    container, read_only); ValueError when it is none of these. A relative HOST is
    taken from the current directory; CONTAINER defaults to HOST.

    >>> parse_container_mount("/data:/mnt/data:ro")
    ('/data', '/mnt/data', True)
    """
    parts = text.split(":")
    if not 1 <= len(parts) <= 3 or not parts[0] or (
            len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise ValueError(f"{text!r} is not HOST[:CONTAINER[:ro]]")
    host = os.path.abspath(parts[0])
    inside = parts[1] if len(parts) > 1 and parts[1] else host
    if not inside.startswith("/"):
        raise ValueError(f"{text!r}: the folder inside the container must be absolute")
    return host, inside, len(parts) == 3 and parts[2] == "ro"


_CONTAINER = [
    # The image and the engine define the measurement: the image holds the framework
    # build and its libraries; the engine decides the namespaces, the seccomp filter
    # (a cost on every system call under docker and podman, none under apptainer) and
    # the size of /dev/shm.
    Param("exp.docker", "bool", False,
          "Run the worker inside a container (exp.container_engine) of exp.docker_image."),
    Param("exp.docker_image", "str", "",
          "Container image of the worker; empty: the framework's own <framework>.docker_image "
          "(e.g. pytorch.docker_image). It needs the framework, psutil and PyYAML."),
    Param("exp.container_engine", "str", "docker",
          "What runs the container: `docker`, `podman` or `apptainer` (also found as "
          "`singularity`).", choices=("docker", "podman", "apptainer")),
    Param("exp.container_python", "str", "python",
          "The Python interpreter inside the image that runs the worker.", identity=False),
    Param("exp.container_mount_dlbench", "bool", True,
          "Mount this dlbench's own package into the container (read-only, on PYTHONPATH), "
          "so the worker is the same version as the runner and the image needs no dlbench.",
          identity=False),
    Param("exp.container_mounts", "list", [],
          "More folders to mount, each `HOST[:CONTAINER[:ro]]` (CONTAINER defaults to HOST). "
          "The run directory, the experiment files and exp.data_dir are always mounted.",
          identity=False),
    Param("exp.container_options", "list", [],
          "More options for the engine's run/exec command, one list item per argument "
          "(e.g. [\"--shm-size=8g\"])."),
]

_JAX: list[Param] = [
    Param("jax.optimizer", "str", "sgd",
          "Optimizer of the training phase (Optax): `sgd` (momentum 0.9) or `adam`.",
          choices=("sgd", "adam")),
    Param("jax.seed", "int", 0,
          "Seed of the initial weights, the synthetic data and the dropout masks."),
    Param("jax.prng_impl", "str", "threefry2x32",
          "JAX's random number generator, which makes dropout's masks in every training "
          "step: `threefry2x32` (JAX's default), or the cheaper `rbg`/`unsafe_rbg`.",
          choices=("threefry2x32", "rbg", "unsafe_rbg")),
    Param("jax.preallocate", "bool", True,
          "Let JAX reserve most of a GPU's memory when it starts (its default); false sets "
          "XLA_PYTHON_CLIENT_PREALLOCATE=false, so memory use grows as needed, as PyTorch's "
          "does. No effect on CPU."),
]

#: Execution providers the onnxruntime backend knows how to place (CPU first, then
#: the two that run on an NVIDIA GPU); `dlbench plan` refuses other names.
ONNXRUNTIME_PROVIDERS = ("CPUExecutionProvider", "CUDAExecutionProvider",
                         "TensorrtExecutionProvider")

_ONNXRUNTIME = [
    Param("onnxruntime.providers", "str", "auto",
          "Execution providers in priority order, comma-separated (" +
          ", ".join(ONNXRUNTIME_PROVIDERS) + "); the first one says where the model runs and "
          "must match exp.gpus. `auto`: CPUExecutionProvider, or CUDAExecutionProvider on the "
          "GPU of exp.gpus."),
    Param("onnxruntime.intra_op_threads", "int", 0,
          "Threads that parallelise one operator (SessionOptions.intra_op_num_threads); 0 "
          "keeps ONNX Runtime's default."),
    Param("onnxruntime.inter_op_threads", "int", 0,
          "Threads that run independent operators at once (inter_op_num_threads); used with "
          "onnxruntime.execution_mode=parallel only; 0 keeps the default."),
    Param("onnxruntime.execution_mode", "str", "sequential",
          "Run the graph's operators one after another, or independent ones in parallel.",
          choices=("sequential", "parallel")),
    Param("onnxruntime.graph_optimization", "str", "all",
          "Graph optimization level of the session: `disable`, `basic` (constant folding, "
          "redundant nodes), `extended` (fusions) or `all` (with layout changes).",
          choices=("disable", "basic", "extended", "all")),
    Param("onnxruntime.seed", "int", 0,
          "Seed of the exported weights (the same weights as pytorch.seed gives the PyTorch "
          "model) and of the synthetic inputs."),
    Param("onnxruntime.export_cache", "bool", True,
          "Reuse the model exported earlier for the same model, input shape, dtype, seed and "
          "versions (in $DLBENCH_HOME/onnx, else ~/.cache/dlbench/onnx); false: export again.",
          identity=False),
]

_TENSORFLOW = [
    Param("tensorflow.optimizer", "str", "sgd",
          "Optimizer of the training phase: `sgd` (momentum 0.9) or `adam`, with PyTorch's "
          "learning rates.", choices=("sgd", "adam")),
    Param("tensorflow.xla", "bool", False,
          "Compile the step with XLA (tf.function(jit_compile=True)); compilation happens "
          "at set-up and is reported as results.compile_time."),
    Param("tensorflow.num_threads", "int", 0,
          "Intra-op CPU threads (tf.config.threading); 0 keeps TensorFlow's default."),
    Param("tensorflow.inter_op_threads", "int", 0,
          "Inter-op CPU threads: independent operations run at once; 0 keeps TensorFlow's "
          "default."),
    Param("tensorflow.memory_growth", "bool", False,
          "Let TensorFlow take GPU memory as it needs it instead of reserving nearly all of "
          "it at start-up (GPU only), so that the monitor's memory use is the model's."),
    Param("tensorflow.seed", "int", 0,
          "Seed of the initial weights and of the synthetic data (keras.utils.set_random_seed)."),
]

#: The registry every part of dlbench uses.
REGISTRY = Registry([
    *_EXP, *_DISTRIBUTED, *_PARTITION, *_CONTAINER, *_MONITOR,
    *_PYTORCH, *_JAX, *_ONNXRUNTIME, *_TENSORFLOW, *_FAKE,
])


def _is_label(name: str) -> bool:
    """A user's own value, the number of replicas (what scaling studies vary), or a
    parameter that defines the measurement and is not derived from others
    (``exp.effective_batch`` moves with ``exp.replica_batch``)."""
    if is_user_param(name) or name == "exp.num_replicas":  # the scaling axis
        return True
    param = REGISTRY.get(name)
    return param is not None and param.identity and not param.derived


def varying_parameters(experiments: Sequence[Mapping[str, Any]]) -> list[str]:
    """The parameters that tell a sweep's experiments apart: those that define the
    measurement or are the user's own, are not derived, and take more than one value
    among the experiments that have them (a framework's own parameters are absent from
    another framework's experiments, which ``exp.framework`` already tells apart).
    In the order they first appear.

    >>> varying_parameters([{"exp.framework": "pytorch", "pytorch.seed": 0},
    ...                     {"exp.framework": "fake", "fake.step_ms": 5}])
    ['exp.framework']
    """
    names: dict[str, None] = {}
    for experiment in experiments:
        names.update((name, None) for name in experiment if _is_label(name))
    return [
        name for name in names
        if len({json.dumps(e[name], sort_keys=True) for e in experiments if name in e}) > 1
    ]
