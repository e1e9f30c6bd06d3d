"""Planning a sweep: expand, resolve and check every experiment before anything runs.

Each check raises a DlbenchError with one line naming the parameter, the file or
flag its value came from, and what would be accepted.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlbench.config.catalog import FRAMEWORKS, FrameworkInfo, model_info
from dlbench.config.command_words import (
    check_bind_path,
    check_container_image,
    check_container_option,
    check_container_python,
    control_character,
    is_rendezvous_endpoint,
)
from dlbench.config.devices import check_gpus_here, usable_cores
from dlbench.config.expand import MAX_EXPERIMENTS, RawExperiment, expand
from dlbench.config.external import is_external, missing_requirement
from dlbench.config.modelinfo import IMAGE_SUFFIXES, ModelInfo
from dlbench.config.params import MAX_REPLICA_BATCH
from dlbench.config.profiling import check_measurement_extras
from dlbench.config.registry import (
    CONTAINER_ENGINE_COMMANDS,
    REGISTRY,
    STATUS_INPUTS,
    container_image,
    is_user_param,
    parse_container_mount,
)
from dlbench.config.resolve import Resolver, own_parameters
from dlbench.config.scenarios.params import check_scenario
from dlbench.config.spec import Source, SweepSpec, describe
from dlbench.config.validate_logs import RUN_DIR_FILES, check_log_files
from dlbench.errors import ConfigError

__all__ = ["MAX_REPLICA_BATCH", "RUN_DIR_FILES", "check_experiment", "check_log_files",
           "check_names", "plan_experiments"]

#: exp.gpus in DLBS's syntax: replicas separated by `,`, GPUs of one replica by `:`.
_GPUS = re.compile(r"\A(\d+(:\d+)*(,\d+(:\d+)*)*)?\Z")

#: Smallest accepted value of numeric parameters.
_MINIMUM = {
    "exp.replica_batch": 1,
    "exp.num_nodes": 1,
    "exp.num_local_replicas": 1,
    "exp.image_size": 0,
    "exp.seq_len": 0,
    "exp.data_workers": 0,
    "exp.target_ci": 0,
    "exp.cv_threshold": 0,
}

#: What the known values of these parameters are called in messages.
_KNOWN_KINDS = {"exp.framework": "framework", "exp.model": "model"}


def plan_experiments(spec: SweepSpec, max_experiments: int = MAX_EXPERIMENTS, *,
                     runs_here: bool = False) -> list[dict[str, Any]]:
    """The experiments of ``spec``: expanded, resolved, cast and checked, in expansion order.

    Each is a flat dict of every registry parameter (defaults filled in) plus any
    ``user.*`` parameter, with ``exp.id`` set. ``runs_here``: the workers will run on
    this machine, so an experiment asking for a GPU is refused when none is visible
    (:func:`~dlbench.config.devices.check_gpus_here`); a plan for elsewhere is not.

    >>> from dlbench.config.spec import load_spec
    >>> spec = load_spec(params=["exp.framework=fake", "exp.model=toy"],
    ...                  variables=["exp.replica_batch=[8,16]"])
    >>> [e["exp.effective_batch"] for e in plan_experiments(spec)]
    [8, 16]
    """
    check_names(spec)
    experiments = []
    raws = []
    for raw in expand(spec, max_experiments):
        values = Resolver(raw).resolve_all()
        if _disabled(values, raw):
            continue  # DLBS's way of switching experiments off: not planned, not checked
        check_experiment(values, raw)
        if runs_here:
            shown = describe("exp.gpus", values["exp.gpus"], raw["exp.gpus"].source)
            check_gpus_here(values, shown, FRAMEWORKS[values["exp.framework"]])
        experiments.append(own_parameters(values))
        raws.append(raw)
    check_log_files(experiments, raws)
    return experiments


def _disabled(values: dict[str, Any], raw: RawExperiment) -> bool:
    """True when the spec sets exp.status to `disabled` (or `inactive`); the status of
    a planned experiment is then reset to empty, as nothing has run yet."""
    status = values["exp.status"]
    if status not in STATUS_INPUTS:
        accepted = ", ".join(map(repr, STATUS_INPUTS))
        raise ConfigError(f"{describe('exp.status', status, raw['exp.status'].source)} "
                          f"is not one of {accepted} (dlbench sets the outcome itself)")
    values["exp.status"] = ""
    return status in ("disabled", "inactive")


def check_names(spec: SweepSpec) -> None:
    """Every name the spec sets is known and settable; condition names are known."""
    for name, item in spec.parameters.items():
        _check_settable(name, item.source)
    for name, item in spec.variables.items():
        _check_settable(name, item.source)
    for extension in spec.extensions:
        for name in extension.condition:
            _check_known(name, extension.source)
        for name in extension.parameters:
            _check_settable(name, extension.source)
        for index, case in enumerate(extension.cases or (), start=1):
            for name in case:
                _check_settable(name, f"case {index} of {extension.source}")


def _check_known(name: str, source: Source) -> None:
    if name in REGISTRY or is_user_param(name):
        return
    close = difflib.get_close_matches(name, REGISTRY.names(), n=1)
    hint = (f"did you mean {close[0]}?" if close
            else "names outside the registry must start with 'user.'")
    raise ConfigError(f"unknown parameter {name} (from {source}); {hint}")


def _check_settable(name: str, source: Source) -> None:
    _check_known(name, source)
    param = REGISTRY.get(name)
    if param is not None and not param.settable:
        raise ConfigError(f"{name} (from {source}) cannot be set: dlbench computes it")


def check_experiment(values: Mapping[str, Any], raw: RawExperiment) -> None:
    """Checks of one resolved experiment: allowed values, framework installed and able
    to run the phase and the model, GPU list syntax, numeric ranges, replicas."""

    def shown(name: str) -> str:
        return describe(name, values[name], raw[name].source)

    for param in REGISTRY:
        if param.choices is None or values[param.name] in param.choices:
            continue
        if param.name == "exp.model" and (is_external(values[param.name])
                                          or _serves(values["exp.framework"])):
            continue  # hf:, timm:, torchvision:, served: checked with the model below
        kind = _KNOWN_KINDS.get(param.name)
        if kind is not None:
            known = ", ".join(map(str, param.choices))
            raise ConfigError(f"{shown(param.name)} is not a known {kind}; known: {known}")
        accepted = ", ".join(map(repr, param.choices))
        raise ConfigError(f"{shown(param.name)} is not one of {accepted}")

    framework = FRAMEWORKS[values["exp.framework"]]
    if framework.served_model:
        _check_served(values, raw, framework)
    missing = framework.missing_requirements()
    if missing and not values["exp.docker"]:  # in a container, the image has it
        hint = framework.install_hint or f"pip install {' '.join(missing)}"
        raise ConfigError(
            f"exp.framework={framework.id} needs `{hint}`: {', '.join(missing)} not installed "
            f"(exp.framework from {raw['exp.framework'].source})"
        )
    if values["exp.phase"] not in framework.phases:
        single = len(framework.phases) == 1
        only = f" ({framework.title} is {framework.phases[0]} only)" if single else ""
        raise ConfigError(
            f"{shown('exp.phase')} is not supported by framework {framework.id}{only}; "
            f"supported: {', '.join(framework.phases)}"
        )
    model = model_info(values, shown)
    if model.source:
        _check_library(values, raw, framework, model)
    elif framework.models is not None and values["exp.model"] not in framework.models:
        defined = ", ".join(framework.models) or "none yet"
        raise ConfigError(
            f"{shown('exp.model')} is not defined for framework {framework.id}; "
            f"defined: {defined}"
        )
    if not _GPUS.match(values["exp.gpus"]):
        raise ConfigError(
            f"{shown('exp.gpus')} is not a GPU list: use '' for the CPU, '0' for GPU 0, "
            f"'0,1' for GPUs 0 and 1"
        )
    if ":" in values["exp.gpus"]:
        raise ConfigError(
            f"{shown('exp.gpus')} gives a replica several GPUs (DLBS's `:` groups), and "
            f"framework {framework.id} runs one GPU per replica; use '0,1' for two replicas"
        )
    if values["exp.replica_batch"] != "auto" and values["exp.replica_batch"] > MAX_REPLICA_BATCH:
        raise ConfigError(f"{shown('exp.replica_batch')} must be <= {MAX_REPLICA_BATCH}")
    if values["monitor.enabled"] and values["monitor.frequency"] < 0.01:
        why = ("0 turns the monitor off" if values["monitor.frequency"] == 0 else
               "samples closer than 0.01 s would measure the monitor")
        raise ConfigError(f"{shown('monitor.frequency')} with "
                          f"{shown('monitor.enabled')}: give at least 0.01 ({why})")
    if values["exp.dtype"] not in framework.dtypes:
        note = f"; {framework.dtype_note}" if framework.dtype_note else ""
        raise ConfigError(f"{shown('exp.dtype')}: framework {framework.id} runs "
                          f"{' or '.join(framework.dtypes)}{note}")
    if framework.check is not None:  # what only this framework's backend needs
        framework.check(values, shown)
    for name, minimum in _MINIMUM.items():
        if not isinstance(values[name], str) and values[name] < minimum:
            raise ConfigError(f"{shown(name)} must be >= {minimum}")
    for param in REGISTRY:  # the ranges parameters declare themselves
        value = values.get(param.name)
        if param.out_of_range(value):
            note = f" ({param.minimum_note})" if param.minimum_note else ""
            words = "".join(f", or {word!r}" for word in param.special)
            raise ConfigError(f"{shown(param.name)} must be {param.accepted_range}{words}{note}")
    _check_data_dir(values, raw, model)
    smallest = max(8, model.min_image_size or 0)
    if model.is_image and 0 < values["exp.image_size"] < smallest:
        raise ConfigError(
            f"{shown('exp.image_size')} is too small for {model.id}: use 0 (its own "
            f"{model.input_shape[-1]} px) or at least {smallest}"
        )
    check_measurement_extras(values, shown, framework)
    check_scenario(values, shown)
    _check_parallel_jobs(values, raw)
    _check_run_directory(values, raw)
    _check_container(values, raw)
    _check_replicas(values, raw, framework)


def _serves(framework: Any) -> bool:
    """Whether the framework ``framework`` measures a served model (an unknown one is
    refused by the checks of choices)."""
    info = FRAMEWORKS.get(framework) if isinstance(framework, str) else None
    return info is not None and bool(info.served_model)


def _check_served(values: Mapping[str, Any], raw: RawExperiment,
                  framework: FrameworkInfo) -> None:
    """A framework measuring a served model: its model parameter names one, and
    exp.model, when the spec sets it, agrees."""
    name = framework.served_model
    shown = describe(name, values[name], raw[name].source)
    if not str(values[name]).strip():
        raise ConfigError(f"{shown}: exp.framework={framework.id} needs the model's name at "
                          f"the server (what GET /v1/models lists), e.g. -P {name}=NAME")
    wanted = f"served:{values[name]}"
    if values["exp.model"] != wanted:
        model = describe("exp.model", values["exp.model"], raw["exp.model"].source)
        raise ConfigError(f"{model}: exp.framework={framework.id} measures the model {name} "
                          f"names ({wanted}); leave exp.model unset")


def _check_library(values: Mapping[str, Any], raw: RawExperiment, framework: FrameworkInfo,
                   model: ModelInfo) -> None:
    """A model from a library (``hf:``, ``timm:``, ``torchvision:``) or a server
    (``served:``): a framework that builds or measures it, and the library installed
    (unless in a container, or simulated)."""
    shown = describe("exp.model", values["exp.model"], raw["exp.model"].source)
    if model.source == "served" or framework.served_model:
        if model.source != "served" or not framework.served_model:
            served = ", ".join(f.id for f in FRAMEWORKS.values() if f.served_model)
            raise ConfigError(f"{shown} is measured at a server, by exp.framework={served}, "
                              f"not by framework {framework.id}")
        return
    if not framework.simulated and framework.id not in model.builders:
        builders = ", ".join(model.builders)
        raise ConfigError(f"{shown} is built by {builders} only, not framework "
                          f"{framework.id}; use exp.framework={builders}")
    missing = None if framework.simulated or values["exp.docker"] else (
        missing_requirement(model))
    if missing is not None:
        package, hint = missing
        raise ConfigError(f"{shown} needs `{hint}`: {package} is not installed")


def _check_parallel_jobs(values: Mapping[str, Any], raw: RawExperiment) -> None:
    """exp.parallel_jobs: copies of one replica each, a GPU each when there are GPUs,
    at least a core each."""

    def shown(name: str) -> str:
        return describe(name, values[name], raw[name].source)

    jobs = values["exp.parallel_jobs"]
    gpus = [g for g in str(values["exp.gpus"]).split(",") if g]
    if jobs == "gpus":
        if not gpus:
            raise ConfigError(f"{shown('exp.parallel_jobs')} runs one copy per GPU of "
                              f"exp.gpus, and {shown('exp.gpus')} names none; give a number")
        jobs = len(gpus)
    if jobs < 1:
        raise ConfigError(f"{shown('exp.parallel_jobs')} must be >= 1, or 'gpus'")
    if values["exp.parallel_memory_mb"] < 0:
        raise ConfigError(f"{shown('exp.parallel_memory_mb')} must be >= 0 (0: this node's "
                          f"memory divided by exp.parallel_jobs)")
    if jobs == 1:
        return
    if values["exp.num_replicas"] > 1:
        inputs = "; ".join(shown(name) for name in ("exp.num_local_replicas", "exp.num_nodes"))
        raise ConfigError(f"{shown('exp.parallel_jobs')} runs copies of one replica each, and "
                          f"{shown('exp.num_replicas')} asks for a data-parallel run ({inputs}); "
                          f"use one or the other")
    if gpus and len(gpus) < jobs:
        raise ConfigError(f"{shown('exp.parallel_jobs')} needs a GPU per copy, and "
                          f"{shown('exp.gpus')} names {len(gpus)}")
    cores = usable_cores()
    if jobs > cores:
        raise ConfigError(f"{shown('exp.parallel_jobs')}: {jobs} copies need a core each, and "
                          f"this node has {cores} usable cores")


def _check_container(values: Mapping[str, Any], raw: RawExperiment) -> None:
    """exp.docker: an engine on PATH, an image, mounts and options that parse."""

    def shown(name: str) -> str:
        return describe(name, values[name], raw[name].source)

    if not values["exp.docker"]:
        return

    def on_path(engine: str) -> bool:
        return any(shutil.which(command) for command in CONTAINER_ENGINE_COMMANDS[engine])

    engine = values["exp.container_engine"]
    if not on_path(engine):
        found = [name for name in CONTAINER_ENGINE_COMMANDS if on_path(name)]
        which = "it" if len(found) == 1 else "one of them"
        what = (f"found {', '.join(found)}: set exp.container_engine to {which}" if found else
                f"found none of {', '.join(CONTAINER_ENGINE_COMMANDS)}")
        raise ConfigError(f"exp.docker=true needs {engine} on PATH "
                          f"({shown('exp.container_engine')}); {what}")
    if not container_image(values):
        framework = values["exp.framework"]
        own = FRAMEWORKS[framework].knob_param("docker_image")
        why = (f"{own} is empty" if own else
               f"framework {framework} has no {framework}.docker_image")
        raise ConfigError(f"exp.docker=true (from {raw['exp.docker'].source}) needs an image: "
                          f"set exp.docker_image ({why})")
    for item in values["exp.container_mounts"]:
        try:
            host, inside, _ = parse_container_mount(item if isinstance(item, str) else "")
            check_bind_path(host)
            check_bind_path(inside)
        except ValueError as error:
            raise ConfigError(f"{shown('exp.container_mounts')}: {error}") from None
    if not all(isinstance(item, str) for item in values["exp.container_options"]):
        raise ConfigError(f"{shown('exp.container_options')} must be a list of strings, one "
                          f"per argument, e.g. ['--shm-size=8g']")
    _check_container_words(values, raw)


def _check_container_words(values: Mapping[str, Any], raw: RawExperiment) -> None:
    """What exp.docker puts on the engine's command line is one argument each, none in an
    option position but exp.container_options: the image is an image reference (never
    an option), the options are option words, the mounted folders cannot be split."""

    def shown(name: str) -> str:
        return describe(name, values[name], raw[name].source)

    image = container_image(values)
    try:
        check_container_image(image, values["exp.container_engine"])
    except ValueError as error:
        own = FRAMEWORKS[values["exp.framework"]].knob_param("docker_image")
        name = "exp.docker_image" if values["exp.docker_image"] or not own else own
        raise ConfigError(f"{shown(name)}: not an image: {error}") from None
    for option in values["exp.container_options"]:
        try:
            check_container_option(option)
        except ValueError as error:
            raise ConfigError(f"{shown('exp.container_options')}: {error}") from None
    try:
        check_container_python(str(values["exp.container_python"]))
    except ValueError as error:
        raise ConfigError(f"{shown('exp.container_python')}: {error}") from None
    # The folders mounted at the same path inside (container.mounts).
    folders = {"exp.out_dir": str(values["exp.out_dir"]),
               "exp.log_file": os.path.dirname(os.path.abspath(str(values["exp.log_file"]))),
               "exp.data_dir": str(values["exp.data_dir"])}
    for name, folder in folders.items():
        try:
            check_bind_path(os.path.abspath(folder) if folder else "")
        except ValueError as error:
            raise ConfigError(f"{shown(name)} is mounted into the container, and its "
                              f"folder {error}") from None


def _check_run_directory(values: Mapping[str, Any], raw: RawExperiment) -> None:
    """exp.out_dir holds no control character: a run directory's name goes into job
    scripts (Slurm's), command lines and messages, where a newline would end a line."""
    char = control_character(str(values["exp.out_dir"]))
    if char:
        shown = describe("exp.out_dir", values["exp.out_dir"], raw["exp.out_dir"].source)
        raise ConfigError(f"{shown}: a run directory's name cannot hold a control character "
                          f"({char}): it goes into job scripts, command lines and messages; "
                          "give a name without one")


def _check_replicas(
    values: Mapping[str, Any], raw: RawExperiment, framework: FrameworkInfo
) -> None:
    """Several replicas: a framework that runs them, a batch count every replica
    agrees on, a communication backend that fits the device, nodes that can meet."""

    def shown(name: str) -> str:
        return describe(name, values[name], raw[name].source)

    nodes, node_rank = values["exp.num_nodes"], values["exp.node_rank"]
    if not 0 <= node_rank < nodes:
        raise ConfigError(f"{shown('exp.node_rank')} must be from 0 to exp.num_nodes - 1 "
                          f"({shown('exp.num_nodes')})")
    if values["exp.num_replicas"] <= 1:
        return
    inputs = "; ".join(shown(name) for name in
                       ("exp.gpus", "exp.num_local_replicas", "exp.num_nodes"))
    if framework.data_parallel == "none":
        raise ConfigError(f"{shown('exp.num_replicas')}: framework {framework.id} runs one "
                          f"replica per experiment ({inputs})")
    if framework.data_parallel == "in_process" and nodes > 1:
        raise ConfigError(f"{shown('exp.num_nodes')}: framework {framework.id} runs its "
                          f"replicas in one process on one node; use exp.num_nodes=1")
    gpus = [g for g in str(values["exp.gpus"]).split(",") if g]
    local = values["exp.num_local_replicas"]
    if gpus and len(gpus) != local:
        raise ConfigError(f"{shown('exp.num_local_replicas')} must equal the number of GPUs "
                          f"in {shown('exp.gpus')}: one replica per GPU")
    if framework.data_parallel != "torchrun":
        return
    for name in ("exp.num_batches", "exp.num_warmup_batches"):
        if values[name] == "auto":
            # Each replica would decide when to stop on its own clock, and a replica
            # that stops first leaves the others waiting in the next all-reduce.
            raise ConfigError(f"{shown(name)}: data-parallel replicas must run the same "
                              f"number of batches; give a number ({shown('exp.num_replicas')})")
    if values["exp.dist_backend"] == "nccl" and not gpus:
        raise ConfigError(f"{shown('exp.dist_backend')} needs GPUs (exp.gpus is empty); "
                          f"use gloo or auto for CPU replicas")
    if nodes > 1 and not is_rendezvous_endpoint(str(values["exp.rendezvous"])):
        raise ConfigError(f"{shown('exp.rendezvous')}: a run on {nodes} nodes needs the "
                          f"HOST:PORT where they meet, e.g. exp.rendezvous=node01:29500")


def _check_data_dir(values: Mapping[str, Any], raw: RawExperiment, model: ModelInfo) -> None:
    """exp.data_dir holds what the model reads: class folders of images, or a text file."""
    data_dir = str(values["exp.data_dir"])
    where = f"exp.data_dir={data_dir!r} (from {raw['exp.data_dir'].source})"
    kind = model.real_data_kind
    if not data_dir:
        if model.id == "loader":
            raise ConfigError(f"model loader times the input pipeline: it needs exp.data_dir, "
                              f"a folder of class sub-folders of images ({where})")
        return
    path = Path(data_dir)
    if not kind:
        raise ConfigError(f"{where}: model {model.id} reads synthetic data only; real data "
                          f"is for image classification models, loader, and language models")
    if kind == "text" and not path.is_file():
        raise ConfigError(f"{where}: model {model.id} reads a text file, and there is no "
                          f"such file")
    if kind == "images":
        if not path.is_dir():
            raise ConfigError(f"{where}: model {model.id} reads a folder of class "
                              f"sub-folders of images, and there is no such folder")
        if not any(
            f.suffix.lower() in IMAGE_SUFFIXES
            for d in path.iterdir() if d.is_dir() for f in d.iterdir()
        ):
            raise ConfigError(f"{where}: no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in "
                              f"class sub-folders of it")
