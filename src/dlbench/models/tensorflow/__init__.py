"""Keras 3 definitions of the zoo for ``exp.framework=tensorflow``.

Each builder takes one sample's shape in PyTorch's convention (``(C, H, W)`` for
images, as ``dlbench.config.catalog.model_input_shape`` gives it) and the number of
classes, and returns a built ``keras.Model`` whose inputs are NHWC images (or
features, or token ids ``(B, T)``). The same model id is the same architecture as
the PyTorch definition (``dlbench.models.pytorch``): same layers and widths, so the
same trainable parameter count at every size.

Importing this package imports Keras, which reads ``KERAS_BACKEND`` once: it is set
to ``tensorflow`` here unless the user chose otherwise (the backend then refuses to
run).

Example::

    from dlbench.models.tensorflow import build_tensorflow_model

    model = build_tensorflow_model("resnet18", (3, 64, 64), 1000)
    model(tf.zeros((2, 64, 64, 3))).shape  # (2, 1000)
"""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

# Keras, imported below, reads KERAS_BACKEND.
from collections.abc import Callable

import keras

from dlbench.config.frameworks.tensorflow import FRAMEWORK
from dlbench.models.builders import load_builders, model_builder

#: builder(input_shape, num_classes) -> a built keras.Model
TensorFlowBuilder = Callable[[tuple[int, ...], int], keras.Model]

#: Model id -> builder, from the declaration (dlbench.config.frameworks.tensorflow).
TENSORFLOW_BUILDERS: dict[str, TensorFlowBuilder] = load_builders(FRAMEWORK.builders)


def build_tensorflow_model(
    model_id: str, input_shape: tuple[int, ...], num_classes: int
) -> keras.Model:
    """Build the Keras model of ``model_id`` for samples of ``input_shape`` (PyTorch's
    convention: ``(C, H, W)`` for images). Raises :class:`KeyError` for an id without a
    TensorFlow builder (the planner refuses those) and
    :class:`dlbench.models.ImageTooSmall` below the model's smallest image side."""
    builder = model_builder(TENSORFLOW_BUILDERS, "TensorFlow", model_id, input_shape)
    return builder(input_shape, num_classes)


__all__ = ["TENSORFLOW_BUILDERS", "TensorFlowBuilder", "build_tensorflow_model"]
