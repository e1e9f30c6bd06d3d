"""AlexNet as in Caffe's ``bvlc_alexnet`` (the variant DLBS benchmarked).

It differs from torchvision's AlexNet (the "one weird trick" variant): 96/256/384/
384/256 filters, conv2, conv4 and conv5 split into two groups (the original two-GPU
layout), local response normalisation after conv1 and conv2, and a 227 px input.
"""

from __future__ import annotations

import torch
from torch import nn


def _lrn() -> nn.Module:
    # Caffe's LRN (ACROSS_CHANNELS, local_size 5, alpha 1e-4, beta 0.75, k 1) divides
    # alpha by local_size, as torch's LocalResponseNorm does.
    return nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=1.0)


def _max_pool() -> nn.Module:
    # Caffe rounds pooling output sizes up; at 227 px ceil and floor agree (55→27→13→6),
    # and ceil mode lets smaller images (down to 39 px) still reach the classifier.
    return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)



def fc_head(in_features: int, hidden1: int, hidden2: int, num_classes: int) -> nn.Sequential:
    """The classifier of AlexNet, OverFeat and VGG: fc6, fc7 (each ReLU then dropout
    0.5, as Caffe's models have it) and the class layer, as one ``nn.Sequential``
    (``classifier.0``, ``.3``, ``.6`` are the linear layers, as in torchvision)."""
    return nn.Sequential(
        nn.Linear(in_features, hidden1),
        nn.ReLU(inplace=True),
        nn.Dropout(0.5),
        nn.Linear(hidden1, hidden2),
        nn.ReLU(inplace=True),
        nn.Dropout(0.5),
        nn.Linear(hidden2, num_classes),
    )

class AlexNet(nn.Module):  # type: ignore[misc]  # torch is not type-checked (see pyproject)
    """Caffe's bvlc_alexnet: five convolutions, three fully connected layers."""

    def __init__(self, in_channels: int = 3, num_classes: int = 1000) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 96, kernel_size=11, stride=4),
            nn.ReLU(inplace=True),
            _lrn(),
            _max_pool(),
            nn.Conv2d(96, 256, kernel_size=5, padding=2, groups=2),
            nn.ReLU(inplace=True),
            _lrn(),
            _max_pool(),
            nn.Conv2d(256, 384, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 384, kernel_size=3, padding=1, groups=2),
            nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, kernel_size=3, padding=1, groups=2),
            nn.ReLU(inplace=True),
            _max_pool(),
        )
        # The identity at 227 px (6x6 already); keeps fc6 the same at other sizes.
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = fc_head(256 * 6 * 6, 4096, 4096, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``."""
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def alexnet(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """Caffe's AlexNet for samples ``(C, H, W)``: 60,965,224 parameters at 3x227x227 and
    1000 classes (the image size does not change the count)."""
    channels, _height, _width = input_shape
    return AlexNet(channels, num_classes)
