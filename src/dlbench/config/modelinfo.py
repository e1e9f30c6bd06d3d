"""The metadata of a model, as plain data (see ``dlbench.config.catalog``)."""

from __future__ import annotations

from dataclasses import dataclass, field

#: File name endings read as images from exp.data_dir.
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp"})


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
    # What exp.data_dir may hold for this model: "images" (class sub-folders of
    # images), "text" (a text file), or "" for synthetic data only. Image
    # classification models read images without saying so (see real_data_kind).
    real_data: str = ""
    # What one step of training does with the model (see dlbench.models.pytorch.workloads):
    # "classification" (cross-entropy on labels) unless the model says otherwise.
    task: str = "classification"
    # Published sequence length (tokens, time steps, environment steps of a rollout) of
    # the models exp.seq_len resizes; a model whose input is that sequence declares
    # input_shape == (seq_len,). None: exp.seq_len does not apply.
    seq_len: int | None = None
    # Token ids of language models are below this (real text is hashed into it).
    vocab_size: int | None = None

    @property
    def real_data_kind(self) -> str:
        """``images``, ``text``, or ``""`` when the model reads synthetic data only."""
        if self.real_data:
            return self.real_data
        return "images" if self.domain in ("image classification", "input pipeline") else ""
