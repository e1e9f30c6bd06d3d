"""The FLOPs per sample an experiment records: its architecture's count, the same in
every framework, with the framework's own counter beside it as a cross-check.

``results.flops_per_sample`` (and the ``results.tflops`` and ``results.mfu`` computed
from it) is :func:`dlbench.models.flops.architecture_flops`: one count per model, phase
and input shape, whichever framework ran it and whatever its batch.
``results.flops_per_sample_framework`` is what the backend's own counter said
(:meth:`Backend.flops_per_sample <dlbench.backends.base.Backend.flops_per_sample>`).
Where the architecture cannot be counted (no PyTorch definition, an operator the
``meta`` device lacks) the framework's count stands in, and ``results.flops_source``
says which it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench.backends.base import Backend
from dlbench.config.catalog import FRAMEWORKS, model_info
from dlbench.config.external import configuration_flops
from dlbench.models.flops import ARCHITECTURE_SOURCE, architecture_flops

__all__ = ["CONFIGURATION_SOURCE", "flop_results", "framework_source"]

#: ``results.flops_source`` of a Hugging Face model's count, made from its configuration
#: by the standard transformer formula (:mod:`dlbench.config.external.transformer_counts`).
CONFIGURATION_SOURCE = "configuration"

#: The phases whose step runs the backward pass as well as the forward (as the PyTorch
#: backend reads them).
_TRAINING_PHASES = ("training", "train_to_accuracy")


def framework_source(backend: Backend, params: Mapping[str, Any]) -> str:
    """``results.flops_source`` of a count made by ``backend``'s own counter:
    ``framework:`` and the counter's name (the framework's id when it names none)."""
    return f"framework:{backend.flops_counter or params['exp.framework']}"


def flop_results(
    params: Mapping[str, Any], own: float | None, own_source: str,
) -> tuple[dict[str, Any], str]:
    """``results.flops_per_sample``, ``results.flops_per_sample_framework`` and
    ``results.flops_source`` of the experiment ``params``, given the framework's own
    count per sample ``own`` (None when it has none) and its source
    (:func:`framework_source`); and a note for the log, "" unless the architecture's
    count failed. Call it outside the timed section: it builds the model on PyTorch's
    ``meta`` device (a fraction of a second; importing torch, when not yet imported,
    about a second). A framework whose step is simulated (``fake``) runs no model: its
    own figure is the one recorded."""
    framework = FRAMEWORKS.get(str(params["exp.framework"]))
    note = ""
    reference: float | None = None
    reference_source = ARCHITECTURE_SOURCE
    if framework is None or not framework.simulated:
        training = params["exp.phase"] in _TRAINING_PHASES
        try:
            info = model_info(params)
            # A Hugging Face model's count is its configuration's (the standard formula).
            reference = configuration_flops(info, training, int(params.get("exp.seq_len", 0)))
            if reference is not None:
                reference_source = CONFIGURATION_SOURCE
            else:
                reference = architecture_flops(
                    info, training, int(params.get("exp.image_size", 0)),
                    int(params.get("exp.seq_len", 0)))
        except Exception as error:  # a count that fails must not fail the measurement
            stand_in = f"FLOPs per sample from {own_source}" if own else "no FLOPs per sample"
            note = f"{stand_in}: the architecture's count failed ({error})"
    recorded, source = ((reference, reference_source) if reference is not None
                        else (own, own_source))
    results: dict[str, Any] = {}
    if recorded:
        results["results.flops_per_sample"] = recorded
    if own:
        results["results.flops_per_sample_framework"] = own
    if recorded:
        results["results.flops_source"] = source
    return results, note
