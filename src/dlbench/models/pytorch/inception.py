"""GoogLeNet and Inception-v3 as torchvision defines them, and their shared pieces.

Both are built from convolution + batch norm (eps 0.001) + ReLU units without bias,
grouped into blocks of parallel branches whose outputs are concatenated along the
channels (:class:`Parallel`). An adaptive average pool before the classifier lets
any image size that survives the strided layers reach it; the catalog records the
smallest such size.

Where the two differ from DLBS's own versions (which had no batch norm in GoogLeNet
and no auxiliary head in Inception-v3), they follow torchvision so that the
parameter counts are the published ones: GoogLeNet without auxiliary heads
(``aux_logits=False``, 6,624,904) and Inception-v3 with its auxiliary head
(27,161,264).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

Size = int | tuple[int, int]


def conv_bn(
    in_channels: int, out_channels: int, kernel_size: Size, stride: int = 1, padding: Size = 0
) -> nn.Sequential:
    """Convolution without bias, batch norm (eps 0.001), ReLU: the Inception unit."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False),
        nn.BatchNorm2d(out_channels, eps=0.001),
        nn.ReLU(inplace=True),
    )


class Parallel(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Branches that all read the input; their outputs are concatenated along channels."""

    def __init__(self, *branches: nn.Module) -> None:
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The branches' outputs, concatenated along dimension 1."""
        return torch.cat([branch(x) for branch in self.branches], dim=1)


def init_truncated_normal(model: nn.Module, std: float) -> None:
    """torchvision's Inception initialisation: truncated normal weights (within ±2),
    batch norm at identity; modules with a ``stddev`` attribute use their own."""
    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            scale = float(getattr(module, "stddev", std))
            nn.init.trunc_normal_(module.weight, mean=0.0, std=scale, a=-2, b=2)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)


# --- GoogLeNet ---------------------------------------------------------------------


def _googlenet_block(
    in_ch: int, ch1x1: int, ch3x3red: int, ch3x3: int, ch5x5red: int, ch5x5: int, proj: int
) -> Parallel:
    return Parallel(
        conv_bn(in_ch, ch1x1, 1),
        nn.Sequential(conv_bn(in_ch, ch3x3red, 1), conv_bn(ch3x3red, ch3x3, 3, padding=1)),
        # torchvision's "5x5" branch has a 3x3 kernel (a known slip kept for its
        # pretrained weights); the published 6,624,904 counts it that way.
        nn.Sequential(conv_bn(in_ch, ch5x5red, 1), conv_bn(ch5x5red, ch5x5, 3, padding=1)),
        nn.Sequential(
            nn.MaxPool2d(3, stride=1, padding=1, ceil_mode=True), conv_bn(in_ch, proj, 1)
        ),
    )


