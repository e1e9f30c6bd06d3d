"""Models from libraries: Hugging Face configurations (shipped and local), their
parameter counts and FLOPs from the configuration, the hf.* sizes, and every refusal,
in one line, before anything runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.config.catalog import model_info
from dlbench.config.external import transformer_counts
from dlbench.config.external.shipped import SHIPPED_BY_NAME
from dlbench.config.external.transformer_counts import flops_per_sample, parameter_counts
from dlbench.config.install import install_command
from dlbench.errors import ConfigError

#: The published parameter counts of the models as transformers builds them with their
#: task's head (causal LM; masked LM for BERT and RoBERTa, whose bare encoders with a
#: pooler are 109,482,240, 335,141,888 and 124,645,632; T5 for conditional generation;
#: ViT with its 1000-class classifier, the same as torchvision's vit_b_16).
PUBLISHED = {
    "gpt2": 124_439_808,
    "bert-base-uncased": 109_514_298,
    "bert-large-uncased": 335_174_458,
    "roberta-base": 124_697_433,
    "t5-small": 60_506_624,
    "vit-base-patch16-224": 86_567_656,
    "llama-3.2-1b": 1_235_814_400,
    "llama-3.2-3b": 3_212_749_824,
    "llama-3.1-8b": 8_030_261_248,
    "qwen2.5-0.5b": 494_032_768,
    "qwen2.5-7b": 7_615_616_512,
    "mistral-7b": 7_241_732_096,
    "phi-3-mini": 3_821_079_552,
}

#: A Llama two layers deep and 64 wide: seconds on a CPU.
TINY = ["exp.model=hf:llama-3.2-1b", "hf.num_hidden_layers=2", "hf.hidden_size=64",
        "hf.num_attention_heads=4", "hf.num_key_value_heads=2", "hf.intermediate_size=128",
        "hf.vocab_size=512", "exp.seq_len=16"]

needs_transformers = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="transformers is not installed (.[hf])")


def plan(*params: str) -> list[dict[str, Any]]:
    return plan_experiments(load_spec(params=["exp.framework=pytorch", *params]))


def refusal(*params: str) -> str:
    with pytest.raises(ConfigError) as caught:
        plan(*params)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_every_shipped_configuration_has_a_published_count() -> None:
    assert set(PUBLISHED) == set(SHIPPED_BY_NAME)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_counted_from_the_configuration_as_published(name: str) -> None:
    assert parameter_counts(SHIPPED_BY_NAME[name].config).total == PUBLISHED[name]
    # and the full size plans
    model = model_info(plan(f"exp.model=hf:{name}")[0])
    assert parameter_counts(model.source_config).total == PUBLISHED[name]


@needs_transformers
def test_transformers_builds_the_published_counts() -> None:
    import torch

    from dlbench.models.pytorch.external.transformers_models import build

    for name, published in PUBLISHED.items():
        entry = SHIPPED_BY_NAME[name]
        task = model_info({"exp.model": f"hf:{name}"}).task
        with torch.device("meta"):
            module = build(entry.config, task)
        assert sum(p.numel() for p in module.parameters()) == published, name


def test_flops_known_answer() -> None:
    # Llama, vocabulary 10, width 4, one layer, 2 heads of 2, MLP 8, untied.
    config = {"model_type": "llama", "vocab_size": 10, "hidden_size": 4,
              "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8}
    layer = (4 * 4) * 4 + 3 * 4 * 8 + 2 * 4  # q, k, v, o; gate, up, down; two norms
    counts = parameter_counts(config)
    assert counts.layers == layer + 4 and counts.head == 40 and counts.tied == 0
    assert counts.total == 40 + layer + 4 + 40
    tokens = 3
    per_token = 2 * (layer + 4 + 40) + 4 * 1 * 4 * tokens  # 2N + 4 L d T
    assert flops_per_sample(config, False, tokens) == tokens * per_token
    assert flops_per_sample(config, True, tokens) == 3 * tokens * per_token  # 6N + 12LdT


def test_gpt2_flops_are_palms_formula() -> None:
    config = SHIPPED_BY_NAME["gpt2"].config
    n = 124_439_808 - 1024 * 768  # the position table is a lookup; the tied head is not
    assert flops_per_sample(config, True, 1024) == 1024 * (6 * n + 12 * 12 * 768 * 1024)


@needs_transformers
def test_configuration_flops_agree_with_the_counted_operators() -> None:
    """The formula counts norms and biases in N; PyTorch's counter only the matrix
    products: within a percent on a small Llama."""
    import torch

    from dlbench.models.pytorch.flops import count_step_flops
    from dlbench.models.pytorch.workloads import make_workload

    model = model_info(plan(*TINY)[0])
    workload = make_workload(model, seq_len=16)
    module = workload.build().eval()  # on the CPU: its masks do not run on the meta device
    inputs, targets = workload.synthetic_batch(2, torch.device("cpu"))
    counted = count_step_flops(workload, module, inputs, targets, training=False) / 2
    assert flops_per_sample(model.source_config, False, 16) == pytest.approx(counted, rel=0.01)


def test_overrides_resize_the_model() -> None:
    experiment = plan(*TINY)[0]
    config = model_info(experiment).source_config
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (
        2, 64, 512)
    assert experiment["exp.model_file_name"] == "hf_llama-3.2-1b"
    assert "/pytorch-hf_llama-3.2-1b-training-" in experiment["exp.log_file"]
    # gpt2 and t5 name their sizes their own way
    gpt2 = model_info(plan("exp.model=hf:gpt2", "hf.hidden_size=96")[0]).source_config
    assert gpt2["n_embd"] == 96
    t5 = model_info(plan("exp.model=hf:t5-small", "hf.num_hidden_layers=1")[0]).source_config
    assert (t5["num_layers"], t5["num_decoder_layers"]) == (1, 1)


def _tiny_gpt2(path: Path) -> Path:
    path.write_text(json.dumps({"model_type": "gpt2", "vocab_size": 100, "n_embd": 32,
                                "n_layer": 1, "n_head": 4, "n_positions": 64}))
    return path


def test_a_local_config_file_folder_or_cache_folder(tmp_path: Path) -> None:
    _tiny_gpt2(tmp_path / "config.json")
    for target in (tmp_path / "config.json", tmp_path):
        model = model_info(plan(f"exp.model=hf:{target}", f"exp.out_dir={tmp_path}/o")[0])
        assert model.task == "causal_lm" and model.seq_len == 64
        # 3,200 tokens, 2,048 positions, 1 layer of 12,704, final norm 64
        assert parameter_counts(model.source_config).total == 3200 + 2048 + 12704 + 64
    snapshot = tmp_path / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    _tiny_gpt2(snapshot / "config.json")
    experiment = plan(f"exp.model=hf:{tmp_path}/models--org--tiny", f"exp.out_dir={tmp_path}")[0]
    assert model_info(experiment).source_config["n_embd"] == 32
    assert experiment["exp.model_file_name"] == "hf_models--org--tiny"


def test_unknown_name_is_refused_with_the_shipped_ones() -> None:
    message = refusal("exp.model=hf:llama-3.2-1bb")
    assert "did you mean hf:llama-3.2-1b?" in message and "qwen2.5-7b" in message


def test_malformed_or_missing_config_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": ')
    assert "is not JSON" in refusal(f"exp.model=hf:{bad}")
    bad.write_text('["llama"]')
    assert "a JSON object with a model_type" in refusal(f"exp.model=hf:{bad}")
    bad.write_text('{"model_type": "llama", "hidden_size": "wide", "num_hidden_layers": 2,'
                   '"num_attention_heads": 2, "vocab_size": 9, "intermediate_size": 4,'
                   '"max_position_embeddings": 8}')
    assert "hidden_size='wide' of the configuration" in refusal(f"exp.model=hf:{bad}")
    bad.write_text('{"model_type": "mamba"}')
    assert "model type 'mamba' is not one dlbench counts" in refusal(f"exp.model=hf:{bad}")
    assert "no config.json there" in refusal(f"exp.model=hf:{tmp_path}/nowhere")


def test_sizes_that_do_not_fit_are_refused() -> None:
    message = refusal(*TINY, "hf.num_attention_heads=5")
    assert "hf.num_attention_heads=5" in message and "do not divide the width 64" in message
    assert "key-value heads do not divide the 4" in refusal(*TINY, "hf.num_key_value_heads=3")
    assert "longer than the 131072 positions" in refusal(*TINY, "exp.seq_len=131073")
    assert "need 40 positions" in refusal(
        *TINY, "hf.max_position_embeddings=32", "exp.phase=generate",
        "exp.prompt_tokens=32", "exp.output_tokens=9")
    assert "patches do not tile a 100 px image" in refusal(
        "exp.model=hf:vit-base-patch16-224", "exp.image_size=100")
    assert "is not a positive integer" in refusal(*TINY, "hf.num_hidden_layers=-1")
    assert "needs a decoder" in refusal("exp.model=hf:bert-base-uncased", "exp.phase=generate")


def test_a_missing_library_is_refused_with_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("transformers", "timm") else
                        real(name, *a))
    torch = install_command("", torch="installed").removeprefix("pip install ")
    assert refusal(*TINY) == ("exp.model='hf:llama-3.2-1b' (from -P flag) needs `pip install "
                              f"'dlbench[hf]'{torch}`: transformers is not installed")
    assert f"needs `pip install timm{torch}`" in refusal("exp.model=timm:convnext_tiny")
    # the fake framework simulates it without the library
    assert plan(*TINY, "exp.framework=fake")[0]["exp.model_title"] == "Llama-3.2-1B"


def test_other_frameworks_and_bad_library_names_are_refused() -> None:
    message = refusal(*TINY, "exp.framework=jax")
    if "needs `pip install" not in message:  # jax installed: the model is refused
        assert "is built by pytorch only" in message
    assert "is not a torchvision model name" in refusal("exp.model=torchvision:res/net")


def test_counted_types_each_have_a_task() -> None:
    from dlbench.config.external.huggingface import _TASKS

    assert set(_TASKS) == set(transformer_counts.COUNTED_TYPES)


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is None,
                    reason="torchvision is not installed (it must match the PyTorch build)")
@pytest.mark.parametrize("training", [False, True])
def test_torchvision_resnet50_is_the_zoos(training: bool) -> None:
    import torch

    from dlbench.config.catalog import MODELS
    from dlbench.models.flops import architecture_flops
    from dlbench.models.pytorch.workloads import make_workload

    theirs = model_info({"exp.model": "torchvision:resnet50"})
    with torch.device("meta"):
        counts = [sum(p.numel() for p in make_workload(info).build().parameters())
                  for info in (theirs, MODELS["resnet50"])]
    assert counts == [25_557_032, 25_557_032]
    assert architecture_flops(theirs, training) == architecture_flops(MODELS["resnet50"],
                                                                      training)


@pytest.mark.skipif(importlib.util.find_spec("timm") is None, reason="timm is not installed")
def test_timm_resnet50_counts_as_published() -> None:
    import torch

    from dlbench.models.pytorch.workloads import make_workload

    with torch.device("meta"):
        module = make_workload(model_info({"exp.model": "timm:resnet50"})).build()
    assert sum(p.numel() for p in module.parameters()) == 25_557_032
