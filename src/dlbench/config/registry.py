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
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.config.catalog import FRAMEWORKS, MODELS

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
    """True for names in the free ``user.`` namespace."""
    return name.startswith(USER_NAMESPACE) and len(name) > len(USER_NAMESPACE)


_EXP = [
    Param("exp.framework", "str", "pytorch", "Framework (backend) that runs the experiment.",
          choices=tuple(FRAMEWORKS)),
    Param("exp.model", "str", "resnet50", "Model id from the zoo (see `dlbench help --models`).",
          choices=tuple(MODELS)),
    Param("exp.phase", "str", "training",
          "`training` (forward, loss, backward, optimizer step) or `inference` (forward only).",
          choices=("training", "inference")),
    Param("exp.gpus", "str", "",
          "GPUs in DLBS syntax: empty for CPU, `0` for one GPU, `0,1` for two replicas on GPUs 0 "
          "and 1."),
    Param("exp.device_type", "str", "$('gpu' if ${exp.gpus} else 'cpu')$",
          "`cpu` or `gpu`; derived from exp.gpus.", choices=("cpu", "gpu")),
    Param("exp.num_nodes", "int", 1, "Number of nodes."),
    Param("exp.num_local_replicas", "int",
          "$(len(${exp.gpus}.split(',')) if ${exp.gpus} else 1)$",
          "Data-parallel replicas per node: the GPUs in exp.gpus, or worker processes on CPU."),
    Param("exp.num_replicas", "int", "$(${exp.num_local_replicas} * ${exp.num_nodes})$",
          "All replicas: local replicas times nodes. The scaling axis of reports."),
    Param("exp.replica_batch", "int", 16, "Per-replica batch size (samples per step per replica)."),
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
    Param("exp.status", "str", "", "Outcome: ok, failure, timeout, interrupted or skipped.",
          choices=("", "ok", "failure", "timeout", "interrupted", "skipped"),
          identity=False, settable=False),
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
    Param("monitor.enabled", "bool", True,
          "Sample CPU, memory, GPU and power use in the worker while the experiment runs.",
          identity=False),
    Param("monitor.frequency", "float", 0.5, "Seconds between two samples of the monitor.",
          identity=False),
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
          "non-finite loss).",
          choices=("none", "exception", "exit", "signal", "hang", "nan")),
    Param("fake.failure_batch", "int", 0,
          "Batch (counted from 0 across warm-up and timed batches) at which fake.failure happens."),
    Param("fake.seed", "int", 0, "Seed of the jitter's random numbers."),
    Param("fake.flops_per_sample", "float", 0.0,
          "Floating-point operations the fake workload claims per sample (0: unknown), so "
          "that results.tflops and results.mfu have known answers."),
]

#: The registry every part of dlbench uses.
REGISTRY = Registry([*_EXP, *_MONITOR, *_PYTORCH, *_FAKE])


def _is_label(name: str) -> bool:
    """A user's own value, or a parameter that defines the measurement and is not
    derived from others (``exp.effective_batch`` moves with ``exp.replica_batch``)."""
    if is_user_param(name):
        return True
    param = REGISTRY.get(name)
    return param is not None and param.identity and not param.derived


def varying_parameters(experiments: Sequence[Mapping[str, Any]]) -> list[str]:
    """The parameters that tell a sweep's experiments apart: those that define the
    measurement or are the user's own, are not derived, and whose value is not the
    same in every experiment. In the order of the first experiment."""
    names = [name for name in experiments[0] if _is_label(name)] if experiments else []
    return [
        name for name in names
        if len({json.dumps(e.get(name), sort_keys=True) for e in experiments}) > 1
    ]
