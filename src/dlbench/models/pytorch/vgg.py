"""VGG (Simonyan and Zisserman, 2014) as torchvision defines it, without batch norm.

Configurations A, B, D and E of the paper (VGG-11, -13, -16, -19): 3x3 convolutions
with bias and ReLU, five 2x2 max pools, an adaptive 7x7 average pool (the identity at
224 px) and three fully connected layers with dropout. Weights are initialised as
torchvision does, so the counts are the ones everyone quotes (VGG-16: 138,357,544).
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.layouts import VGG_CONFIGS
from dlbench.models.pytorch.alexnet import fc_head


def _features(config: str, in_channels: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    channels = in_channels
    for item in config.split():
        if item == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers += [nn.Conv2d(channels, int(item), 3, padding=1), nn.ReLU(inplace=True)]
            channels = int(item)
    return nn.Sequential(*layers)


class VGG(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Convolutional features, adaptive 7x7 pool, fc 4096, fc 4096, fc ``num_classes``."""

    def __init__(self, config: str, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = _features(config, in_channels)
        # Five 2x2 pools take 224 px to 7x7, so this is the identity at the published
        # size; at other sizes it keeps fc6 (and the parameter count) the same.
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = fc_head(512 * 7 * 7, 4096, 4096, num_classes)
        # torchvision's initialisation (the default Linear init would do for timing,
        # but this keeps the logits of a fresh model at torchvision's scale).
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(module.bias, 0)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0, 0.01)
                nn.init.constant_(module.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``."""
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def _vgg(name: str, input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    channels, _height, _width = input_shape
    return VGG(VGG_CONFIGS[name], channels, num_classes)


def vgg11(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """VGG-11 (configuration A): 132,863,336 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg11", input_shape, num_classes)


def vgg13(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """VGG-13 (configuration B): 133,047,848 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg13", input_shape, num_classes)


def vgg16(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """VGG-16 (configuration D): 138,357,544 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg16", input_shape, num_classes)


def vgg19(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """VGG-19 (configuration E): 143,667,240 parameters at 3 channels, 1000 classes."""
    return _vgg("vgg19", input_shape, num_classes)
