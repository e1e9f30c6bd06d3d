"""The Flax zoo against the PyTorch one: the same parameter counts and output shapes at
the published sizes and at reduced ones, computed from the actual PyTorch models;
known answers for the pieces the Flax models add (adaptive pooling, initialisers) and
for the JAX workloads (synthetic batches, losses)."""

from __future__ import annotations

import math
from typing import Any

import pytest

jax = pytest.importorskip("jax", reason="the Flax zoo needs the jax extra")
pytest.importorskip("flax", reason="the Flax zoo needs the jax extra")

import jax.numpy as jnp  # noqa: E402 - after the skip: without JAX nothing here runs
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from dlbench.config.catalog import FRAMEWORKS, MODELS  # noqa: E402
from dlbench.models import ImageTooSmall  # noqa: E402
from dlbench.models.jax import JAX_BUILDERS, build_jax_model, jax_sample_shape  # noqa: E402
from dlbench.models.jax.layers import (  # noqa: E402
    adaptive_avg_pool,
    kaiming_fan_out,
    torch_default_kernel,
)
from dlbench.models.jax.workloads import IGNORE, make_jax_workload  # noqa: E402
from dlbench.models.pytorch.workloads import make_workload  # noqa: E402

JAX_MODELS = sorted(JAX_BUILDERS)

# (model, exp.image_size, exp.seq_len): the published size of the small models, a
# reduced size of each, and sequences longer than the language models' published
# position tables, which must then grow alike.
CASES = [
    ("toy", 0, 0),
    ("deep_mnist", 0, 0),
    ("deep_mnist", 16, 0),
    ("resnet18", 0, 0),
    ("resnet18", 40, 0),
    ("resnet50", 32, 0),
    ("alexnet", 48, 0),
    ("alexnet_owt", 64, 0),
    ("vgg16", 32, 0),
    ("bert_base", 0, 16),
    ("gpt2_small", 0, 16),
    ("gpt2_small", 0, 1100),
]
# Their position tables: max(published, exp.seq_len) rows.
POSITIONS = {"bert_base": ("position", 512), "gpt2_small": ("wpe", 1024)}


def _torch_model(model_id: str, image_size: int, seq_len: int) -> tuple[nn.Module, Any]:
    """The PyTorch model on the meta device (shapes only) and a meta batch of 2."""
    workload = make_workload(MODELS[model_id], image_size, seq_len)
    with torch.device("meta"):
        module = workload.build()
        inputs, _ = workload.synthetic_batch(2, torch.device("meta"))
    return module, inputs


def _jax_model(model_id: str, image_size: int, seq_len: int) -> tuple[Any, Any]:
    """The abstract output and variables of the Flax model for a batch of 2, from one
    trace (shapes only, no compute)."""
    workload = make_jax_workload(MODELS[model_id], image_size, seq_len)
    module = workload.build(jnp.float32)
    inputs = workload.example_inputs(2)
    return jax.eval_shape(  # type: ignore[no-any-return]
        lambda: module.init_with_output(jax.random.key(0), inputs, train=False))


def _count(tree: Any) -> int:
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(tree))


def test_the_catalog_lists_exactly_the_jax_zoo() -> None:
    assert sorted(FRAMEWORKS["jax"].models or ()) == JAX_MODELS
    assert FRAMEWORKS["jax"].data_parallel == "in_process"


def test_the_task_decides_the_workload() -> None:
    kinds = {m: type(make_jax_workload(MODELS[m])).__name__ for m in JAX_MODELS}
    assert kinds["gpt2_small"] == "JaxCausalLMWorkload"
    assert kinds["bert_base"] == "JaxMaskedLMWorkload"
    assert {kinds[m] for m in JAX_MODELS if MODELS[m].task == "classification"} == {
        "JaxWorkload"}
    with pytest.raises(KeyError, match="no JAX workload for task 'translation'"):
        make_jax_workload(MODELS["translator"])


def test_the_cases_are_jax_models() -> None:
    # Every JAX model's count is checked against PyTorch's in test_models_frameworks.py;
    # these also compare buffers and outputs, at several sizes.
    assert {case[0] for case in CASES} <= set(JAX_MODELS)


