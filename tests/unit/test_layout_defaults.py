"""Each framework's best layout by default: PyTorch's channels_last=auto, TensorFlow's
data_format, and the layout recorded as sys.layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlbench.config.frameworks.base import image_layout
from dlbench.config.frameworks.pytorch import use_channels_last
from dlbench.errors import ConfigError
from tests.integration.worker import plan_one

IMAGE = (3, 224, 224)
TOKENS = (128,)


@pytest.mark.parametrize(("setting", "on_cuda", "shape", "expected"), [
    ("auto", True, IMAGE, True),     # an image model on CUDA: NHWC for cuDNN
    ("auto", False, IMAGE, False),   # the CPU keeps PyTorch's default
    ("auto", True, TOKENS, False),   # no 4-D input: nothing to reorder
    (True, False, IMAGE, True),      # an explicit choice is kept
    (False, True, IMAGE, False),
])
def test_channels_last_auto(setting: bool | str, on_cuda: bool, shape: tuple[int, ...],
                            expected: bool) -> None:
    assert use_channels_last(setting, on_cuda, shape) is expected


def test_image_layout_names_the_layout_of_images_only() -> None:
    assert image_layout(IMAGE, channels_last=True) == "NHWC"
    assert image_layout(IMAGE, channels_last=False) == "NCHW"
    assert image_layout(TOKENS, channels_last=True) is None
    assert image_layout((4, 84), channels_last=False) is None


def test_plan_defaults_are_auto(tmp_path: Path) -> None:
    torch_exp = plan_one(tmp_path, "exp.framework=pytorch", "exp.model=resnet50")
    assert torch_exp["pytorch.channels_last"] == "auto"
    tf_exp = plan_one(tmp_path / "tf", "exp.framework=tensorflow", "exp.model=resnet50")
    assert tf_exp["tensorflow.data_format"] == "auto"


def test_channels_last_rejects_other_words(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"pytorch\.channels_last"):
        plan_one(tmp_path, "exp.framework=pytorch", "pytorch.channels_last=sometimes")


def test_tensorflow_data_format_offers_what_the_models_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"tensorflow\.data_format.*channels_last"):
        plan_one(tmp_path, "exp.framework=tensorflow", "tensorflow.data_format=channels_first")
