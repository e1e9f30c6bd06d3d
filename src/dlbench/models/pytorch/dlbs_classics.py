"""DLBS's smaller classics: AlexNet "one weird trick", OverFeat (fast) and the acoustic model.

Each is the network DLBS benchmarked under the same id, in plain ``torch.nn`` with
torch's default initialisation (as DLBS and torchvision had it). The image models gain
an adaptive average pool before the classifier: the identity at the published size,
it keeps the first fully connected layer (and the parameter count) at other sizes.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.pytorch.alexnet import fc_head


class AlexNetOWT(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """AlexNet from Krizhevsky's "One weird trick" paper, as torchvision's ``alexnet``.

    Unlike Caffe's bvlc_alexnet (the ``alexnet`` model): 64/192/384/256/256 filters, no
    groups, no LRN, 224 px input (conv1 padded by 2).
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 64, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(64, 192, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(192, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))  # 224 px already gives 6x6
        self.classifier = nn.Sequential(
            nn.Dropout(0.5),
            nn.Linear(256 * 6 * 6, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``."""
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


class OverFeat(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """OverFeat's fast model (Sermanet et al., 2013), as in convnet-benchmarks and DLBS.

    Five convolutions (96 11x11/4, 256 5x5, 512, 1024, 1024 3x3), 2x2 max pools after
    the first, second and fifth, fc 3072, fc 4096, fc ``num_classes``; 231 px input.
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 96, kernel_size=11, stride=4),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(96, 256, kernel_size=5),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(256, 512, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(512, 1024, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(1024, 1024, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))  # 231 → 56 → 28 → 24 → 12 → 6
        # Dropout after fc6 and fc7, as the paper and DLBS have it.
        self.classifier = fc_head(1024 * 6 * 6, 3072, 4096, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``."""
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def alexnet_owt(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """AlexNet "one weird trick" (torchvision's ``alexnet``): 61,100,840 parameters at
    3 channels and 1000 classes."""
    channels, _height, _width = input_shape
    return AlexNetOWT(channels, num_classes)


def overfeat(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """OverFeat (fast): 145,920,872 parameters at 3 channels and 1000 classes."""
    channels, _height, _width = input_shape
    return OverFeat(channels, num_classes)


def acoustic_model(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """DLBS's speech acoustic model: a fully connected network on ``(features,)``.

    Five hidden layers of 2048 with ReLU and a linear output over ``num_classes``
    acoustic states (DLBS: 540 features, 8192 states, 34,678,784 parameters).
    """
    (features,) = input_shape
    layers: list[nn.Module] = []
    width = features
    for _ in range(5):
        layers += [nn.Linear(width, 2048), nn.ReLU(inplace=True)]
        width = 2048
    layers.append(nn.Linear(width, num_classes))
    return nn.Sequential(*layers)
