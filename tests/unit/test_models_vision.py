"""The vision zoo (and DLBS's acoustic model): parameter counts against published or
hand-derived figures, smallest image sizes, forward and backward at small sizes.

Counts and shapes are checked on the ``meta`` device (no storage, no arithmetic), so
only the forward/backward tests pay for real computation, at the smallest practical
image sizes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from dlbench.config.catalog import MODELS, model_input_shape
from dlbench.config.zoo.vision import VISION_MODELS
from dlbench.models import build_pytorch_model
from dlbench.models.pytorch import PYTORCH_BUILDERS
from dlbench.models.pytorch.inception import InceptionAux
from dlbench.models.pytorch.vit import VisionTransformer
from tests.unit.gradients import assert_finite_gradients
from tests.unit.meta_models import build_on_meta, count_params

VISION_IDS = [info.id for info in VISION_MODELS]

# Parameter counts at the published input and 1000 classes (8192 for acoustic_model).
# Sources: torchvision's model docs (vgg*, alexnet_owt = torchvision alexnet, googlenet
# with aux_logits=False, inception3 = inception_v3 with its auxiliary head,
# mobilenet_v2, vit_b16 = vit_b_16); resnet200 as tf-slim's resnet_v1_200 and
# pytorchcv list it; inception4 as Cadene's pretrainedmodels, imgclsmob and keras-hub
# state it. The rest are derived layer by layer below.
PUBLISHED = {
    "alexnet_owt": 61_100_840,
    "googlenet": 6_624_904,
    "inception3": 27_161_264,
    "inception4": 42_679_816,
    "vgg11": 132_863_336,
    "vgg13": 133_047_848,
    "vgg16": 138_357_544,
    "vgg19": 143_667_240,
    "resnet200": 64_673_832,
    "mobilenet_v2": 3_504_872,
    "vit_b16": 86_567_656,
}
HAND_DERIVED = {
    "overfeat": 145_920_872,
    "resnet269": 102_073_384,
    "acoustic_model": 34_678_784,
}

# Smallest image side each model computes; one pixel less fails in torch.
MIN_SIZES = {
    "alexnet_owt": 63,
    "overfeat": 71,
    "googlenet": 15,
    "inception3": 75,
    "inception4": 75,
    "vgg11": 32,
    "vgg13": 32,
    "vgg16": 32,
    "vgg19": 32,
    "vit_b16": 16,
}

# The cheapest size and batch that train: the minimum where there is one, else 32 px
# (ViT: a 2x2 grid, so the position embedding is resized). Batch norm needs two values
# per channel in training, hence batch 2 where the last feature map is 1x1; the big
# models without batch norm run one image.
BATCH_ONE = {"vgg19", "vit_b16"}


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Run on one thread: at these sizes a second one buys nothing, and when other
    processes share the cores, threads that spin-wait for each other make a step
    tens of times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def small_size(model_id: str) -> int:
    return MIN_SIZES.get(model_id, 32)


def test_vision_models_are_in_the_catalog_with_builders() -> None:
    assert set(VISION_IDS) == set(PUBLISHED) | set(HAND_DERIVED)
    for model_id in VISION_IDS:
        assert MODELS[model_id] is VISION_MODELS[VISION_IDS.index(model_id)]
        assert model_id in PYTORCH_BUILDERS


def test_catalog_metadata() -> None:
    shapes = {"overfeat": (3, 231, 231), "inception3": (3, 299, 299)}
    shapes |= {"inception4": (3, 299, 299), "acoustic_model": (540,)}
    for info in VISION_MODELS:
        assert info.input_shape == shapes.get(info.id, (3, 224, 224)), info.id
        assert info.min_image_size == MIN_SIZES.get(info.id), info.id
        assert info.is_image == (info.id != "acoustic_model"), info.id
        if info.is_image:
            assert (info.domain, info.num_classes, info.unit) == (
                "image classification",
                1000,
                "images/s",
            )
    acoustic = MODELS["acoustic_model"]
    assert (acoustic.domain, acoustic.num_classes) == ("speech", 8192)


@pytest.mark.parametrize("model_id", VISION_IDS)
def test_param_count(model_id: str) -> None:
    expected = (PUBLISHED | HAND_DERIVED)[model_id]
    assert MODELS[model_id].reference_params == expected
    assert count_params(build_on_meta(model_id)) == expected


def test_overfeat_count_by_hand() -> None:
    # weights (out * in * k * k) + biases; 231 px gives a 6x6x1024 grid before fc6
    conv1 = 96 * 3 * 11 * 11 + 96  # 34,944
    conv2 = 256 * 96 * 5 * 5 + 256  # 614,656
    conv3 = 512 * 256 * 3 * 3 + 512  # 1,180,160
    conv4 = 1024 * 512 * 3 * 3 + 1024  # 4,719,616
    conv5 = 1024 * 1024 * 3 * 3 + 1024  # 9,438,208
    fc6 = 1024 * 6 * 6 * 3072 + 3072  # 113,249,280
    fc7 = 3072 * 4096 + 4096  # 12,587,008
    fc8 = 4096 * 1000 + 1000  # 4,097,000
    assert conv1 + conv2 + conv3 + conv4 + conv5 + fc6 + fc7 + fc8 == HAND_DERIVED["overfeat"]


def test_acoustic_model_count_by_hand() -> None:
    hidden = (540 * 2048 + 2048) + 4 * (2048 * 2048 + 2048)  # five fc 2048
    assert hidden + (2048 * 8192 + 8192) == HAND_DERIVED["acoustic_model"]


def bottleneck_resnet_params(layers: tuple[int, int, int, int], classes: int = 1000) -> int:
    """Parameters of a torchvision bottleneck ResNet: convolutions without bias, two
    per batch norm, a 1x1 projection (and its norm) on each stage's first block."""
    total = 64 * 3 * 7 * 7 + 2 * 64  # stem
    in_ch = 64
    for planes, blocks in zip((64, 128, 256, 512), layers, strict=True):
        out = 4 * planes
        for index in range(blocks):
            total += in_ch * planes + 2 * planes  # 1x1 reduce
            total += planes * planes * 9 + 2 * planes  # 3x3
            total += planes * out + 2 * out  # 1x1 expand
            if index == 0:
                total += in_ch * out + 2 * out  # projection shortcut
            in_ch = out
    return total + 2048 * classes + classes


