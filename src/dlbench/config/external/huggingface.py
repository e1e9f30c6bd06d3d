"""``exp.model=hf:<name>``: a Hugging Face Transformers architecture, from a shipped
configuration (:mod:`dlbench.config.external.shipped`) or a local ``config.json``, its
sizes overridden by the ``hf.*`` parameters, checked before anything runs.

The parent reads configurations as JSON and never imports ``transformers``; the worker
builds the model from the configuration this module resolves (the same function, on
the same parameters), with random weights.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlbench.config.external.shipped import SHIPPED, SHIPPED_BY_NAME
from dlbench.config.external.transformer_counts import (
    COUNTED_TYPES,
    field_name,
    num_labels,
    parameter_counts,
    setting,
)
from dlbench.config.modelinfo import ModelInfo
from dlbench.config.params import Param, Shown
from dlbench.errors import ConfigError

__all__ = ["HF_PARAMS", "OVERRIDES", "hf_model", "hf_summary", "hf_title", "load_hf_config",
           "shipped_rows"]


#: The sizes ``hf.<size>`` overrides, by their generic ``transformers`` names.
OVERRIDES: tuple[tuple[str, str], ...] = (
    ("hidden_size", "Width of the model (GPT-2's n_embd, T5's d_model)."),
    ("num_hidden_layers", "Transformer layers (T5: the encoder's and the decoder's)."),
    ("num_attention_heads", "Attention heads; with no head_dim in the configuration they "
                            "must divide hf.hidden_size."),
    ("num_key_value_heads", "Key and value heads of grouped-query attention (Llama, Qwen2, "
                            "Mistral, Phi-3); they must divide the attention heads."),
    ("intermediate_size", "Width of the MLP (GPT-2's n_inner, T5's d_ff)."),
    ("vocab_size", "Token vocabulary."),
    ("max_position_embeddings", "Longest sequence (GPT-2's n_positions); exp.seq_len and "
                                "generation must fit in it."),
)

#: The ``hf.*`` parameters: 0 keeps the configuration's size.
HF_PARAMS: tuple[Param, ...] = tuple(
    Param(f"hf.{name}", "int", 0,
          f"exp.model=hf:...: {text} 0 keeps the configuration's.", minimum=0)
    for name, text in OVERRIDES)

#: Each model type's task, in dlbench's tasks (``ModelInfo.task``).
_TASKS = {"gpt2": "causal_lm", "llama": "causal_lm", "mistral": "causal_lm",
          "qwen2": "causal_lm", "phi3": "causal_lm", "bert": "masked_lm",
          "roberta": "masked_lm", "t5": "translation", "vit": "classification"}
_DOMAINS = {"causal_lm": "language modelling", "masked_lm": "language modelling",
            "translation": "machine translation", "classification": "image classification"}
#: The sequence length a run takes when exp.seq_len is 0 (capped by the positions).
_DEFAULT_TOKENS = {"causal_lm": 1024, "masked_lm": 128, "translation": 128}

#: The module that builds these models in the worker.
_BUILDER = "dlbench.models.pytorch.external.transformers_models:build"


def _is_path(name: str) -> bool:
    return "/" in name or name.startswith(("~", "."))


def hf_title(name: str) -> str:
    """The title of ``hf:<name>``: the shipped model's, or the local path's last part."""
    entry = SHIPPED_BY_NAME.get(name.lower())
    if entry is not None:
        return entry.title
    return f"{Path(name).expanduser().name or name} (config.json)"


def _config_file(name: str, where: str) -> Path:
    """The ``config.json`` that ``name`` (a file, a model folder, or a folder of the
    Hugging Face cache, ``models--org--name``, whose newest snapshot is read) names."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    if (path / "config.json").is_file():
        return path / "config.json"
    snapshots = sorted((s for s in (path / "snapshots").glob("*") if (s / "config.json").is_file()),
                       key=lambda s: s.stat().st_mtime)
    if snapshots:
        return snapshots[-1] / "config.json"
    raise ConfigError(f"{where}: no config.json there (give a config.json, a model folder "
                      f"holding one, or a folder of the Hugging Face cache)")


