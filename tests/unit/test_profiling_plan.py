"""Profiling's parent side and pure parts: plan-time checks, the nsys and ncu command
lines, ncu's CSV (a recorded sample), and the summaries of a window's events."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.errors import ConfigError
from dlbench.launch.command import worker_argv
from dlbench.measure.ncu import UTILIZATION_METRICS, core_utilization, read_ncu_csv
from dlbench.measure.profile_summary import OperatorTime, busy_ms, top_operators

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "ncu" / "core_util.csv"


def plan(*params: str) -> dict[str, object]:
    (experiment,) = plan_experiments(load_spec(params=list(params)))
    return experiment


def test_a_profiler_the_framework_does_not_declare_is_refused() -> None:
    with pytest.raises(ConfigError) as error:
        plan("exp.framework=fake", "exp.model=toy", "exp.profile=torch")
    assert str(error.value) == ("exp.profile='torch' (from -P flag) is not supported by "
                                "framework fake; supported: none")
    assert plan("exp.model=toy", "exp.profile=torch")["exp.profile"] == "torch"


def test_nsys_and_ncu_need_a_gpu_and_the_tool_on_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"exp.gpus=''.*names no GPU"):
        plan("exp.model=toy", "exp.profile=nsys")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as error:
        plan("exp.model=toy", "exp.profile=ncu", "exp.gpus=0")
    assert "needs `ncu` (Nsight Compute) on PATH" in str(error.value)
    tool = tmp_path / "ncu"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    assert plan("exp.model=toy", "exp.profile=ncu", "exp.gpus=0")["exp.profile"] == "ncu"


def test_other_plan_checks_of_the_new_phase_and_auto_batch() -> None:
    with pytest.raises(ConfigError, match="is not one"):
        plan("exp.model=toy", "exp.phase=train_to_accuracy")
    with pytest.raises(ConfigError, match=r"exp.target_accuracy=1.5 .*must be in \(0, 1\]"):
        plan("exp.model=deep_mnist", "exp.phase=train_to_accuracy", "exp.target_accuracy=1.5")
    for name in ("exp.repeat", "exp.parallel_jobs"):
        with pytest.raises(ConfigError) as error:
            plan("exp.model=deep_mnist", "exp.phase=train_to_accuracy", f"{name}=2")
        assert str(error.value) == (
            f"{name}=2 (from -P flag): runs to a target accuracy are not combined across "
            f"processes yet; use {name}=1 (exp.phase='train_to_accuracy' (from -P flag))")
    with pytest.raises(ConfigError, match="probes batches in one worker"):
        plan("exp.framework=fake", "exp.model=toy", "exp.replica_batch=auto",
             "exp.num_local_replicas=2")
    auto = plan("exp.framework=fake", "exp.model=toy", "exp.replica_batch=auto")
    assert auto["exp.replica_batch"] == auto["exp.effective_batch"] == "auto"


def test_nsys_and_ncu_wrap_the_worker_command() -> None:
    base = {"exp.framework": "pytorch", "exp.num_replicas": 1, "exp.log_file": "/r/x.log"}
    plain = worker_argv({**base, "exp.profile": "torch"}, Path("e.json"), python="py")
    assert plain == ["py", "-m", "dlbench.worker", "e.json"]
    nsys = worker_argv({**base, "exp.profile": "nsys"}, Path("e.json"), python="py")
    assert nsys[:3] == ["nsys", "profile", "--capture-range=cudaProfilerApi"]
    assert "--output=/r/x.log.nsys-rep" in nsys and nsys[-4:] == plain
    ncu = worker_argv({**base, "exp.profile": "ncu", "exp.ncu_metrics": []}, Path("e.json"),
                      python="py")
    assert ncu[0] == "ncu" and "--profile-from-start=off" in ncu and "--csv" in ncu
    assert "--log-file=/r/x.log.ncu.csv" in ncu and ncu[-4:] == plain
    metrics = next(a for a in ncu if a.startswith("--metrics=")).split("=", 1)[1].split(",")
    assert set(UTILIZATION_METRICS.values()) < set(metrics)
    assert "gpu__time_duration.sum" in metrics
    own = worker_argv({**base, "exp.profile": "ncu", "exp.ncu_metrics": ["a.b", "c.d"]},
                      Path("e.json"), python="py")
    assert "--metrics=a.b,c.d" in own


def test_ncu_core_utilisation_is_weighted_by_kernel_duration() -> None:
    kernels = read_ncu_csv(SAMPLE.read_text(encoding="utf-8"))
    assert sorted(kernels) == ["0", "1", "2"]
    assert kernels["0"]["gpu__time_duration.sum"] == (10000.0, "nsecond")
    util = core_utilization(kernels)
    # Durations 10, 30 and 2 µs; the third kernel has no tensor-pipe value (n/a).
    assert util["kernels"] == 3 and util["duration_ms"] == pytest.approx(0.042)
    assert util["fma"] == pytest.approx((60 * 10 + 5 * 30 + 20 * 2) / 42)
    assert util["fp16"] == pytest.approx(10 * 30 / 42)
    assert util["tensor"] == pytest.approx(70 * 30 / 40)
    assert util["sfu"] == pytest.approx((2 * 10 + 40 * 2) / 42)
    with pytest.raises(ValueError, match="no ncu CSV header"):
        read_ncu_csv("==PROF== nothing profiled\n")


def test_busy_time_counts_overlaps_once_and_top_ops_rank_by_self_time() -> None:
    assert busy_ms([]) == 0.0
    assert busy_ms([(0, 1000), (200, 300), (900, 2000), (5000, 5500)]) == 2.5
    ops = [OperatorTime("a", 2, 100.0, 3000.0), OperatorTime("b", 5, 900.0, 1000.0),
           OperatorTime("c", 1, 0.0, 0.0)]
    on_device = top_operators(ops, 10.0, 5, by_device=True)
    assert [(o["name"], o["share"]) for o in on_device] == [("a", 0.3), ("b", 0.1)]
    assert [o["name"] for o in top_operators(ops, 10.0, 1, by_device=False)] == ["b"]


def test_the_sample_is_in_ncus_csv_format() -> None:
    header = next(line for line in SAMPLE.read_text().splitlines() if line.startswith('"ID"'))
    assert header.split(",")[-3:] == ['"Metric Name"', '"Metric Unit"', '"Metric Value"']
    assert os.path.getsize(SAMPLE) < 10_000
