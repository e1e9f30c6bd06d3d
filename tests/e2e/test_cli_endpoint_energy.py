"""``dlbench run -P exp.framework=endpoint -P endpoint.energy_gpus=0`` end to end, against
the scripted server: where a counter cannot be read (a machine without an NVIDIA driver,
without readable RAPL) the run still succeeds, with the reason in the record; where it
can, its energy is in the record, per output token and per request."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.endpoint_servers import scripted_server

pytest.importorskip("aiohttp", reason="the endpoint extra is not installed")


def test_energy_of_a_local_gpu_is_a_figure_or_a_note(tmp_path: Path) -> None:
    out = tmp_path / "energy"
    with scripted_server({"models": {"tiny": {"ttft_ms": 5, "gap_ms": 2}}}) as url:
        proc = subprocess.run(
            [sys.executable, "-m", "dlbench", "run", "-P", "exp.framework=endpoint",
             "-P", f"endpoint.url={url}", "-P", "endpoint.model=tiny",
             "-P", "exp.phase=generate", "-P", "exp.replica_batch=2",
             "-P", "exp.scenario_min_queries=8", "-P", "exp.scenario_min_duration=0.3",
             "-P", "exp.output_tokens=8", "-P", "exp.prompt_tokens=16",
             "-P", "endpoint.energy_gpus=0", "-P", "endpoint.energy_cpu=true",
             "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    query = subprocess.run([sys.executable, "-m", "dlbench", "query", "--input", str(out),
                            "--format", "json"], capture_output=True, text=True, timeout=300)
    assert query.returncode == 0, query.stderr
    [record] = json.loads(query.stdout)["data"]
    assert record["exp.status"] == "ok" and record["results.output_tokens_per_s"] > 0
    note = record.get("results.energy.note") or ""
    scope = record["results.energy.scope"]
    if record.get("results.energy.gpu_j") is None:  # no NVIDIA driver, or no GPU 0
        assert note.startswith("no GPU energy: ") and "GPU 0" not in scope
    else:
        assert record["results.energy.gpu_j"] > 0 and scope.startswith("GPU 0 (NVML")
    if record.get("results.energy.cpu_j") is None:
        assert "no CPU energy from RAPL: " in note
    else:
        assert "this client included" in scope
    if scope:  # something was measured: it is shared by the window's tokens and requests
        per_token = record["results.energy.joules_per_output_token"]
        tokens = record["results.output_tokens_per_s"] * record["results.window_seconds"]
        energy = (record.get("results.energy.gpu_j") or 0) + (
            record.get("results.energy.cpu_j") or 0)
        assert per_token == pytest.approx(energy / tokens)
    else:
        assert record.get("results.energy.joules_per_output_token") is None


class _Progress:
    """What the backend tells the worker's progress writer, dropped."""

    position = SimpleNamespace(batch=0)

    def describe(self, params: object, backend: object = None) -> None:
        pass

    def enter(self, phase: str, batch: int | None = None, first: int | None = None) -> None:
        pass


class _SteadyGpu:
    """NVML with one GPU drawing 100 W since t0, by the run's own clock."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter_ns()

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        return (time.perf_counter_ns() - self.t0) // 10_000  # mJ at 100 W: 1 per 10 µs

    def nvmlShutdown(self) -> None:
        pass


def test_the_backend_shares_the_window_s_energy(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the worker's backend, with NVML replaced by a GPU at a steady 100 W: the energy
    is the window's (100 W x its seconds), per token of the window's throughput."""
    from dlbench.config.spec import load_spec
    from dlbench.config.validate import plan_experiments
    from dlbench.frameworks.endpoint import energy
    from dlbench.frameworks.endpoint.backend import EndpointBackend

    monkeypatch.setattr(energy, "load_nvml", lambda: (_SteadyGpu(), None))
    with scripted_server({"models": {"tiny": {"ttft_ms": 5, "gap_ms": 2}}}) as url:
        [params] = plan_experiments(load_spec(params=[
            "exp.framework=endpoint", f"endpoint.url={url}", "endpoint.model=tiny",
            "exp.phase=generate", "exp.replica_batch=2", "exp.scenario_min_queries=8",
            "exp.scenario_min_duration=0.3", "exp.output_tokens=8", "exp.prompt_tokens=16",
            "endpoint.energy_gpus=0"]))
        backend = EndpointBackend(params)
        backend.setup()
        results = backend.load_results(_Progress(), lambda name, count: None)
    seconds = results["results.window_seconds"]
    assert results["results.energy.gpu_j"] == pytest.approx(100 * seconds, abs=0.01)
    assert results["results.energy.scope"].startswith("GPU 0 (NVML total energy")
    assert "results.energy.note" not in results
    tokens = results["results.output_tokens_per_s"] * seconds
    requests = results["results.requests_per_s"] * seconds
    assert results["results.energy.joules_per_output_token"] == pytest.approx(
        results["results.energy.gpu_j"] / tokens)
    assert results["results.energy.joules_per_request"] == pytest.approx(
        results["results.energy.gpu_j"] / requests)
