"""A model is registered by its zoo entry alone: the entry names its builders per
framework, and the frameworks' builder tables are derived from the entries."""

from __future__ import annotations

import pytest

from dlbench.config.catalog import FRAMEWORKS, MODELS, model_frameworks
from dlbench.config.frameworks import DECLARATIONS
from dlbench.config.frameworks.base import FrameworkInfo
from dlbench.config.modelinfo import ModelInfo, built_by
from dlbench.config.zoo import ZOO, zoo_builders


def test_built_by_writes_paths_under_each_framework_s_package() -> None:
    assert built_by(pytorch="resnet:resnet50", jax="resnet:resnet50", tensorflow="lm:gpt2") == {
        "pytorch": "dlbench.models.pytorch.resnet:resnet50",
        "jax": "dlbench.models.jax.resnet:resnet50",
        "tensorflow": "dlbench.models.tensorflow.lm:gpt2",
    }
    assert built_by() == {}


def test_built_by_refuses_a_path_without_a_function() -> None:
    with pytest.raises(ValueError, match=r"builder jax='resnet' is not module:function"):
        built_by(pytorch="resnet:resnet50", jax="resnet")


def test_a_framework_s_table_is_every_model_that_names_it() -> None:
    jax = zoo_builders("jax")
    # In the zoo's order (core, vision, domains), the models whose entries name JAX.
    assert list(jax)[:5] == ["toy", "deep_mnist", "alexnet", "resnet18", "resnet34"]
    assert jax["resnet269"] == "dlbench.models.jax.resnet:resnet269"
    assert jax["vgg19"] == "dlbench.models.jax.vision:vgg19"
    assert jax["gpt2_small"] == "dlbench.models.jax.lm:gpt2_small"
    assert "dcgan" not in jax and "translator" not in jax
    assert list(zoo_builders("tensorflow")) == list(zoo_builders("jax"))
    assert zoo_builders("pytorch")["loader"] == "dlbench.models.pytorch.workload_base:no_model"
    assert list(zoo_builders("pytorch")) == [info.id for info in ZOO]  # it builds them all
    assert zoo_builders("onnxruntime") == {} and zoo_builders("caffe") == {}


@pytest.mark.parametrize("declared", DECLARATIONS, ids=lambda d: d.id)
def test_declarations_carry_the_derived_tables(declared: FrameworkInfo) -> None:
    assert dict(declared.builders) == zoo_builders(declared.id)


def test_which_frameworks_define_a_model_keeps_its_special_cases() -> None:
    assert model_frameworks("resnet50") == ["pytorch", "jax", "onnxruntime", "tensorflow",
                                            "fake"]
    assert model_frameworks("resnet34") == ["pytorch", "jax", "onnxruntime", "tensorflow",
                                            "fake"]
    # the input pipeline alone: PyTorch's loader, not exported to ONNX; fake runs all
    assert model_frameworks("loader") == ["pytorch", "fake"]
    assert FRAMEWORKS["fake"].models is None


def test_onnxruntime_runs_only_models_pytorch_builds() -> None:
    exportable = FRAMEWORKS["onnxruntime"].models
    assert exportable is not None and "resnet50" in exportable
    assert set(exportable) <= set(zoo_builders("pytorch"))


@pytest.mark.parametrize("info", ZOO, ids=lambda info: info.id)
def test_every_entry_is_built_by_declared_frameworks(info: ModelInfo) -> None:
    # that each path names a function that exists: test_config_modelinfo.py
    assert MODELS[info.id] is info
    assert info.builders, f"{info.id} names no builder"
    for framework, path in info.builders.items():
        assert FRAMEWORKS[framework].builders[info.id] == path


def test_an_entry_with_builders_is_still_hashable() -> None:
    toy = MODELS["toy"]
    assert hash(toy) == hash(ModelInfo(**{**toy.__dict__, "builders": {}}))
    assert toy != ModelInfo(**{**toy.__dict__, "builders": {}})
