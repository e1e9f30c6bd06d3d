"""Image-to-image models: ESPCN super-resolution and the fast neural style transfer
network, from PyTorch's super_resolution and fast_neural_style examples."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.models.pytorch.workload_base import Batch, Workload

UPSCALE = 3  # the super-resolution factor of the espcn entry


class ESPCN(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Efficient sub-pixel CNN (Shi et al., 2016), as the example's ``Net``: four
    convolutions on the low-resolution luminance, then a pixel shuffle; 59,657
    parameters at x3. Orthogonal initialisation, as the example (hence Mila's note
    that PyTorch needs LAPACK: it is a QR decomposition)."""

    def __init__(self, upscale: int = UPSCALE, channels: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 64, 5, 1, 2)
        self.conv2 = nn.Conv2d(64, 64, 3, 1, 1)
        self.conv3 = nn.Conv2d(64, 32, 3, 1, 1)
        self.conv4 = nn.Conv2d(32, channels * upscale**2, 3, 1, 1)
        self.shuffle = nn.PixelShuffle(upscale)
        gain = nn.init.calculate_gain("relu")
        for conv in (self.conv1, self.conv2, self.conv3):
            nn.init.orthogonal_(conv.weight, gain)
        nn.init.orthogonal_(self.conv4.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, h, w)`` → ``(B, C, 3h, 3w)``."""
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        return self.shuffle(self.conv4(x))


class _Conv(nn.Sequential):  # type: ignore[misc]
    """Reflection padding then a convolution (the example's ``ConvLayer``), with an
    optional nearest-neighbour upsampling first (``UpsampleConvLayer``)."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, upsample: int = 1) -> None:
        layers: list[nn.Module] = [nn.Upsample(scale_factor=upsample)] if upsample > 1 else []
        super().__init__(*layers, nn.ReflectionPad2d(kernel // 2),
                         nn.Conv2d(cin, cout, kernel, stride))


class _Residual(nn.Module):  # type: ignore[misc]
    """Two 3x3 convolutions with instance norm and a shortcut."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            _Conv(channels, channels, 3, 1), nn.InstanceNorm2d(channels, affine=True),
            nn.ReLU(),
            _Conv(channels, channels, 3, 1), nn.InstanceNorm2d(channels, affine=True),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Same shape out as in."""
        return x + self.body(x)


class TransformerNet(nn.Module):  # type: ignore[misc]
    """Johnson et al. (2016)'s image transformation network as in the example: three
    convolutions down (9x9, then two stride-2 3x3), five residual blocks, two
    upsampling convolutions and a 9x9 convolution out; 1,679,235 parameters."""

    def __init__(self) -> None:
        super().__init__()

        def conv(cin: int, cout: int, kernel: int, stride: int = 1, up: int = 1) -> list[Any]:
            return [_Conv(cin, cout, kernel, stride, up), nn.InstanceNorm2d(cout, affine=True),
                    nn.ReLU()]

        self.net = nn.Sequential(
            *conv(3, 32, 9), *conv(32, 64, 3, 2), *conv(64, 128, 3, 2),
            *(_Residual(128) for _ in range(5)),
            *conv(128, 64, 3, up=2), *conv(64, 32, 3, up=2),
            _Conv(32, 3, 9, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Stylised images ``(B, 3, H', W')``; ``H' = H`` when ``H`` is a multiple of 4."""
        return self.net(x)


def espcn(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """ESPCN x3 for low-resolution inputs of ``input_shape == (C, h, w)``."""
    return ESPCN(channels=input_shape[0])


def fast_style(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The style transfer network (fully convolutional: any image size from 5 px)."""
    return TransformerNet()


class SuperResolutionWorkload(Workload):
    """Low-resolution inputs ``(B, 1, h, w)``, high-resolution targets ``(B, 1, 3h, 3w)``,
    mean squared error, as the example trains it."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Random low- and high-resolution luminance in [0, 1]."""
        channels, height, width = self.input_shape
        low = torch.rand(batch_size, channels, height, width, device=device)
        high = torch.rand(batch_size, channels, height * UPSCALE, width * UPSCALE, device=device)
        return low, high

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Pixel-wise mean squared error."""
        return F.mse_loss(model(inputs).float(), targets)


class StyleTransferWorkload(Workload):
    """Content images in, a stylised image out, mean squared error to a target image.

    A simplification, on purpose: the example's perceptual loss runs VGG-16 on the
    output, the content and the style image (content and Gram-matrix style losses),
    which would make this a VGG benchmark. What is timed here is the transformation
    network's forward and backward alone.
    """

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Content images and target images, both ``(B, 3, H, W)`` in [0, 1]."""
        content = torch.rand(batch_size, *self.input_shape, device=device)
        target = torch.rand(batch_size, *self.input_shape, device=device)
        return content, target

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean squared error to the target; for sides that are not multiples of 4 the
        network's output is larger, and is cropped to the target."""
        height, width = targets.shape[-2:]
        return F.mse_loss(model(inputs)[..., :height, :width].float(), targets)
