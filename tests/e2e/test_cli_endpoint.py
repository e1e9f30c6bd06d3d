"""``dlbench run -P exp.framework=endpoint`` end to end: the issue's command against the
scripted server, whose every chunk comes at a known time, and against a real server
(``transformers serve`` of a tiny random Llama made by the test); then the run's
report, its figures in other tools' definitions, and a comparison of two servers.

One sweep per server, shared by the tests that read it (module-scoped fixtures): a
run takes a few seconds of real time, as an endpoint run must.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.endpoint_servers import scripted_server

pytest.importorskip("aiohttp", reason="the endpoint extra is not installed")

#: The scripted model: its first text 40 ms after a request starts (after a role-only
#: chunk at once, as vLLM's chat path sends), then one token every 5 ms.
TTFT_MS, GAP_MS, OUTPUT = 40.0, 5.0, 8
SCRIPT = {"models": {"tiny": {"ttft_ms": TTFT_MS, "gap_ms": GAP_MS, "role_first": True},
                     "slow": {"ttft_ms": 2 * TTFT_MS, "gap_ms": 2 * GAP_MS}}}
SHORT = ["-P", "exp.scenario_min_queries=12", "-P", "exp.scenario_min_duration=0.5",
         "-P", "endpoint.warmup_requests=2",
         "-P", f"exp.output_tokens={OUTPUT}", "-P", "exp.prompt_tokens=16"]


def dlbench(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "dlbench", *args], capture_output=True,
                          text=True, timeout=300)


def endpoint(url: str, model: str) -> list[str]:
    return ["-P", "exp.framework=endpoint", "-P", f"endpoint.url={url}",
            "-P", f"endpoint.model={model}", "-P", "exp.phase=generate"]


def records(run: Path) -> list[dict[str, Any]]:
    proc = dlbench("query", "--input", str(run), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data: list[dict[str, Any]] = json.loads(proc.stdout)["data"]
    return data


@pytest.fixture(scope="module")
def scripted() -> Iterator[str]:
    with scripted_server(SCRIPT) as url:
        yield url


@pytest.fixture(scope="module")
def served_run(scripted: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's command at two rates, against the scripted model."""
    out = tmp_path_factory.mktemp("serve") / "runs"
    proc = dlbench("run", *endpoint(scripted, "tiny"), "-P", "exp.scenario=server",
                   "-V", "exp.target_qps=[10,20]", "-P", "endpoint.slo_ttft_ms=200",
                   *SHORT, "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_figures_are_the_scripted_times(served_run: Path) -> None:
    found = records(served_run)
    assert [r["exp.target_qps"] for r in found] == [10.0, 20.0]
    for record in found:
        assert record["exp.status"] == "ok" and record["exp.model"] == "served:tiny"
        assert record["results.requests"] >= 12 and record["results.requests_failed"] == 0
        # The role-only chunk at 0 ms does not end TTFT: the first text does, 40 ms in,
        # plus what the loopback and both event loops add (a few ms on a busy machine).
        assert TTFT_MS <= record["results.ttft_p50"] < TTFT_MS + 25
        # Per request: (last - first text) / (tokens - 1), the tokens from usage.
        assert GAP_MS * 0.9 <= record["results.tpot_p50"] < GAP_MS + 5
        assert record["results.output_tokens_source"] == "usage"
        assert record["results.output_tokens_total"] == OUTPUT * record["results.requests"]
        assert record["results.throughput_unit"] == "tokens/s"
        assert record["results.client_kept_up"] is True
        assert record["results.slo_attainment"] == 1.0
        assert record["results.endpoint.usage_in_stream"] is True
        # Every request's raw timestamps are kept, warm-up included.
        rows = record["results.request_data"]["rows"]
        assert len(rows) == record["results.requests"] + sum(
            1 for row in rows if row[record["results.request_data"]["fields"].index("warmup")])


def test_the_report_draws_serving_curves(served_run: Path) -> None:
    proc = dlbench("report", "--input", str(served_run), "--type", "serving")
    assert proc.returncode == 0, proc.stderr
    assert "TTFT" in proc.stdout and "tokens/s" in proc.stdout


def test_the_run_prints_in_each_peer_s_definitions(served_run: Path) -> None:
    proc = dlbench("definitions", str(served_run), "--as", "vllm", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "TPOT" in proc.stdout or "tpot" in proc.stdout


def test_two_servers_compare(scripted: str, served_run: Path, tmp_path: Path) -> None:
    slow = tmp_path / "slow"
    proc = dlbench("run", *endpoint(scripted, "slow"), "-P", "exp.scenario=server",
                   "-V", "exp.target_qps=[10,20]", *SHORT, "--out", str(slow))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = records(slow)
    assert all(2 * TTFT_MS <= r["results.ttft_p50"] < 2 * TTFT_MS + 25 for r in found)
    proc = dlbench("compare", str(served_run), str(slow), "--metric", "results.ttft_p50")
    assert proc.returncode == 0, proc.stderr
    assert "slower" in proc.stdout


def test_a_closed_loop_sweeps_concurrency(scripted: str, tmp_path: Path) -> None:
    out = tmp_path / "closed"
    proc = dlbench("run", *endpoint(scripted, "tiny"), "-V", "exp.replica_batch=[1,4]",
                   *SHORT, "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    one, four = records(out)
    # Four requests in flight answer about four times as many tokens per second.
    assert four["results.output_tokens_per_s"] > 2.5 * one["results.output_tokens_per_s"]


@pytest.mark.parametrize(("flags", "wanted"), [
    (["-P", "endpoint.model=nope"], "endpoint.model='nope' is not served"),
    (["-P", "endpoint.url=http://127.0.0.1:9/v1"], "endpoint.url"),
])
def test_a_wrong_model_or_url_fails_in_one_line_before_any_load(
        scripted: str, tmp_path: Path, flags: list[str], wanted: str) -> None:
    proc = dlbench("run", *endpoint(scripted, "tiny"), *flags, *SHORT,
                   "--out", str(tmp_path / "bad"))
    assert proc.returncode != 0
    [record] = records(tmp_path / "bad")
    assert record["exp.status"] == "failure"
    assert wanted in record["exp.status_msg"] and "\n" not in record["exp.status_msg"]


def test_the_api_key_is_read_from_the_variable_and_never_stored(tmp_path: Path) -> None:
    secret = "sk-test-5f0e1c"
    script = {"api_key": secret, "models": {"tiny": {"ttft_ms": 5, "gap_ms": 1}}}
    out = tmp_path / "key"
    with scripted_server(script) as url:
        env_name = "DLBENCH_TEST_KEY"
        proc = subprocess.run(
            [sys.executable, "-m", "dlbench", "run", *endpoint(url, "tiny"),
             "-P", f"endpoint.api_key_env={env_name}", *SHORT, "--out", str(out)],
            capture_output=True, text=True, timeout=300,
            env={**__import__("os").environ, env_name: secret})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert secret not in proc.stdout + proc.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_against_transformers_serve(tiny_llm_server: str, tiny_llm_dir: Path,
                                    tmp_path: Path) -> None:
    """A real server: the tiny Llama answers every request, the client's tokenizer (the
    model's own) agrees with the server's usage, and the figures are all there."""
    out = tmp_path / "real"
    proc = dlbench("run", *endpoint(tiny_llm_server, tiny_llm_dir.name),
                   "-P", f"endpoint.tokenizer={tiny_llm_dir}", "-P", "exp.scenario=server",
                   "-P", "exp.target_qps=2", "-P", "exp.scenario_min_queries=6",
                   "-P", "exp.scenario_min_duration=0", "-P", "exp.output_tokens=8",
                   "-P", "exp.prompt_tokens=16", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [record] = records(out)
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    assert record["results.requests_failed"] == 0
    assert record["results.ttft_p50"] > 0 and record["results.output_tokens_per_s"] > 0
    if record["results.output_tokens_source"] == "usage":
        assert record["results.token_count_diff"] == 0
