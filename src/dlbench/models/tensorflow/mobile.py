"""MobileNetV2 (width 1.0) in Keras, as ``dlbench.models.pytorch.mobile`` (and
torchvision): inverted residual blocks of ``dlbench.models.layouts.MOBILENET_V2``, a
1x1 expansion, a 3x3 depthwise convolution and a linear 1x1 projection, each without
bias and followed by batch norm, ReLU6 after the first two; a 1x1 convolution to 1280
channels, global average pool, dropout 0.2 and a linear classifier. PyTorch's
symmetric padding; torchvision's initialisation."""

from __future__ import annotations

import math

import keras

from dlbench.models.layouts import MOBILENET_V2
from dlbench.models.tensorflow.layers import apply, batch_norm, conv, kaiming_fan_out, nhwc


def _conv_bn(x: keras.KerasTensor, out: int, kernel: int = 1, stride: int = 1,
             relu6: bool = True) -> keras.KerasTensor:
    """A bias-free convolution (padded by ``kernel // 2``), batch norm, ReLU6."""
    x = apply(x, conv(out, kernel, int(x.shape[-1]), strides=stride, padding=kernel // 2,
                      use_bias=False, kernel_initializer=kaiming_fan_out()))
    x = batch_norm()(x)
    return keras.layers.ReLU(max_value=6.0)(x) if relu6 else x


def _depthwise(x: keras.KerasTensor, stride: int) -> keras.KerasTensor:
    """A 3x3 depthwise convolution (padded by 1), batch norm, ReLU6."""
    channels = int(x.shape[-1])
    # torch's fan_out of a depthwise weight (C, 1, 3, 3) is 9 * C; Keras would count 9.
    init = keras.initializers.RandomNormal(0.0, math.sqrt(2.0 / (9 * channels)))
    x = keras.layers.ZeroPadding2D(1)(x)
    x = keras.layers.DepthwiseConv2D(3, strides=stride, use_bias=False,
                                     depthwise_initializer=init)(x)
    return keras.layers.ReLU(max_value=6.0)(batch_norm()(x))


def _inverted_residual(x: keras.KerasTensor, out: int, stride: int,
                       expansion: int) -> keras.KerasTensor:
    """Expand (1x1), depthwise (3x3), project (1x1, linear); a shortcut when the shape
    is kept."""
    channels = int(x.shape[-1])
    y = _conv_bn(x, channels * expansion) if expansion != 1 else x
    y = _conv_bn(_depthwise(y, stride), out, relu6=False)
    return keras.layers.Add()([x, y]) if stride == 1 and channels == out else y


def mobilenet_v2(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """MobileNetV2 (width 1.0): 3,504,872 trainable parameters at 3 channels, 1000
    classes."""
    inputs = keras.Input(nhwc(input_shape))
    x = _conv_bn(inputs, 32, 3, 2)
    for expansion, out, repeats, first_stride in MOBILENET_V2:
        for index in range(repeats):
            x = _inverted_residual(x, out, first_stride if index == 0 else 1, expansion)
    x = keras.layers.GlobalAveragePooling2D()(_conv_bn(x, 1280))
    x = keras.layers.Dropout(0.2)(x)
    outputs = keras.layers.Dense(
        num_classes, kernel_initializer=keras.initializers.RandomNormal(0.0, 0.01))(x)
    return keras.Model(inputs, outputs, name="mobilenet_v2")