@pytest.mark.parametrize(("model_id", "image_size", "seq_len"), CASES)
def test_params_and_output_shape_are_pytorchs(model_id: str, image_size: int,
                                              seq_len: int) -> None:
    torch_module, torch_inputs = _torch_model(model_id, image_size, seq_len)
    output, variables = _jax_model(model_id, image_size, seq_len)
    count = _count(variables["params"])
    assert count == sum(p.numel() for p in torch_module.parameters())
    # Batch-norm statistics are buffers in PyTorch and a collection of their own here.
    buffers = sum(b.numel() for name, b in torch_module.named_buffers()
                  if not name.endswith("num_batches_tracked"))
    assert _count(variables.get("batch_stats", {})) == buffers
    torch_module.eval()
    assert output.shape == tuple(torch_module(torch_inputs).shape)
    table, published = POSITIONS.get(model_id, ("", 0))
    if seq_len > published:
        # Only the position table grows: seq_len rows of 768.
        rows = variables["params"][table]["embedding"].shape[0]
        assert rows == seq_len
        assert count == MODELS[model_id].reference_params + (seq_len - published) * 768
    elif MODELS[model_id].reference_params:
        # Adaptive pools keep the classifiers of the image models at every size.
        assert count == MODELS[model_id].reference_params


def test_images_are_nhwc() -> None:
    assert jax_sample_shape((3, 224, 200), is_image=True) == (224, 200, 3)
    assert jax_sample_shape((64,), is_image=False) == (64,)
    assert make_jax_workload(MODELS["resnet18"], 48).sample_shape == (48, 48, 3)


def test_unknown_model_and_small_images_are_refused() -> None:
    with pytest.raises(KeyError, match="no JAX builder for model 'dcgan'; known: "):
        build_jax_model("dcgan", (3, 64, 64), 1000, jnp.float32)
    with pytest.raises(ImageTooSmall, match=r"exp\.image_size=32 is too small for alexnet_owt"):
        build_jax_model("alexnet_owt", (3, 32, 32), 1000, jnp.float32)


@pytest.mark.parametrize(("size_in", "size_out"), [(7, 7), (9, 7), (5, 3), (13, 6), (2, 7),
                                                   (1, 6)])
def test_adaptive_pool_is_pytorchs(size_in: int, size_out: int) -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, size_in, size_in + 1)).astype(np.float32)
    expected = nn.AdaptiveAvgPool2d((size_out, size_out))(torch.from_numpy(x)).numpy()
    got = adaptive_avg_pool(jnp.asarray(x.transpose(0, 2, 3, 1)), (size_out, size_out))
    np.testing.assert_allclose(np.asarray(got).transpose(0, 3, 1, 2), expected, rtol=1e-5,
                               atol=1e-6)


def test_initialisers_are_deterministic_and_at_pytorchs_scale() -> None:
    shape = (3, 3, 64, 128)  # HWIO: fan_in 576, fan_out 1152
    first = np.asarray(torch_default_kernel(jax.random.key(1), shape))
    again = np.asarray(torch_default_kernel(jax.random.key(1), shape))
    other = np.asarray(torch_default_kernel(jax.random.key(2), shape))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    bound = 1 / math.sqrt(576)
    assert np.abs(first).max() <= bound
    assert first.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    normal = np.asarray(kaiming_fan_out(jax.random.key(3), shape))
    assert normal.std() == pytest.approx(math.sqrt(2 / 1152), rel=0.02)
    assert abs(normal.mean()) < 0.01 * normal.std() * 10


def test_classifier_batches_and_loss() -> None:
    workload = make_jax_workload(MODELS["resnet18"], 32)
    inputs, labels = workload.synthetic_batch(np.random.default_rng(0), 64)
    assert inputs.shape == (64, 32, 32, 3) and inputs.dtype == np.float32
    assert labels.min() >= 0 and labels.max() < 1000
    # Uniform logits: the loss is log(classes) whatever the labels.
    loss = jax.jit(workload.loss)(jnp.zeros((64, 1000)), labels)
    assert float(loss) == pytest.approx(math.log(1000))
    assert workload.throughput_unit() == ("images/s", 1.0)


def test_causal_lm_batches_are_shifted_streams() -> None:
    workload = make_jax_workload(MODELS["gpt2_small"], 0, 12)
    inputs, targets = workload.synthetic_batch(np.random.default_rng(0), 3)
    assert inputs.shape == targets.shape == (3, 12)
    np.testing.assert_array_equal(inputs[:, 1:], targets[:, :-1])
    assert inputs.min() >= 0 and max(inputs.max(), targets.max()) < 50257
    assert workload.throughput_unit() == ("tokens/s", 12.0)


