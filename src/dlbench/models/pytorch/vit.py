"""Vision Transformer ViT-B/16 (Dosovitskiy et al., 2020) as torchvision's ``vit_b_16``.

16x16 patches embedded by a strided convolution to 768 channels, a class token, a
learned position embedding for the 14x14 grid of a 224 px image (plus the class
token), 12 pre-norm encoder blocks (12 heads, MLP 3072, GELU), a final layer norm and
a linear head on the class token: 86,567,656 parameters at 1000 classes.

Other image sizes keep the parameters: the position embedding is resized bilinearly
from the 14x14 grid to the image's grid at forward time, as fine-tuning at a new
resolution does. An image must hold at least one patch (16 px).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

_PATCH = 16
_TRAINED_SIZE = 224  # the position embedding's grid is this size over the patch


class MLPBlock(nn.Sequential):  # type: ignore[misc]  # torch is not type-checked
    """Linear, GELU, dropout, linear, dropout; torchvision's initialisation."""

    def __init__(self, dim: int, hidden: int, dropout: float) -> None:
        super().__init__(
            nn.Linear(dim, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, dim),
            nn.Dropout(dropout),
        )
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.normal_(module.bias, std=1e-6)


class EncoderBlock(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Pre-norm transformer block: x + attention(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, dim: int, heads: int, mlp_dim: int, dropout: float) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = MLPBlock(dim, mlp_dim, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Same shape as ``x``: ``(N, tokens, dim)``."""
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)
        x = x + self.dropout(y)
        return x + self.mlp(self.ln_2(x))


class VisionTransformer(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Patch embedding, class token, position embedding, encoder, head on the class token."""

    def __init__(
        self,
        in_channels: int = 3,
        num_classes: int = 1000,
        dim: int = 768,
        layers: int = 12,
        heads: int = 12,
        mlp_dim: int = 3072,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.grid = _TRAINED_SIZE // _PATCH
        self.conv_proj = nn.Conv2d(in_channels, dim, kernel_size=_PATCH, stride=_PATCH)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embedding = nn.Parameter(torch.empty(1, self.grid**2 + 1, dim))
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential(
            *(EncoderBlock(dim, heads, mlp_dim, dropout) for _ in range(layers))
        )
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)

        # torchvision's initialisation, the zero head included.
        fan_in = in_channels * _PATCH * _PATCH
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        nn.init.normal_(self.pos_embedding, std=0.02)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def position_embedding(self, grid_h: int, grid_w: int) -> torch.Tensor:
        """The learned embedding ``(1, 1 + grid_h * grid_w, dim)`` for a grid of patches.

        The 14x14 part is interpolated bilinearly to other grids, so that any image
        size runs with the same parameters; the class token's entry is kept as is.
        """
        if (grid_h, grid_w) == (self.grid, self.grid):
            return self.pos_embedding
        cls_pos, patch_pos = self.pos_embedding[:, :1], self.pos_embedding[:, 1:]
        dim = patch_pos.shape[-1]
        patch_pos = patch_pos.reshape(1, self.grid, self.grid, dim).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(
            patch_pos, size=(grid_h, grid_w), mode="bilinear", align_corners=False
        )
        patch_pos = patch_pos.permute(0, 2, 3, 1).reshape(1, grid_h * grid_w, dim)
        return torch.cat([cls_pos, patch_pos], dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` for images ``(N, C, H, W)``, H and W >= 16.

        Pixels beyond the last whole patch are ignored, as a stride-16 convolution does.
        """
        x = self.conv_proj(x)  # (N, dim, H/16, W/16)
        grid_h, grid_w = x.shape[-2:]
        x = x.flatten(2).transpose(1, 2)  # (N, tokens, dim)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.dropout(x + self.position_embedding(grid_h, grid_w))
        x = self.ln(self.layers(x))
        return self.head(x[:, 0])


def vit_b16(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ViT-B/16: 86,567,656 parameters at 3 channels and 1000 classes, at any image size."""
    channels, _height, _width = input_shape
    return VisionTransformer(channels, num_classes)
