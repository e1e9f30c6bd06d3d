"""What exists: the frameworks and models dlbench knows, as plain data.

Each framework declares itself in a module registered by one line (its path) in
:data:`dlbench.config.frameworks.MODULES`, or at run time with
``dlbench.config.registry.register_framework``; this module gathers them by id.
Models are the entries of the zoo modules beside it (:mod:`dlbench.config.zoo`), each
naming its builders per framework, from which the frameworks' builder tables are
derived; a plug-in adds one with
``dlbench.config.registry.register_model`` (:func:`add_model`), which also puts its
builders in the frameworks' tables.

The catalog lives at the bottom of the import graph so that planning a sweep (which
must reject an unknown model or a framework that is not installed) never imports a
framework. How a model is built and how a framework runs a step live in
``dlbench.models`` and ``dlbench.backends``; they look their metadata up here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from dlbench.config.external import external_model, external_title, is_external
from dlbench.config.frameworks import DECLARATIONS
from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.modelinfo import ModelInfo
from dlbench.config.zoo import ZOO

__all__ = ["FRAMEWORKS", "MODELS", "FrameworkInfo", "ModelInfo", "add_model",
           "model_frameworks", "model_info", "model_input_shape", "model_title",
           "remove_model"]

#: The frameworks, by id, from their declarations (:mod:`dlbench.config.frameworks`)
#: and those registered since.
FRAMEWORKS: dict[str, FrameworkInfo] = {info.id: info for info in DECLARATIONS}


#: The models, by id: the zoo's (:mod:`dlbench.config.zoo`) and those registered since.
MODELS: dict[str, ModelInfo] = {info.id: info for info in ZOO}


def model_info(values: Mapping[str, Any],
               shown: Callable[[str], str] | None = None) -> ModelInfo:
    """The model of an experiment's ``exp.model``: the catalog's entry, or a model from
    outside the zoo (``hf:``, ``timm:``, ``torchvision:``: :mod:`dlbench.config.external`)
    at the experiment's sizes. KeyError for an unknown zoo id; ConfigError (naming the
    parameter with ``shown``) for an external one that does not fit.

    >>> model_info({"exp.model": "resnet50"}).title
    'ResNet-50'
    """
    model_id = values["exp.model"]
    if is_external(model_id):
        return external_model(values, shown)
    return MODELS[str(model_id)]


def model_title(model_id: Any) -> str:
    """The title of ``model_id`` (a zoo id or an external one), or the id itself when
    it is unknown (the plan checks report it)."""
    if is_external(model_id):
        return external_title(str(model_id))
    entry = MODELS.get(model_id) if isinstance(model_id, str) else None
    return entry.title if entry is not None else str(model_id)


def model_input_shape(model: ModelInfo, image_size: int) -> tuple[int, ...]:
    """One sample's input shape, with the image side replaced when ``image_size`` > 0
    (:meth:`ModelInfo.sample_shape` without a sequence length)."""
    return model.sample_shape(image_size)


def model_frameworks(model_id: str) -> list[str]:
    """The frameworks that define ``model_id``, from their declarations' builder tables
    (derived from the models' entries) or model lists, in the order of
    :data:`FRAMEWORKS`.

    >>> model_frameworks("toy")[:2]
    ['pytorch', 'jax']
    """
    return [info.id for info in FRAMEWORKS.values() if info.defines(model_id)]


def add_model(info: ModelInfo) -> None:
    """Add ``info`` to :data:`MODELS` and each of its builders (``{framework id:
    "module:function"}``) to that framework's builder table (a copy of its declaration
    in :data:`FRAMEWORKS`; the declaration module is left alone). ValueError when the
    id is taken, a framework is unknown, or a framework lists its models instead of
    building them (ONNX Runtime). Use ``dlbench.config.registry.register_model``, which
    also makes the id a choice of exp.model."""
    if info.id in MODELS:
        raise ValueError(f"model {info.id} is already in the catalog")
    for framework, path in info.builders.items():
        declared = FRAMEWORKS.get(framework)
        if declared is None:
            raise ValueError(f"model {info.id}: unknown framework {framework!r}; known: "
                             f"{', '.join(FRAMEWORKS)}")
        if not declared.builders:
            raise ValueError(f"model {info.id}: framework {framework} has no builder table")
        if ":" not in path:
            raise ValueError(f"model {info.id}: builder {path!r} is not module:function")
    MODELS[info.id] = info
    for framework, path in info.builders.items():
        declared = FRAMEWORKS[framework]
        # models=None: the declaration derives the models it defines from its table again
        FRAMEWORKS[framework] = replace(
            declared, builders={**declared.builders, info.id: path}, models=None)


def remove_model(model_id: str) -> None:
    """Undo :func:`add_model`: the model and its builder lines are gone; a framework
    whose table is its declaration's again gets its declaration back."""
    del MODELS[model_id]
    originals = {info.id: info for info in DECLARATIONS}
    for framework, declared in list(FRAMEWORKS.items()):
        if model_id not in declared.builders:
            continue
        table = {k: v for k, v in declared.builders.items() if k != model_id}
        original = originals.get(framework)
        FRAMEWORKS[framework] = (
            original if original is not None and dict(original.builders) == table
            else replace(declared, builders=table, models=None))