def test_masked_lm_masks_fifteen_percent_and_ignores_the_rest() -> None:
    workload = make_jax_workload(MODELS["bert_base"], 0, 40)
    inputs, targets = workload.synthetic_batch(np.random.default_rng(0), 2)
    masked = targets != IGNORE
    assert (masked.sum(axis=1) == 6).all()  # round(0.15 * 40)
    assert (inputs[masked] == 103).all()
    assert (inputs[~masked] != 103).any()
    # The loss is over the masked positions only: make the others' logits wrong.
    logits = np.zeros((2, 40, 30522), np.float32)
    logits[~masked] = 50.0
    loss = jax.jit(workload.loss)(jnp.asarray(logits), targets)
    assert float(loss) == pytest.approx(math.log(30522))
    # A masked LM always has at least one target, even in a short sequence.
    _, short = make_jax_workload(MODELS["bert_base"], 0, 3).synthetic_batch(
        np.random.default_rng(1), 5)
    assert ((short != IGNORE).sum(axis=1) == 1).all()


def _tensor(array: Any) -> torch.Tensor:
    return torch.from_numpy(np.array(array, dtype=np.float32))


def test_basic_block_computes_what_pytorchs_does() -> None:
    # PyTorch's block with its weights copied into the Flax one, in training mode:
    # the same outputs and the same running means.
    from dlbench.models.jax.resnet import FlaxBasicBlock as FlaxBlock
    from dlbench.models.pytorch.resnet import BasicBlock, _conv1x1

    torch.manual_seed(0)
    block = BasicBlock(4, 8, stride=2, downsample=nn.Sequential(_conv1x1(4, 8, 2),
                                                                nn.BatchNorm2d(8))).train()
    x = torch.randn(3, 4, 9, 9)
    expected = block(x).detach().numpy().transpose(0, 2, 3, 1)

    flax_block = FlaxBlock(8, 2, True)
    variables = flax_block.init(jax.random.key(0), jnp.zeros((1, 9, 9, 4)))
    # Flax names its layers in the order the block makes them: the shortcut first.
    pairs = [(block.downsample[0], block.downsample[1]), (block.conv1, block.bn1),
             (block.conv2, block.bn2)]
    params: dict[str, Any] = {}
    for index, (conv, norm) in enumerate(pairs):
        params[f"Conv_{index}"] = {"kernel": conv.weight.detach().numpy().transpose(2, 3, 1, 0)}
        params[f"BatchNorm_{index}"] = {"scale": norm.weight.detach().numpy(),
                                        "bias": norm.bias.detach().numpy()}
    assert jax.tree.structure(params) == jax.tree.structure(variables["params"])
    apply = jax.jit(lambda v, x: flax_block.apply(v, x, train=True, mutable=["batch_stats"]))
    got, updates = apply({"params": params, "batch_stats": variables["batch_stats"]},
                         jnp.asarray(x.numpy().transpose(0, 2, 3, 1)))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)
    stats = updates["batch_stats"]["BatchNorm_1"]
    np.testing.assert_allclose(np.asarray(stats["mean"]), block.bn1.running_mean.numpy(),
                               rtol=1e-4, atol=1e-6)
    # Flax keeps the biased variance of the batch, PyTorch the unbiased one: n / (n - 1)
    # apart (n = 3 images of 5x5 positions), the same work either way.
    n = 3 * 5 * 5
    np.testing.assert_allclose((np.asarray(stats["var"]) - 0.9) * n / (n - 1),
                               block.bn1.running_var.numpy() - 0.9, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", ["gpt2", "bert"])
def test_transformer_blocks_compute_what_pytorchs_do(kind: str) -> None:
    from dlbench.models.jax.lm import FlaxTransformerBlock as FlaxBlock
    from dlbench.models.pytorch.lm import TransformerBlock

    gpt2 = kind == "gpt2"
    options = {"pre_norm": gpt2, "causal": gpt2, "eps": 1e-5 if gpt2 else 1e-12}
    torch.manual_seed(1)
    block = TransformerBlock(16, 2, 64, gelu="tanh" if gpt2 else "none", **options).eval()
    for norm in (block.norm1, block.norm2):  # not the identity a fresh LayerNorm is
        nn.init.normal_(norm.weight)
        nn.init.normal_(norm.bias)
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        expected = block(x).numpy()

    def linear(layer: nn.Linear) -> dict[str, Any]:
        return {"kernel": layer.weight.detach().numpy().T, "bias": layer.bias.detach().numpy()}

    def norm(layer: nn.LayerNorm) -> dict[str, Any]:
        return {"scale": layer.weight.detach().numpy(), "bias": layer.bias.detach().numpy()}

    params = {"qkv": linear(block.qkv), "attn_out": linear(block.attn_out),
              "fc1": linear(block.fc1), "fc2": linear(block.fc2),
              "norm1": norm(block.norm1), "norm2": norm(block.norm2)}
    flax_block = FlaxBlock(16, 2, 64, tanh_gelu=gpt2, **options)
    got = jax.jit(lambda p, x: flax_block.apply({"params": p}, x))(params, jnp.asarray(x.numpy()))
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5)