class GoogLeNet(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """GoogLeNet (Szegedy et al., 2014) with batch norm, without auxiliary classifiers."""

    def __init__(self, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(in_channels, 64, 7, stride=2, padding=3),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            conv_bn(64, 64, 1),
            conv_bn(64, 192, 3, padding=1),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            _googlenet_block(192, 64, 96, 128, 16, 32, 32),  # 3a
            _googlenet_block(256, 128, 128, 192, 32, 96, 64),  # 3b
            nn.MaxPool2d(3, stride=2, ceil_mode=True),
            _googlenet_block(480, 192, 96, 208, 16, 48, 64),  # 4a
            _googlenet_block(512, 160, 112, 224, 24, 64, 64),  # 4b
            _googlenet_block(512, 128, 128, 256, 24, 64, 64),  # 4c
            _googlenet_block(512, 112, 144, 288, 32, 64, 64),  # 4d
            _googlenet_block(528, 256, 160, 320, 32, 128, 128),  # 4e
            nn.MaxPool2d(2, stride=2, ceil_mode=True),
            _googlenet_block(832, 256, 160, 320, 32, 128, 128),  # 5a
            _googlenet_block(832, 384, 192, 384, 48, 128, 128),  # 5b
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(1024, num_classes)
        init_truncated_normal(self, std=0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``."""
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.fc(self.dropout(x))


# --- Inception-v3 ------------------------------------------------------------------


def _avg_pool_3x3() -> nn.AvgPool2d:
    return nn.AvgPool2d(3, stride=1, padding=1)


def _inception_a(in_ch: int, pool_features: int) -> Parallel:  # 35x35 at 299 px
    return Parallel(
        conv_bn(in_ch, 64, 1),
        nn.Sequential(conv_bn(in_ch, 48, 1), conv_bn(48, 64, 5, padding=2)),
        nn.Sequential(
            conv_bn(in_ch, 64, 1), conv_bn(64, 96, 3, padding=1), conv_bn(96, 96, 3, padding=1)
        ),
        nn.Sequential(_avg_pool_3x3(), conv_bn(in_ch, pool_features, 1)),
    )


def _inception_b(in_ch: int) -> Parallel:  # reduction 35 → 17
    return Parallel(
        conv_bn(in_ch, 384, 3, stride=2),
        nn.Sequential(
            conv_bn(in_ch, 64, 1), conv_bn(64, 96, 3, padding=1), conv_bn(96, 96, 3, stride=2)
        ),
        nn.MaxPool2d(3, stride=2),
    )


def _inception_c(in_ch: int, c7: int) -> Parallel:  # 17x17, factorised 7x7
    return Parallel(
        conv_bn(in_ch, 192, 1),
        nn.Sequential(
            conv_bn(in_ch, c7, 1),
            conv_bn(c7, c7, (1, 7), padding=(0, 3)),
            conv_bn(c7, 192, (7, 1), padding=(3, 0)),
        ),
        nn.Sequential(
            conv_bn(in_ch, c7, 1),
            conv_bn(c7, c7, (7, 1), padding=(3, 0)),
            conv_bn(c7, c7, (1, 7), padding=(0, 3)),
            conv_bn(c7, c7, (7, 1), padding=(3, 0)),
            conv_bn(c7, 192, (1, 7), padding=(0, 3)),
        ),
        nn.Sequential(_avg_pool_3x3(), conv_bn(in_ch, 192, 1)),
    )


def _inception_d(in_ch: int) -> Parallel:  # reduction 17 → 8
    return Parallel(
        nn.Sequential(conv_bn(in_ch, 192, 1), conv_bn(192, 320, 3, stride=2)),
        nn.Sequential(
            conv_bn(in_ch, 192, 1),
            conv_bn(192, 192, (1, 7), padding=(0, 3)),
            conv_bn(192, 192, (7, 1), padding=(3, 0)),
            conv_bn(192, 192, 3, stride=2),
        ),
        nn.MaxPool2d(3, stride=2),
    )


def _split_1x3_3x1(channels: int) -> Parallel:
    return Parallel(
        conv_bn(channels, 384, (1, 3), padding=(0, 1)),
        conv_bn(channels, 384, (3, 1), padding=(1, 0)),
    )


def _inception_e(in_ch: int) -> Parallel:  # 8x8, expanded filter bank
    return Parallel(
        conv_bn(in_ch, 320, 1),
        nn.Sequential(conv_bn(in_ch, 384, 1), _split_1x3_3x1(384)),
        nn.Sequential(conv_bn(in_ch, 448, 1), conv_bn(448, 384, 3, padding=1), _split_1x3_3x1(384)),
        nn.Sequential(_avg_pool_3x3(), conv_bn(in_ch, 192, 1)),
    )


class InceptionAux(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """The auxiliary classifier on the 17x17 grid: pool, 1x1 to 128, 5x5 to 768, fc."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.conv0 = conv_bn(in_channels, 128, 1)
        self.conv1 = conv_bn(128, 768, 5)
        self.conv1[0].stddev = 0.01
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Auxiliary logits ``(N, num_classes)`` from the grid after Mixed_6e."""
        if min(x.shape[-2:]) >= 17:
            x = F.avg_pool2d(x, kernel_size=5, stride=3)  # torchvision: 17x17 → 5x5
        else:
            # Below 17 px that pool would leave too little for the 5x5 convolution;
            # pooling to 5x5 adaptively keeps the head (and the count) at small sizes.
            x = F.adaptive_avg_pool2d(x, (5, 5))
        x = F.adaptive_avg_pool2d(self.conv1(self.conv0(x)), (1, 1))
        return self.fc(torch.flatten(x, 1))


class Inception3(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Inception-v3 (Szegedy et al., 2015) with its auxiliary classifier, 299 px.

    The module returns one tensor of logits, because the backend computes one loss
    on it. In training mode the auxiliary head runs as in torchvision and its logits,
    weighted 0.4 as the paper weights its loss, are added to the main logits: forward
    and backward then do the work of training with both heads (the loss value differs
    from the sum of two losses, the arithmetic does not). In eval mode it is skipped.
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            conv_bn(in_channels, 32, 3, stride=2),  # Conv2d_1a_3x3
            conv_bn(32, 32, 3),  # 2a
            conv_bn(32, 64, 3, padding=1),  # 2b
            nn.MaxPool2d(3, stride=2),
            conv_bn(64, 80, 1),  # 3b
            conv_bn(80, 192, 3),  # 4a
            nn.MaxPool2d(3, stride=2),
        )
        self.mixed_5_6 = nn.Sequential(
            _inception_a(192, 32),
            _inception_a(256, 64),
            _inception_a(288, 64),
            _inception_b(288),
            _inception_c(768, 128),
            _inception_c(768, 160),
            _inception_c(768, 160),
            _inception_c(768, 192),
        )
        self.aux_logits = InceptionAux(768, num_classes)
        self.mixed_7 = nn.Sequential(_inception_d(768), _inception_e(1280), _inception_e(2048))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(2048, num_classes)
        init_truncated_normal(self, std=0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``, H and W >= 75."""
        x = self.mixed_5_6(self.stem(x))
        aux = self.aux_logits(x) if self.training else None
        x = torch.flatten(self.avgpool(self.mixed_7(x)), 1)
        logits = self.fc(self.dropout(x))
        return logits if aux is None else logits + 0.4 * aux


def googlenet(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """GoogLeNet as torchvision's ``googlenet(aux_logits=False)``: 6,624,904 parameters
    at 3 channels and 1000 classes."""
    channels, _height, _width = input_shape
    return GoogLeNet(channels, num_classes)


def inception3(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Inception-v3 as torchvision's ``inception_v3`` (auxiliary head included):
    27,161,264 parameters at 3 channels and 1000 classes."""
    channels, _height, _width = input_shape
    return Inception3(channels, num_classes)
