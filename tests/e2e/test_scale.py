"""Data-parallel runs under torchrun, on CPU replicas talking gloo: scaling sweeps into
the scaling reports, replica failures, and two nodes meeting on the loopback address."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dlbench.results.store import Store
from tests.conftest import CliRunner

pytestmark = pytest.mark.slow

FAKE = ["-P", "exp.framework=fake", "-P", "fake.step_ms=10", "-P", "exp.num_warmup_batches=2",
        "-P", "exp.num_batches=20"]


def _records(out: Path) -> list[dict[str, Any]]:
    with Store.in_directory(out, create=False) as store:
        rows = store.records()
    return sorted(rows, key=lambda r: int(r["exp.num_replicas"]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_weak_and_strong_scaling_of_known_steps(dlbench: CliRunner, tmp_path: Path) -> None:
    # Replica batch 4 on 1 and 2 replicas (weak scaling), and an effective batch of 8
    # on 1 and 2 replicas (strong scaling): three experiments, the 2-replica one shared.
    proc = dlbench("run", *FAKE, "-P", "exp.replica_batch=4",
                   "-V", "exp.num_local_replicas=[1, 2]", "-E",
                   '{"condition": {"exp.num_local_replicas": 1},'
                   ' "cases": [{"exp.replica_batch": 4}, {"exp.replica_batch": 8}]}',
                   "--out", "out")
    assert proc.returncode == 0, proc.stderr
    one, one_b8, two = _records(tmp_path / "out")
    if one["exp.replica_batch"] == 8:
        one, one_b8 = one_b8, one
    assert (one["exp.effective_batch"], two["exp.effective_batch"]) == (4, 8)
    assert "results.rank_time" not in one
    # Every replica's figures are kept, and a step is the slowest replica's.
    assert len(two["results.rank_time_data"]) == 2
    assert all(len(times) == 20 for times in two["results.rank_time_data"])
    slowest = [max(a, b) for a, b in zip(*two["results.rank_time_data"], strict=True)]
    assert two["results.time_data"] == slowest
    # Known steps of 10 ms: no step is shorter; the barrier every step ends with
    # costs a little (more when other processes want the two cores).
    for rank_time in two["results.rank_time"]:
        assert 10.0 <= rank_time < 10.0 * 2
    assert two["results.time_min"] >= 10.0 and two["results.time_p50"] < 10.0 * 2
    assert two["results.throughput"] == pytest.approx(8 * 1000 / two["results.time"])
    assert Path(two["exp.log_file"] + ".rank1").is_file()

    report = dlbench("report", "--type", "weak-scaling", "--input", "out", "--format", "json")
    assert report.returncode == 0, report.stderr
    tables = json.loads(report.stdout)["tables"]
    speedup = next(t for t in tables if t["title"].startswith("Speedup"))
    row = next(r for r in speedup["rows"] if r[1] == 4)
    assert 1.0 < row[speedup["columns"].index("2")] <= 2.05

    report = dlbench("report", "--type", "strong-scaling", "--input", "out")
    assert report.returncode == 0, report.stderr
    assert "Efficiency, % = 100 * t1 / (N * tN)" in report.stdout


def test_resnet18_trains_data_parallel(dlbench: CliRunner, tmp_path: Path) -> None:
    proc = dlbench("run", "-P", "exp.model=resnet18", "-P", "exp.image_size=32",
                   "-P", "exp.replica_batch=4", "-P", "exp.num_warmup_batches=1",
                   "-P", "exp.num_batches=3", "-P", "exp.num_local_replicas=2",
                   "--out", "out")
    assert proc.returncode == 0, proc.stderr
    (two,) = _records(tmp_path / "out")
    assert two["exp.status"] == "ok"
    assert len(two["results.rank_throughput"]) == 2
    assert two["results.throughput"] == pytest.approx(8 * 1000 / two["results.time"])
    # The replicas started from the same weights and averaged their gradients: the
    # loss each one saw after the same steps on the same synthetic batch is the same.
    rank1 = Path(two["exp.log_file"] + ".rank1").read_text()
    loss1 = json.loads(rank1.split("__results.loss_last__=")[1].splitlines()[0])
    assert loss1 == pytest.approx(two["results.loss_last"], rel=1e-5)


def test_a_failing_replica_fails_the_experiment_with_its_reason(
    dlbench: CliRunner, tmp_path: Path
) -> None:
    proc = dlbench("run", *FAKE, "-P", "exp.num_local_replicas=2", "-P", "fake.failure=exception",
                   "-P", "fake.failure_rank=1", "-P", "fake.failure_batch=4", "--out", "out")
    assert proc.returncode == 1
    (record,) = _records(tmp_path / "out")
    assert record["exp.status"] == "failure"
    assert record["exp.status_msg"].startswith("rank 1: RuntimeError: fake failure at batch 4")


def test_a_hung_replica_does_not_hang_the_others(dlbench: CliRunner, tmp_path: Path) -> None:
    proc = dlbench("run", *FAKE, "-P", "exp.num_local_replicas=2", "-P", "fake.failure=hang",
                   "-P", "fake.failure_rank=1", "-P", "fake.failure_batch=3",
                   "-P", "exp.collective_timeout=3", "-P", "exp.timeout=120", "--out", "out",
                   timeout=120)
    assert proc.returncode == 1
    (record,) = _records(tmp_path / "out")
    # Replica 0 gave up waiting in the step's collective, long before exp.timeout.
    assert record["exp.status"] == "failure"
    assert "timed out" in record["exp.status_msg"].lower() or "timeout" in (
        record["exp.status_msg"].lower()), record["exp.status_msg"]


def test_two_nodes_meet_on_the_loopback_address(tmp_path: Path) -> None:
    port = _free_port()
    common = [*FAKE, "-P", "exp.replica_batch=4", "-P", "exp.num_nodes=2",
              "-P", f"exp.rendezvous=127.0.0.1:{port}"]
    nodes = [
        subprocess.Popen([sys.executable, "-m", "dlbench", "run", *common,
                          "-P", f"exp.node_rank={rank}", "--out", f"node{rank}"],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for rank in (0, 1)
    ]
    for node in nodes:
        _, err = node.communicate(timeout=180)
        assert node.returncode == 0, err
    (first,) = _records(tmp_path / "node0")
    (second,) = _records(tmp_path / "node1")
    assert first["exp.num_replicas"] == 2 and first["exp.effective_batch"] == 8
    assert first["exp.id"] == second["exp.id"]
    # Both nodes gathered every replica's batch times: the same figures on each.
    assert first["results.rank_time_data"] == second["results.rank_time_data"]
    assert (first["exp.node_rank"], second["exp.node_rank"]) == (0, 1)
