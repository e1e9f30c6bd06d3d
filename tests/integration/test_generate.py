"""exp.phase=generate: the timing of tokens on known times, decoding with a cache
against the model's own forward pass, GPT-2 small generating in the server scenario,
and what the plan refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from dlbench.backends.pytorch.generate import make_decoder
from dlbench.config import load_spec, plan_experiments
from dlbench.config.catalog import ModelInfo
from dlbench.config.registry import register_model, unregister_model
from dlbench.errors import ConfigError
from dlbench.models.pytorch.lm import GPT2, WordLanguageModel
from dlbench.results.keys.lookup import conforms, is_declared
from dlbench.worker.generate import Generation, _waits, generate, generation_results
from tests.integration.worker import ok, plan_one, run_in_process

_GENERATE = ("exp.framework=pytorch", "exp.phase=generate", "monitor.enabled=false",
             "exp.num_warmup_batches=1")


class _Scripted:
    """A backend whose prefill takes 30 ms and each decoding step 10 ms of a clock
    that only they move."""

    def __init__(self) -> None:
        self.now = 0
        self.calls: list[str] = []

    def clock(self) -> int:
        return self.now

    def prefill(self, requests: int) -> None:
        self.calls.append(f"prefill {requests}")
        self.now += 30_000_000

    def decode_step(self) -> None:
        self.calls.append("decode")
        self.now += 10_000_000

    def synchronize(self) -> None:
        self.calls.append("sync")

    def generate_facts(self) -> dict[str, bool]:
        return {"results.generate_cache": True}


def test_tokens_are_timed_one_by_one_with_known_answers() -> None:
    backend = _Scripted()
    generation = generate(backend, 2, 4, clock=backend.clock)
    assert generation == Generation(2, [30.0, 10.0, 10.0, 10.0], start_ns=0)
    assert backend.calls == ["prefill 2", "sync", *["decode", "sync"] * 3]
    # Two generations of 2 and 1 requests, the second started at 60 ms; its request
    # waited 50 ms (it arrived at 10 ms).
    second = Generation(1, [20.0, 5.0, 5.0, 5.0], start_ns=60_000_000)
    results = generation_results([generation, second], [0.0, 0.0, 50.0], output_tokens=4,
                                 back_to_back=True)
    assert results["results.ttft_data"] == [30.0, 30.0, 70.0]
    assert results["results.ttft_p50"] == 30.0 and results["results.ttft_p99"] == 70.0
    # Every request's inter-token latencies, pooled: 10, 10, 10 twice, then 5, 5, 5.
    assert results["results.itl_mean"] == pytest.approx(75.0 / 9)
    assert (results["results.itl_p50"], results["results.itl_p99"]) == (10.0, 10.0)
    # Per request, (last token - first) / 3: 10, 10 and 5 ms.
    assert results["results.tpot_data"] == [10.0, 10.0, 5.0]
    assert results["results.tpot_mean"] == pytest.approx(25.0 / 3)
    # Latencies 60, 60 and 85 ms for 4 tokens each.
    assert results["results.latency_data"] == [60.0, 60.0, 85.0]
    assert results["results.request_tokens_per_s_p50"] == pytest.approx(4000.0 / 60)
    # Back to back, the rates are over the generations: 0 to the last token at 95 ms.
    assert results["results.window_seconds"] == pytest.approx(0.095)
    assert results["results.output_tokens_per_s"] == results["results.throughput"] == (
        pytest.approx(12 / 0.095))
    assert results["results.requests_per_s"] == pytest.approx(3 / 0.095)
    assert results["results.valid"] is True and "results.client_lag_p99" not in results
    rows = results["results.request_data"]["rows"]
    assert len(rows) == 3 and {len(r) for r in rows} == {len(rows[0])}
    assert results["results.token_data"] == [[30.0, 10.0, 10.0, 10.0], [20.0, 5.0, 5.0, 5.0]]
    for name, value in results.items():
        assert is_declared(name) and conforms(name, value), name
    # Server: a request's wait is its latency less its batch's serving time.
    server = {"results.wait_mean": 1.0, "results.latency_data": [61.0, 62.0, 95.0],
              "results.service_data": [61.0, 30.0]}
    assert _waits(server, [generation, Generation(1, [20.0, 5.0, 5.0, 5.0])]) == [
        0.0, 1.0, 65.0]


@pytest.mark.parametrize("kind", ["gpt2", "lstm"])
def test_cached_decoding_gives_the_tokens_of_the_whole_forward_pass(kind: str) -> None:
    torch.manual_seed(0)
    model: nn.Module = (GPT2(vocab_size=97, dim=32, layers=2, heads=4, max_positions=64)
                        if kind == "gpt2" else WordLanguageModel(97, 16, 16))
    with torch.no_grad():  # larger matrices than the published init: varied tokens
        for weight in model.parameters():
            if weight.dim() > 1:
                weight.normal_(0.0, 0.5)
    model.eval()
    prompts = torch.randint(0, 97, (3, 5))
    expected, sequence = [], prompts
    with torch.inference_mode():
        for _ in range(8):  # greedy decoding by the model's forward over everything
            expected.append(model(sequence)[:, -1].argmax(-1))
            sequence = torch.cat([sequence, expected[-1][:, None]], dim=1)
        for cached in (True, False):
            decoder = make_decoder(model, kind, cached, capacity=3, length=12)
            tokens = [decoder.prefill(prompts)]
            for _ in range(7):
                tokens.append(decoder.decode(tokens[-1]))
            assert torch.equal(torch.stack(tokens, 1), torch.stack(expected, 1)), cached
    assert len(set(torch.stack(expected).flatten().tolist())) > 3


@pytest.mark.slow  # GPT-2 small: 124M weights to initialise
def test_gpt2_small_generates_requests_in_the_server_scenario(tmp_path: Path) -> None:
    record = ok(run_in_process(plan_one(
        tmp_path, *_GENERATE, "exp.model=gpt2_small", "exp.prompt_tokens=8",
        "exp.output_tokens=4", "exp.replica_batch=2", "exp.scenario=server",
        "exp.target_qps=40", "exp.scenario_min_queries=4", "exp.scenario_min_duration=0")))
    assert record["results.valid"] is True, record["results.valid_reasons"]
    assert record["results.generate_cache"] is True
    batches, generations = record["results.batch_data"], record["results.token_data"]
    assert sum(batches) == record["results.queries"] == len(record["results.ttft_data"]) >= 4
    assert len(generations) == len(batches) and {len(g) for g in generations} == {4}
    # Each request's TTFT is its wait plus its batch's prefill and first token.
    firsts = [g[0] for g, size in zip(generations, batches, strict=True) for _ in range(size)]
    assert all(t >= f for t, f in zip(record["results.ttft_data"], firsts, strict=True))
    for name in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "itl_p50", "itl_p99",
                 "output_tokens_per_s_run"):
        assert record[f"results.{name}"] > 0, name
    assert record["results.ttft_p50"] <= record["results.ttft_p99"]
    assert record["results.throughput_unit"] == "tokens/s"
    assert record["results.output_tokens_per_s"] == record["results.throughput"]
    assert record["results.output_tokens_total"] == 4 * record["results.queries"]
    # The rates are over the window of arrivals (here 75 ms, shorter than a generation):
    # the tokens and the requests that ended inside it.
    window = record["results.window_seconds"]
    assert 0 <= record["results.output_tokens_per_s"] * window <= 4 * record["results.queries"]
    done = record["results.requests_per_s"] * window
    assert done == pytest.approx(round(done)) and 0 <= round(done) <= record["results.queries"]


def tiny_gpt2(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """A two-layer GPT-2 of 32 wide: the builder of the test's own decoder."""
    return GPT2(vocab_size=num_classes, dim=32, layers=2, heads=4, max_positions=16)


