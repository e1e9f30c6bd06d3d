"""Inception-v4 (Szegedy et al., "Inception-v4, Inception-ResNet and the Impact of
Residual Connections on Learning", 2016), 299 px.

The layout is the paper's (Figures 3-9) and DLBS's: a stem to 384 channels at 35x35,
four Inception-A, reduction A (k, l, m, n = 192, 224, 256, 384), seven Inception-B,
reduction B, three Inception-C, global average pool, dropout 0.2 and a linear
classifier on 1536 features. Units are convolution without bias + batch norm + ReLU
as in the widely used PyTorch port (Cadene's ``pretrainedmodels``, also timm's
``inception_v4``): 42,679,816 parameters at 1000 classes. (DLBS's convolutions also
had biases too: 31,584 more.)
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.pytorch.inception import Parallel, conv_bn


def _avg_pool_3x3() -> nn.AvgPool2d:
    # The reference ports average over the window's real pixels only.
    return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)


def _stem(in_channels: int) -> nn.Sequential:  # 299 → 35x35x384
    return nn.Sequential(
        conv_bn(in_channels, 32, 3, stride=2),
        conv_bn(32, 32, 3),
        conv_bn(32, 64, 3, padding=1),
        Parallel(nn.MaxPool2d(3, stride=2), conv_bn(64, 96, 3, stride=2)),  # 160
        Parallel(
            nn.Sequential(conv_bn(160, 64, 1), conv_bn(64, 96, 3)),
            nn.Sequential(
                conv_bn(160, 64, 1),
                conv_bn(64, 64, (1, 7), padding=(0, 3)),
                conv_bn(64, 64, (7, 1), padding=(3, 0)),
                conv_bn(64, 96, 3),
            ),
        ),  # 192
        Parallel(conv_bn(192, 192, 3, stride=2), nn.MaxPool2d(3, stride=2)),  # 384
    )


def _inception_a() -> Parallel:  # 384 → 384 at 35x35
    return Parallel(
        conv_bn(384, 96, 1),
        nn.Sequential(conv_bn(384, 64, 1), conv_bn(64, 96, 3, padding=1)),
        nn.Sequential(
            conv_bn(384, 64, 1), conv_bn(64, 96, 3, padding=1), conv_bn(96, 96, 3, padding=1)
        ),
        nn.Sequential(_avg_pool_3x3(), conv_bn(384, 96, 1)),
    )


def _reduction_a() -> Parallel:  # 384 → 1024, 35 → 17
    return Parallel(
        conv_bn(384, 384, 3, stride=2),
        nn.Sequential(
            conv_bn(384, 192, 1), conv_bn(192, 224, 3, padding=1), conv_bn(224, 256, 3, stride=2)
        ),
        nn.MaxPool2d(3, stride=2),
    )


def _inception_b() -> Parallel:  # 1024 → 1024 at 17x17
    return Parallel(
        conv_bn(1024, 384, 1),
        nn.Sequential(
            conv_bn(1024, 192, 1),
            conv_bn(192, 224, (1, 7), padding=(0, 3)),
            conv_bn(224, 256, (7, 1), padding=(3, 0)),
        ),
        nn.Sequential(
            conv_bn(1024, 192, 1),
            conv_bn(192, 192, (7, 1), padding=(3, 0)),
            conv_bn(192, 224, (1, 7), padding=(0, 3)),
            conv_bn(224, 224, (7, 1), padding=(3, 0)),
            conv_bn(224, 256, (1, 7), padding=(0, 3)),
        ),
        nn.Sequential(_avg_pool_3x3(), conv_bn(1024, 128, 1)),
    )


def _reduction_b() -> Parallel:  # 1024 → 1536, 17 → 8
    return Parallel(
        nn.Sequential(conv_bn(1024, 192, 1), conv_bn(192, 192, 3, stride=2)),
        nn.Sequential(
            conv_bn(1024, 256, 1),
            conv_bn(256, 256, (1, 7), padding=(0, 3)),
            conv_bn(256, 320, (7, 1), padding=(3, 0)),
            conv_bn(320, 320, 3, stride=2),
        ),
        nn.MaxPool2d(3, stride=2),
    )


def _split_1x3_3x1(channels: int) -> Parallel:
    return Parallel(
        conv_bn(channels, 256, (1, 3), padding=(0, 1)),
        conv_bn(channels, 256, (3, 1), padding=(1, 0)),
    )


def _inception_c() -> Parallel:  # 1536 → 1536 at 8x8
    return Parallel(
        conv_bn(1536, 256, 1),
        nn.Sequential(conv_bn(1536, 384, 1), _split_1x3_3x1(384)),
        nn.Sequential(
            conv_bn(1536, 384, 1),
            conv_bn(384, 448, (3, 1), padding=(1, 0)),
            conv_bn(448, 512, (1, 3), padding=(0, 1)),
            _split_1x3_3x1(512),
        ),
        nn.Sequential(_avg_pool_3x3(), conv_bn(1536, 256, 1)),
    )


class Inception4(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Inception-v4: stem, 4 x A, reduction A, 7 x B, reduction B, 3 x C, classifier."""

    def __init__(self, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _stem(in_channels),
            *(_inception_a() for _ in range(4)),
            _reduction_a(),
            *(_inception_b() for _ in range(7)),
            _reduction_b(),
            *(_inception_c() for _ in range(3)),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(1536, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``, H and W >= 75."""
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.fc(self.dropout(x))


def inception4(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Inception-v4: 42,679,816 parameters at 3 channels and 1000 classes."""
    channels, _height, _width = input_shape
    return Inception4(channels, num_classes)
