"""DLBS's image classification models beyond the core set, and today's common
references (mobilenet_v2, vit_b16).

Plain metadata (``ModelInfo``), each entry naming its builders per framework
(``built_by``); the builders live in ``dlbench.models``.

``reference_params`` is the count at the published input and 1000 classes (8192
states for the acoustic model), checked by the tests: torchvision's counts where
torchvision has the model, the common PyTorch ports' for Inception-v4 and ResNet-200,
and a layer-by-layer sum (spelled out in ``tests/unit/test_models_vision.py``) for
OverFeat, ResNet-269 and the acoustic model. ``min_image_size`` was found by running
each model at every size: one pixel less fails inside a pooling or strided layer.
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo, built_by


def _image(
    model_id: str,
    builders: dict[str, str],
    title: str,
    side: int,
    params: int,
    description: str,
    *,
    batch: int = 64,
    min_size: int | None = None,
) -> ModelInfo:
    """An ImageNet classifier: 3 channels, square input of ``side`` px, 1000 classes."""
    return ModelInfo(
        id=model_id,
        title=title,
        domain="image classification",
        input_shape=(3, side, side),
        num_classes=1000,
        default_batch=batch,
        unit="images/s",
        reference_params=params,
        min_image_size=min_size,
        description=description,
        builders=builders,
    )


def _vgg(depth: int, params: int, config: str, **others: str) -> ModelInfo:
    """VGG-``depth``, built by PyTorch's vgg module and by ``others`` (framework id ->
    path, as ``built_by`` takes them)."""
    return _image(
        f"vgg{depth}",
        built_by(pytorch=f"vgg:vgg{depth}", **others),
        f"VGG-{depth}",
        224,
        params,
        f"VGG-{depth} (configuration {config}, no batch norm), as in torchvision.",
        batch=32,
        min_size=32,  # five 2x2 max pools
    )


VISION_MODELS: tuple[ModelInfo, ...] = (
    _image(
        "alexnet_owt",
        built_by(pytorch="dlbs_classics:alexnet_owt", jax="vision:alexnet_owt",
                 tensorflow="vision:alexnet_owt"),
        "AlexNet (one weird trick)",
        224,
        61_100_840,
        "AlexNet as in Krizhevsky's 'One weird trick' paper and torchvision: "
        "64/192/384/256/256 filters, no groups or LRN.",
        min_size=63,  # its third 3x3/2 max pool needs a 3x3 input
    ),
    _image(
        "overfeat",
        built_by(pytorch="dlbs_classics:overfeat", jax="vision:overfeat",
                 tensorflow="vision:overfeat"),
        "OverFeat",
        231,
        145_920_872,
        "OverFeat's fast model as in convnet-benchmarks and DLBS: five convolutions, "
        "fc 3072, fc 4096.",
        min_size=71,  # its third 2x2 max pool needs a 2x2 input
    ),
    _image(
        "googlenet",
        built_by(pytorch="inception:googlenet", jax="inception:googlenet",
                 tensorflow="inception:googlenet"),
        "GoogLeNet",
        224,
        6_624_904,
        "GoogLeNet (Inception-v1) with batch norm, as torchvision's googlenet without "
        "its auxiliary classifiers (aux_logits=False).",
        min_size=15,  # the third 3x3/2 max pool (ceil mode) needs a 2x2 input
    ),
    _image(
        "inception3",
        built_by(pytorch="inception:inception3", jax="inception:inception3",
                 tensorflow="inception:inception3"),
        "Inception-v3",
        299,
        27_161_264,
        "Inception-v3 as in torchvision, auxiliary classifier included (it runs in "
        "training, its logits weighted 0.4 into the output).",
        min_size=75,  # Mixed_7a's 3x3/2 convolution needs a 3x3 input
    ),
    _image(
        "inception4",
        built_by(pytorch="inception4:inception4", jax="inception:inception4",
                 tensorflow="inception:inception4"),
        "Inception-v4",
        299,
        42_679_816,
        "Inception-v4 (Szegedy et al. 2016), as DLBS and the common PyTorch ports "
        "(convolution without bias, batch norm).",
        batch=32,
        min_size=75,  # reduction B's 3x3/2 convolution needs a 3x3 input
    ),
    _vgg(11, 132_863_336, "A", jax="vision:vgg11", tensorflow="vision:vgg11"),
    _vgg(13, 133_047_848, "B", jax="vision:vgg13", tensorflow="vision:vgg13"),
    _vgg(16, 138_357_544, "D", jax="vision:vgg16", tensorflow="vision:vgg16"),
    _vgg(19, 143_667_240, "E", jax="vision:vgg19", tensorflow="vision:vgg19"),
    _image(
        "resnet200",
        built_by(pytorch="resnet:resnet200", jax="resnet:resnet200", tensorflow="resnet:resnet200"),
        "ResNet-200",
        224,
        64_673_832,
        "ResNet-200: torchvision's v1.5 bottleneck, stages of 3, 24, 36, 3 blocks.",
        batch=32,
    ),
    _image(
        "resnet269",
        built_by(pytorch="resnet:resnet269", jax="resnet:resnet269", tensorflow="resnet:resnet269"),
        "ResNet-269",
        224,
        102_073_384,
        "ResNet-269: torchvision's v1.5 bottleneck, stages of 3, 30, 48, 8 blocks.",
        batch=32,
    ),
    _image(
        "mobilenet_v2",
        built_by(pytorch="mobile:mobilenet_v2", jax="mobile:mobilenet_v2",
                 tensorflow="mobile:mobilenet_v2"),
        "MobileNetV2",
        224,
        3_504_872,
        "MobileNetV2 (width 1.0), as in torchvision.",
    ),
    _image(
        "vit_b16",
        built_by(pytorch="vit:vit_b16", jax="vit:vit_b16", tensorflow="vit:vit_b16"),
        "ViT-B/16",
        224,
        86_567_656,
        "Vision Transformer ViT-B/16 as torchvision's vit_b_16; at other image sizes "
        "the learned 14x14 position embedding is resized bilinearly.",
        batch=32,
        min_size=16,  # one 16x16 patch
    ),
    ModelInfo(
        id="acoustic_model",
        builders=built_by(pytorch="dlbs_classics:acoustic_model", jax="vision:acoustic_model",
                          tensorflow="vision:acoustic_model"),
        title="Acoustic model",
        domain="speech",
        input_shape=(540,),
        num_classes=8192,
        default_batch=64,
        is_image=False,
        reference_params=34_678_784,
        description=(
            "DLBS's speech acoustic model: fully connected, 540 input features, five "
            "hidden layers of 2048 with ReLU, 8192 output states."
        ),
    ),
)
