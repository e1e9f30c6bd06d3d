"""The toy perceptron, Deep MNIST, AlexNet "one weird trick" and VGG-16 in Keras.

Layer for layer the PyTorch definitions (``dlbench.models.pytorch.simple``,
``dlbench.models.pytorch.dlbs_classics``, ``dlbench.models.pytorch.vgg``), in NHWC:
same widths, biases, pools and dropout, the same adaptive average pool before the
classifier, and the same initialisation, so the parameter counts are PyTorch's.
"""

from __future__ import annotations

import keras

from dlbench.models.tensorflow.layers import (
    AdaptiveAvgPool,
    conv,
    dense,
    kaiming_fan_out,
    nhwc,
)


def _sequential(
    input_shape: tuple[int, ...], layers: list[keras.layers.Layer], name: str
) -> keras.Model:
    return keras.Sequential([keras.Input(nhwc(input_shape)), *layers], name=name)


def toy(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """Two-layer perceptron: ``(features,)`` → 128 → ``num_classes``."""
    (features,) = input_shape
    return _sequential(
        input_shape, [dense(128, features, "relu"), dense(num_classes, 128)], "toy"
    )


def deep_mnist(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """TensorFlow's "Deep MNIST" CNN: two 5x5 'same' convolutions (32, 64) with ReLU and
    2x2 max pools, a 7x7 adaptive pool, fc 1024 with dropout 0.5, fc ``num_classes``."""
    channels = input_shape[0]
    return _sequential(input_shape, [
        *conv(32, 5, channels, padding=2, activation="relu"),
        keras.layers.MaxPooling2D(2),
        *conv(64, 5, 32, padding=2, activation="relu"),
        keras.layers.MaxPooling2D(2),
        AdaptiveAvgPool(7, 7),
        keras.layers.Flatten(),
        dense(1024, 64 * 7 * 7, "relu"),
        keras.layers.Dropout(0.5),
        dense(num_classes, 1024),
    ], "deep_mnist")


def alexnet_owt(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """AlexNet "one weird trick" (torchvision's ``alexnet``): 64/192/384/256/256
    filters, 3x3/2 max pools, a 6x6 adaptive pool, fc 4096 twice with dropout."""
    channels = input_shape[0]
    return _sequential(input_shape, [
        *conv(64, 11, channels, strides=4, padding=2, activation="relu"),
        keras.layers.MaxPooling2D(3, strides=2),
        *conv(192, 5, 64, padding=2, activation="relu"),
        keras.layers.MaxPooling2D(3, strides=2),
        *conv(384, 3, 192, padding=1, activation="relu"),
        *conv(256, 3, 384, padding=1, activation="relu"),
        *conv(256, 3, 256, padding=1, activation="relu"),
        keras.layers.MaxPooling2D(3, strides=2),
        AdaptiveAvgPool(6, 6),
        keras.layers.Flatten(),
        keras.layers.Dropout(0.5),
        dense(4096, 256 * 6 * 6, "relu"),
        keras.layers.Dropout(0.5),
        dense(4096, 4096, "relu"),
        dense(num_classes, 4096),
    ], "alexnet_owt")


#: VGG-16 (configuration D): output channels of each 3x3 convolution; "M" a 2x2 pool.
_VGG16 = "64 64 M 128 128 M 256 256 256 M 512 512 512 M 512 512 512 M"


def vgg16(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """VGG-16 without batch norm, as torchvision: thirteen 3x3 convolutions with bias
    and ReLU, five max pools, a 7x7 adaptive pool, fc 4096, fc 4096, fc ``num_classes``;
    torchvision's initialisation."""
    layers: list[keras.layers.Layer] = []
    for item in _VGG16.split():
        if item == "M":
            layers.append(keras.layers.MaxPooling2D(2))
            continue
        layers.append(keras.layers.Conv2D(
            int(item), 3, padding="same", activation="relu",
            kernel_initializer=kaiming_fan_out(), bias_initializer="zeros",
        ))
    normal = keras.initializers.RandomNormal(0.0, 0.01)
    layers += [
        AdaptiveAvgPool(7, 7),
        keras.layers.Flatten(),
        keras.layers.Dense(4096, activation="relu", kernel_initializer=normal),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(4096, activation="relu", kernel_initializer=normal),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(num_classes, kernel_initializer=normal),
    ]
    return _sequential(input_shape, layers, "vgg16")
