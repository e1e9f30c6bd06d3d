"""ResNet-18 and ResNet-50 (v1.5) in Keras, as ``dlbench.models.pytorch.resnet``.

torchvision's choices, in NHWC: bias-free convolutions each followed by batch norm
(PyTorch's momentum 0.1 and epsilon 1e-5), 1x1 convolution shortcuts where the
shape changes, the stride of a bottleneck in its 3x3 convolution, PyTorch's
symmetric padding, a global average pool and a fully connected layer. Batch norm's
moving mean and variance are non-trainable weights, as they are buffers in PyTorch,
so the trainable parameters are PyTorch's ``parameters()``.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras

from dlbench.models.tensorflow.layers import conv, dense, kaiming_fan_out, nhwc


def _bn(x: keras.KerasTensor) -> keras.KerasTensor:
    # Keras's momentum is the weight of the old moving average: PyTorch's 0.1 is 0.9.
    return keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(x)


def _conv(
    x: keras.KerasTensor, filters: int, kernel: int, stride: int = 1
) -> keras.KerasTensor:
    """A bias-free convolution with PyTorch's padding (``kernel // 2``)."""
    for layer in conv(filters, kernel, int(x.shape[-1]), strides=stride, padding=kernel // 2,
                      use_bias=False, kernel_initializer=kaiming_fan_out()):
        x = layer(x)
    return x


def _relu(x: keras.KerasTensor) -> keras.KerasTensor:
    return keras.layers.ReLU()(x)


def _shortcut(x: keras.KerasTensor, filters: int, stride: int) -> keras.KerasTensor:
    if stride == 1 and int(x.shape[-1]) == filters:
        return x
    return _bn(_conv(x, filters, 1, stride))


def _basic_block(x: keras.KerasTensor, planes: int, stride: int) -> keras.KerasTensor:
    """Two 3x3 convolutions and a shortcut (ResNet-18 and -34)."""
    identity = _shortcut(x, planes, stride)
    out = _relu(_bn(_conv(x, planes, 3, stride)))
    out = _bn(_conv(out, planes, 3))
    return _relu(keras.layers.Add()([out, identity]))


def _bottleneck(x: keras.KerasTensor, planes: int, stride: int) -> keras.KerasTensor:
    """1x1 reduce, 3x3 (with the stride: v1.5), 1x1 expand to ``4 * planes``."""
    identity = _shortcut(x, planes * 4, stride)
    out = _relu(_bn(_conv(x, planes, 1)))
    out = _relu(_bn(_conv(out, planes, 3, stride)))
    out = _bn(_conv(out, planes * 4, 1))
    return _relu(keras.layers.Add()([out, identity]))


def _resnet(
    name: str, bottleneck: bool, blocks: Sequence[int], input_shape: tuple[int, ...],
    num_classes: int,
) -> keras.Model:
    inputs = keras.Input(nhwc(input_shape))
    x = _relu(_bn(_conv(inputs, 64, 7, 2)))
    # Zero padding is -inf padding here: the max pool follows a ReLU.
    x = keras.layers.ZeroPadding2D(1)(x)
    x = keras.layers.MaxPooling2D(3, strides=2)(x)
    block = _bottleneck if bottleneck else _basic_block
    for stage, (planes, count) in enumerate(zip((64, 128, 256, 512), blocks, strict=True)):
        for index in range(count):
            x = block(x, planes, 2 if stage > 0 and index == 0 else 1)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = dense(num_classes, int(x.shape[-1]))(x)
    return keras.Model(inputs, outputs, name=name)


def resnet18(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-18: 11,689,512 trainable parameters at 3 channels, 1000 classes."""
    return _resnet("resnet18", False, (2, 2, 2, 2), input_shape, num_classes)


def resnet50(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-50 v1.5: 25,557,032 trainable parameters at 3 channels, 1000 classes."""
    return _resnet("resnet50", True, (3, 4, 6, 3), input_shape, num_classes)
