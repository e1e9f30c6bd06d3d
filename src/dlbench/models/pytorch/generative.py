"""Generative models: the DCGAN and the variational auto-encoder of PyTorch's
examples, with their training workloads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from dlbench.models.pytorch.workload_base import Batch, Workload

LATENT = 100  # the DCGAN example's nz


class DCGAN(nn.Module):  # type: ignore[misc]  # torch is not type-checked
    """Generator and discriminator of PyTorch's dcgan example (Radford et al., 2015):
    64x64 images, ``nz=100``, ``ngf=ndf=64``: 3,576,704 + 2,765,568 parameters.

    The discriminator ends in a logit, not the example's sigmoid: the loss is then
    ``binary_cross_entropy_with_logits``, the same value, and safe under autocast
    (``BCELoss`` is refused there). The module's own forward is the generator.
    """

    def __init__(self, channels: int = 3, ngf: int = 64, ndf: int = 64) -> None:
        super().__init__()

        def up(cin: int, cout: int, stride: int, padding: int) -> list[nn.Module]:
            return [nn.ConvTranspose2d(cin, cout, 4, stride, padding, bias=False),
                    nn.BatchNorm2d(cout), nn.ReLU(True)]

        def down(cin: int, cout: int, norm: bool) -> list[nn.Module]:
            layers: list[nn.Module] = [nn.Conv2d(cin, cout, 4, 2, 1, bias=False)]
            if norm:
                layers.append(nn.BatchNorm2d(cout))
            return [*layers, nn.LeakyReLU(0.2, inplace=True)]

        self.generator = nn.Sequential(
            *up(LATENT, ngf * 8, 1, 0),  # 4x4
            *up(ngf * 8, ngf * 4, 2, 1),  # 8x8
            *up(ngf * 4, ngf * 2, 2, 1),  # 16x16
            *up(ngf * 2, ngf, 2, 1),  # 32x32
            nn.ConvTranspose2d(ngf, channels, 4, 2, 1, bias=False),  # 64x64
            nn.Tanh(),
        )
        self.discriminator = nn.Sequential(
            *down(channels, ndf, norm=False),  # 32x32
            *down(ndf, ndf * 2, norm=True),  # 16x16
            *down(ndf * 2, ndf * 4, norm=True),  # 8x8
            *down(ndf * 4, ndf * 8, norm=True),  # 4x4
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),  # 1x1 logit
        )
        # The example's weights_init: N(0, 0.02) convolutions, N(1, 0.02) batch-norm scales.
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
                nn.init.normal_(module.weight, 0.0, 0.02)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.normal_(module.weight, 1.0, 0.02)
                nn.init.zeros_(module.bias)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Images ``(B, C, 64, 64)`` in [-1, 1] from latents ``(B, 100, 1, 1)``."""
        return self.generator(z)


class VAE(nn.Module):  # type: ignore[misc]
    """The VAE of PyTorch's vae example (Kingma and Welling, 2013): 784-400-20 encoder,
    20-400-784 decoder, 652,824 parameters. The decoder returns logits; the example's
    sigmoid is applied by the inference phase and folded into the loss in training."""

    def __init__(self, pixels: int = 784, hidden: int = 400, latent: int = 20) -> None:
        super().__init__()
        self.fc1 = nn.Linear(pixels, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, pixels)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reconstruction logits ``(B, 784)``, mean and log-variance ``(B, 20)``."""
        hidden = F.relu(self.fc1(images.flatten(1)))
        mu, logvar = self.fc21(hidden), self.fc22(hidden)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.fc4(F.relu(self.fc3(z))), mu, logvar


def dcgan(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The DCGAN pair for images of ``input_shape == (C, 64, 64)``."""
    return DCGAN(channels=input_shape[0])


def vae(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """The VAE for images of ``input_shape`` (28x28 grey: 784 pixels)."""
    pixels = 1
    for side in input_shape:
        pixels *= side
    return VAE(pixels=pixels)


class GANWorkload(Workload):
    """One GAN step as the dcgan example takes it: a discriminator step on a real and
    a generated batch, then a generator step through the updated discriminator.
    Inputs are the latents, targets the real images; inference runs the generator."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Latents ``(B, 100, 1, 1)`` and "real" images in [-1, 1]."""
        latents = torch.randn(batch_size, LATENT, 1, 1, device=device)
        images = torch.rand(batch_size, *self.input_shape, device=device) * 2 - 1
        return latents, images

    def real_batch(self, inputs: torch.Tensor, targets: torch.Tensor) -> Batch:
        """Real images (the loader scales them to [-1, 1]) and fresh latents."""
        latents = torch.randn(inputs.shape[0], LATENT, 1, 1, device=inputs.device)
        return latents, inputs

    def training_losses(
        self, model: Any, inputs: torch.Tensor, targets: torch.Tensor
    ) -> Iterator[torch.Tensor]:
        """The discriminator's loss, then the generator's."""
        generator, discriminator = model.generator, model.discriminator
        fake = generator(inputs)
        real_label = torch.ones(inputs.shape[0], device=inputs.device)
        fake_label = torch.zeros_like(real_label)
        d_real = discriminator(targets).flatten().float()
        d_fake = discriminator(fake.detach()).flatten().float()
        yield (F.binary_cross_entropy_with_logits(d_real, real_label)
               + F.binary_cross_entropy_with_logits(d_fake, fake_label))
        # The caller has stepped the discriminator: the generator is judged by it.
        g_fake = discriminator(fake).flatten().float()
        yield F.binary_cross_entropy_with_logits(g_fake, real_label)

    def parameter_groups(self, module: nn.Module) -> list[list[nn.Parameter]]:
        """Two optimizers: the discriminator's, then the generator's."""
        return [list(module.discriminator.parameters()), list(module.generator.parameters())]

    def compile(self, module: nn.Module, mode: str) -> Any:
        """Compile each network; the step calls them, not the pair's forward."""
        module.generator = torch.compile(module.generator, mode=mode)
        module.discriminator = torch.compile(module.discriminator, mode=mode)
        return module


class VAEWorkload(Workload):
    """Reconstruction (binary cross-entropy) plus KL divergence, per sample. The
    example sums over the batch; a per-sample mean keeps the gradient's scale, and so
    the stability of a long timed run, independent of the batch size."""

    def synthetic_batch(self, batch_size: int, device: torch.device) -> Batch:
        """Images with pixels in [0, 1]; the targets are the images themselves."""
        images = torch.rand(batch_size, *self.input_shape, device=device)
        return images, images

    def infer(self, model: Any, inputs: torch.Tensor) -> Any:
        """Encode and decode: the reconstruction's pixel probabilities."""
        logits, _mu, _logvar = model(inputs)
        return torch.sigmoid(logits)

    def loss(self, model: Any, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The negative evidence lower bound, averaged over the batch."""
        logits, mu, logvar = model(inputs)
        mu, logvar = mu.float(), logvar.float()
        reconstruction = F.binary_cross_entropy_with_logits(
            logits.float(), targets.flatten(1), reduction="sum"
        )
        divergence = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return (reconstruction + divergence) / inputs.shape[0]
