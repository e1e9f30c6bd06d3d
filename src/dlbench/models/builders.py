"""Builder tables: each framework's ``{model id: builder}``, loaded from its
declaration, and the checks a builder's input passes first.

A model's metadata (input shape, classes, published parameter count) lives in
``dlbench.config.catalog``; this package only builds models. Importing it does not
import any framework: the runner may import it to plan, and only the worker, which
calls a builder, pays for importing torch.

Example::

    builder = model_builder(load_builders(FRAMEWORK.builders), "PyTorch", "toy", (64,))
    model = builder((64,), 10)
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, TypeVar

from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.config.frameworks import DECLARATIONS
from dlbench.errors import WorkerError

__all__ = ["MIN_IMAGE_SIZE", "ImageTooSmall", "check_input_shape", "load_builders",
           "model_builder"]

_Builder = TypeVar("_Builder")

#: The smallest image side (pixels) of the models that have one, from the catalog.
MIN_IMAGE_SIZE: dict[str, int] = {
    info.id: info.min_image_size for info in MODELS.values() if info.min_image_size
}


class ImageTooSmall(WorkerError):
    """``exp.image_size`` is below the smallest side a model can compute."""

    def __init__(self, model_id: str, size: int, minimum: int) -> None:
        super().__init__(
            f"exp.image_size={size} is too small for {model_id}: its pooling layers need "
            f"images of at least {minimum} pixels (0 keeps the published size)"
        )
        self.model_id = model_id
        self.size = size
        self.minimum = minimum


def check_input_shape(model_id: str, input_shape: tuple[int, ...]) -> None:
    """Raise :class:`ImageTooSmall` if ``input_shape`` (one sample, ``(C, H, W)`` for
    images) is too small for ``model_id``; torch-free, so a planner may call it too."""
    info = MODELS.get(model_id)  # read now: a registered model counts too
    minimum = info.min_image_size if info is not None else None
    if minimum is None or len(input_shape) < 2:
        return
    size = min(input_shape[-2:])
    if size < minimum:
        raise ImageTooSmall(model_id, size, minimum)


def load_builders(paths: Mapping[str, str]) -> dict[str, Any]:
    """A framework's builder table, ``{model id: builder}``, from its declaration's
    ``{model id: "module:function"}`` (:attr:`FrameworkInfo.builders
    <dlbench.config.frameworks.base.FrameworkInfo.builders>`, derived from the
    models' zoo entries): the one list of the models a framework defines, readable by
    the planner without importing the framework, resolved here in the worker."""
    table = {}
    for model_id, path in paths.items():
        module, _, function = path.partition(":")
        table[model_id] = getattr(importlib.import_module(module), function)
    return table


def _registered_builder(builders: Mapping[str, Any], model_id: str) -> Any:
    """The builder of ``model_id`` when it was registered after ``builders`` was loaded
    from a framework's declaration (``dlbench.config.registry.register_model``): from
    that framework's current table in the catalog; None when there is none."""
    for declared in DECLARATIONS:
        if declared.builders and set(declared.builders) == set(builders):
            current = FRAMEWORKS.get(declared.id)
            if current is not None and model_id in current.builders:
                return load_builders({model_id: current.builders[model_id]})[model_id]
    return None


def model_builder(
    builders: Mapping[str, _Builder], framework: str, model_id: str,
    input_shape: tuple[int, ...],
) -> _Builder:
    """``builders[model_id]``, once ``input_shape`` suits the model
    (:func:`check_input_shape`). Raises :class:`KeyError` naming ``framework`` and its
    known ids when it has no builder for ``model_id`` (a bug: the planner refuses such
    models)."""
    try:
        builder = builders[model_id]
    except KeyError:
        builder = _registered_builder(builders, model_id)
        if builder is None:
            known = ", ".join(sorted(builders))
            raise KeyError(
                f"no {framework} builder for model {model_id!r}; known: {known}") from None
    check_input_shape(model_id, input_shape)
    return builder
