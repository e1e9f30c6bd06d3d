"""Adding a model, as docs/extending.md walks through it: a builder module and one
registration (its catalog entry, naming its builder per framework); the model is
then listed, planned and run by the worker, and gone once unregistered."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.config.catalog import FRAMEWORKS, MODELS, ModelInfo, add_model, model_frameworks
from dlbench.config.frameworks import DECLARATIONS
from dlbench.config.registry import REGISTRY, register_model, unregister_model
from dlbench.config.spec import load_spec
from dlbench.config.validate import plan_experiments
from dlbench.errors import ConfigError
from dlbench.models import ImageTooSmall, check_input_shape, model_builder

# The builder module docs/extending.md shows, written by the test where Python finds it.
TWO_LAYER = '''
"""A two-layer perceptron: the model docs/extending.md adds."""

from torch import nn


def two_layer(input_shape, num_classes):
    (features,) = input_shape
    return nn.Sequential(nn.Linear(features, 16), nn.ReLU(), nn.Linear(16, num_classes))
'''

TWO_LAYER_INFO = ModelInfo(
    id="two_layer",
    title="Two-layer MLP",
    domain="test",
    input_shape=(8,),
    num_classes=3,
    default_batch=4,
    is_image=False,
    description="Linear 8-16, ReLU, linear 16-3.",
    builders={"pytorch": "mymodels.two_layer:two_layer"},
)


@pytest.fixture
def two_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelInfo]:
    (tmp_path / "mymodels").mkdir()
    (tmp_path / "mymodels" / "__init__.py").write_text("")
    (tmp_path / "mymodels" / "two_layer.py").write_text(textwrap.dedent(TWO_LAYER))
    monkeypatch.syspath_prepend(str(tmp_path))
    register_model(TWO_LAYER_INFO)
    try:
        yield TWO_LAYER_INFO
    finally:
        unregister_model(TWO_LAYER_INFO.id)
        for name in ("mymodels.two_layer", "mymodels"):
            sys.modules.pop(name, None)


def _plan(out: Path, *params: str) -> int:
    return main(["plan", "-P", "exp.framework=pytorch", "-P", "exp.model=two_layer",
                 "--out", str(out), *params])


def test_a_registered_model_is_listed_planned_and_run(
    two_layer: ModelInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["help", "--models"]) == 0
    [row] = [line.split() for line in capsys.readouterr().out.splitlines()
             if line.startswith("two_layer ")]
    assert row[:5] == ["two_layer", "Two-layer", "MLP", "test", "8"]
    # no line in config/model_sizes.py (a cache): its sizes are shown as unknown
    assert row[-2:] == ["-", "-"]
    assert model_frameworks("two_layer") == ["pytorch", "fake"]  # fake runs every model

    assert _plan(tmp_path / "run", "-V", "exp.replica_batch=[2,4]", "--format", "json") == 0
    planned = capsys.readouterr().out
    assert '"exp.model_title": "Two-layer MLP"' in planned
    assert planned.count('"exp.model": "two_layer"') == 2

    pytest.importorskip("torch")
    # Imported here: the worker side imports torch, which the plan above never needs.
    from tests.integration.worker import ok, plan_one, run_in_process

    experiment = plan_one(tmp_path / "worker", "exp.framework=pytorch", "exp.model=two_layer",
                          "exp.replica_batch=2", "exp.num_warmup_batches=0",
                          "exp.num_batches=1", "monitor.enabled=false")
    record = ok(run_in_process(experiment))
    assert record["exp.model_title"] == "Two-layer MLP"
    assert record["results.throughput"] > 0
    # the worker built the test's module: 8*16 + 16 + 16*3 + 3 weights, and FLOPs per
    # sample of 2*8*16 + 2*16*3 forward, 2*8*16 + 2*(2*16*3) backward (as for toy)
    assert record["sys.model_params"] == 195
    assert record["results.flops_per_sample"] == 352 + 448


def test_a_model_is_gone_once_unregistered(two_layer: ModelInfo, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    unregister_model(two_layer.id)
    try:
        assert "two_layer" not in MODELS
        assert all(a is b for a, b in zip(FRAMEWORKS.values(), DECLARATIONS, strict=True))
        param = REGISTRY.get("exp.model")
        assert param is not None and "two_layer" not in (param.choices or ())
        assert _plan(tmp_path) == 2
        assert capsys.readouterr().err.startswith(
            "dlbench: error: exp.model='two_layer' (from -P flag) is not a known model; known: toy")
    finally:
        register_model(two_layer)


@pytest.mark.parametrize(("info", "builders", "message"), [
    (MODELS["toy"], MODELS["toy"].builders, "model toy is already in the catalog"),
    (TWO_LAYER_INFO, {"caffe": "m:f"}, "unknown framework 'caffe'; known: pytorch, jax"),
    (TWO_LAYER_INFO, {"onnxruntime": "m:f"}, "framework onnxruntime has no builder table"),
    (TWO_LAYER_INFO, {"pytorch": "mymodels.two_layer"}, "is not module:function"),
])
def test_a_bad_registration_changes_nothing(
    info: ModelInfo, builders: dict[str, str], message: str
) -> None:
    before = (dict(MODELS), dict(FRAMEWORKS))
    with pytest.raises(ValueError, match=message):
        add_model(replace(info, builders=builders))
    assert (dict(MODELS), dict(FRAMEWORKS)) == before


def test_a_model_defined_nowhere_is_refused_by_the_plan(tmp_path: Path) -> None:
    register_model(replace(TWO_LAYER_INFO, builders={}))
    try:
        with pytest.raises(ConfigError, match="is not defined for framework pytorch"):
            plan_experiments(load_spec(params=["exp.framework=pytorch", "exp.model=two_layer",
                                               f"exp.out_dir={tmp_path}"]))
    finally:
        unregister_model(TWO_LAYER_INFO.id)


def test_a_registered_model_s_smallest_image_and_builder_are_found() -> None:
    tiny_cnn = ModelInfo(id="tiny_cnn", title="Tiny CNN", domain="image classification",
                         input_shape=(3, 32, 32), num_classes=10, default_batch=8,
                         min_image_size=16,
                         builders={"pytorch": "dlbench.config.catalog:model_frameworks"})
    # the table PyTorch's worker loaded before the registration (its builders' paths
    # stand in for the builders)
    loaded: dict[str, Any] = dict(FRAMEWORKS["pytorch"].builders)
    register_model(tiny_cnn)
    try:
        with pytest.raises(ImageTooSmall, match=r"exp\.image_size=8 is too small for tiny_cnn"):
            check_input_shape("tiny_cnn", (3, 8, 8))
        check_input_shape("tiny_cnn", (3, 16, 16))
        assert model_builder(loaded, "PyTorch", "tiny_cnn", (3, 16, 16)) is model_frameworks
    finally:
        unregister_model("tiny_cnn")
    with pytest.raises(KeyError, match="no PyTorch builder for model 'tiny_cnn'; known: acous"):
        model_builder(loaded, "PyTorch", "tiny_cnn", (3, 16, 16))