@pytest.fixture
def tiny_decoder() -> Iterator[str]:
    info = ModelInfo(id="tiny_gpt2_test", title="Tiny GPT-2", domain="test",
                     input_shape=(16,), num_classes=101, vocab_size=101, seq_len=16,
                     default_batch=2, unit="tokens/s", is_image=False, task="causal_lm",
                     builders={"pytorch": f"{__name__}:tiny_gpt2"})
    register_model(info)
    try:
        yield info.id
    finally:
        unregister_model(info.id)


def test_batches_of_requests_without_a_cache(tmp_path: Path,
                                             tiny_decoder: str) -> None:
    record = ok(run_in_process(plan_one(
        tmp_path, *_GENERATE, f"exp.model={tiny_decoder}", "exp.prompt_tokens=6",
        "exp.output_tokens=5", "exp.replica_batch=3", "exp.num_batches=4",
        "pytorch.generate_cache=false")))
    assert record["results.generate_cache"] is False
    assert len(record["results.time_data"]) == len(record["results.token_data"]) == 4
    assert len(record["results.ttft_data"]) == 4 * 3
    # A generation's time is its tokens' times, and the loop's overhead on top.
    for total, tokens in zip(record["results.time_data"], record["results.token_data"],
                             strict=True):
        assert len(tokens) == 5 and total >= sum(tokens)
    # The rates are over the timed generations: from the first one's start to the last
    # one's last token, inside the timed section and around every generation's tokens.
    window = record["results.window_seconds"]
    assert sum(map(sum, record["results.token_data"])) <= window * 1000
    assert window <= record["results.timed_seconds"]
    assert record["results.throughput"] == pytest.approx(3 * 5 * 4 / window)
    assert record["results.requests_per_s"] == pytest.approx(3 * 4 / window)
    assert len(record["results.request_data"]["rows"]) == 3 * 5  # 1 warm-up generation
    # 6 + 5 - 1 = 10 positions of the 16 the model has; 12 + 6 - 1 do not fit.
    failed = run_in_process(plan_one(
        tmp_path / "long", *_GENERATE, f"exp.model={tiny_decoder}", "exp.prompt_tokens=12",
        "exp.output_tokens=6", "exp.replica_batch=1"))
    assert failed["exp.status"] == "failure"
    assert failed["exp.status_msg"] == (
        "exp.prompt_tokens=12 and exp.output_tokens=6 need 17 positions, and "
        "tiny_gpt2_test has 16; raise exp.seq_len to grow its position table")


