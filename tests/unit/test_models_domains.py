"""The multi-domain suite: every model trains and infers at a tiny size, counts its
throughput in its own unit, and has the parameter count of its reference."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from dlbench.config.catalog import MODELS
from dlbench.config.modelinfo import TASKS
from dlbench.config.zoo.domains import DOMAIN_MODELS
from dlbench.models import ImageTooSmall, build_pytorch_model
from dlbench.models.pytorch import PYTORCH_BUILDERS
from dlbench.models.pytorch.cartpole import CartPole
from dlbench.models.pytorch.generative import GANWorkload
from dlbench.models.pytorch.lm import GPT2, BertMaskedLM, MaskedLMWorkload, WordLanguageModel
from dlbench.models.pytorch.translation import Translator
from dlbench.models.pytorch.workload_base import ClassificationWorkload, Workload
from dlbench.models.pytorch.workloads import WORKLOADS, make_workload
from tests.unit.gradients import assert_finite_gradients

CPU = torch.device("cpu")
SEQ, IMAGE, BATCH = 8, 32, 2
MODEL_IDS = [info.id for info in DOMAIN_MODELS if info.id != "loader"]
TINY_VOCAB = 1000

# The language models at full width take seconds a step on a CPU; their workloads
# are the same code at any width, so they are tested on narrow copies (the full
# modules are counted on the meta device below).
def _narrow(model_id: str) -> nn.Module:
    if model_id == "bert_base":
        return BertMaskedLM(vocab_size=TINY_VOCAB, dim=64, layers=2, heads=4)
    if model_id == "gpt2_small":
        return GPT2(vocab_size=TINY_VOCAB, dim=64, layers=2, heads=4)
    if model_id == "translator":
        return Translator(vocab_size=TINY_VOCAB, dim=64, heads=4, layers=2, hidden=128)
    return WordLanguageModel(vocab_size=TINY_VOCAB, embedding=64, hidden=64)


def tiny(model_id: str) -> tuple[Workload, nn.Module]:
    """The workload at sequence 8 and 32 px, and its module (narrow for the LMs)."""
    info = MODELS[model_id]
    if info.vocab_size is not None:
        info = dataclasses.replace(info, vocab_size=TINY_VOCAB, num_classes=TINY_VOCAB)
        workload = WORKLOADS[info.task](info, (SEQ,), SEQ)
        return workload, _narrow(model_id)
    workload = make_workload(info, image_size=IMAGE, seq_len=SEQ)
    return workload, workload.build()


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def on_meta(model_id: str) -> nn.Module:
    with torch.device("meta"):
        return make_workload(MODELS[model_id]).build()


def test_every_domain_model_has_a_builder_and_a_workload() -> None:
    for info in DOMAIN_MODELS:
        assert info.id in PYTORCH_BUILDERS
        assert info.task in WORKLOADS
    assert type(make_workload(MODELS["toy"])) is ClassificationWorkload


def test_every_task_has_a_workload_chosen_by_task_not_id() -> None:
    assert set(WORKLOADS) == set(TASKS)
    renamed = dataclasses.replace(MODELS["gpt2_small"], id="my_gpt")
    assert type(make_workload(renamed)) is WORKLOADS["causal_lm"]


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_training_step_gives_finite_loss_and_gradients(model_id: str) -> None:
    torch.manual_seed(0)
    workload, module = tiny(model_id)
    module.train()
    inputs, targets = workload.synthetic_batch(BATCH, CPU)
    assert inputs.shape[0] == targets.shape[0] == BATCH
    losses = list(workload.training_losses(module, inputs, targets))
    assert len(losses) == len(workload.parameter_groups(module))
    for loss in losses:
        assert loss.dim() == 0 and torch.isfinite(loss)
        loss.backward()
    assert_finite_gradients(module)


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_inference_forward(model_id: str) -> None:
    torch.manual_seed(0)
    workload, module = tiny(model_id)
    module.eval()
    inputs, _targets = workload.synthetic_batch(BATCH, CPU)
    with torch.inference_mode():
        out = workload.infer(module, inputs)
    first = out[0] if isinstance(out, tuple) else out
    assert first.shape[0] == BATCH and torch.isfinite(first).all()


_UNITS = {
    "bert_base": ("tokens/s", SEQ), "gpt2_small": ("tokens/s", SEQ), "wlm": ("tokens/s", SEQ),
    "translator": ("tokens/s", SEQ), "dcgan": ("images/s", 1), "espcn": ("images/s", 1),
    "fast_style": ("images/s", 1), "ssd_lite": ("images/s", 1), "vae": ("samples/s", 1),
    "ncf": ("samples/s", 1), "toy_reg": ("samples/s", 1), "toy_lstm": ("samples/s", 1),
    "cart": ("steps/s", SEQ),
}


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_throughput_unit_and_items_per_sample(model_id: str) -> None:
    workload = make_workload(MODELS[model_id], image_size=IMAGE, seq_len=SEQ)
    assert workload.throughput_unit(training=True) == _UNITS[model_id]
    assert MODELS[model_id].unit == _UNITS[model_id][0]
    # Inference of the agent is one decision per observation; the rest count alike.
    expected = ("steps/s", 1) if model_id == "cart" else _UNITS[model_id]
    assert workload.throughput_unit(training=False) == expected


def test_published_sequence_lengths_and_the_seq_len_knob() -> None:
    assert make_workload(MODELS["gpt2_small"]).input_shape == (1024,)
    assert make_workload(MODELS["bert_base"], seq_len=64).input_shape == (64,)
    assert make_workload(MODELS["translator"]).throughput_unit(True) == ("tokens/s", 64)
    cart = make_workload(MODELS["cart"], seq_len=16)
    assert cart.input_shape == (4,) and cart.throughput_unit(True) == ("steps/s", 16)
    # image models take exp.image_size, sequence models ignore it
    assert make_workload(MODELS["ssd_lite"], image_size=64).input_shape == (3, 64, 64)
    assert make_workload(MODELS["wlm"], image_size=64).input_shape == (35,)


# Exact counts at the published sizes, on the meta device (no memory, no init).
_EMBEDDINGS_BERT = 30522 * 768 + 512 * 768 + 2 * 768 + 2 * 768  # words, positions, types, LN
_LAYER = 4 * (768 * 768 + 768) + 2 * 768 * 3072 + 3072 + 768 + 2 * 2 * 768  # 7,087,872
_PARAM_COUNTS = {
    # Hugging Face BertForMaskedLM (bert-base-uncased): embeddings, 12 layers, and the
    # MLM head (dense + LayerNorm + a vocabulary bias; the decoder weight is tied to
    # the word embeddings). No pooler: masked-LM training does not use it.
    "bert_base": _EMBEDDINGS_BERT + 12 * _LAYER + (768 * 768 + 768) + 2 * 768 + 30522,
    # GPT-2 small as published (and Hugging Face's GPT2LMHeadModel): tied lm_head,
    # 1,024 positions, final LayerNorm.
    "gpt2_small": 50257 * 768 + 1024 * 768 + 12 * _LAYER + 2 * 768,
    # embedding, two LSTM layers (weights and both biases), decoder
    "wlm": 33278 * 650 + 2 * (4 * 650 * (650 + 650) + 2 * 4 * 650) + 650 * 33278 + 33278,
    # nn.Transformer base (44,140,544) plus the one shared 32,000 x 512 embedding
    "translator": 44_140_544 + 32000 * 512,
    # generator 3,576,704 + discriminator 2,765,568, as PyTorch's dcgan example
    "dcgan": 3_576_704 + 2_765_568,
    "vae": (784 * 400 + 400) + 2 * (400 * 20 + 20) + (20 * 400 + 400) + (400 * 784 + 784),
    # GMF and MLP embeddings of every user and item, the MLP, the output unit
    "ncf": (138493 + 26744) * (64 + 128) + (256 * 256 + 256) + (256 * 128 + 128)
    + (128 * 64 + 64) + (128 + 1),
    "espcn": (25 * 64 + 64) + (64 * 64 * 9 + 64) + (64 * 32 * 9 + 32) + (32 * 9 * 9 + 9),
    # the fast_neural_style example's TransformerNet, its often-quoted 1,679,235
    "fast_style": 1_679_235,
    # Regression value, our own architecture (MobileNetV2 taps at strides 16 and 32,
    # four extra maps, separable heads, 6 anchors, 81 classes): no published figure.
    "ssd_lite": 4_228_788,
    "toy_reg": 4 + 1,
    # two LSTM cells of 51 (input 1, then 51) and the 51 → 1 read-out
    "toy_lstm": (4 * 51 * (1 + 51) + 8 * 51) + (4 * 51 * (51 + 51) + 8 * 51) + 52,
    "cart": (4 * 128 + 128) + (128 * 2 + 2),
}


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_parameter_count_at_published_size(model_id: str) -> None:
    assert count(on_meta(model_id)) == _PARAM_COUNTS[model_id]
    reference = MODELS[model_id].reference_params
    assert reference is None or reference == _PARAM_COUNTS[model_id]


def test_headline_counts() -> None:
    assert _PARAM_COUNTS["bert_base"] == 109_514_298
    assert _PARAM_COUNTS["gpt2_small"] == 124_439_808


def test_longer_sequences_grow_only_the_position_table() -> None:
    with torch.device("meta"):
        longer = make_workload(MODELS["gpt2_small"], seq_len=2048).build()
    assert count(longer) == _PARAM_COUNTS["gpt2_small"] + 1024 * 768


def test_masked_lm_masks_fifteen_percent_of_each_sequence() -> None:
    workload = MaskedLMWorkload(MODELS["bert_base"], (20,), 20)
    tokens = torch.randint(1000, 2000, (3, 20))
    inputs, targets = workload.real_batch(tokens, tokens.roll(-1, 1))
    masked = inputs == MaskedLMWorkload.MASK_ID
    assert masked.sum(1).tolist() == [3, 3, 3]  # round(0.15 * 20)
    assert torch.equal(targets[masked], tokens[masked])
    assert (targets[~masked] == -100).all() and torch.equal(inputs[~masked], tokens[~masked])


def test_gan_optimizes_the_discriminator_then_the_generator() -> None:
    workload = make_workload(MODELS["dcgan"])
    assert isinstance(workload, GANWorkload)
    with torch.device("meta"):
        module = workload.build()
    discriminator, generator = workload.parameter_groups(module)
    assert {id(p) for p in discriminator} == {id(p) for p in module.discriminator.parameters()}
    assert {id(p) for p in generator} == {id(p) for p in module.generator.parameters()}


def test_cartpole_ends_and_restarts_episodes() -> None:
    state = torch.tensor([[0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.5, 0.0]])
    env = CartPole(state)
    observations, done = env.step(torch.tensor([1, 1, 0]))
    assert done.tolist() == [False, True, True]
    assert observations[1:].abs().max() <= 0.05  # restarted near upright
    # pushing right accelerates the cart right and tips the pole left
    assert observations[0, 1] > 0 and observations[0, 3] < 0


def test_superresolution_triples_the_side() -> None:
    workload = make_workload(MODELS["espcn"], image_size=10)
    low, high = workload.synthetic_batch(1, CPU)
    assert workload.build()(low).shape == high.shape == (1, 1, 30, 30)


def test_fast_style_minimum_image_size_is_exact() -> None:
    model = build_pytorch_model("fast_style", (3, 5, 5), 1)
    assert model(torch.randn(1, 3, 5, 5)).shape[1] == 3
    with pytest.raises(RuntimeError):
        model(torch.randn(1, 3, 4, 4))
    with pytest.raises(ImageTooSmall):
        build_pytorch_model("fast_style", (3, 4, 4), 1)