def test_resnet_counts_by_hand() -> None:
    # The formula reproduces torchvision's published counts, then gives ResNet-269's.
    assert bottleneck_resnet_params((3, 4, 6, 3)) == 25_557_032
    assert bottleneck_resnet_params((3, 8, 36, 3)) == 60_192_808
    assert bottleneck_resnet_params((3, 24, 36, 3)) == PUBLISHED["resnet200"]
    assert bottleneck_resnet_params((3, 30, 48, 8)) == HAND_DERIVED["resnet269"]


def unit(in_ch: int, out_ch: int, kh: int, kw: int) -> int:
    """A convolution without bias and its batch norm (scale and shift)."""
    return in_ch * out_ch * kh * kw + 2 * out_ch


def test_inception4_count_by_hand() -> None:
    # The paper's figures 3-9; pools have no parameters.
    stem = unit(3, 32, 3, 3) + unit(32, 32, 3, 3) + unit(32, 64, 3, 3) + unit(64, 96, 3, 3)
    stem += unit(160, 64, 1, 1) + unit(64, 96, 3, 3)
    stem += unit(160, 64, 1, 1) + unit(64, 64, 1, 7) + unit(64, 64, 7, 1) + unit(64, 96, 3, 3)
    stem += unit(192, 192, 3, 3)
    block_a = 2 * unit(384, 96, 1, 1) + 2 * unit(384, 64, 1, 1)
    block_a += 2 * unit(64, 96, 3, 3) + unit(96, 96, 3, 3)
    reduction_a = unit(384, 384, 3, 3)
    reduction_a += unit(384, 192, 1, 1) + unit(192, 224, 3, 3) + unit(224, 256, 3, 3)
    block_b = unit(1024, 384, 1, 1) + 2 * unit(1024, 192, 1, 1) + unit(1024, 128, 1, 1)
    block_b += unit(192, 224, 1, 7) + unit(224, 256, 7, 1)
    block_b += unit(192, 192, 7, 1) + unit(192, 224, 1, 7)
    block_b += unit(224, 224, 7, 1) + unit(224, 256, 1, 7)
    reduction_b = unit(1024, 192, 1, 1) + unit(192, 192, 3, 3)
    reduction_b += unit(1024, 256, 1, 1) + unit(256, 256, 1, 7)
    reduction_b += unit(256, 320, 7, 1) + unit(320, 320, 3, 3)
    block_c = 2 * unit(1536, 256, 1, 1) + 2 * unit(1536, 384, 1, 1)
    block_c += 2 * unit(384, 256, 1, 3)
    block_c += unit(384, 448, 3, 1) + unit(448, 512, 1, 3) + 2 * unit(512, 256, 1, 3)
    fc = 1536 * 1000 + 1000
    total = stem + 4 * block_a + reduction_a + 7 * block_b + reduction_b + 3 * block_c + fc
    assert total == PUBLISHED["inception4"]


def test_vit_b16_count_by_hand() -> None:
    dim, mlp = 768, 3072
    embedding = (dim * 3 * 16 * 16 + dim) + dim + (14 * 14 + 1) * dim  # patches, cls, pos
    attention = 4 * (dim * dim + dim)  # q, k, v and output projections
    block = 2 * 2 * dim + attention + (dim * mlp + mlp) + (mlp * dim + dim)
    total = embedding + 12 * block + 2 * dim + (dim * 1000 + 1000)
    assert total == PUBLISHED["vit_b16"]


