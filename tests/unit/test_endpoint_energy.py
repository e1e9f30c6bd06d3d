"""Energy of an endpoint run (frameworks/endpoint/energy.py) with stand-in counters: the
window's ends interpolated between samples, the division per output token and per
request, RAPL's wrap-around, and a note, never an error, for every counter that cannot
be read (this machine's own NVML included)."""

from __future__ import annotations

import doctest
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from dlbench.config.spec import load_spec
from dlbench.config.validate import plan_experiments
from dlbench.errors import ConfigError
from dlbench.frameworks.endpoint import energy
from dlbench.frameworks.endpoint.energy import EnergyMeter, parse_gpus, value_at, window_energy
from dlbench.measure.nvml import load_nvml

S = 1_000_000_000  # ns


class NVMLError_NotSupported(Exception):
    """pynvml's class of the error, whose name the reader matches."""


class Clock:
    """A clock the test moves: each read of a counter takes no time."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class FakeNvml:
    """``count`` GPUs, GPU i drawing ``watts[i]`` constantly by ``clock``; GPUs in
    ``unsupported`` have no energy counter."""

    def __init__(self, clock: Clock, watts: list[float],
                 unsupported: frozenset[int] = frozenset()) -> None:
        self.clock, self.watts, self.unsupported = clock, watts, unsupported
        self.shutdowns = 0
        self.failing: int | None = None

    def nvmlDeviceGetCount(self) -> int:
        return len(self.watts)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        if handle in self.unsupported:
            raise NVMLError_NotSupported("Not Supported")
        if handle == self.failing:
            raise RuntimeError("GPU is lost")
        # mJ since the driver loaded: 1000 J at t0, then watts x seconds
        return round(1_000_000 + self.watts[handle] * self.clock.now / S * 1000)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1


def loader(nvml: Any) -> Callable[[], tuple[Any, str | None]]:
    return lambda: (nvml, None)


def sampled(meter: EnergyMeter, clock: Clock, seconds: list[float]) -> EnergyMeter:
    """``meter`` sampled at each of ``seconds`` (from t0 = 0), on the test's clock."""
    meter.clock = clock
    for t in seconds:
        clock.now = round(t * S)
        meter.sample()
    return meter


#: The serving figures of a window of 2 s: 100 output tokens, 4 requests ended in it.
SERVING = {"results.window_seconds": 2.0, "results.output_tokens_per_s": 50.0,
           "results.requests_per_s": 2.0}


def test_doctests() -> None:
    assert doctest.testmod(energy).failed == 0


def test_a_counter_is_interpolated_at_the_window_s_ends() -> None:
    samples = [(0, 0.0), (10, 5.0), (20, 25.0)]
    assert value_at(samples, 10) == 5.0  # a sample's own time: its value
    assert value_at(samples, 15) == 15.0
    assert value_at(samples, -1) is None and value_at(samples, 21) is None
    assert window_energy(samples, 5, 15) == 12.5  # 15 - 2.5
    assert window_energy(samples, 0, 20) == 25.0
    assert window_energy(samples, 5, 25) is None  # the end is after the last sample


def test_energy_per_output_token_and_per_request() -> None:
    clock = Clock()
    nvml = FakeNvml(clock, [100.0, 50.0])
    meter = EnergyMeter.open("0,1", False, 0, nvml_loader=loader(nvml))
    sampled(meter, clock, [0.0, 0.3, 1.1, 1.9, 2.7, 3.0])
    out = meter.results((round(0.5 * S), round(2.5 * S)), SERVING)
    # 2 s of the window at 150 W: 300 J, whatever the samples' times
    assert out["results.energy.gpu_j"] == pytest.approx(300.0)
    assert out["results.energy.cpu_j"] is None  # not asked for
    assert out["results.energy.joules_per_output_token"] == pytest.approx(3.0)  # / 100
    assert out["results.energy.joules_per_request"] == pytest.approx(75.0)  # / 4
    assert out["results.energy.scope"] == (
        "GPUs 0, 1 (NVML total energy, each whole GPU) over the steady-state window; "
        "includes every process on them")
    assert "results.energy.note" not in out
    meter.stop()
    meter.stop()
    assert nvml.shutdowns == 1  # NVML counts its inits: one shutdown for one init


