"""The toy perceptron, Deep MNIST, DLBS's classics (both AlexNets, OverFeat, the
acoustic model) and VGG-11, -13, -16 and -19 in Keras.

Layer for layer the PyTorch definitions (``dlbench.models.pytorch.simple``,
``alexnet``, ``dlbs_classics``, ``vgg``; VGG's configurations from
``dlbench.models.layouts``), in NHWC: same widths, biases, groups, pools and dropout,
the same adaptive average pool before the classifier, and the same initialisation,
so the parameter counts are PyTorch's.
"""

from __future__ import annotations

import keras

from dlbench.models.layouts import VGG_CONFIGS
from dlbench.models.tensorflow.layers import (
    AdaptiveAvgPool,
    apply,
    conv,
    dense,
    kaiming_fan_out,
    local_response_norm,
    nhwc,
    pool,
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


def _fc_head(in_features: int, hidden1: int, hidden2: int,
             num_classes: int) -> list[keras.layers.Layer]:
    """The classifier of AlexNet and OverFeat (PyTorch's ``fc_head``): fc6, fc7 (each
    ReLU then dropout 0.5) and the class layer."""
    return [
        keras.layers.Flatten(),
        dense(hidden1, in_features, "relu"),
        keras.layers.Dropout(0.5),
        dense(hidden2, hidden1, "relu"),
        keras.layers.Dropout(0.5),
        dense(num_classes, hidden2),
    ]


def alexnet(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """Caffe's bvlc_alexnet (``dlbench.models.pytorch.alexnet``): 96/256/384/384/256
    filters, conv2, conv4 and conv5 in two groups, LRN after conv1 and conv2, 3x3/2
    max pools rounding up (``ceil_mode``), a 6x6 adaptive pool, fc 4096 twice with
    dropout."""
    inputs = keras.Input(nhwc(input_shape))
    x = apply(inputs, conv(96, 11, input_shape[0], strides=4, activation="relu"))
    x = pool(local_response_norm()(x), "max", 3, 2, ceil=True)
    x = apply(x, conv(256, 5, 96, padding=2, groups=2, activation="relu"))
    x = pool(local_response_norm()(x), "max", 3, 2, ceil=True)
    x = apply(x, conv(384, 3, 256, padding=1, activation="relu"))
    x = apply(x, conv(384, 3, 384, padding=1, groups=2, activation="relu"))
    x = apply(x, conv(256, 3, 384, padding=1, groups=2, activation="relu"))
    x = pool(x, "max", 3, 2, ceil=True)
    x = apply(x, [AdaptiveAvgPool(6, 6), *_fc_head(256 * 6 * 6, 4096, 4096, num_classes)])
    return keras.Model(inputs, x, name="alexnet")


def overfeat(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """OverFeat's fast model (``dlbench.models.pytorch.dlbs_classics``): 96 11x11/4, 256
    5x5, 512, 1024, 1024 3x3 convolutions, 2x2 max pools after the first, second and
    fifth, a 6x6 adaptive pool, fc 3072, fc 4096, fc ``num_classes``."""
    channels = input_shape[0]
    return _sequential(input_shape, [
        *conv(96, 11, channels, strides=4, activation="relu"),
        keras.layers.MaxPooling2D(2),
        *conv(256, 5, 96, activation="relu"),
        keras.layers.MaxPooling2D(2),
        *conv(512, 3, 256, padding=1, activation="relu"),
        *conv(1024, 3, 512, padding=1, activation="relu"),
        *conv(1024, 3, 1024, padding=1, activation="relu"),
        keras.layers.MaxPooling2D(2),
        AdaptiveAvgPool(6, 6),
        *_fc_head(1024 * 6 * 6, 3072, 4096, num_classes),
    ], "overfeat")


def acoustic_model(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """DLBS's acoustic model: five fully connected layers of 2048 with ReLU on
    ``(features,)``, a linear output over ``num_classes`` states."""
    (width,) = input_shape
    layers: list[keras.layers.Layer] = []
    for _ in range(5):
        layers.append(dense(2048, width, "relu"))
        width = 2048
    layers.append(dense(num_classes, width))
    return _sequential(input_shape, layers, "acoustic_model")


def _vgg(name: str, input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """VGG without batch norm, as torchvision: 3x3 convolutions with bias and ReLU, five
    max pools (``VGG_CONFIGS[name]``), a 7x7 adaptive pool, fc 4096, fc 4096, fc
    ``num_classes``; torchvision's initialisation."""
    layers: list[keras.layers.Layer] = []
    for item in VGG_CONFIGS[name].split():
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
    return _sequential(input_shape, layers, name)


def vgg11(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """VGG-11 (configuration A): 132,863,336 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg11", input_shape, num_classes)


def vgg13(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """VGG-13 (configuration B): 133,047,848 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg13", input_shape, num_classes)


def vgg16(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """VGG-16 (configuration D): 138,357,544 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg16", input_shape, num_classes)


def vgg19(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """VGG-19 (configuration E): 143,667,240 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg19", input_shape, num_classes)
