"""MobileNetV2 (Sandler et al., 2018) as torchvision defines it (width 1.0).

Inverted residual blocks: a 1x1 expansion (x6, except the first block), a 3x3
depthwise convolution, a linear 1x1 projection; ReLU6, batch norm, convolutions
without bias; a 1x1 convolution to 1280 channels, global average pool and a linear
classifier. Every convolution is padded, so any image size reaches the classifier.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.layouts import MOBILENET_V2


def _conv_bn_relu6(
    in_channels: int, out_channels: int, kernel_size: int = 3, stride: int = 1, groups: int = 1
) -> nn.Sequential:
    padding = (kernel_size - 1) // 2
    return nn.Sequential(
        nn.Conv2d(
            in_channels, out_channels, kernel_size, stride, padding, groups=groups, bias=False
        ),
        nn.BatchNorm2d(out_channels),
        nn.ReLU6(inplace=True),
    )


class InvertedResidual(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Expand (1x1), depthwise (3x3), project (1x1, linear); a shortcut when shapes match."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, expansion: int) -> None:
        super().__init__()
        hidden = in_channels * expansion
        self.use_shortcut = stride == 1 and in_channels == out_channels
        layers: list[nn.Module] = []
        if expansion != 1:
            layers.append(_conv_bn_relu6(in_channels, hidden, kernel_size=1))
        layers += [
            _conv_bn_relu6(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block's output; ``stride`` times smaller than ``x``."""
        return x + self.conv(x) if self.use_shortcut else self.conv(x)


class MobileNetV2(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Stem 3x3/2 to 32 channels, 17 inverted residual blocks, 1x1 to 1280, classifier."""

    def __init__(self, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = [_conv_bn_relu6(in_channels, 32, stride=2)]
        channels = 32
        for expansion, out_channels, repeats, first_stride in MOBILENET_V2:
            for index in range(repeats):
                stride = first_stride if index == 0 else 1
                layers.append(InvertedResidual(channels, out_channels, stride, expansion))
                channels = out_channels
        layers.append(_conv_bn_relu6(channels, 1280, kernel_size=1))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

        # torchvision's initialisation.
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0, 0.01)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``."""
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """MobileNetV2 (width 1.0): 3,504,872 parameters at 3 channels, 1000 classes."""
    channels, _height, _width = input_shape
    return MobileNetV2(channels, num_classes)
