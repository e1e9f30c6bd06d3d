"""ResNet as torchvision defines it (ResNet-50 and deeper are v1.5).

He et al., "Deep Residual Learning for Image Recognition" (2015), with torchvision's
choices, so that parameter counts and FLOPs match the numbers everyone quotes:
bottlenecks stride in their 3x3 convolution (v1.5, not the paper's 1x1), shortcuts
are identity or 1x1 convolution + batch norm (option B), convolutions have no bias,
and weights are initialised as torchvision does.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from dlbench.models.layouts import RESNET_STAGES


def _conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def _conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Two 3x3 convolutions and a shortcut (ResNet-18 and -34)."""

    expansion = 1

    def __init__(
        self, in_planes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.conv1 = _conv3x3(in_planes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual output, same layout as the input but ``stride`` times smaller."""
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """1x1 reduce, 3x3, 1x1 expand (x4) and a shortcut (ResNet-50 and deeper).

    The stride sits in the 3x3 convolution (ResNet v1.5), as in torchvision.
    """

    expansion = 4

    def __init__(
        self, in_planes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.conv1 = _conv1x1(in_planes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv1x1(planes, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual output with ``planes * 4`` channels, ``stride`` times smaller."""
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


Block = type[BasicBlock] | type[Bottleneck]


class ResNet(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Stem (7x7/2 conv, BN, ReLU, 3x3/2 max pool), four stages, average pool, fc.

    ``layers`` gives the number of blocks per stage; stages have 64, 128, 256 and 512
    planes (times the block's expansion) and all but the first halve the resolution.
    """

    def __init__(
        self, block: Block, layers: Sequence[int], in_channels: int = 3, num_classes: int = 1000
    ) -> None:
        super().__init__()
        self.in_planes = 64
        self.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_stage(block, 64, layers[0], stride=1)
        self.layer2 = self._make_stage(block, 128, layers[1], stride=2)
        self.layer3 = self._make_stage(block, 256, layers[2], stride=2)
        self.layer4 = self._make_stage(block, 512, layers[3], stride=2)
        # Adaptive, so any image size reaches the same fc (and parameter count).
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        # torchvision's initialisation; fc keeps torch's default Linear init there too.
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.constant_(module.weight, 1)
                nn.init.constant_(module.bias, 0)

    def _make_stage(self, block: Block, planes: int, blocks: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.in_planes != planes * block.expansion:
            downsample = nn.Sequential(
                _conv1x1(self.in_planes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        stage = [block(self.in_planes, planes, stride, downsample)]
        self.in_planes = planes * block.expansion
        stage += [block(self.in_planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _resnet(model_id: str, input_shape: tuple[int, ...], num_classes: int) -> ResNet:
    """The ResNet of ``model_id``, its blocks per stage from ``RESNET_STAGES``."""
    bottleneck, layers = RESNET_STAGES[model_id]
    channels, _height, _width = input_shape
    return ResNet(Bottleneck if bottleneck else BasicBlock, layers, channels, num_classes)


def resnet18(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ResNet-18: 11,689,512 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet18", input_shape, num_classes)


def resnet34(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ResNet-34: 21,797,672 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet34", input_shape, num_classes)


def resnet50(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ResNet-50 v1.5: 25,557,032 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet50", input_shape, num_classes)


def resnet101(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ResNet-101 v1.5: 44,549,160 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet101", input_shape, num_classes)


def resnet152(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ResNet-152 v1.5: 60,192,808 parameters at 3 channels, 1000 classes."""
    return _resnet("resnet152", input_shape, num_classes)


# The two deepest of DLBS's set. He et al. trained ResNet-200 with pre-activation
# blocks ("Identity Mappings in Deep Residual Networks", 2016); like DLBS, which built
# every depth from its one block, both reuse the torchvision v1.5 bottleneck above, so
# only the number of blocks per stage differs from ResNet-50.


def resnet200(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ResNet-200 (v1.5 bottlenecks, stages of 3, 24, 36, 3 blocks): 64,673,832
    parameters at 3 channels, 1000 classes."""
    return _resnet("resnet200", input_shape, num_classes)


def resnet269(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ResNet-269 (v1.5 bottlenecks, stages of 3, 30, 48, 8 blocks): 102,073,384
    parameters at 3 channels, 1000 classes."""
    return _resnet("resnet269", input_shape, num_classes)