def load_hf_config(name: str, where: str) -> dict[str, Any]:
    """The configuration of ``hf:<name>``, as ``config.json`` holds it: a shipped one by
    name (any case), or a local file or folder. ConfigError naming ``where`` (the
    parameter as given) for an unknown name or a file that is not a configuration."""
    if not _is_path(name):
        entry = SHIPPED_BY_NAME.get(name.lower())
        if entry is None:
            close = difflib.get_close_matches(name.lower(), SHIPPED_BY_NAME, n=1)
            hint = f"did you mean hf:{close[0]}? " if close else ""
            raise ConfigError(f"{where} is not a shipped Hugging Face configuration; {hint}"
                              f"shipped: {', '.join(SHIPPED_BY_NAME)} (or give a path to a "
                              f"config.json or a model folder)")
        return dict(entry.config)
    path = _config_file(name, where)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{where}: cannot read {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}: {path} is not JSON: {error.msg} at line {error.lineno} "
                          f"column {error.colno}") from None
    except RecursionError:
        raise ConfigError(f"{where}: {path} nests too deeply to be a configuration") from None
    if not isinstance(config, dict) or not isinstance(config.get("model_type"), str):
        raise ConfigError(f"{where}: {path} is not a Transformers configuration (a JSON "
                          f"object with a model_type)")
    return config


def _positive(config: Mapping[str, Any], name: str, shown: Shown, override: str) -> int:
    value = setting(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{shown(override)}: {field_name(config['model_type'], name)}="
                          f"{value!r} of the configuration is not a positive integer")
    return value


def _usable_positions(config: Mapping[str, Any]) -> int | None:
    """The longest sequence the position table holds; None when positions are relative
    (T5) or the model reads images (ViT)."""
    model_type = config["model_type"]
    if model_type in ("t5", "vit"):
        return None
    positions = int(setting(config, "max_position_embeddings"))
    if model_type == "roberta":  # positions count from the padding id + 1
        return positions - int(config.get("pad_token_id") or 1) - 1
    return positions


def _check_sizes(config: dict[str, Any], values: Mapping[str, Any], shown: Shown) -> None:
    """The sizes fit the architecture: positive, heads dividing the width, key-value
    heads dividing the heads, patches dividing the image."""
    model_type = config["model_type"]
    required = ["hidden_size", "num_hidden_layers", "num_attention_heads"]
    required += ["image_size", "patch_size"] if model_type == "vit" else ["vocab_size"]
    required += [] if model_type in ("t5", "vit") else ["max_position_embeddings"]
    required += [] if model_type == "gpt2" else ["intermediate_size"]
    sizes = {name: _positive(config, name, shown, f"hf.{name}" if f"hf.{name}" in values
                             else "exp.model") for name in required}
    hidden, heads = sizes["hidden_size"], sizes["num_attention_heads"]
    explicit_head = model_type == "t5" or setting(config, "head_dim") is not None
    if not explicit_head and hidden % heads:
        raise ConfigError(f"{shown('hf.num_attention_heads')}: {heads} heads do not divide "
                          f"the width {hidden} ({shown('hf.hidden_size')}); give heads "
                          f"that divide it")
    kv_heads = setting(config, "num_key_value_heads")
    if kv_heads is not None and (not isinstance(kv_heads, int) or kv_heads < 1
                                 or heads % kv_heads):
        raise ConfigError(f"{shown('hf.num_key_value_heads')}: {kv_heads} key-value heads "
                          f"do not divide the {heads} attention heads "
                          f"({shown('hf.num_attention_heads')})")
    if model_type == "vit" and sizes["image_size"] % sizes["patch_size"]:
        raise ConfigError(f"{shown('exp.image_size')}: ViT's {sizes['patch_size']} px "
                          f"patches do not tile a {sizes['image_size']} px image; give a "
                          f"multiple of {sizes['patch_size']}")


