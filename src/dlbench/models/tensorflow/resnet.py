"""ResNet-18 to ResNet-269 (v1.5) in Keras, as ``dlbench.models.pytorch.resnet``; the
blocks per stage of each depth from ``dlbench.models.layouts.RESNET_STAGES``.

torchvision's choices, in NHWC: bias-free convolutions each followed by batch norm
(PyTorch's momentum 0.1 and epsilon 1e-5), 1x1 convolution shortcuts where the
shape changes, the stride of a bottleneck in its 3x3 convolution, PyTorch's
symmetric padding, a global average pool and a fully connected layer. Batch norm's
moving mean and variance are non-trainable weights, as they are buffers in PyTorch,
so the trainable parameters are PyTorch's ``parameters()``.
"""

from __future__ import annotations

import keras

from dlbench.models.layouts import RESNET_STAGES
from dlbench.models.tensorflow.layers import batch_norm, conv, dense, kaiming_fan_out, nhwc


def _bn(x: keras.KerasTensor) -> keras.KerasTensor:
    return batch_norm()(x)


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


def _resnet(model_id: str, input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """The ResNet of ``model_id``: stem, four stages of ``RESNET_STAGES[model_id]``
    blocks, global average pool, fc."""
    bottleneck, blocks = RESNET_STAGES[model_id]
    inputs = keras.Input(nhwc(input_shape))
    x = _relu(_bn(_conv(inputs, 64, 7, 2)))
    # Zero padding is -inf padding here: the max pool follows a ReLU.
    x = keras.layers.ZeroPadding2D(1)(x)
    x = keras.layers.MaxPooling2D(3, strides=2)(x)
    block = _bottleneck if bottleneck else _basic_block
    for stage, (planes, count) in enumerate(zip((64, 128, 256, 512), blocks, strict=True)):
        for index in range(count):
            # Each block a model of its own: Keras walks a functional graph recursively,
            # and ResNet-269's 900 layers in one graph exceed Python's recursion limit.
            block_input = keras.Input(tuple(x.shape[1:]))
            stride = 2 if stage > 0 and index == 0 else 1
            x = keras.Model(block_input, block(block_input, planes, stride))(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = dense(num_classes, int(x.shape[-1]))(x)
    return keras.Model(inputs, outputs, name=model_id)


def resnet18(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-18: 11,689,512 trainable parameters at 3 channels, 1000 classes."""
    return _resnet("resnet18", input_shape, num_classes)


def resnet34(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-34: 21,797,672 trainable parameters at 3 channels, 1000 classes."""
    return _resnet("resnet34", input_shape, num_classes)


def resnet50(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-50 v1.5: 25,557,032 trainable parameters at 3 channels, 1000 classes."""
    return _resnet("resnet50", input_shape, num_classes)


def resnet101(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-101 v1.5: 44,549,160 trainable parameters at 3 channels, 1000 classes."""
    return _resnet("resnet101", input_shape, num_classes)


def resnet152(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-152 v1.5: 60,192,808 trainable parameters at 3 channels, 1000 classes."""
    return _resnet("resnet152", input_shape, num_classes)


def resnet200(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-200 (v1.5 bottlenecks): 64,673,832 trainable parameters at 3 channels,
    1000 classes."""
    return _resnet("resnet200", input_shape, num_classes)


def resnet269(input_shape: tuple[int, ...], num_classes: int) -> keras.Model:
    """ResNet-269 (v1.5 bottlenecks): 102,073,384 trainable parameters at 3 channels,
    1000 classes."""
    return _resnet("resnet269", input_shape, num_classes)
