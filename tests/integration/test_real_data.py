"""Real data: a generated JPEG folder and text file through the DataLoader."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image

from dlbench.backends.pytorch.data import TokenWindows, make_loader, real_batches, text_tokens
from dlbench.config import load_spec, plan_experiments
from dlbench.config.catalog import MODELS, model_input_shape
from dlbench.errors import ConfigError


def make_jpeg_folder(root: Path, classes: int = 3, per_class: int = 4) -> Path:
    """Class sub-folders of small JPEGs of different sizes and colours."""
    for c in range(classes):
        folder = root / f"class{c}"
        folder.mkdir(parents=True)
        for i in range(per_class):
            size = (20 + 7 * i, 16 + 5 * c)
            Image.new("RGB", size, (40 * c, 60 * i % 256, 128)).save(folder / f"{i}.jpg")
    (root / "class0" / "notes.txt").write_text("not an image")
    return root


def params(data_dir: Path, batch: int = 5, workers: int = 0) -> dict[str, object]:
    return {"exp.data_dir": str(data_dir), "exp.data_workers": workers,
            "exp.replica_batch": batch}


@pytest.mark.parametrize("workers", [0, 1])
def test_image_batches_are_decoded_resized_and_labelled(tmp_path: Path, workers: int) -> None:
    root = make_jpeg_folder(tmp_path / "images")
    info = MODELS["resnet18"]
    shape = model_input_shape(info, 32)
    batches = real_batches(params(root, batch=5, workers=workers), info, shape,
                           torch.device("cpu"))
    for _ in range(4):  # 12 images, batch 5: sampling with replacement never runs dry
        images, labels = next(batches)
        assert images.shape == (5, 3, 32, 32) and images.dtype == torch.float32
        assert images.min() >= -1.0 and images.max() <= 1.0
        assert labels.dtype == torch.long and set(labels.tolist()) <= {0, 1, 2}


def test_grey_images_for_a_one_channel_model(tmp_path: Path) -> None:
    root = make_jpeg_folder(tmp_path / "images")
    info = MODELS["deep_mnist"]
    loader = make_loader(params(root, batch=2), info, model_input_shape(info, 0), pin=False)
    images, _ = next(iter(loader))
    assert images.shape == (2, 1, 28, 28)


def test_text_windows_are_next_token_pairs(tmp_path: Path) -> None:
    text = tmp_path / "corpus.txt"
    text.write_text("the cat sat on the mat and the dog sat on the log " * 3)
    tokens = text_tokens(text, vocab_size=50)
    assert int(tokens.max()) < 50 and len(tokens) == 39
    # the same word always gets the same id
    assert tokens[0] == tokens[4]
    windows = TokenWindows(tokens, seq_len=8)
    for index in (0, 20, 38):  # the last start wraps around the end of the text
        x, y = windows[index]
        assert x.shape == y.shape == (8,)
        assert torch.equal(x[1:], y[:-1])


def test_text_shorter_than_a_window_still_feeds(tmp_path: Path) -> None:
    windows = TokenWindows(torch.arange(5), seq_len=12)
    x, y = windows[3]
    assert x.shape == (12,) and torch.equal(x[1:], y[:-1])


def plan(*flags: str) -> list[dict[str, object]]:
    return plan_experiments(load_spec(params=list(flags)))


def test_plan_checks_the_data_dir(tmp_path: Path) -> None:
    root = make_jpeg_folder(tmp_path / "images")
    assert plan("exp.model=resnet18", f"exp.data_dir={root}")[0]["exp.data_dir"] == str(root)
    empty = tmp_path / "empty"
    (empty / "a").mkdir(parents=True)
    cases = [
        (["exp.model=resnet18", f"exp.data_dir={tmp_path / 'nowhere'}"], "no such folder"),
        (["exp.model=resnet18", f"exp.data_dir={empty}"], "no images"),
        (["exp.model=toy", f"exp.data_dir={root}"], "synthetic data only"),
    ]
    for flags, expected in cases:
        with pytest.raises(ConfigError, match=expected) as error:
            plan(*flags)
        assert "exp.data_dir=" in str(error.value) and "(from -P flag)" in str(error.value)
