"""ModelInfo as the one source of model facts: the sample-shape rule, the task, and
which frameworks define a model (from their declarations' builder tables), all
without importing a framework."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from dlbench.config.catalog import FRAMEWORKS, MODELS, model_frameworks, model_input_shape
from dlbench.config.modelinfo import TASKS, ModelInfo
from dlbench.models.workload import task_workload

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(("model_id", "image_size", "seq_len", "shape"), [
    ("resnet50", 0, 0, (3, 224, 224)),
    ("resnet50", 112, 64, (3, 112, 112)),  # exp.seq_len does not apply to images
    ("alexnet", 0, 0, (3, 227, 227)),
    ("deep_mnist", 48, 0, (1, 48, 48)),
    ("toy", 48, 16, (64,)),  # neither size applies to features
    ("gpt2_small", 0, 0, (1024,)),
    ("gpt2_small", 64, 32, (32,)),
    ("cart", 0, 32, (4,)),  # a sequence model whose input is not its sequence
])
def test_sample_shape_at_an_experiment_s_sizes(
    model_id: str, image_size: int, seq_len: int, shape: tuple[int, ...]
) -> None:
    assert MODELS[model_id].sample_shape(image_size, seq_len) == shape
    if not seq_len:
        assert model_input_shape(MODELS[model_id], image_size) == shape


def test_a_model_s_task_is_a_known_one() -> None:
    assert {info.task for info in MODELS.values()} == set(TASKS)
    assert MODELS["resnet50"].task == "classification"
    assert MODELS["gpt2_small"].task == MODELS["wlm"].task == "causal_lm"
    with pytest.raises(ValueError, match="model toy: unknown task 'sorting'"):
        dataclasses.replace(MODELS["toy"], task="sorting")


@pytest.mark.parametrize(("model_id", "frameworks"), [
    ("toy", ["pytorch", "jax", "onnxruntime", "tensorflow", "fake"]),
    ("resnet50", ["pytorch", "jax", "onnxruntime", "tensorflow", "fake"]),
    ("vit_b16", ["pytorch", "jax", "onnxruntime", "tensorflow", "fake"]),
    ("wlm", ["pytorch", "onnxruntime", "fake"]),
    ("loader", ["pytorch", "fake"]),
])
def test_which_frameworks_define_a_model(model_id: str, frameworks: list[str]) -> None:
    assert model_frameworks(model_id) == frameworks


def test_builder_tables_name_catalog_models_and_functions_that_exist() -> None:
    assert set(FRAMEWORKS["pytorch"].builders) == set(MODELS)  # PyTorch defines every model
    for info in FRAMEWORKS.values():
        assert set(info.models or ()) <= set(MODELS), info.id
        for model_id, path in info.builders.items():
            module, _, function = path.partition(":")
            # Read, not imported: the table is checked without the framework.
            tree = ast.parse((SRC / (module.replace(".", "/") + ".py")).read_text())
            defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
            assert function in defined, f"{info.id} {model_id}: {path}"


def test_model_info_has_no_framework_list_of_its_own() -> None:
    # Which frameworks define a model is derived (model_frameworks) from its builders,
    # the one table, never a second list on the model that can go stale.
    assert "frameworks" not in {field.name for field in dataclasses.fields(ModelInfo)}


def test_sequence_length_at_an_experiment_s_seq_len() -> None:
    gpt2 = MODELS["gpt2_small"]  # published 1024
    assert gpt2.sequence_length() == 1024
    assert gpt2.sequence_length(32) == 32
    # A model without a sequence has none, whatever exp.seq_len says.
    assert MODELS["resnet50"].sequence_length(32) is None
    assert MODELS["cart"].sequence_length(16) == 16  # its sequence is not its input


def test_task_workload_is_the_task_s_entry_or_a_key_error_naming_it() -> None:
    table = {"classification": "classifier", "causal_lm": "decoder"}
    assert task_workload(table, "X", MODELS["resnet50"]) == "classifier"
    assert task_workload(table, "X", MODELS["gpt2_small"]) == "decoder"
    with pytest.raises(KeyError, match="no X workload for task 'masked_lm' of bert_base"):
        task_workload(table, "X", MODELS["bert_base"])
