"""The resource monitor with stand-ins for NVML and RAPL: known answers on a CPU box."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import dlbench.measure.monitor as monitor_module
from dlbench.measure.cpu_memory import tree_pids
from dlbench.measure.monitor import ResourceMonitor
from dlbench.measure.nvml import throttle_names
from dlbench.measure.rapl import RaplEnergy
from dlbench.measure.timing import run_batches


class FakeNvml:
    """Two GPUs. GPU 0: our process and one other, a power cap, an energy counter that
    rises 1 J per read. GPU 1: no processes, no energy counter, a constant 100 W."""

    def __init__(self) -> None:
        self.shutdowns = 0
        self.energy_mj = 5_000_000

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        return SimpleNamespace(gpu=90 if handle == 0 else 0, memory=40)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return SimpleNamespace(used=2 * 2**30, total=80 * 2**30)

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        return 300_000 if handle == 0 else 100_000  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        if handle == 1:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        self.energy_mj += 1000
        return self.energy_mj

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        assert sensor == 0
        return 65

    def nvmlDeviceGetClockInfo(self, handle: int, clock: int) -> int:
        assert clock == 1  # SM
        return 1755

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: int) -> int:
        return 0x4 | 0x1 if handle == 0 else 0x1  # sw power cap + idle; idle

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        if handle == 0:
            return [SimpleNamespace(pid=os.getpid()), SimpleNamespace(pid=2**22 + 1)]
        return []


def _run_monitor(monitor: ResourceMonitor, seconds: float) -> None:
    monitor.start()
    monitor.mark("timed_start")
    time.sleep(seconds)
    monitor.mark("timed_end")
    monitor.stop()


def test_gpu_samples_and_summaries_from_nvml(tmp_path: Path) -> None:
    nvml = FakeNvml()
    monitor = ResourceMonitor(0.05, nvml=nvml, rapl_root=tmp_path)
    _run_monitor(monitor, 0.3)
    series, summary = monitor.series(), monitor.summary()
    assert series["results.use.gpu0_util_percent"][0] == 90
    assert series["results.use.gpu0_memory_used_mb"][0] == 2048.0
    assert summary["results.use.gpu0_power_w_mean"] == 300.0
    assert summary["results.use.gpu0_temperature_c_max"] == 65
    assert summary["results.use.gpu0_sm_clock_mhz_mean"] == 1755
    assert summary["results.use.gpu0_used"] is True
    assert summary["results.use.gpu1_used"] is False
    assert summary["results.use.gpu0_other_processes_max"] == 1
    assert summary["results.use.gpu0_throttle_reasons"] == {"gpu_idle": 1.0, "sw_power_cap": 1.0}
    # GPU 0 energy from its counter: 1 J per sample read between the two marks.
    marks = monitor.marks
    assert summary["results.use.gpu0_energy_j"] == pytest.approx(
        marks["timed_end"] - marks["timed_start"])
    # GPU 1 has no counter: 100 W integrated over the window.
    window = series["results.use.timed"]
    assert summary["results.use.gpu1_energy_j"] == pytest.approx(
        100.0 * (window[1] - window[0]), rel=1e-3)
    assert summary["results.use.power_w"] > 100.0
    assert nvml.shutdowns == 1
    assert monitor.notes == ["monitor: CPU energy skipped: no RAPL package counters under "
                             f"{tmp_path}"]


class ThreadRecordingNvml(FakeNvml):
    """FakeNvml that notes, for every NVML call, the thread it was made on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    def __getattribute__(self, name: str) -> Any:
        attribute = super().__getattribute__(name)
        if name.startswith("nvml") and callable(attribute):
            calls = super().__getattribute__("calls")

            def recorded(*args: Any) -> Any:
                calls.append((name, threading.get_ident()))
                return attribute(*args)
            return recorded
        return attribute


def test_no_nvml_call_on_the_workers_thread_during_the_timed_section(tmp_path: Path) -> None:
    # The timing loop with the monitor's marks, as the worker runs it: every NVML call
    # between the timed section's start and end is the monitor thread's, and the marks'
    # samples (energy read at both ends) are taken all the same.
    nvml = ThreadRecordingNvml()
    monitor = ResourceMonitor(60.0, nvml=nvml, rapl_root=tmp_path)  # marks only
    monitor.start()
    during: list[tuple[str, int]] = []

    def mark(name: str, batch: int) -> None:
        if name == "timed_start":
            nvml.calls.clear()
        monitor.mark(name)
        if name == "timed_end":
            during.extend(nvml.calls)

    timing = run_batches(lambda index: time.sleep(0.002), lambda: None, 2, 20, mark=mark)
    monitor.stop()
    worker = threading.get_ident()
    assert len(timing.times_ms) == 20
    assert all(thread != worker for _, thread in during)
    # Afterwards too, but for releasing NVML when the monitor stops.
    assert all(thread != worker for name, thread in nvml.calls if name != "nvmlShutdown")
    energy = [call for call in nvml.calls if call[0] == "nvmlDeviceGetTotalEnergyConsumption"]
    assert len(energy) >= 4  # two GPUs, two marks: read on the monitor's thread
    assert set(monitor.marks) == {"timed_start", "timed_end"}
    assert monitor.marks["timed_end"] > monitor.marks["timed_start"]
    assert monitor.summary()["results.use.gpu0_energy_j"] == pytest.approx(1.0)  # 1 J a read


