"""Real data for the PyTorch backend: a folder of JPEGs, or a text file.

Synthetic data (the default) takes the input pipeline out of the measurement; real
data puts it back: with ``exp.data_dir`` set, every step waits for its batch from a
``torch.utils.data.DataLoader`` whose ``exp.data_workers`` processes decode and resize
images with Pillow, or cut token windows from a text file. The ``loader`` model times
that pipeline alone, as Mila's suite did.

Nothing is downloaded: the data is whatever the user points at.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, RandomSampler

from dlbench.config.modelinfo import IMAGE_SUFFIXES, ModelInfo

#: Samples drawn per pass of the sampler; the iterator starts a new pass when one ends.
_SAMPLES_PER_PASS = 1 << 20


def image_files(root: Path) -> tuple[list[str], list[tuple[Path, int]]]:
    """The class names (sub-folders, sorted) and every image file with its class index."""
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    files = [
        (path, index)
        for index, name in enumerate(classes)
        for path in sorted((root / name).iterdir())
        if path.suffix.lower() in IMAGE_SUFFIXES
    ]
    return classes, files


# torch is not type-checked here (follow_imports=skip), so Dataset is Any to mypy.
class ImageFolder(Dataset[tuple[torch.Tensor, int]]):  # type: ignore[misc]
    """Class sub-folders of images, decoded and resized to ``size`` x ``size``."""

    def __init__(self, root: Path, size: int, channels: int, num_classes: int) -> None:
        _, self.files = image_files(root)
        self.size = size
        self.mode = "L" if channels == 1 else "RGB"
        self.num_classes = num_classes

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self.files[index]
        with Image.open(path) as image:
            pixels = image.convert(self.mode).resize(
                (self.size, self.size), Image.Resampling.BILINEAR
            )
            array = np.asarray(pixels, dtype=np.uint8)
        if array.ndim == 2:
            array = array[:, :, None]
        # Scaled to [-1, 1]; a real pipeline's normalisation costs the same.
        tensor = torch.from_numpy(array.copy()).permute(2, 0, 1).float().div_(127.5).sub_(1.0)
        return tensor, label % self.num_classes


def text_tokens(path: Path, vocab_size: int) -> torch.Tensor:
    """Word tokens of a text file as ids below ``vocab_size`` (CRC-32 of each word),
    so any text feeds any language model without a tokenizer download."""
    words = path.read_text(encoding="utf-8", errors="replace").split()
    return torch.tensor([zlib.crc32(w.encode()) % vocab_size for w in words], dtype=torch.long)


class TokenWindows(Dataset[tuple[torch.Tensor, torch.Tensor]]):  # type: ignore[misc]
    """Windows of ``seq_len`` tokens and the same window shifted by one (next-token
    targets), starting at every position of the text (which wraps around)."""

    def __init__(self, tokens: torch.Tensor, seq_len: int) -> None:
        repeats = (seq_len + 1) // max(len(tokens), 1) + 2
        self.tokens = tokens.repeat(repeats) if len(tokens) <= seq_len + 1 else tokens
        self.seq_len = seq_len
        self.starts = max(len(tokens), 1)

    def __len__(self) -> int:
        return self.starts

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        window = self.tokens[index:index + self.seq_len + 1]
        if len(window) < self.seq_len + 1:  # wrap around the end of the text
            window = torch.cat([window, self.tokens[: self.seq_len + 1 - len(window)]])
        return window[:-1], window[1:]


def _forever(loader: DataLoader[Any]) -> Iterator[Any]:
    while True:
        yield from loader


def make_loader(
    params: Mapping[str, Any], info: ModelInfo, input_shape: tuple[int, ...], pin: bool
) -> DataLoader[Any]:
    """The DataLoader of ``params['exp.data_dir']`` for model ``info``.

    Batches are sampled with replacement, so a folder smaller than a batch still
    feeds any batch size, and an epoch boundary never stalls the timed loop.
    """
    source = Path(str(params["exp.data_dir"]))
    dataset: Dataset[Any]
    if source.is_dir():
        dataset = ImageFolder(source, input_shape[-1], input_shape[0], info.num_classes)
    else:
        vocab = getattr(info, "vocab_size", None) or info.num_classes
        dataset = TokenWindows(text_tokens(source, int(vocab)), input_shape[0])
    workers = int(params["exp.data_workers"])
    batch = int(params["exp.replica_batch"])
    sampler = RandomSampler(dataset, replacement=True, num_samples=_SAMPLES_PER_PASS)
    return DataLoader(
        dataset,
        batch_size=batch,
        sampler=sampler,
        num_workers=workers,
        pin_memory=pin,
        drop_last=True,
        persistent_workers=workers > 0,
        prefetch_factor=2 if workers > 0 else None,
    )


def real_batches(
    params: Mapping[str, Any], info: ModelInfo, input_shape: tuple[int, ...], device: torch.device
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless iterator of ``(inputs, targets)`` from ``exp.data_dir``, on ``device``:
    images ``(B, C, H, W)`` with labels ``(B,)``, or tokens ``(B, T)`` with next-token
    targets ``(B, T)``."""
    loader = make_loader(params, info, input_shape, pin=device.type == "cuda")
    for inputs, targets in _forever(loader):
        yield (inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True))