@pytest.mark.parametrize(("params", "message"), [
    (["exp.framework=onnxruntime", "exp.model=resnet18"],
     "exp.phase='generate' (from -P flag) is not supported by framework onnxruntime (ONNX "
     "Runtime is inference only); supported: inference"),
    (["exp.framework=pytorch", "exp.model=resnet18"],
     "exp.phase='generate' (from -P flag) needs a decoder (causal language) model, and "
     "exp.model='resnet18' (from -P flag) is classification; decoders: gpt2_small, wlm, "
     "and hf: causal language models"),
    (["exp.framework=pytorch", "exp.model=gpt2_small", "exp.scenario=server",
      "exp.target_qps=auto", "exp.latency_bound_ms=100"],
     "exp.target_qps='auto' (from -P flag) is not supported with exp.phase=generate yet; "
     "give a rate"),
    (["exp.framework=pytorch", "exp.model=gpt2_small", "pytorch.compile=true"],
     "pytorch.compile=True (from -P flag) is not supported with exp.phase=generate yet; "
     "use pytorch.compile=false"),
])
def test_the_plan_refuses_what_generation_cannot_run(params: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        plan_experiments(load_spec(params=["exp.phase=generate", "exp.replica_batch=1",
                                           *params]))
    assert str(error.value) == message
