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

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from dlbench.config.catalog import (
    FRAMEWORKS,
    MODELS,
    ModelInfo,
    add_model,
    model_title,
    remove_model,
)
from dlbench.config.dlbs_names import is_dlbs_name
from dlbench.config.external import HF_PARAMS
from dlbench.config.frameworks.base import FrameworkInfo, load_declaration
from dlbench.config.params import (
    MAX_BATCHES,
    MAX_REPEAT,
    MAX_SECONDS,
    MAX_WORKER_SECONDS,
    PARAM_TYPES,
    Param,
)
from dlbench.config.run_params import (
    ACCURACY_PARAMS,
    AUTO_BATCH_PARAMS,
    CONTAINER_ENGINE_COMMANDS,
    CONTAINER_PARAMS,
    DISTRIBUTED_PARAMS,
    MONITOR_PARAMS,
    PARTITION_PARAMS,
    PROFILE_PARAMS,
    container_image,
    parse_container_mount,
)
from dlbench.config.scenarios.params import SCENARIO_PARAMS
from dlbench.config.user_regex import compile_user_regex

__all__ = ["CONTAINER_ENGINE_COMMANDS", "PARAM_TYPES", "REGISTRY", "USER_NAMESPACE", "Param",
           "ParameterRegistry", "container_image", "found_batch_parameters", "is_user_param",
           "parse_container_mount",
           "register_framework", "register_model", "unregister_framework",
           "unregister_model"]

#: Namespace open to a user's own values and references.
USER_NAMESPACE = "user."