def test_no_tokens_or_requests_in_the_window_leave_the_ratios_empty() -> None:
    clock = Clock()
    meter = sampled(EnergyMeter.open("0", False, 0, nvml_loader=loader(FakeNvml(clock, [10.0]))),
                    clock, [0.0, 3.0])
    out = meter.results((0, 2 * S), {"results.window_seconds": 2.0,
                                     "results.output_tokens_per_s": None,
                                     "results.requests_per_s": 0.0})
    assert out["results.energy.gpu_j"] == pytest.approx(20.0)
    assert out["results.energy.joules_per_output_token"] is None
    assert out["results.energy.joules_per_request"] is None


def test_this_machine_s_nvml_gives_a_note_not_an_error() -> None:
    nvml, why = load_nvml()
    if nvml is not None:
        nvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    meter = EnergyMeter.open("0", False, 0)
    meter.start()
    meter.stop()
    out = meter.results((0, S), SERVING)
    assert out["results.energy.note"] == f"no GPU energy: {why}"
    assert out["results.energy.gpu_j"] is None
    assert out["results.energy.joules_per_output_token"] is None
    assert out["results.energy.scope"] == ""


@pytest.mark.parametrize(("gpus", "nvml", "note"), [
    ("0,2", FakeNvml(Clock(), [1.0, 1.0]),
     "no GPU energy: endpoint.energy_gpus names GPU 2, and NVML sees GPUs 0 to 1 "
     "(nvidia-smi's numbering)"),
    ("1", FakeNvml(Clock(), [1.0]),
     "no GPU energy: endpoint.energy_gpus names GPU 1, and NVML sees GPU 0 only "
     "(nvidia-smi's numbering)"),
    ("0,1", FakeNvml(Clock(), [1.0, 1.0], unsupported=frozenset({1})),
     "no GPU energy: GPU 1 has no total energy counter (NVML has one from Volta on)"),
])
def test_a_gpu_nvml_cannot_read_is_a_note(gpus: str, nvml: FakeNvml, note: str) -> None:
    meter = EnergyMeter.open(gpus, False, 0, nvml_loader=loader(nvml))
    assert meter.counters == [] and meter.notes == [note]
    assert meter.results((0, S), SERVING)["results.energy.note"] == note
    meter.stop()
    assert nvml.shutdowns == 1


def test_a_counter_that_fails_or_resets_during_the_run_is_a_note() -> None:
    clock = Clock()
    nvml = FakeNvml(clock, [100.0, 100.0])
    meter = EnergyMeter.open("0,1", False, 0, nvml_loader=loader(nvml))
    sampled(meter, clock, [0.0])
    nvml.failing = 1
    sampled(meter, clock, [1.0, 2.0])
    out = meter.results((round(0.5 * S), round(1.5 * S)), SERVING)
    # GPU 0 alone would understate the server: neither is counted
    assert out["results.energy.gpu_j"] is None
    assert out["results.energy.note"] == (
        "GPU 1's energy counter failed during the run (RuntimeError: GPU is lost)")

    went_back = EnergyMeter([energy.NvmlCounter(FakeNvml(clock, [1.0]), 0)], 0)
    went_back.samples["GPU 0"] = [(0, 500.0), (S, 10.0)]  # a driver reload reset it
    out = went_back.results((0, S), SERVING)
    assert out["results.energy.note"] == (
        "GPU 0's energy counter went backwards during the window")


def test_no_window_is_a_note() -> None:
    clock = Clock()
    meter = sampled(EnergyMeter.open("0", False, 0, nvml_loader=loader(FakeNvml(clock, [1.0]))),
                    clock, [0.0, 1.0])
    out = meter.results(None, {})
    assert out["results.energy.gpu_j"] is None
    assert out["results.energy.note"] == (
        "no steady-state window (too few requests after the warm-up): no energy")