def test_no_nvml_is_one_note(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(monitor_module, "load_nvml",
                        lambda: (None, "NVML unavailable (NVML Shared Library Not Found)"))
    monitor = ResourceMonitor(0.05, rapl_root=tmp_path)
    _run_monitor(monitor, 0.1)
    gpu_notes = [n for n in monitor.notes if "GPU" in n]
    assert gpu_notes == ["monitor: GPU monitoring skipped: NVML unavailable "
                         "(NVML Shared Library Not Found)"]
    assert not any("gpu" in key for key in monitor.series())


def _rapl_domain(root: Path, name: str, label: str, energy: int, max_range: int) -> Path:
    domain = root / name
    domain.mkdir(parents=True)
    (domain / "name").write_text(label + "\n")
    (domain / "energy_uj").write_text(f"{energy}\n")
    (domain / "max_energy_range_uj").write_text(f"{max_range}\n")
    return domain


def test_rapl_sums_packages_and_handles_wraparound(tmp_path: Path) -> None:
    package0 = _rapl_domain(tmp_path, "intel-rapl:0", "package-0", 900_000, 1_000_000)
    package1 = _rapl_domain(tmp_path, "intel-rapl:1", "package-1", 10, 1_000_000)
    _rapl_domain(tmp_path, "intel-rapl:0:0", "core", 5, 1_000_000)  # part of package 0
    _rapl_domain(tmp_path, "intel-rapl:2", "psys", 5, 1_000_000)  # the whole platform
    rapl = RaplEnergy(tmp_path)
    assert len(rapl.domains) == 2
    # Package 0 wraps: 900000 -> 100000 is 1000000 - 900000 + 100000 = 200000 µJ.
    # Package 1 rises by 300000 µJ. Total 0.5 J.
    (package0 / "energy_uj").write_text("100000\n")
    (package1 / "energy_uj").write_text("300010\n")
    assert rapl.joules() == pytest.approx(0.5)
    (package0 / "energy_uj").write_text("600000\n")
    assert rapl.joules() == pytest.approx(1.0)


def test_window_is_the_timed_section(tmp_path: Path) -> None:
    # With a 60 s interval the thread never samples: only the two marks exist, and the
    # window is the end mark, whose CPU use covers the timed section. This process's
    # CPU time over the section is the known answer (to the kernel's 10 ms tick).
    monitor = ResourceMonitor(60.0, rapl_root=tmp_path, gpus=False)
    monitor.start()
    monitor.mark("timed_start")
    # The monitor's thread takes the mark's sample: the known answer starts there.
    while "timed_start" not in monitor.marks:
        time.sleep(0.001)
    cpu_start = time.process_time()
    deadline = time.perf_counter() + 0.3
    while time.perf_counter() < deadline:
        pass
    cpu_seconds = time.process_time() - cpu_start
    monitor.mark("timed_end")
    monitor.stop()
    summary = monitor.summary()
    start, end = monitor.series()["results.use.timed"]
    assert summary["results.use.samples"] == 1
    assert len(monitor.series()["results.use.time"]) == 2
    measured = summary["results.use.cpu_percent_mean"] / 100 * (end - start)
    assert measured == pytest.approx(cpu_seconds, abs=0.03)
    assert summary["results.use.rss_mb_max"] > 10.0


def test_process_tree_includes_grandchildren() -> None:
    child = subprocess.Popen(["sh", "-c", "sleep 5 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 5
        pids: list[int] = []
        while time.monotonic() < deadline:
            pids = tree_pids(os.getpid())
            if len(pids) >= 3:
                break
            time.sleep(0.02)
        assert pids[0] == os.getpid()
        assert child.pid in pids
        assert len(pids) >= 3  # sh and its sleep
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # sh and its sleep: the group we started
        child.wait()


def test_throttle_names() -> None:
    assert throttle_names(0x1 | 0x4 | 0x40) == ["gpu_idle", "sw_power_cap",
                                               "hw_thermal_slowdown"]
    assert throttle_names(0) == []


@pytest.mark.skipif(sys.platform != "linux", reason="Linux /proc")
def test_process_tree_of_a_missing_pid_is_itself() -> None:
    assert tree_pids(2**22 + 7) == [2**22 + 7]
