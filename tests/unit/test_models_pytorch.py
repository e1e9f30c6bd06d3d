"""The PyTorch model zoo: exact parameter counts, forward and backward at small sizes."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from dlbench.config.catalog import MODELS, model_frameworks, model_input_shape
from dlbench.config.zoo.core import CORE_MODELS
from dlbench.models import MIN_IMAGE_SIZE, ImageTooSmall, build_pytorch_model
from dlbench.models.pytorch import PYTORCH_BUILDERS
from tests.unit.gradients import assert_finite_gradients
from tests.unit.meta_models import build_on_meta, count_params

# The core models; the vision zoo and the domain models have test files of their own.
PYTORCH_MODELS = [info.id for info in CORE_MODELS if "pytorch" in model_frameworks(info.id)]
IMAGE_MODELS = [model_id for model_id in PYTORCH_MODELS if MODELS[model_id].is_image]

# Small enough for a fast CPU test, large enough to be a size the brief supports.
SMALL_IMAGE_SIZE = {"deep_mnist": 28, "alexnet": 64}  # resnets: 32 px


def test_every_catalog_model_has_a_builder() -> None:
    assert set(PYTORCH_MODELS) <= set(PYTORCH_BUILDERS)


@pytest.mark.parametrize(
    "model_id", [m for m in PYTORCH_MODELS if MODELS[m].reference_params is not None]
)
def test_param_count_matches_catalog_reference(model_id: str) -> None:
    assert count_params(build_on_meta(model_id)) == MODELS[model_id].reference_params


def test_alexnet_param_count_is_caffe_bvlc_alexnet() -> None:
    # weights (out * in/groups * k * k) + biases, layer by layer, 3x227x227, 1000 classes
    conv1 = 96 * 3 * 11 * 11 + 96  # 34,944
    conv2 = 256 * (96 // 2) * 5 * 5 + 256  # 307,456 (2 groups)
    conv3 = 384 * 256 * 3 * 3 + 384  # 885,120
    conv4 = 384 * (384 // 2) * 3 * 3 + 384  # 663,936 (2 groups)
    conv5 = 256 * (384 // 2) * 3 * 3 + 256  # 442,624 (2 groups)
    fc6 = 256 * 6 * 6 * 4096 + 4096  # 37,752,832
    fc7 = 4096 * 4096 + 4096  # 16,781,312
    fc8 = 4096 * 1000 + 1000  # 4,097,000
    expected = conv1 + conv2 + conv3 + conv4 + conv5 + fc6 + fc7 + fc8
    assert expected == 60_965_224
    assert count_params(build_on_meta("alexnet")) == expected


def test_toy_param_count() -> None:
    assert count_params(build_on_meta("toy")) == (64 * 128 + 128) + (128 * 10 + 10)


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [("resnet34", 21_797_672), ("resnet101", 44_549_160), ("resnet152", 60_192_808)],
)
def test_deeper_resnets_match_torchvision_counts(model_id: str, expected: int) -> None:
    with torch.device("meta"):
        model = build_pytorch_model(model_id, (3, 224, 224), 1000)
    assert count_params(model) == expected


@pytest.mark.parametrize("model_id", IMAGE_MODELS)
def test_param_count_does_not_depend_on_image_size(model_id: str) -> None:
    published = count_params(build_on_meta(model_id))
    assert count_params(build_on_meta(model_id, SMALL_IMAGE_SIZE.get(model_id, 32))) == published
    assert count_params(build_on_meta(model_id, 300)) == published


@pytest.mark.parametrize("model_id", PYTORCH_MODELS)
def test_forward_and_backward_at_small_size(model_id: str) -> None:
    torch.manual_seed(0)
    info = MODELS[model_id]
    shape = model_input_shape(info, SMALL_IMAGE_SIZE.get(model_id, 32))
    model = build_pytorch_model(model_id, shape, info.num_classes)
    model.train()

    logits = model(torch.randn(2, *shape))
    assert logits.shape == (2, info.num_classes)
    assert torch.isfinite(logits).all()

    loss = nn.functional.cross_entropy(logits, torch.randint(0, info.num_classes, (2,)))
    loss.backward()
    assert_finite_gradients(model)


@pytest.mark.parametrize(
    ("model_id", "channels", "size", "side"),
    [("deep_mnist", 1, 28, 7), ("alexnet", 3, 227, 6)],
)
def test_adaptive_pool_is_identity_at_published_size(
    model_id: str, channels: int, size: int, side: int
) -> None:
    # At the published size the convolutions already give the classifier's grid, so
    # the adaptive pool added for other sizes changes nothing.
    model = build_pytorch_model(model_id, (channels, size, size), 10).eval()
    # AlexNet names its convolutions; deep_mnist is a Sequential whose first six
    # layers are the two conv/ReLU/pool blocks.
    features = model.features if model_id == "alexnet" else model[:6]
    with torch.no_grad():
        out = features(torch.randn(1, channels, size, size))
    assert out.shape[-2:] == (side, side)


@pytest.mark.parametrize("model_id", sorted(set(MIN_IMAGE_SIZE) & set(PYTORCH_MODELS)))
def test_minimum_image_size_is_exact(model_id: str) -> None:
    info = MODELS[model_id]
    minimum = MIN_IMAGE_SIZE[model_id]
    model = build_pytorch_model(model_id, model_input_shape(info, minimum), 10).eval()
    with torch.no_grad():
        assert model(torch.randn(1, *model_input_shape(info, minimum))).shape == (1, 10)
        # One pixel less fails inside torch, which is why the builder refuses it.
        with pytest.raises(RuntimeError):
            model(torch.randn(1, *model_input_shape(info, minimum - 1)))
    with pytest.raises(ImageTooSmall, match=r"exp\.image_size"):
        build_pytorch_model(model_id, model_input_shape(info, minimum - 1), 10)


def test_resnet_initialisation_follows_torchvision() -> None:
    torch.manual_seed(0)
    model = build_pytorch_model("resnet18", (3, 32, 32), 10)
    assert torch.equal(model.bn1.weight, torch.ones(64))
    assert torch.equal(model.bn1.bias, torch.zeros(64))
    # kaiming normal, fan_out: std = sqrt(2 / (out_channels * k * k))
    weight = model.layer4[0].conv1.weight  # 512 x 256 x 3 x 3: plenty of samples
    expected_std = (2.0 / (512 * 3 * 3)) ** 0.5
    assert abs(weight.std().item() / expected_std - 1) < 0.02


def test_resnet50_strides_in_the_3x3_convolution() -> None:
    with torch.device("meta"):
        model = build_pytorch_model("resnet50", (3, 224, 224), 1000)
    block = model.layer2[0]
    assert block.conv1.stride == (1, 1)
    assert block.conv2.stride == (2, 2)
    assert block.downsample[0].stride == (2, 2)


def test_unknown_model_raises_key_error() -> None:
    with pytest.raises(KeyError, match="no_such_model"):
        build_pytorch_model("no_such_model", (3, 32, 32), 10)


def test_importing_models_does_not_import_torch() -> None:
    code = "import dlbench.models, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