def hf_model(model_id: str, values: Mapping[str, Any], shown: Shown) -> ModelInfo:
    """The model of ``exp.model=hf:<name>`` with the experiment's ``hf.*`` sizes (and
    ViT's ``exp.image_size``), its resolved configuration in ``source_config``.
    ConfigError, one line naming the parameter, for a name or file that is not a
    configuration, a model type dlbench does not count, or sizes that do not fit."""
    name = model_id.split(":", 1)[1]
    config = load_hf_config(name, shown("exp.model"))
    model_type = config["model_type"]
    if model_type not in _TASKS:
        raise ConfigError(f"{shown('exp.model')}: model type {model_type!r} is not one dlbench "
                          f"counts (parameters and FLOPs per sample come from the "
                          f"configuration); known: {', '.join(COUNTED_TYPES)}")
    for override, _ in OVERRIDES:
        value = values.get(f"hf.{override}", 0)
        if value:
            config[field_name(model_type, override)] = value
            if model_type == "t5" and override == "num_hidden_layers":
                config["num_decoder_layers"] = value
    image_size = int(values.get("exp.image_size", 0) or 0)
    if model_type == "vit" and image_size:
        config["image_size"] = image_size
    _check_sizes(config, values, shown)
    task = _TASKS[model_type]
    positions = _usable_positions(config)
    common: dict[str, Any] = {
        "id": model_id, "title": hf_title(name), "domain": _DOMAINS[task], "task": task,
        "default_batch": 8, "source": "hf", "source_config": config,
        "builders": {"pytorch": _BUILDER},
        "description": f"Hugging Face Transformers {model_type}, random weights.",
    }
    if task == "classification":
        side = int(config["image_size"])
        return ModelInfo(input_shape=(int(config.get("num_channels", 3)), side, side),
                         num_classes=num_labels(config), unit="images/s",
                         min_image_size=int(config["patch_size"]), **common)
    tokens = _DEFAULT_TOKENS[task] if positions is None else min(_DEFAULT_TOKENS[task],
                                                                 positions)
    vocab = int(setting(config, "vocab_size"))
    wanted = int(values.get("exp.seq_len", 0) or 0) or tokens
    if positions is not None and wanted > positions:
        raise ConfigError(f"{shown('exp.seq_len')} is longer than the {positions} positions of "
                          f"{model_id} ({shown('hf.max_position_embeddings')})")
    if values.get("exp.phase") == "generate" and positions is not None:
        needed = int(values["exp.prompt_tokens"]) + int(values["exp.output_tokens"]) - 1
        if needed > positions:
            raise ConfigError(f"{shown('exp.output_tokens')} and {shown('exp.prompt_tokens')} "
                              f"need {needed} positions, and {model_id} has {positions} "
                              f"({shown('hf.max_position_embeddings')})")
    return ModelInfo(input_shape=(tokens,), num_classes=vocab, vocab_size=vocab,
                     seq_len=tokens, is_image=False, unit="tokens/s", **common)


def hf_summary(config: Mapping[str, Any]) -> str:
    """The shape and parameter count of a resolved configuration, in one line.

    >>> hf_summary({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12,
    ...             "n_head": 12, "n_positions": 1024})
    'gpt2, 12 layers, width 768, 12 heads, vocabulary 50,257: 124,439,808 parameters'
    """
    heads = int(setting(config, "num_attention_heads"))
    kv_heads = setting(config, "num_key_value_heads")
    grouped = f" ({kv_heads} key-value)" if kv_heads not in (None, heads) else ""
    vocab = setting(config, "vocab_size")
    text = f" vocabulary {vocab:,}" if vocab else f" {config.get('image_size')} px images"
    return (f"{config['model_type']}, {setting(config, 'num_hidden_layers')} layers, width "
            f"{setting(config, 'hidden_size')}, {heads} heads{grouped},{text}: "
            f"{parameter_counts(config).total:,} parameters")


def shipped_rows() -> list[dict[str, Any]]:
    """One row per shipped configuration, for ``dlbench help --models``."""
    rows = []
    for entry in SHIPPED:
        config = entry.config
        heads = setting(config, "num_attention_heads")
        rows.append({
            "exp.model": f"hf:{entry.name}", "title": entry.title,
            "type": config["model_type"], "layers": setting(config, "num_hidden_layers"),
            "width": setting(config, "hidden_size"), "heads": heads,
            "kv heads": setting(config, "num_key_value_heads", heads),
            "vocab": setting(config, "vocab_size"),
            "params": f"{parameter_counts(config).total:,}", "from": entry.repository})
    return rows
