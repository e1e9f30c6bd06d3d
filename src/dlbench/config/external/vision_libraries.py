"""``exp.model=timm:<name>`` and ``torchvision:<name>``: image classifiers of those
libraries by name, random weights, 1000 classes at 224 px (``exp.image_size`` resizes).

The planner checks that the library is installed and the name is one a library could
have; whether it has the model is known only by importing it (and PyTorch), which the
worker does: an unknown name fails there, in one line naming the library's list.
"""

from __future__ import annotations

import re

from dlbench.config.modelinfo import ModelInfo
from dlbench.config.params import Shown
from dlbench.errors import ConfigError

__all__ = ["LIBRARIES", "library_model"]


#: Each library's package, and where its builder lives in the worker.
LIBRARIES: dict[str, str] = {
    "timm": "dlbench.models.pytorch.external.vision_libraries:build_timm",
    "torchvision": "dlbench.models.pytorch.external.vision_libraries:build_torchvision",
}

#: What a model name of timm or torchvision looks like (``convnext_tiny``,
#: ``vit_base_patch16_224.augreg_in21k``, ``resnet50``).
_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")


def library_model(model_id: str, shown: Shown) -> ModelInfo:
    """The model of ``exp.model=<library>:<name>``; ConfigError for a name that no
    library could have."""
    library, name = model_id.split(":", 1)
    if not _NAME.match(name):
        raise ConfigError(f"{shown('exp.model')}: {name!r} is not a {library} model name "
                          f"(letters, digits, '_', '.', '-'; e.g. {library}:resnet50)")
    return ModelInfo(
        id=model_id, title=f"{name} ({library})", domain="image classification",
        input_shape=(3, 224, 224), num_classes=1000, default_batch=64, unit="images/s",
        min_image_size=32, source=library, builders={"pytorch": LIBRARIES[library]},
        description=f"{library}'s {name}, random weights.")