class ParameterRegistry:
    """A set of declared parameters, looked up by name."""

    def __init__(self, params: Iterable[Param]) -> None:
        self._params: dict[str, Param] = {}
        self.reset(params)

    def reset(self, params: Iterable[Param]) -> None:
        """Replace the parameters with ``params`` (in place: every holder of this
        registry sees them). ValueError when a name is declared twice."""
        declared: dict[str, Param] = {}
        for param in params:
            if param.name in declared:
                raise ValueError(f"parameter {param.name} declared twice")
            declared[param.name] = param
        self._params = declared

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
        # Users' patterns: RE2, linear in the text (dlbench.config.user_regex).
        name_re = (compile_user_regex(name_regex, f"parameter name pattern {name_regex!r}",
                                      ignore_case=True) if name_regex else None)
        text_re = (compile_user_regex(text_regex, f"description pattern {text_regex!r}",
                                      ignore_case=True) if text_regex else None)
        return [
            p
            for p in self._params.values()
            if (name_re is None or name_re.finds(p.name))
            and (text_re is None or text_re.finds(p.help))
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


def _gpu_groups(gpus: Any) -> list[str]:
    """The replicas' GPU groups of an ``exp.gpus`` value in DLBS syntax (``0:1,2:3`` is
    two groups of two); a malformed value is reported by the plan checks, not here."""
    return str(gpus).replace(",", " ").split()


def _local_replicas(get: Callable[[str], Any]) -> int:
    """One replica per GPU group; one on the CPU, or with exp.parallel_jobs > 1 (whose
    copies take one GPU each)."""
    groups = _gpu_groups(get("exp.gpus"))
    return len(groups) if groups and str(get("exp.parallel_jobs")) == "1" else 1


def _effective_batch(get: Callable[[str], Any]) -> Any:
    """Replicas times the replica batch; `auto` while exp.replica_batch is `auto` (the
    worker finds the batch and writes both)."""
    batch = get("exp.replica_batch")
    return batch if batch == "auto" else get("exp.num_replicas") * batch


def found_batch_parameters(values: Mapping[str, Any], batch: int) -> dict[str, int]:
    """The batch parameters of an experiment planned with exp.replica_batch=auto once
    ``batch`` is found: exp.replica_batch, its older name exp.device_batch, and
    exp.effective_batch by the plan's own rule (replicas times the replica batch).

    >>> found_batch_parameters({"exp.num_replicas": 2}, 40)
    {'exp.replica_batch': 40, 'exp.device_batch': 40, 'exp.effective_batch': 80}
    """
    def get(name: str) -> Any:
        return batch if name == "exp.replica_batch" else values[name]

    return {"exp.replica_batch": batch, "exp.device_batch": batch,
            "exp.effective_batch": int(_effective_batch(get))}


#: Statuses a spec may give exp.status: run the experiment (empty or `ok`), or leave it
#: out of the plan (DLBS's `disabled`, `inactive`).
STATUS_INPUTS = ("", "ok", "disabled", "inactive")


def _framework_param() -> Param:
    """exp.framework, whose choices are the declared frameworks."""
    return Param("exp.framework", "str", "pytorch",
                 "Framework (backend) that runs the experiment.", choices=tuple(FRAMEWORKS))


def _framework_title_param() -> Param:
    """exp.framework_title, derived from the declared frameworks' titles."""
    return Param("exp.framework_title", "str", "the title of exp.framework",
                 "Human title of exp.framework (`PyTorch`); derived.", identity=False,
                 derive=lambda get: _title(FRAMEWORKS, get("exp.framework")))


def _model_param() -> Param:
    """exp.model, whose choices are the catalog's models."""
    return Param("exp.model", "str", "resnet50",
                 "Model id from the zoo (see `dlbench help --models`), or from a library: "
                 "`hf:<name>` (a shipped Hugging Face configuration, or `hf:<path>` to a "
                 "config.json or model folder; sizes from hf.*), `timm:<name>`, "
                 "`torchvision:<name>`, all with random weights. A framework that measures "
                 "a server's model sets it: `served:<its model parameter>`.",
                 choices=tuple(MODELS), derive=_default_model, chosen=True)


def _default_model(get: Callable[[str], Any]) -> str:
    """exp.model when the spec does not set it: ``served:<name>`` for a framework that
    measures a served model (its ``served_model`` parameter names it), else resnet50."""
    info = FRAMEWORKS.get(get("exp.framework"))
    if info is not None and info.served_model:
        return f"served:{get(info.served_model)}"
    return "resnet50"


def _model_title_param() -> Param:
    """exp.model_title, derived from the catalog's titles."""
    return Param("exp.model_title", "str", "the title of exp.model",
                 "Human title of exp.model (`ResNet-50`); derived.", identity=False,
                 derive=lambda get: model_title(get("exp.model")))


#: Characters a file name may keep from a model id; others become `_`.
_FILE_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _model_file_name(model: Any) -> str:
    """exp.model as a part of a file name: a zoo id as it is; an external id's path
    reduced to its last part and characters that are not safe in a name replaced
    (`hf:/m/llama/` -> `hf_llama`)."""
    text = str(model)
    source, colon, name = text.partition(":")
    if colon:
        text = f"{source}_{name.rstrip('/').rsplit('/', 1)[-1]}"
    return _FILE_NAME_UNSAFE.sub("_", text).strip("._") or "model"


def _backend_module(framework: Any) -> str:
    """The backend module of the framework ``framework``; empty for an unknown id
    (reported by the plan checks, not here)."""
    info = FRAMEWORKS.get(framework) if isinstance(framework, str) else None
    return info.module if info is not None else ""


def _title(table: Mapping[str, Any], key: Any) -> str:
    """The title of ``key`` in ``table``, or ``key`` itself when it has none (an
    unknown id is reported by the plan checks, not here)."""
    entry = table.get(key) if isinstance(key, str) else None
    return str(entry.title) if entry is not None else str(key)


_EXP = [
    _framework_param(),
    _model_param(),
    Param("exp.phase", "str", "training",
          "`training` (forward, loss, backward, optimizer step) or `inference` (forward only); "
          "`train_to_accuracy`: train on real data until exp.target_accuracy; `generate`: "
          "a decoder model generates exp.output_tokens after exp.prompt_tokens per request.",
          choices=("training", "inference", "train_to_accuracy", "generate")),
    _framework_title_param(),
    _model_title_param(),
    Param("exp.model_file_name", "str", "exp.model made safe for a file name",
          "exp.model as it appears in file names (`hf:llama-3.2-1b` -> `hf_llama-3.2-1b`, "
          "a path reduced to its last part); derived.", identity=False, settable=False,
          derive=lambda get: _model_file_name(get("exp.model"))),
    Param("exp.framework_module", "str", "the backend module of exp.framework",
          "Module whose BACKEND the worker runs for exp.framework (its declaration's "
          "`module`), so that a framework registered at run time reaches the worker; "
          "derived.", identity=False, settable=False,
          derive=lambda get: _backend_module(get("exp.framework"))),
    Param("exp.gpus", "str", "",
          "GPUs in DLBS syntax: empty for CPU, `0` for one GPU, `0,1` for two replicas on GPUs 0 "
          "and 1. DLBS's `0:1,2:3` (two replicas of two GPUs each) is understood by the "
          "derived values and refused by the plan: no dlbench framework runs a replica on "
          "several GPUs."),
    Param("exp.num_local_gpus", "int", "the GPUs listed in exp.gpus",
          "GPUs of this node in exp.gpus; derived.", identity=False, settable=False,
          derive=lambda get: sum(len(g.split(":")) for g in _gpu_groups(get("exp.gpus")))),
    Param("exp.num_gpus", "int", "$(${exp.num_local_gpus} * ${exp.num_nodes})$",
          "GPUs of all nodes: exp.num_local_gpus times exp.num_nodes; derived.",
          identity=False, settable=False),
    Param("exp.device_type", "str", "$('gpu' if ${exp.num_gpus} > 0 else 'cpu')$",
          "`cpu` or `gpu`; derived from exp.gpus.", choices=("cpu", "gpu")),
    Param("exp.num_nodes", "int", 1, "Number of nodes."),
    Param("exp.num_local_replicas", "int", "the GPU groups of exp.gpus, else 1",
          "Data-parallel replicas per node: the GPUs in exp.gpus (one with exp.parallel_jobs "
          "> 1, whose copies take one GPU each), or worker processes on CPU.",
          derive=_local_replicas),
    Param("exp.num_replicas", "int", "$(${exp.num_local_replicas} * ${exp.num_nodes})$",
          "All replicas: local replicas times nodes. The scaling axis of reports."),
    Param("exp.replica_batch", "int", 16,
          "Per-replica batch size (samples per step per replica), 1 to 1048576 (2^20). "
          "`auto`: the largest batch that runs (doubling, then bisection on out of memory); "
          "exp.framework=endpoint: the most requests in flight meeting the SLOs.",
          special=("auto",)),
    Param("exp.device_batch", "int", "${exp.replica_batch}",
          "DLBS's older name of exp.replica_batch: setting it sets exp.replica_batch.",
          identity=False, special=("auto",)),
    Param("exp.effective_batch", "int", "$(${exp.num_replicas} * ${exp.replica_batch})$",
          "Samples per step across all replicas: exp.num_replicas times exp.replica_batch "
          "(`auto` with exp.replica_batch=auto: the worker writes the batch it found).",
          special=("auto",), derive=_effective_batch),
    Param("exp.num_warmup_batches", "int", 3,
          "Batches run before timing starts; they are not timed. `auto`: until batch times "
          "stop falling (at most exp.max_warmup_batches).", special=("auto",),
          minimum=0, maximum=MAX_BATCHES),
    Param("exp.max_warmup_batches", "int", 50,
          "With exp.num_warmup_batches=auto, the most warm-up batches run.",
          minimum=1, maximum=MAX_BATCHES),
    Param("exp.num_batches", "int", 20,
          "Timed batches. `auto`: at least exp.min_duration seconds and exp.min_batches "
          "batches, then until the 95% confidence interval of the mean batch time is within "
          "exp.target_ci of it, or exp.max_duration seconds.", special=("auto",),
          minimum=1, maximum=MAX_BATCHES),
    Param("exp.min_batches", "int", 10, "With exp.num_batches=auto, the fewest timed batches.",
          minimum=1, maximum=MAX_BATCHES),
    Param("exp.max_batches", "int", 10000,
          "With exp.num_batches=auto, the most timed batches (stop reason `max_batches`); "
          "also what a backend may prepare for.", minimum=1, maximum=MAX_BATCHES),
    Param("exp.min_duration", "float", 1.0,
          "With exp.num_batches=auto, the fewest seconds of timed batches.",
          minimum=0, maximum=MAX_SECONDS),
    Param("exp.max_duration", "float", 60.0,
          "With exp.num_batches=auto, the most seconds of timed batches.",
          minimum=0, maximum=MAX_SECONDS),
    Param("exp.target_ci", "float", 0.01,
          "With exp.num_batches=auto, the relative half-width of the 95% confidence interval "
          "of the mean batch time to reach (0.01 = ±1%)."),
    Param("exp.repeat", "int", 1,
          "Independent worker processes that measure the experiment, one after another; the "
          "record keeps each one's figures and the spread between them.", minimum=1,
          maximum=MAX_REPEAT),
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
          "${exp.out_dir}/logs/${exp.framework}-${exp.model_file_name}-${exp.phase}-${exp.id}.log",
          "The experiment's log file.", identity=False),
    Param("exp.timeout", "float", "auto",
          "Seconds a worker may run before it is killed and its experiment marked `timeout`; "
          "0 for no limit. `auto`: scales with the experiment and its measured batches: 600 s "
          "until the first batch has run (300 s for set-up, 300 s for that batch), then twice "
          "the time the batches left take at the pace measured so far (exp.max_duration for "
          "exp.num_batches=auto) plus 120 s, after each progress line; a Slurm job's time "
          "limit takes the rule for 30 s batches (2100 s with the default batch counts).",
          identity=False, special=("auto",), minimum=0, maximum=MAX_WORKER_SECONDS),
    Param("exp.rerun", "str", "onfail",
          "On a rerun of a sweep into the same run directory: `never` keeps any earlier result, "
          "`onfail` reruns experiments that did not end ok, `always` reruns everything.",
          choices=("never", "onfail", "always"), identity=False),
]