def test_nothing_asked_for_writes_nothing() -> None:
    meter = EnergyMeter.open("", False, 0, nvml_loader=pytest.fail)  # NVML never opened
    meter.start()
    meter.stop()
    assert meter.results((0, S), SERVING) == {}


def _package(root: Path, name: str, energy_uj: int, max_uj: int) -> Path:
    domain = root / name
    domain.mkdir()
    (domain / "name").write_text("package-" + name.rsplit(":", 1)[1] + "\n")
    (domain / "energy_uj").write_text(f"{energy_uj}\n")
    (domain / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return domain


def test_rapl_across_a_wrap_around_with_the_gpus(tmp_path: Path) -> None:
    package = _package(tmp_path, "intel-rapl:0", 900_000, 1_000_000)
    clock = Clock()
    nvml = FakeNvml(clock, [10.0])
    meter = EnergyMeter.open("0", True, 0, nvml_loader=loader(nvml), rapl_root=tmp_path)
    sampled(meter, clock, [0.0])
    (package / "energy_uj").write_text("100000\n")  # wrapped: 0.2 J later
    sampled(meter, clock, [1.0])
    (package / "energy_uj").write_text("600000\n")  # 0.5 J more
    sampled(meter, clock, [2.0])
    out = meter.results((0, 2 * S), SERVING)
    assert out["results.energy.cpu_j"] == pytest.approx(0.7)
    assert out["results.energy.gpu_j"] == pytest.approx(20.0)
    assert out["results.energy.joules_per_output_token"] == pytest.approx(20.7 / 100)
    assert out["results.energy.scope"] == (
        "GPU 0 (NVML total energy, the whole GPU) + CPU packages intel-rapl:0 (RAPL) over "
        "the steady-state window; includes every process on them, this client included")


def test_no_rapl_is_a_note(tmp_path: Path) -> None:
    meter = EnergyMeter.open("", True, 0, rapl_root=tmp_path)
    assert meter.results((0, S), SERVING) == {
        "results.energy.gpu_j": None, "results.energy.cpu_j": None,
        "results.energy.joules_per_output_token": None,
        "results.energy.joules_per_request": None, "results.energy.scope": "",
        "results.energy.note": f"no CPU energy from RAPL: no RAPL package counters under "
                               f"{tmp_path}"}


def test_the_thread_samples_from_start_to_stop() -> None:
    class Rising:
        kind, name = "gpu", "GPU 0"
        reads = 0

        def read_j(self) -> float:
            self.reads += 1
            return float(self.reads)

    meter = EnergyMeter([Rising()], t0_ns=0, interval_s=0.001)
    meter.start()
    meter.stop()
    samples = meter.samples["GPU 0"]
    assert len(samples) >= 2  # one as it starts, one as it stops, any number between
    assert [v for _, v in samples] == [float(i) for i in range(1, len(samples) + 1)]
    assert all(a[0] <= b[0] for a, b in pairwise(samples))


def test_gpu_lists() -> None:
    assert parse_gpus("0") == (0,) and parse_gpus(" 0, 3 ") == (0, 3) and parse_gpus("") == ()
    for bad in ("0,", "a", "-1", "0;1", "0,,1", "0,0"):
        with pytest.raises(ValueError):
            parse_gpus(bad)


def _plan(*params: str) -> list[dict[str, Any]]:
    return plan_experiments(load_spec(params=[
        "exp.framework=endpoint", "endpoint.url=http://127.0.0.1:8000/v1",
        "endpoint.model=m", "exp.phase=generate", *params]))


def test_the_plan_checks_endpoint_energy_gpus() -> None:
    (experiment,) = _plan("endpoint.energy_gpus=0,1", "endpoint.energy_cpu=true")
    assert experiment["endpoint.energy_gpus"] == "0,1" and experiment["endpoint.energy_cpu"]
    for bad, why in (("gpu0", "not a comma-separated list of GPU indices"),
                     ("1,1", "a GPU index is given twice")):
        with pytest.raises(ConfigError) as caught:
            _plan(f"endpoint.energy_gpus={bad}")
        message = str(caught.value)
        assert "\n" not in message and "endpoint.energy_gpus" in message and why in message
        assert "(0 or 0,1)" in message
