"""Held-out data for ``exp.phase=train_to_accuracy``: a training and a validation set.

Two sources, one code path (both become a pair of ``torch.utils.data`` data sets):

- ``exp.data_dir``: a folder of class sub-folders of images, read as the real-data
  loader reads them (:class:`dlbench.backends.pytorch.data.ImageFolder`: decoded, resized to
  the model's input side, scaled to [-1, 1]);
- otherwise ``exp.dataset=digits``: scikit-learn's handwritten digits (1,797 images of
  8x8 pixels, 16 grey levels, shipped with scikit-learn: nothing is downloaded), scaled
  to [-1, 1] and, when the model's input side is not 8, resized with bilinear
  interpolation (never padded: a digit fills its image as in MNIST); a model with
  three input channels gets the grey level in each.

The split is a permutation seeded by ``pytorch.seed``: ``exp.val_fraction`` of the
samples are held out and never trained on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset

from dlbench.backends.pytorch.data import ImageFolder
from dlbench.config.modelinfo import ModelInfo

__all__ = ["Split", "digits_tensors", "load_split"]


@dataclass
class Split:
    """The training and validation sets, and how they were made (for the record)."""

    train: Dataset[Any]
    val: Dataset[Any]
    description: str

    def loaders(self, batch: int, seed: int) -> tuple[DataLoader[Any], DataLoader[Any]]:
        """A shuffled (seeded) training loader and an ordered validation loader."""
        generator = torch.Generator().manual_seed(seed)
        return (DataLoader(self.train, batch_size=batch, shuffle=True, generator=generator),
                DataLoader(self.val, batch_size=max(batch, 256)))


def digits_tensors(input_shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor, str]:
    """scikit-learn's digits as images of ``input_shape`` (C, H, W) in [-1, 1], their
    labels, and how they were shaped."""
    # Imported here: only this phase needs scikit-learn (it has no type information).
    from sklearn.datasets import load_digits  # type: ignore[import-untyped]

    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 8.0 - 1.0
    channels, height, width = input_shape
    how = "8x8, 16 grey levels scaled to [-1, 1]"
    if (height, width) != (8, 8):
        images = torch.nn.functional.interpolate(
            images, size=(height, width), mode="bilinear", align_corners=False)
        how += f", resized bilinearly to {height}x{width}"
    if channels != 1:
        images = images.expand(-1, channels, -1, -1).contiguous()
        how += f", grey repeated in {channels} channels"
    return images, torch.tensor(digits.target, dtype=torch.long), how


def load_split(params: Mapping[str, Any], info: ModelInfo,
               input_shape: tuple[int, ...]) -> Split:
    """The experiment's training and validation sets (see the module's docstring)."""
    data_dir = str(params.get("exp.data_dir", ""))
    dataset: Dataset[Any]
    if data_dir:
        dataset = ImageFolder(Path(data_dir), input_shape[-1], input_shape[0],
                              info.num_classes)
        size = len(dataset)
        what = f"image folder {data_dir} ({size} images, resized to {input_shape[-1]} px)"
    else:
        images, labels, how = digits_tensors(input_shape)
        dataset = TensorDataset(images, labels)
        size = len(labels)
        what = f"scikit-learn digits ({size} images, {how})"
    held_out = max(1, round(size * float(params["exp.val_fraction"])))
    if held_out >= size:
        raise ValueError(f"exp.val_fraction leaves no training data in {size} samples")
    order = torch.randperm(size, generator=torch.Generator().manual_seed(
        int(params.get("pytorch.seed", 0)))).tolist()
    return Split(Subset(dataset, order[held_out:]), Subset(dataset, order[:held_out]),
                 f"{what}; {size - held_out} train / {held_out} validation")
