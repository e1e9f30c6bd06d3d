"""FLOPs per sample are the architecture's: known answers derived by hand, one number
for every framework and batch that the planner sends to the worker, and the
framework's own counter standing in (and saying so) only where the architecture
cannot be counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.config.modelinfo import ModelInfo
from dlbench.models.flops import FlopsNotCounted, architecture_flops
from dlbench.worker import flops as worker_flops
from dlbench.worker.flops import flop_results
from tests.integration.worker import TOY_FORWARD, TOY_TRAINING, plan_one, resnet18_macs

REAL_FRAMEWORKS = ("pytorch", "jax", "tensorflow", "onnxruntime")


def gpt2_small_forward(seq_len: int) -> int:
    """GPT-2 small's forward FLOPs on one sequence: 12 layers of width 768, each with the
    Q, K, V and output projections (4 d^2 per token) and a 4d MLP (8 d^2), the 50,257-word
    output layer, and attention's two products (Q K^T and P V, T^2 d each) per layer."""
    layers, width, vocab = 12, 768, 50257
    per_token = layers * 12 * width * width + width * vocab
    attention = layers * 2 * seq_len * seq_len * width
    return 2 * (seq_len * per_token + attention)


def _count(tmp_path: Path, framework: str, model: str, phase: str, *params: str) -> tuple[
        dict[str, object], str]:
    """The worker's FLOP figures for the planned experiment, with no framework count."""
    experiment = plan_one(tmp_path, f"exp.framework={framework}", f"exp.model={model}",
                          f"exp.phase={phase}", *params)
    return flop_results(experiment, None, f"framework:{framework}")


@pytest.fixture
def counts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's architecture count made once per distinct argument list. The count
    is a function of its arguments alone (the model, the phase and the planned sizes):
    a framework and a batch reach it only through the sizes the planner gives them,
    which the arguments hold, so a repeat would only count again, on the meta device
    (seconds for a deep model), what was counted."""
    made: dict[tuple[ModelInfo, bool, int, int], float] = {}

    def once(info: ModelInfo, training: bool, image_size: int = 0, seq_len: int = 0) -> float:
        key = (info, training, image_size, seq_len)
        if key not in made:
            made[key] = architecture_flops(info, training, image_size, seq_len)
        return made[key]

    monkeypatch.setattr(worker_flops, "architecture_flops", once)


@pytest.mark.usefixtures("counts_once")
def test_resnet18_at_64_px_is_the_hand_count(tmp_path: Path) -> None:
    macs, _ = resnet18_macs(64)
    assert 2 * macs == 297_115_648
    for framework in REAL_FRAMEWORKS:
        results, note = _count(tmp_path / framework, framework, "resnet18", "inference",
                               "exp.image_size=64")
        assert results == {"results.flops_per_sample": 2 * macs,
                           "results.flops_source": "architecture"}
        assert note == ""


def test_resnet18_training_at_32_px_is_forward_and_backward(tmp_path: Path) -> None:
    # Backward: each convolution's input and weight gradients, each as many FLOPs as its
    # forward, but for the first convolution's input gradient (the image needs none).
    macs, first = resnet18_macs(32)
    expected = 3 * 2 * macs - 2 * first
    assert expected == 220_323_840
    results, _ = _count(tmp_path, "jax", "resnet18", "training", "exp.image_size=32",
                        "exp.replica_batch=4")
    assert results["results.flops_per_sample"] == expected


@pytest.mark.parametrize("phase", ["inference", "training"])
def test_gpt2_small_is_the_hand_count(tmp_path: Path, phase: str) -> None:
    # Training: three times the forward, since the first layer is a lookup, not a
    # product, and every product's input carries a gradient.
    forward = gpt2_small_forward(32)
    expected = forward if phase == "inference" else 3 * forward
    results, _ = _count(tmp_path, "tensorflow", "gpt2_small", phase, "exp.seq_len=32")
    assert results["results.flops_per_sample"] == expected
    assert results["results.flops_source"] == "architecture"


def _smallest(info: ModelInfo) -> list[str]:
    """The smallest sizes the planner accepts for ``info``: cheap counts."""
    params = []
    if info.is_image:
        params.append(f"exp.image_size={max(8, info.min_image_size or 0)}")
    if info.seq_len is not None:
        params.append("exp.seq_len=8")
    return params


MULTI_FRAMEWORK = sorted(
    model for model in MODELS
    if sum(FRAMEWORKS[f].defines(model) for f in REAL_FRAMEWORKS) >= 2)


@pytest.mark.slow
@pytest.mark.usefixtures("counts_once")
@pytest.mark.parametrize("model", MULTI_FRAMEWORK)
def test_every_framework_and_batch_gets_one_count(tmp_path: Path, model: str) -> None:
    """What the worker records for each framework that defines ``model``, at two batch
    sizes, per phase: one number (within 1%), the architecture's wherever it counts."""
    counts: dict[str, dict[tuple[str, int], object]] = {"training": {}, "inference": {}}
    sources = set()
    for framework in (f for f in REAL_FRAMEWORKS if FRAMEWORKS[f].defines(model)):
        for phase in set(FRAMEWORKS[framework].phases) & set(counts):
            for batch in (1, 3):
                results, _ = _count(tmp_path / f"{framework}{phase}{batch}", framework, model,
                                    phase, f"exp.replica_batch={batch}", *_smallest(MODELS[model]))
                counts[phase][framework, batch] = results.get("results.flops_per_sample")
                sources.add(results.get("results.flops_source"))
    for phase, found in counts.items():
        values = set(found.values())
        if values == {None}:  # not countable on the meta device: no figure anywhere
            continue
        assert None not in values, (phase, found)
        assert max(values) <= 1.01 * min(values), (phase, found)  # type: ignore[type-var, operator]
    if model == "toy_reg":  # its step reads a value back (.item()), which meta cannot
        assert sources == {None}
    else:
        assert sources == {"architecture"}


