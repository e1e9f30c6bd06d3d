"""The core models: the test models and DLBS's first image models.

Plain metadata (``ModelInfo``), each entry naming its builders per framework
(``built_by``); the builders live in ``dlbench.models``. The vision zoo and the
multi-domain suite live beside this file, one module each (``dlbench.config.zoo``
gathers them).
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo, built_by

#: The models of the core: tests and DLBS's first image models.
CORE_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(
        id="toy",
        builders=built_by(pytorch="simple:toy", jax="simple:toy", tensorflow="vision:toy"),
        title="Toy MLP",
        domain="test",
        input_shape=(64,),
        num_classes=10,
        default_batch=32,
        is_image=False,
        description="Two-layer perceptron on 64 features; milliseconds per step, for tests.",
    ),
    ModelInfo(
        id="deep_mnist",
        builders=built_by(pytorch="simple:deep_mnist", jax="simple:deep_mnist",
                          tensorflow="vision:deep_mnist"),
        title="DeepMNIST",
        domain="image classification",
        unit="images/s",
        input_shape=(1, 28, 28),
        num_classes=10,
        default_batch=64,
        reference_params=3_274_634,
        min_image_size=4,  # two 2x2 max pools
        description="TensorFlow's 'Deep MNIST' CNN: two 5x5 conv+pool blocks, fc 1024, fc 10.",
    ),
    ModelInfo(
        id="alexnet",
        builders=built_by(pytorch="alexnet:alexnet", jax="vision:alexnet",
                          tensorflow="vision:alexnet"),
        title="AlexNet",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 227, 227),
        num_classes=1000,
        default_batch=64,
        reference_params=60_965_224,
        # the last 3x3/2 pool (ceil mode) needs 2 pixels, which conv1 11x11/4 and the
        # two pools before it leave from 39 px up
        min_image_size=39,
        description="AlexNet as in Caffe's bvlc_alexnet: grouped convolutions and LRN.",
    ),
    ModelInfo(
        id="resnet18",
        builders=built_by(pytorch="resnet:resnet18", jax="resnet:resnet18",
                          tensorflow="resnet:resnet18"),
        title="ResNet-18",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=11_689_512,
        description="ResNet-18 (basic blocks), as in torchvision.",
    ),
    ModelInfo(
        id="resnet34",
        builders=built_by(pytorch="resnet:resnet34", jax="resnet:resnet34",
                          tensorflow="resnet:resnet34"),
        title="ResNet-34",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=21_797_672,
        description="ResNet-34 (basic blocks), as in torchvision.",
    ),
    ModelInfo(
        id="resnet50",
        builders=built_by(pytorch="resnet:resnet50", jax="resnet:resnet50",
                          tensorflow="resnet:resnet50"),
        title="ResNet-50",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=25_557_032,
        description="ResNet-50 v1.5 (stride in the 3x3 convolution), as in torchvision.",
    ),
    ModelInfo(
        id="resnet101",
        builders=built_by(pytorch="resnet:resnet101", jax="resnet:resnet101",
                          tensorflow="resnet:resnet101"),
        title="ResNet-101",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=44_549_160,
        description="ResNet-101 v1.5, as in torchvision.",
    ),
    ModelInfo(
        id="resnet152",
        builders=built_by(pytorch="resnet:resnet152", jax="resnet:resnet152",
                          tensorflow="resnet:resnet152"),
        title="ResNet-152",
        domain="image classification",
        unit="images/s",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        reference_params=60_192_808,
        description="ResNet-152 v1.5, as in torchvision.",
    ),
)