def test_vgg_counts_by_hand() -> None:
    configs = {
        "vgg11": [64, 128, 256, 256, 512, 512, 512, 512],
        "vgg13": [64, 64, 128, 128, 256, 256, 512, 512, 512, 512],
        "vgg16": [64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512],
        "vgg19": [64, 64, 128, 128, *[256] * 4, *[512] * 8],
    }
    classifier = (512 * 7 * 7 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000)
    for model_id, channels in configs.items():
        ins = [3, *channels[:-1]]
        convs = sum(i * o * 9 + o for i, o in zip(ins, channels, strict=True))
        assert convs + classifier == PUBLISHED[model_id], model_id


def test_inception3_auxiliary_head_is_torchvisions() -> None:
    model = build_on_meta("inception3")
    # torchvision's inception_v3(aux_logits=False) has 23,834,568 parameters.
    assert count_params(model) - count_params(model.aux_logits) == 23_834_568


@pytest.mark.parametrize("model_id", [m for m in VISION_IDS if MODELS[m].is_image])
def test_param_count_does_not_depend_on_image_size(model_id: str) -> None:
    published = count_params(build_on_meta(model_id))
    for size in (small_size(model_id), 300):
        assert count_params(build_on_meta(model_id, size)) == published


@pytest.mark.parametrize("model_id", sorted(MIN_SIZES))
def test_minimum_image_size_is_exact_on_meta(model_id: str) -> None:
    # Shapes propagate on the meta device without arithmetic, in training mode too
    # (Inception-v3's auxiliary head then runs).
    minimum = MIN_SIZES[model_id]
    with torch.device("meta"):
        model = PYTORCH_BUILDERS[model_id]((3, minimum, minimum), 10).train()
        assert model(torch.empty(2, 3, minimum, minimum)).shape == (2, 10)
        with pytest.raises(RuntimeError):
            model(torch.empty(2, 3, minimum - 1, minimum - 1))


@pytest.mark.parametrize(
    ("model_id", "grid"),
    [("alexnet_owt", 6), ("overfeat", 6), ("vgg16", 7), ("vgg19", 7)],
)
def test_adaptive_pool_is_identity_at_published_size(model_id: str, grid: int) -> None:
    model = build_on_meta(model_id)
    shape = MODELS[model_id].input_shape
    with torch.device("meta"):
        out = model.features(torch.empty(1, *shape))
    assert out.shape[-2:] == (grid, grid)


@pytest.mark.parametrize("model_id", VISION_IDS)
def test_forward_and_backward_at_small_size(model_id: str) -> None:
    torch.manual_seed(0)
    info = MODELS[model_id]
    shape = model_input_shape(info, small_size(model_id))
    batch = 1 if model_id in BATCH_ONE else 2
    model = build_pytorch_model(model_id, shape, info.num_classes).train()

    logits = model(torch.randn(batch, *shape))
    assert logits.shape == (batch, info.num_classes)
    assert torch.isfinite(logits).all()

    loss = nn.functional.cross_entropy(logits, torch.randint(0, info.num_classes, (batch,)))
    loss.backward()
    assert_finite_gradients(model)


def test_inception3_runs_its_auxiliary_head_only_in_training() -> None:
    calls: list[int] = []
    with torch.device("meta"):
        model = build_pytorch_model("inception3", (3, 75, 75), 10)
        model.aux_logits.register_forward_hook(lambda *_: calls.append(1))
        model.train()(torch.empty(2, 3, 75, 75))
        assert calls == [1]
        model.eval()(torch.empty(2, 3, 75, 75))
        assert calls == [1]


@pytest.mark.parametrize("side", [17, 23, 3])
def test_inception3_auxiliary_head_at_any_grid(side: int) -> None:
    # torchvision's 5x5/3 pool from 17x17 up; an adaptive 5x5 pool below.
    with torch.device("meta"):
        head = InceptionAux(768, 10)
        assert head(torch.empty(2, 768, side, side)).shape == (2, 10)


def test_vit_resizes_its_position_embedding() -> None:
    torch.manual_seed(0)
    # A narrow ViT of the same class: the same code path at a fraction of the cost.
    model = VisionTransformer(3, 10, dim=32, layers=1, heads=2, mlp_dim=64)
    assert model.position_embedding(14, 14) is model.pos_embedding
    resized = model.position_embedding(2, 3)
    assert resized.shape == (1, 1 + 2 * 3, 32)
    assert torch.equal(resized[:, 0], model.pos_embedding[:, 0])  # the class token's
    assert model(torch.randn(2, 3, 32, 48)).shape == (2, 10)  # non-square: 2x3 patches
    assert model(torch.randn(2, 3, 320, 320)).shape == (2, 10)  # larger: 20x20 patches
