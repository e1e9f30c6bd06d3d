"""One model id, one architecture: every model that several frameworks define has the
same parameter count in each (PyTorch, TensorFlow, JAX), the published one where the
catalog has it; and DLBS's suite plans in all three frameworks.

Counted from shapes alone, at the smallest input each model accepts: PyTorch on the
``meta`` device, JAX by ``jax.eval_shape`` of ``init``, Keras inside a
``StatelessScope``, where variables keep their shapes and defer their values. FLOPs
need no such test: they are counted once from the architecture
(``dlbench.models.flops``), the same number whatever framework runs the model.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from dlbench.cli.main import main
from dlbench.config.catalog import MODELS, model_frameworks
from dlbench.suites import suite_path

tf = pytest.importorskip("tensorflow", reason="exp.framework=tensorflow needs tensorflow")
keras = pytest.importorskip("keras", reason="exp.framework=tensorflow needs keras")
jax = pytest.importorskip("jax", reason="exp.framework=jax needs jax")
torch = pytest.importorskip("torch", reason="the reference definitions are PyTorch's")

import jax.numpy as jnp  # noqa: E402 - after the skips

from dlbench.models.jax.workloads import make_jax_workload  # noqa: E402
from dlbench.models.pytorch.workloads import make_workload as make_torch_workload  # noqa: E402
from dlbench.models.tensorflow.workloads import make_workload as make_tf_workload  # noqa: E402

FRAMEWORKS = ("pytorch", "tensorflow", "jax")
#: Every model at least two of them define.
SHARED = [m for m in MODELS if len(set(model_frameworks(m)) & set(FRAMEWORKS)) >= 2]
#: Those that take over a second (hundreds of layers to trace in Keras and Flax).
SLOW = {"resnet101", "resnet152", "resnet200", "resnet269", "googlenet", "inception3",
        "inception4"}
SEQ_LEN = 8  # tokens of the language models: the position tables do not change


def _sizes(model_id: str) -> tuple[int, int]:
    """``exp.image_size`` and ``exp.seq_len`` of the cheapest run of ``model_id``."""
    info = MODELS[model_id]
    image_size = (info.min_image_size or 32) if info.is_image else 0
    return image_size, SEQ_LEN if info.seq_len else 0


def _count(shapes: Any) -> int:
    return sum(math.prod(shape) for shape in shapes)


def _pytorch_params(model_id: str) -> int:
    workload = make_torch_workload(MODELS[model_id], *_sizes(model_id))
    with torch.device("meta"):
        module = workload.build()
    return _count(p.shape for p in module.parameters())


def _tensorflow_params(model_id: str) -> int:
    workload = make_tf_workload(MODELS[model_id], *_sizes(model_id))
    try:
        with keras.StatelessScope(initialize_variables=False):  # shapes, no values
            model = workload.build()
            return _count(tuple(v.shape) for v in model.trainable_weights)
    finally:
        keras.backend.clear_session()


def _jax_params(model_id: str) -> int:
    workload = make_jax_workload(MODELS[model_id], *_sizes(model_id))
    module = workload.build(jnp.float32)
    inputs = workload.example_inputs(2)
    variables = jax.eval_shape(lambda: module.init(jax.random.key(0), inputs, train=False))
    return _count(leaf.shape for leaf in jax.tree.leaves(variables["params"]))


COUNTERS = {"pytorch": _pytorch_params, "tensorflow": _tensorflow_params, "jax": _jax_params}


@pytest.mark.parametrize("model_id", [
    pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in SHARED])
def test_every_framework_counts_the_same_parameters(model_id: str) -> None:
    counts = {fw: COUNTERS[fw](model_id)
              for fw in FRAMEWORKS if fw in model_frameworks(model_id)}
    assert len(set(counts.values())) == 1, counts
    published = MODELS[model_id].reference_params
    if published and MODELS[model_id].is_image:  # at any size: adaptive pools
        assert counts["pytorch"] == published


def _dlbs_models() -> list[str]:
    return list(yaml.safe_load(suite_path("dlbs").read_text())["variables"]["exp.model"])


def test_the_shared_models_include_dlbs_and_the_slow_list_is_real() -> None:
    assert set(SHARED) >= SLOW
    assert {"alexnet", "resnet269", "vgg19", "acoustic_model", "deep_mnist"} <= set(SHARED)


def test_every_dlbs_model_is_defined_in_every_framework() -> None:
    models = _dlbs_models()
    missing = {m: sorted(set(FRAMEWORKS) - set(model_frameworks(m))) for m in models}
    assert {m: fws for m, fws in missing.items() if fws} == {}


def test_the_dlbs_suite_plans_in_three_frameworks(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    models = _dlbs_models()
    code = main(["plan", "--suite", "dlbs", "-V", "exp.framework=[pytorch, tensorflow, jax]",
                 "--out", str(tmp_path / "plan")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{3 * len(models)} experiments" in out


# --- the layers the Keras and Flax zoos add, against PyTorch's -------------------------

def _images(channels: int = 6, side: int = 8) -> Any:
    """A batch of 2 NCHW images of ReLU outputs (the pools' inputs), as NumPy."""
    rng = torch.Generator().manual_seed(0)
    return torch.relu(torch.randn(2, channels, side, side + 1, generator=rng)).numpy()


def _nhwc(x: Any) -> Any:
    return x.transpose(0, 2, 3, 1)


@pytest.mark.parametrize(("window", "stride", "padding", "ceil"),
                         [(3, 2, 0, True), (2, 2, 0, True), (3, 1, 1, True), (3, 2, 1, False)])
def test_max_pools_are_pytorchs(window: int, stride: int, padding: int, ceil: bool) -> None:
    from dlbench.models.jax.layers import max_pool
    from dlbench.models.tensorflow.layers import pool

    images = _images()
    expected = _nhwc(torch.nn.MaxPool2d(window, stride, padding, ceil_mode=ceil)(
        torch.from_numpy(images)).numpy())
    got_jax = max_pool(jnp.asarray(_nhwc(images)), window, stride, padding, ceil=ceil)
    np.testing.assert_array_equal(np.asarray(got_jax), expected)
    inputs = keras.Input(_nhwc(images).shape[1:])
    model = keras.Model(inputs, pool(inputs, "max", window, stride, padding, ceil=ceil))
    np.testing.assert_array_equal(model(_nhwc(images)).numpy(), expected)


@pytest.mark.parametrize("count_pad", [True, False])
def test_average_pools_are_pytorchs(count_pad: bool) -> None:
    from dlbench.models.jax.layers import avg_pool
    from dlbench.models.tensorflow.layers import pool

    images = _images()
    expected = _nhwc(torch.nn.AvgPool2d(3, 1, 1, count_include_pad=count_pad)(
        torch.from_numpy(images)).numpy())
    got_jax = avg_pool(jnp.asarray(_nhwc(images)), 3, 1, 1, count_pad=count_pad)
    np.testing.assert_allclose(np.asarray(got_jax), expected, rtol=1e-6, atol=1e-6)
    inputs = keras.Input(_nhwc(images).shape[1:])
    model = keras.Model(inputs, pool(inputs, "avg", 3, 1, 1, count_pad=count_pad))
    np.testing.assert_allclose(model(_nhwc(images)).numpy(), expected, rtol=1e-6, atol=1e-6)


def test_an_average_without_padding_is_only_same_at_stride_one() -> None:
    from dlbench.models.tensorflow.layers import pool

    with pytest.raises(ValueError, match="only 'same' at stride 1"):
        pool(keras.Input((8, 8, 3)), "avg", 3, 2, 1, count_pad=False)


def test_local_response_norm_is_pytorchs() -> None:
    from dlbench.models.jax.layers import local_response_norm as jax_lrn
    from dlbench.models.tensorflow.layers import local_response_norm as tf_lrn

    # Large values, so that the denominator is far from 1 and the window matters.
    images = 30 * _images(channels=9)
    expected = _nhwc(torch.nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0)(
        torch.from_numpy(images)).numpy())
    np.testing.assert_allclose(np.asarray(jax_lrn(jnp.asarray(_nhwc(images)))), expected,
                               rtol=1e-5)
    np.testing.assert_allclose(tf_lrn()(_nhwc(images)).numpy(), expected, rtol=1e-5)


def test_vit_positions_are_resized_as_pytorch_does() -> None:
    from dlbench.models.jax.vit import _positions
    from dlbench.models.pytorch.vit import VisionTransformer
    from dlbench.models.tensorflow.vit import ClassTokenAndPositions

    reference = VisionTransformer(layers=0)  # the position table is all that matters
    expected = reference.position_embedding(5, 3).detach().numpy()
    table = reference.pos_embedding.detach().numpy()
    np.testing.assert_allclose(np.asarray(_positions(jnp.asarray(table), 5, 3)), expected,
                               rtol=1e-5, atol=1e-6)
    layer = ClassTokenAndPositions(14, 768)
    layer.positions.assign(table)
    tokens = layer(np.zeros((1, 5, 3, 768), np.float32)).numpy()  # class token zero
    np.testing.assert_allclose(tokens, expected, rtol=1e-5, atol=1e-6)
