"""``dlbench run`` of a Hugging Face architecture, shrunk, offline, on the CPU: training
with the model's own loss, generation with its key-value cache, and the server scenario
of generation requests."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from dlbench.results.store import Store
from tests.conftest import CliRunner

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                reason="transformers is not installed (.[hf])")

#: A Llama-3.2-1B two layers deep, 64 wide, over 512 tokens: seconds per experiment.
TINY = ["exp.model=hf:llama-3.2-1b", "hf.num_hidden_layers=2", "hf.hidden_size=64",
        "hf.num_attention_heads=4", "hf.num_key_value_heads=2", "hf.intermediate_size=128",
        "hf.vocab_size=512", "exp.seq_len=16", "exp.replica_batch=2", "exp.num_batches=3",
        "exp.num_warmup_batches=1", "exp.prompt_tokens=8", "exp.output_tokens=4",
        "exp.target_qps=20", "exp.scenario_min_queries=4", "exp.scenario_min_duration=0"]


@pytest.mark.slow  # three workers, each importing torch and transformers
def test_llama_trains_generates_and_serves(dlbench: CliRunner, tmp_path: Path) -> None:
    params = [arg for p in TINY for arg in ("-P", p)]
    off = json.dumps({"condition": {"exp.phase": "training", "exp.scenario": "server"},
                      "parameters": {"exp.status": "disabled"}})
    done = dlbench("run", *params, "-V", "exp.phase=[training, generate]",
                   "-V", "exp.scenario=[batch, server]", "-E", off, "--out", "out")
    assert done.returncode == 0, done.stdout + done.stderr
    with Store.in_directory(tmp_path / "out", create=False) as store:
        records = {(r["exp.phase"], r["exp.scenario"]): r for r in store.records()}
    assert set(records) == {("training", "batch"), ("generate", "batch"),
                            ("generate", "server")}
    assert all(r["exp.status"] == "ok" for r in records.values()), records
    training = records["training", "batch"]
    # 2 layers of 4 x 64 x 64 - 2 x 64 x 32 (grouped keys and values), 3 x 64 x 128,
    # two norms; the tied 512 x 64 table; the final norm
    layer = 2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64
    assert training["sys.model_params"] == 512 * 64 + 2 * layer + 64
    assert training["results.throughput_unit"] == "tokens/s"
    assert training["results.flops_source"] == "configuration"
    # 6N + 12 L d T per token (N: the layers, the final norm and the head's matrix)
    n = 2 * layer + 64 + 512 * 64
    assert training["results.flops_per_sample"] == 16 * (6 * n + 12 * 2 * 64 * 16)
    assert training["results.loss_last"] > 0
    generate = records["generate", "batch"]
    assert generate["results.generate_cache"] is True
    assert {len(g) for g in generate["results.token_data"]} == {4}
    served = records["generate", "server"]
    assert served["results.queries"] >= 4 and served["results.ttft_p50"] > 0
    logs = sorted(p.name for p in (tmp_path / "out" / "logs").iterdir())
    assert all(name.startswith("pytorch-hf_llama-3.2-1b-") for name in logs), logs
