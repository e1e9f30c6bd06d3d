"""Object detection: an SSDLite detector (Sandler et al., 2018) on a MobileNetV2
backbone, trained against synthetic boxes with SSD's loss (Liu et al., 2016).

Honest but simple: the training step does what an SSD step does on the device
(match ground-truth boxes to the prior boxes by IoU, encode offsets, smooth-L1 on
the positives, cross-entropy with 3:1 hard negative mining), without a data pipeline
of real annotations or augmentations. Inference is the network's forward pass; the
box decoding and non-maximum suppression of a deployed detector are not included.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.models.pytorch.workload_base import Batch, Workload

ANCHORS = 6  # prior boxes per feature-map location
BOXES_PER_IMAGE = 8  # synthetic ground-truth boxes per image
# MobileNetV2's stages: (expansion, channels, blocks, stride of the first block)
_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1))
_EXTRAS = (512, 256, 256, 128)  # channels of the four extra stride-2 feature maps


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout), nn.ReLU6(inplace=True),
    )


class _InvertedResidual(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """MobileNetV2's block: 1x1 expansion, 3x3 depthwise, linear 1x1 projection."""

    def __init__(self, cin: int, cout: int, stride: int, expansion: int) -> None:
        super().__init__()
        hidden = cin * expansion
        layers: list[nn.Module] = [_conv_bn(cin, hidden, 1)] if expansion != 1 else []
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Same layout out, ``stride`` times smaller."""
        return x + self.block(x) if self.residual else self.block(x)


def _separable(cin: int, cout: int) -> nn.Sequential:
    """SSDLite's prediction layer: a depthwise 3x3 then a pointwise 1x1."""
    return nn.Sequential(_conv_bn(cin, cin, 3, groups=cin), nn.Conv2d(cin, cout, 1))


