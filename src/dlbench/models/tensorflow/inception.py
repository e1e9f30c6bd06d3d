"""GoogLeNet, Inception-v3 and Inception-v4 in Keras, walking their layouts in
:mod:`dlbench.models.layouts`, which says what each op is and how the weights start.
"""

from __future__ import annotations

import keras

from dlbench.models.layouts import (
    GOOGLENET,
    INCEPTION3_AUX,
    INCEPTION3_BODY,
    INCEPTION3_HEAD,
    INCEPTION4,
    Concat,
    Conv,
    Op,
)
from dlbench.models.tensorflow.layers import (
    AdaptiveAvgPool,
    apply,
    batch_norm,
    conv,
    dense,
    nhwc,
    pool,
)


def _run(x: keras.KerasTensor, ops: tuple[Op, ...], std: float | None) -> keras.KerasTensor:
    """``x`` through a layout; ``std`` the normal weights' scale, None for PyTorch's
    default initialisation."""
    for op in ops:
        if isinstance(op, Conv):
            scale = op.std or std
            init = keras.initializers.RandomNormal(0.0, scale) if scale else None
            x = apply(x, conv(op.out, op.kernel, int(x.shape[-1]), strides=op.stride,
                              padding=op.padding, use_bias=False, kernel_initializer=init))
            x = keras.layers.ReLU()(batch_norm(1e-3)(x))
        elif isinstance(op, Concat):
            source = x
            x = keras.layers.Concatenate()([_run(source, branch, std) for branch in op.branches])
        else:
            x = pool(x, op.kind, op.kernel, op.stride, op.padding, ceil=op.ceil,
                     count_pad=op.count_pad)
    return x


def _classifier(x: keras.KerasTensor, dropout: float, num_classes: int,
                std: float | None) -> keras.KerasTensor:
    """Global average pool, dropout, fc."""
    x = keras.layers.Dropout(dropout)(keras.layers.GlobalAveragePooling2D()(x))
    if std is None:
        return dense(num_classes, int(x.shape[-1]))(x)
    return keras.layers.Dense(num_classes,
                              kernel_initializer=keras.initializers.RandomNormal(0.0, std))(x)


def googlenet(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """GoogLeNet as torchvision's ``googlenet(aux_logits=False)``: 6,624,904 trainable
    parameters at 3 channels and 1000 classes."""
    inputs = keras.Input(nhwc(input_shape))
    x = _run(inputs, GOOGLENET, 0.01)
    return keras.Model(inputs, _classifier(x, 0.2, num_classes, 0.01), name="googlenet")


class _AuxWeighted(keras.layers.Layer):  # type: ignore[misc]  # keras is not type-checked
    """``logits + 0.4 * aux`` in training, ``logits`` otherwise (PyTorch's Inception3)."""

    def call(self, logits: keras.KerasTensor, aux: keras.KerasTensor,
             training: bool | None = None) -> keras.KerasTensor:
        """The main logits, with the auxiliary head's weighted in when training."""
        return logits + 0.4 * aux if training else logits


def inception3(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """Inception-v3 as torchvision's ``inception_v3``, auxiliary head included:
    27,161,264 trainable parameters at 3 channels and 1000 classes.

    As in the PyTorch definition, training adds the auxiliary logits, weighted 0.4, to
    the main ones; in inference they are left out (TensorFlow prunes the head from
    the traced step, since nothing reads it)."""
    inputs = keras.Input(nhwc(input_shape))
    body = _run(inputs, INCEPTION3_BODY, 0.1)
    # torchvision pools 17x17 to 5x5 with a 5x5/3 window; smaller grids pool adaptively.
    if min(body.shape[1:3]) >= 17:
        aux = keras.layers.AveragePooling2D(5, strides=3)(body)
    else:
        aux = AdaptiveAvgPool(5, 5)(body)
    aux = keras.layers.GlobalAveragePooling2D()(_run(aux, INCEPTION3_AUX, 0.1))
    aux = keras.layers.Dense(
        num_classes, kernel_initializer=keras.initializers.RandomNormal(0.0, 0.001))(aux)
    logits = _classifier(_run(body, INCEPTION3_HEAD, 0.1), 0.5, num_classes, 0.1)
    return keras.Model(inputs, _AuxWeighted()(logits, aux), name="inception3")


def inception4(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """Inception-v4 (the common PyTorch ports): 42,679,816 trainable parameters at 3
    channels and 1000 classes."""
    inputs = keras.Input(nhwc(input_shape))
    x = _run(inputs, INCEPTION4, None)
    return keras.Model(inputs, _classifier(x, 0.2, num_classes, None), name="inception4")
