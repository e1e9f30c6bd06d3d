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
