"""Models from outside the zoo, named ``<source>:<name>`` in ``exp.model``.

- ``hf:<name>``: a Hugging Face Transformers architecture from a shipped configuration
  or a local ``config.json`` (:mod:`.huggingface`), sized by the ``hf.*`` parameters;
- ``timm:<name>``, ``torchvision:<name>``: those libraries' image classifiers
  (:mod:`.vision_libraries`);
- ``served:<name>``: a language model a server holds, measured over its API by a
  framework that declares ``served_model`` (``exp.framework=endpoint``); dlbench builds
  nothing of it.

Each is built with random weights, only by the PyTorch backend (and simulated by the
fake one); each needs its library installed where it runs, checked by the planner
without importing it. Plain data and JSON here: importing this package imports no
framework.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from typing import Any

from dlbench.config.external.huggingface import (
    HF_PARAMS,
    hf_model,
    hf_summary,
    hf_title,
    shipped_rows,
)
from dlbench.config.external.transformer_counts import flops_per_sample
from dlbench.config.external.vision_libraries import library_model
from dlbench.config.install import install_command
from dlbench.config.modelinfo import ModelInfo
from dlbench.config.params import Shown

__all__ = ["HF_PARAMS", "REQUIREMENTS", "SOURCES", "configuration_flops", "external_model",
           "external_title", "hf_summary", "is_external", "missing_requirement",
           "shipped_rows"]

#: The sources, and what builds a model of each from its id (and the experiment).
SOURCES: dict[str, Callable[[str, Mapping[str, Any], Shown], ModelInfo]] = {
    "hf": hf_model,
    "timm": lambda model_id, values, shown: library_model(model_id, shown),
    "torchvision": lambda model_id, values, shown: library_model(model_id, shown),
    "served": lambda model_id, values, shown: served_model(model_id),
}

#: Each source's package, and what pip installs for it (the command keeps the installed
#: torch: :func:`~dlbench.config.install.install_command`).
REQUIREMENTS: dict[str, tuple[str, str]] = {
    "hf": ("transformers", "'dlbench[hf]'"),
    "timm": ("timm", "timm"),
    "torchvision": ("torchvision", "torchvision"),
}


def is_external(model_id: object) -> bool:
    """Whether ``model_id`` names a model of a source (``hf:gpt2``), not of the zoo."""
    return (isinstance(model_id, str) and model_id.partition(":")[0] in SOURCES
            and len(model_id.partition(":")[2]) > 0)


def external_title(model_id: str) -> str:
    """The title of an external model, from its id alone."""
    source, _, name = model_id.partition(":")
    return hf_title(name) if source == "hf" else f"{name} ({source})"


def served_model(model_id: str) -> ModelInfo:
    """A model a server holds (``served:<name>``): a causal language model whose
    sizes dlbench does not know, counted in output tokens."""
    name = model_id.partition(":")[2]
    return ModelInfo(model_id, f"{name} (served)", "language modeling", (1,), 0, 1,
                     unit="tokens/s", is_image=False, task="causal_lm", source="served")


def external_model(values: Mapping[str, Any], shown: Shown | None = None) -> ModelInfo:
    """The model ``values["exp.model"]`` names, at the experiment's sizes. ``shown``
    writes a parameter for a message (its value and where it came from); by default,
    ``name=value``. ConfigError when the name or its configuration does not fit."""
    model_id = str(values["exp.model"])

    def plain(name: str) -> str:
        return f"{name}={values.get(name)!r}"

    return SOURCES[model_id.partition(":")[0]](model_id, values, shown or plain)


def missing_requirement(model: ModelInfo) -> tuple[str, str] | None:
    """The package an external model needs and the command that installs it keeping
    the installed torch, when it cannot be imported here (checked without importing
    it); None when installed or in the zoo."""
    if model.source not in REQUIREMENTS:  # the zoo's, or a served model: nothing to build
        return None
    package, wanted = REQUIREMENTS[model.source]
    if importlib.util.find_spec(package) is not None:
        return None
    return package, install_command(wanted)


def configuration_flops(model: ModelInfo, training: bool, seq_len: int) -> float | None:
    """FLOPs per sample of a Hugging Face model from its configuration
    (:func:`~dlbench.config.external.transformer_counts.flops_per_sample`) at the
    experiment's sequence length (0: the model's); None for any other model."""
    if model.source != "hf":
        return None
    return flops_per_sample(model.source_config, training, seq_len or model.seq_len or 0)