def test_the_framework_count_is_kept_beside_as_a_cross_check(tmp_path: Path) -> None:
    results, note = flop_results(
        plan_one(tmp_path, "exp.framework=jax", "exp.model=toy", "exp.phase=training"),
        21_000.0, "framework:jax-xla")
    assert results == {"results.flops_per_sample": TOY_TRAINING,
                       "results.flops_per_sample_framework": 21_000.0,
                       "results.flops_source": "architecture"}
    assert note == ""


def test_a_model_meta_cannot_run_falls_back_and_says_so(tmp_path: Path) -> None:
    experiment = plan_one(tmp_path, "exp.framework=pytorch", "exp.model=toy_reg")
    results, note = flop_results(experiment, 4.0, "framework:pytorch-flopcounter")
    assert results == {"results.flops_per_sample": 4.0,
                       "results.flops_per_sample_framework": 4.0,
                       "results.flops_source": "framework:pytorch-flopcounter"}
    assert note.startswith("FLOPs per sample from framework:pytorch-flopcounter: the "
                           "architecture's count failed (model toy_reg does not run on "
                           "PyTorch's meta device")
    results, note = flop_results(experiment, None, "framework:pytorch-flopcounter")
    assert results == {}
    assert note.startswith("no FLOPs per sample: the architecture's count failed")


def test_a_simulated_framework_keeps_its_own_figure(tmp_path: Path) -> None:
    experiment = plan_one(tmp_path, "exp.framework=fake", "exp.model=resnet50")
    results, note = flop_results(experiment, 1e9, "framework:fake.flops_per_sample")
    assert results == {"results.flops_per_sample": 1e9,
                       "results.flops_per_sample_framework": 1e9,
                       "results.flops_source": "framework:fake.flops_per_sample"}
    assert note == ""
    assert flop_results(experiment, None, "framework:fake") == ({}, "")


def test_the_count_refuses_what_it_cannot_count() -> None:
    with pytest.raises(FlopsNotCounted, match="model loader runs no model"):
        architecture_flops(MODELS["loader"], training=False)
    jax_only = ModelInfo("jax_only_mlp", "JAX-only MLP", "test", (8,), 3, 2,
                         builders={"jax": "elsewhere:build"})
    with pytest.raises(FlopsNotCounted, match="no PyTorch builder for model 'jax_only_mlp'"):
        architecture_flops(jax_only, training=True)


def test_the_count_is_the_toy_s_known_answer_at_its_published_size() -> None:
    assert architecture_flops(MODELS["toy"], training=False) == TOY_FORWARD
    assert architecture_flops(MODELS["toy"], training=True) == TOY_TRAINING
