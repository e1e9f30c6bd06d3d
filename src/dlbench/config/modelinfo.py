"""The metadata of a model, as plain data (see ``dlbench.config.catalog``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelInfo:
    """A model's metadata; the same id means the same architecture in every framework."""

    id: str
    title: str
    domain: str
    input_shape: tuple[int, ...]  # one sample, channels first for images: (C, H, W)
    num_classes: int
    default_batch: int
    unit: str = "samples/s"
    frameworks: tuple[str, ...] = ("pytorch",)
    is_image: bool = True  # exp.image_size rescales the last two input dimensions
    reference_params: int | None = None  # published parameter count, checked by the tests
    # Smallest image side the architecture computes (below it a pooling window is
    # larger than its input); None when any size works (resnets reach 1x1 and stay).
    min_image_size: int | None = None
    description: str = ""
    tags: tuple[str, ...] = field(default=())
