"""The Keras zoo against the PyTorch one: for every model TensorFlow defines, the same
trainable parameters, output shape and FLOPs as the PyTorch model at the same
(reduced) size; the pieces that make that true (PyTorch's adaptive pooling, the FLOP
count of a graph); the masked-LM batch and loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="exp.framework=tensorflow needs tensorflow")
keras = pytest.importorskip("keras", reason="exp.framework=tensorflow needs keras")

import torch  # noqa: E402 - after the skip: without TensorFlow nothing here runs
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from dlbench.config.catalog import FRAMEWORKS, MODELS  # noqa: E402
from dlbench.models import ImageTooSmall, build_pytorch_model  # noqa: E402
from dlbench.models.pytorch.flops import flop_formulas  # noqa: E402
from dlbench.models.tensorflow import TENSORFLOW_BUILDERS, build_tensorflow_model  # noqa: E402
from dlbench.models.tensorflow.flops import graph_flops  # noqa: E402
from dlbench.models.tensorflow.layers import AdaptiveAvgPool, nhwc  # noqa: E402
from dlbench.models.tensorflow.workloads import KerasMaskedLMWorkload, make_workload  # noqa: E402

# Small sizes that still exercise what differs from the published size: deep_mnist's
# adaptive pool stretches 5x5 to 7x7, vgg16's 1x1 to 7x7; the language models keep
# their position tables (512, 1024) at 16 tokens.
# Run end to end here (forward, graph FLOPs); every TensorFlow model's parameter count
# is checked against the other frameworks' in test_models_frameworks.py.
SMALL = {"deep_mnist": (20, 0), "alexnet_owt": (64, 0), "vgg16": (32, 0),
         "resnet18": (32, 0), "resnet50": (32, 0), "bert_base": (0, 16), "gpt2_small": (0, 16),
         "toy": (0, 0)}
TENSORFLOW_MODELS = list(FRAMEWORKS["tensorflow"].models or ())


def test_the_task_decides_the_workload() -> None:
    kinds = {m: type(make_workload(MODELS[m])).__name__ for m in TENSORFLOW_MODELS}
    assert kinds["gpt2_small"] == "KerasCausalLMWorkload"
    assert kinds["bert_base"] == "KerasMaskedLMWorkload"
    assert {kinds[m] for m in TENSORFLOW_MODELS if MODELS[m].task == "classification"} == {
        "KerasWorkload"}
    with pytest.raises(KeyError, match="no TensorFlow workload for task 'gan'"):
        make_workload(MODELS["dcgan"])


def _torch_reference(model_id: str, shape: tuple[int, ...]) -> tuple[int, tuple[int, ...], int]:
    """Parameters, output shape and inference FLOPs of the PyTorch model for two samples,
    on the meta device (shapes only, no storage)."""
    info = MODELS[model_id]
    with torch.device("meta"):
        model = build_pytorch_model(model_id, shape, info.num_classes).eval()
        inputs = (torch.zeros(2, *shape, dtype=torch.long) if info.seq_len
                  else torch.zeros(2, *shape))
        with FlopCounterMode(display=False, custom_mapping=flop_formulas()) as counter:
            out = model(inputs)
    params = sum(p.numel() for p in model.parameters())
    return params, tuple(out.shape), counter.get_total_flops()


def _trainable(model: Any) -> int:
    return sum(int(np.prod(v.shape)) for v in model.trainable_weights)


def test_tensorflow_defines_exactly_the_catalog_models() -> None:
    assert set(TENSORFLOW_BUILDERS) == set(TENSORFLOW_MODELS) >= set(SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("model_id", sorted(SMALL))
def test_model_matches_pytorch(model_id: str) -> None:
    image_size, seq_len = SMALL[model_id]
    workload = make_workload(MODELS[model_id], image_size, seq_len)
    shape = workload.input_shape
    params, out_shape, flops = _torch_reference(model_id, shape)

    keras.utils.set_random_seed(0)
    model = workload.build()
    assert _trainable(model) == params
    inputs, _ = workload.synthetic_batch(2)
    assert tuple(inputs.shape) == (2, *nhwc(shape))
    forward = tf.function(lambda x: model(x, training=False), autograph=False)
    out = forward(inputs)
    assert tuple(out.shape) == out_shape
    assert bool(tf.reduce_all(tf.math.is_finite(out)))
    # Matrix products and convolutions, counted as PyTorch's FlopCounterMode counts them.
    assert graph_flops(forward.get_concrete_function(inputs).graph) == flops
    keras.backend.clear_session()


def test_batch_norm_statistics_are_not_trainable() -> None:
    model = build_tensorflow_model("resnet18", (3, 32, 32), 10)
    moving = [v for v in model.non_trainable_weights if "moving" in v.path]
    # Twenty batch norms (stem, 16 in the blocks, 3 shortcuts), a mean and a variance
    # each: PyTorch's buffers.
    assert len(moving) == len(model.non_trainable_weights) == 40
    assert _trainable(model) == 11_689_512 - 1000 * 512 - 1000 + 10 * 512 + 10


def test_too_small_an_image_is_refused() -> None:
    with pytest.raises(ImageTooSmall, match=r"exp\.image_size=62"):
        build_tensorflow_model("alexnet_owt", (3, 62, 62), 10)


def test_unknown_model_raises_key_error() -> None:
    with pytest.raises(KeyError, match="no TensorFlow builder for model 'dcgan'"):
        build_tensorflow_model("dcgan", (3, 64, 64), 1000)


@pytest.mark.parametrize(("size", "out"), [(5, 7), (13, 6), (1, 7), (9, 3), (7, 7)])
def test_adaptive_pool_has_pytorch_windows(size: int, out: int) -> None:
    images = np.random.default_rng(0).normal(size=(2, 3, size, size + 2)).astype(np.float32)
    expected = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(images), (out, out))
    pooled = AdaptiveAvgPool(out, out)(tf.transpose(images, (0, 2, 3, 1)))
    np.testing.assert_allclose(
        tf.transpose(pooled, (0, 3, 1, 2)).numpy(), expected.numpy(), rtol=1e-5, atol=1e-6
    )


def test_graph_flops_counts_products_and_convolutions_only() -> None:
    kernel = tf.Variable(tf.ones((3, 3, 4, 8)))
    weights = tf.Variable(tf.ones((8, 5)))

    def step(images: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            x = tf.nn.relu(tf.nn.conv2d(images, kernel, 1, "SAME"))  # 2 x 6 x 6 x 8
            x = tf.reduce_mean(x, axis=(1, 2))  # not counted
            x = tf.matmul(x, weights, transpose_b=False)  # 2 x 5
            y = tf.einsum("bi,bj->ij", x, x)  # 5 x 5 over b: 2 * 2*5*5
            loss = tf.reduce_sum(y)
        grads = tape.gradient(loss, [kernel, weights])
        return loss + sum(tf.reduce_sum(g) for g in grads)

    graph = tf.function(step, autograph=False).get_concrete_function(
        tf.TensorSpec((2, 6, 6, 4))).graph
    conv = 2 * (2 * 6 * 6 * 8) * (3 * 3 * 4)
    matmul = 2 * 2 * 5 * 8
    einsum = 2 * 2 * 5 * 5
    # Backward: the einsum's two operand gradients, the matmul's input and weight
    # gradients, the convolution's filter gradient; not the input gradient of the
    # convolution, which nothing uses.
    assert graph_flops(graph) == 2 * conv + 3 * matmul + 3 * einsum


def test_graph_flops_counts_a_depthwise_convolution_as_pytorch_does() -> None:
    kernel = tf.Variable(tf.ones((3, 3, 4, 1)))  # one 3x3 filter per channel

    def step(images: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            tape.watch(images)
            loss = tf.reduce_sum(tf.nn.depthwise_conv2d(images, kernel, [1, 1, 1, 1], "SAME"))
        image_grad, kernel_grad = tape.gradient(loss, [images, kernel])
        return loss + tf.reduce_sum(image_grad) + tf.reduce_sum(kernel_grad)

    graph = tf.function(step, autograph=False).get_concrete_function(
        tf.TensorSpec((2, 6, 6, 4))).graph
    # Each output (2 x 6 x 6 x 4) reads 3 x 3 pixels of its own channel, as PyTorch
    # counts Conv2d(groups=4); forward, input gradient and filter gradient alike.
    assert graph_flops(graph) == 3 * 2 * (2 * 6 * 6 * 4) * 9


def test_graph_flops_is_none_for_unknown_shapes() -> None:
    graph = tf.function(lambda a: tf.matmul(a, a), autograph=False).get_concrete_function(
        tf.TensorSpec((None, None))).graph
    assert graph_flops(graph) is None


def test_masked_lm_batch_masks_fifteen_percent() -> None:
    workload = make_workload(MODELS["bert_base"], 0, 20)
    assert isinstance(workload, KerasMaskedLMWorkload)
    inputs, targets = workload.synthetic_batch(4)
    masked = (targets >= 0).numpy()
    assert masked.sum(axis=1).tolist() == [3, 3, 3, 3]  # round(0.15 * 20)
    assert (inputs.numpy()[masked] == KerasMaskedLMWorkload.MASK_ID).all()
    assert (targets.numpy()[~masked] == -1).all()
    assert workload.throughput_unit() == ("tokens/s", 20.0)


def test_masked_lm_loss_counts_masked_positions_only() -> None:
    workload = make_workload(MODELS["bert_base"], 0, 2)
    logits = tf.constant([[[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]]])  # (1, T=2, vocab=3)
    targets = tf.constant([[-1, 0]])
    expected = -np.log(np.exp(5.0) / (np.exp(5.0) + 2.0))
    assert float(workload.loss(logits, targets)) == pytest.approx(expected, rel=1e-6)


def test_causal_lm_batch_is_the_stream_shifted_by_one() -> None:
    inputs, targets = make_workload(MODELS["gpt2_small"], 0, 8).synthetic_batch(3)
    assert inputs.shape == targets.shape == (3, 8)
    np.testing.assert_array_equal(inputs.numpy()[:, 1:], targets.numpy()[:, :-1])
    assert int(tf.reduce_max(inputs)) < 50257
