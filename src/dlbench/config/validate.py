"""Planning a sweep: expand, resolve and check every experiment before anything runs.

Each check raises a DlbenchError with one line naming the parameter, the file or
flag its value came from, and what would be accepted.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.config.expand import RawExperiment, expand
from dlbench.config.modelinfo import IMAGE_SUFFIXES, ModelInfo
from dlbench.config.registry import REGISTRY, is_user_param
from dlbench.config.resolve import EXP_ID, Resolver, own_parameters
from dlbench.config.spec import Source, SweepSpec, describe
from dlbench.errors import ConfigError

_GPUS = re.compile(r"^$|^\d+(,\d+)*$")

#: Smallest accepted value of numeric parameters.
_MINIMUM = {
    "exp.replica_batch": 1,
    "exp.num_batches": 1,
    "exp.num_warmup_batches": 0,
    "exp.timeout": 0,
    "exp.num_nodes": 1,
    "exp.num_local_replicas": 1,
    "exp.image_size": 0,
    "exp.seq_len": 0,
    "exp.data_workers": 0,
    "exp.repeat": 1,
    "exp.min_batches": 1,
    "exp.max_warmup_batches": 1,
    "exp.min_duration": 0,
    "exp.max_duration": 0,
    "exp.target_ci": 0,
    "exp.cv_threshold": 0,
    "monitor.frequency": 0.01,
    "fake.step_ms": 0,
    "fake.jitter_ms": 0,
    "fake.warmup_ms": 0,
    "fake.memory_mb": 0,
    "fake.failure_batch": 0,
    "pytorch.num_threads": 0,
}

#: What the known values of these parameters are called in messages.
_KNOWN_KINDS = {"exp.framework": "framework", "exp.model": "model"}


def plan_experiments(spec: SweepSpec) -> list[dict[str, Any]]:
    """The experiments of ``spec``: expanded, resolved, cast and checked, in expansion order.

    Each is a flat dict of every registry parameter (defaults filled in) plus any
    ``user.*`` parameter, with ``exp.id`` set.

    >>> from dlbench.config.spec import load_spec
    >>> spec = load_spec(params=["exp.framework=fake", "exp.model=toy"],
    ...                  variables=["exp.replica_batch=[8,16]"])
    >>> [e["exp.effective_batch"] for e in plan_experiments(spec)]
    [8, 16]
    """
    check_names(spec)
    raws = expand(spec)
    experiments = []
    for raw in raws:
        values = Resolver(raw).resolve_all()
        check_experiment(values, raw)
        experiments.append(own_parameters(values))
    check_log_files(experiments, raws)
    return experiments


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
    to run the phase, GPU list syntax, numeric ranges, one replica."""

    def shown(name: str) -> str:
        return describe(name, values[name], raw[name].source)

    for param in REGISTRY:
        if param.choices is None or values[param.name] in param.choices:
            continue
        kind = _KNOWN_KINDS.get(param.name)
        if kind is not None:
            known = ", ".join(map(str, param.choices))
            raise ConfigError(f"{shown(param.name)} is not a known {kind}; known: {known}")
        accepted = ", ".join(map(repr, param.choices))
        raise ConfigError(f"{shown(param.name)} is not one of {accepted}")

    framework = FRAMEWORKS[values["exp.framework"]]
    missing = framework.missing_requirements()
    if missing:
        hint = framework.install_hint or f"pip install {' '.join(missing)}"
        raise ConfigError(
            f"exp.framework={framework.id} needs `{hint}`: {', '.join(missing)} not installed "
            f"(exp.framework from {raw['exp.framework'].source})"
        )
    if values["exp.phase"] not in framework.phases:
        raise ConfigError(
            f"{shown('exp.phase')} is not supported by framework {framework.id}; "
            f"supported: {', '.join(framework.phases)}"
        )
    if not _GPUS.match(values["exp.gpus"]):
        raise ConfigError(
            f"{shown('exp.gpus')} is not a GPU list: use '' for the CPU, '0' for GPU 0, "
            f"'0,1' for GPUs 0 and 1"
        )
    for name, minimum in _MINIMUM.items():
        if not isinstance(values[name], str) and values[name] < minimum:
            raise ConfigError(f"{shown(name)} must be >= {minimum}")
    model = MODELS[values["exp.model"]]
    _check_data_dir(values, raw, model)
    smallest = max(8, model.min_image_size or 0)
    if model.is_image and 0 < values["exp.image_size"] < smallest:
        raise ConfigError(
            f"{shown('exp.image_size')} is too small for {model.id}: use 0 (its own "
            f"{model.input_shape[-1]} px) or at least {smallest}"
        )
    if values["exp.num_replicas"] > 1:
        inputs = "; ".join(shown(name) for name in
                           ("exp.gpus", "exp.num_local_replicas", "exp.num_nodes"))
        raise ConfigError(
            f"{shown('exp.num_replicas')}: this version runs one replica per experiment "
            f"(data-parallel runs with torchrun are not available yet); use one GPU in "
            f"exp.gpus and exp.num_nodes=1 ({inputs})"
        )


def check_log_files(experiments: list[dict[str, Any]], raws: list[RawExperiment]) -> None:
    """No two experiments write the same log file."""
    seen: dict[str, int] = {}
    for index, values in enumerate(experiments):
        path = os.path.normpath(values["exp.log_file"])
        if path in seen:
            first = seen[path]
            source = raws[index]["exp.log_file"].source
            shown = describe("exp.log_file", values["exp.log_file"], source)
            raise ConfigError(
                f"{shown} is the same for experiments {experiments[first][EXP_ID]} and "
                f"{values[EXP_ID]} (numbers {first + 1} and {index + 1} of the sweep); make an "
                f"identity parameter or exp.log_file differ between them"
            )
        seen[path] = index


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