class SSDLite(nn.Module):  # type: ignore[misc]
    """SSDLite: MobileNetV2 features tapped at strides 16 and 32, four extra stride-2
    maps (1x1 reduce, depthwise 3x3, 1x1 expand), and separable heads predicting
    ``ANCHORS`` boxes per location. Returns box offsets ``(B, P, 4)``, class logits
    ``(B, P, classes)`` and the prior boxes ``(P, 4)`` (centre, size; in [0, 1])."""

    def __init__(self, num_classes: int = 81) -> None:
        super().__init__()
        blocks: list[nn.Module] = [_conv_bn(3, 32, 3, 2)]
        cin = 32
        for expansion, cout, count, stride in _STAGES:
            for index in range(count):
                blocks.append(_InvertedResidual(cin, cout, stride if index == 0 else 1, expansion))
                cin = cout
        # The first map is the stride-16 stage's output (after the 96-channel blocks).
        split = 1 + sum(count for _e, _c, count, _s in _STAGES[:5])
        self.stride16 = nn.Sequential(*blocks[:split])
        self.stride32 = nn.Sequential(*blocks[split:], _conv_bn(320, 1280, 1))
        extras, cin = [], 1280
        for cout in _EXTRAS:
            extras.append(nn.Sequential(
                _conv_bn(cin, cout // 2, 1), _conv_bn(cout // 2, cout // 2, 3, 2, cout // 2),
                _conv_bn(cout // 2, cout, 1),
            ))
            cin = cout
        self.extras = nn.ModuleList(extras)
        channels = (96, 1280, *_EXTRAS)
        self.num_classes = num_classes
        self.box_heads = nn.ModuleList(_separable(c, ANCHORS * 4) for c in channels)
        self.class_heads = nn.ModuleList(_separable(c, ANCHORS * num_classes) for c in channels)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        self._priors: dict[tuple[Any, ...], torch.Tensor] = {}

    def priors(self, sizes: list[tuple[int, int]], device: torch.device) -> torch.Tensor:
        """SSD's prior boxes for feature maps of ``sizes``: scales from 0.2 to 0.95,
        aspect ratios 1, 2, 1/2, 3, 1/3 and one more square box between two scales;
        cached per input size."""
        key = (tuple(sizes), str(device))
        if key not in self._priors:
            scales = [0.2 + 0.75 * k / (len(sizes) - 1) for k in range(len(sizes))] + [1.0]
            boxes = []
            for k, (height, width) in enumerate(sizes):
                s, between = scales[k], math.sqrt(scales[k] * scales[k + 1])
                shapes = [(s, s), (between, between)] + [
                    (s * math.sqrt(r), s / math.sqrt(r)) for r in (2.0, 0.5, 3.0, 1 / 3)
                ]
                ys = (torch.arange(height, device=device, dtype=torch.float32) + 0.5) / height
                xs = (torch.arange(width, device=device, dtype=torch.float32) + 0.5) / width
                cy, cx = torch.meshgrid(ys, xs, indexing="ij")
                centres = torch.stack([cx, cy], dim=-1).reshape(-1, 1, 2).expand(-1, ANCHORS, 2)
                sides = torch.tensor(shapes, device=device).expand(height * width, ANCHORS, 2)
                boxes.append(torch.cat([centres, sides], dim=-1).reshape(-1, 4))
            self._priors[key] = torch.cat(boxes).clamp(0.0, 1.0)
        return self._priors[key]

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Box offsets, class logits and priors for images ``(B, 3, H, W)``."""
        maps = [self.stride16(images)]
        maps.append(self.stride32(maps[0]))
        for extra in self.extras:
            maps.append(extra(maps[-1]))
        batch = images.shape[0]
        # (B, A*K, H, W) → (B, H*W*A, K): location-major, anchors inside, as the priors
        locations = torch.cat([
            head(m).permute(0, 2, 3, 1).reshape(batch, -1, 4)
            for head, m in zip(self.box_heads, maps, strict=True)
        ], dim=1)
        logits = torch.cat([
            head(m).permute(0, 2, 3, 1).reshape(batch, -1, self.num_classes)
            for head, m in zip(self.class_heads, maps, strict=True)
        ], dim=1)
        sizes = [(m.shape[-2], m.shape[-1]) for m in maps]
        return locations, logits, self.priors(sizes, images.device)


def ssd_lite(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """SSDLite for ``num_classes`` classes (background included); any image size."""
    return SSDLite(num_classes=num_classes)


def _corners(boxes: torch.Tensor) -> torch.Tensor:
    """(cx, cy, w, h) → (x1, y1, x2, y2)."""
    return torch.cat([boxes[..., :2] - boxes[..., 2:] / 2, boxes[..., :2] + boxes[..., 2:] / 2], -1)


def _iou(boxes: torch.Tensor, priors: torch.Tensor) -> torch.Tensor:
    """IoU of corner boxes ``(B, K, 4)`` with corner priors ``(P, 4)``: ``(B, K, P)``."""
    a, b = boxes.unsqueeze(2), priors
    top_left = torch.maximum(a[..., :2], b[..., :2])
    bottom_right = torch.minimum(a[..., 2:], b[..., 2:])
    inter = (bottom_right - top_left).clamp(min=0).prod(-1)
    area_a = (a[..., 2:] - a[..., :2]).prod(-1)
    area_b = (b[..., 2:] - b[..., :2]).prod(-1)
    return inter / (area_a + area_b - inter)


def ssd_loss(
    locations: torch.Tensor, logits: torch.Tensor, priors: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """SSD's multibox loss for targets ``(B, K, 5)`` (label, x1, y1, x2, y2), divided
    by the number of positive priors. No boolean indexing: a mask multiplies
    instead, so that the step never waits for the device to count."""
    batch, num_priors = logits.shape[:2]
    labels, boxes = targets[..., 0].long(), targets[..., 1:]
    iou = _iou(boxes, _corners(priors))
    best_iou, best_box = iou.max(dim=1)  # per prior: (B, P)
    # Every ground-truth box keeps its best prior, whatever the overlap.
    best_prior = iou.argmax(dim=2)  # (B, K)
    best_iou = best_iou.scatter(1, best_prior, 2.0)
    own = torch.arange(boxes.shape[1], device=boxes.device).expand(batch, -1)
    best_box = best_box.scatter(1, best_prior, own)
    positive = best_iou >= 0.5
    matched = boxes.gather(1, best_box.unsqueeze(-1).expand(-1, -1, 4))
    matched_labels = labels.gather(1, best_box) * positive  # 0 is the background

    # SSD's offset encoding with variances 0.1 (centre) and 0.2 (size).
    centre = ((matched[..., :2] + matched[..., 2:]) / 2 - priors[:, :2]) / (0.1 * priors[:, 2:])
    size = torch.log((matched[..., 2:] - matched[..., :2]).clamp(min=1e-6) / priors[:, 2:]) / 0.2
    box_error = F.smooth_l1_loss(
        locations.float(), torch.cat([centre, size], -1), reduction="none"
    ).sum(-1)
    box_loss = (box_error * positive).sum()

    class_error = F.cross_entropy(
        logits.float().flatten(0, 1), matched_labels.flatten(), reduction="none"
    ).view(batch, num_priors)
    # Hard negatives: the highest-loss background priors, three per positive.
    negatives_wanted = (3 * positive.sum(1, keepdim=True)).clamp(max=num_priors - 1)
    rank = class_error.masked_fill(positive, 0.0).argsort(1, descending=True).argsort(1)
    used = positive | (rank < negatives_wanted)
    class_loss = (class_error * used).sum()
    return (box_loss + class_loss) / positive.sum().clamp(min=1)


class DetectionWorkload(Workload):
    """Images and ``BOXES_PER_IMAGE`` random boxes with random labels per image."""

    # SSD is trained with SGD at 1e-3 (Liu et al. 2016); at the classifiers' 1e-2 the
    # box regression on random targets diverges within a few steps.
    learning_rates: ClassVar[dict[str, float]] = {"sgd": 1e-3, "adam": 1e-4}

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Images ``(B, 3, H, W)`` and targets ``(B, K, 5)``: label, x1, y1, x2, y2."""
        images = torch.randn(batch_size, *self.input_shape, device=device)
        shape = (batch_size, BOXES_PER_IMAGE)
        centres = torch.rand(*shape, 2, device=device)
        sides = 0.05 + 0.45 * torch.rand(*shape, 2, device=device)
        corners = torch.cat([centres - sides / 2, centres + sides / 2], -1).clamp(0.0, 1.0)
        labels = torch.randint(1, self.info.num_classes, shape, device=device)
        return images, torch.cat([labels.unsqueeze(-1).float(), corners], -1)

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """SSD's multibox loss of the network's predictions."""
        locations, logits, priors = model(inputs)
        return ssd_loss(locations, logits, priors, targets)