def _all_params() -> list[Param]:
    """Every parameter: dlbench's own, then each declared framework's, in the order of
    :data:`~dlbench.config.catalog.FRAMEWORKS`."""
    fresh = {p.name: p for p in (_framework_param(), _framework_title_param(),
                                 _model_param(), _model_title_param())}
    return [
        *(fresh.get(p.name, p) for p in _EXP), *DISTRIBUTED_PARAMS, *PARTITION_PARAMS,
        *CONTAINER_PARAMS, *MONITOR_PARAMS, *PROFILE_PARAMS, *ACCURACY_PARAMS,
        *AUTO_BATCH_PARAMS, *SCENARIO_PARAMS, *HF_PARAMS,
        *(p for info in FRAMEWORKS.values() for p in info.params),
    ]


#: The registry every part of dlbench uses.
REGISTRY = ParameterRegistry(_all_params())


def register_framework(info: FrameworkInfo | str) -> FrameworkInfo:
    """Add a framework declared outside :mod:`dlbench.config.frameworks` (a plug-in,
    or a test's), given its declaration or the dotted path of the module that holds
    it as ``FRAMEWORK`` (imported now): it becomes a choice of exp.framework and its
    parameters join :data:`REGISTRY`. Returns the declaration. ValueError when its id
    is taken."""
    if isinstance(info, str):
        info = load_declaration(info)
    if info.id in FRAMEWORKS:
        raise ValueError(f"framework {info.id} is already declared")
    FRAMEWORKS[info.id] = info
    try:
        REGISTRY.reset(_all_params())
    except ValueError:
        del FRAMEWORKS[info.id]
        raise
    return info


def unregister_framework(framework: str) -> None:
    """Remove a framework added with :func:`register_framework`, and its parameters."""
    del FRAMEWORKS[framework]
    REGISTRY.reset(_all_params())


def register_model(info: ModelInfo) -> None:
    """Add a model defined outside the tree (a plug-in, or a test's), built by its
    ``info.builders`` (framework id -> ``module:function``, as in a zoo entry): it
    becomes a choice of exp.model (:func:`dlbench.config.catalog.add_model`)."""
    add_model(info)
    REGISTRY.reset(_all_params())


def unregister_model(model_id: str) -> None:
    """Remove a model added with :func:`register_model`."""
    remove_model(model_id)
    REGISTRY.reset(_all_params())
