"""Small models: the toy perceptron for tests and TensorFlow's Deep MNIST CNN."""

from __future__ import annotations

from torch import nn


def toy(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Two-layer perceptron: ``(features,)`` → 128 → ``num_classes``; milliseconds a step."""
    (features,) = input_shape
    return nn.Sequential(nn.Linear(features, 128), nn.ReLU(), nn.Linear(128, num_classes))


def deep_mnist(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """TensorFlow's "Deep MNIST" tutorial CNN, as DLBS benchmarked it.

    Two 5x5 'same' convolutions (32, 64 filters) each with ReLU and 2x2 max pool,
    fc 1024 with ReLU and dropout 0.5, fc ``num_classes``: 3,274,634 parameters for
    one channel and 10 classes.
    """
    channels, _height, _width = input_shape
    return nn.Sequential(
        nn.Conv2d(channels, 32, kernel_size=5, padding=2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, kernel_size=5, padding=2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        # 28 px gives 7x7 here, so this is the identity at the published size; at other
        # sizes it keeps fc1 (and the parameter count) the same.
        nn.AdaptiveAvgPool2d((7, 7)),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, 1024),
        nn.ReLU(inplace=True),
        nn.Dropout(0.5),
        nn.Linear(1024, num_classes),
    )
