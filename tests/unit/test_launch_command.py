"""The worker's command line: plain, or under torchrun; where each replica logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.launch.command import (
    WORKER_ENV_KEY,
    note_worker_env,
    passed_through,
    torchrun_arguments,
    uses_torchrun,
    worker_argv,
    worker_env,
)
from dlbench.launch.container import FORWARDED, FORWARDED_PREFIXES
from dlbench.measure.sysinfo import PERFORMANCE_ENV_VARS, split_cores
from dlbench.results.log.parser import parse_log
from dlbench.results.stats import rank_results, step_times
from dlbench.worker.experiment import log_path
from tests.integration.worker import plan_one


def _plan(tmp_path: Path, *params: str) -> dict[str, Any]:
    return plan_one(tmp_path, "exp.framework=fake", *params)


def test_one_replica_is_the_plain_worker(tmp_path: Path) -> None:
    exp = _plan(tmp_path)
    assert not uses_torchrun(exp)
    assert worker_argv(exp, Path("e.json"), "py") == ["py", "-m", "dlbench.worker", "e.json"]


def test_local_replicas_run_under_standalone_torchrun(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_local_replicas=2")
    assert worker_argv(exp, Path("e.json"), "py") == [
        "py", "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
        "--nproc-per-node=2", "--max-restarts=0", "--monitor-interval=0.5",
        "-m", "dlbench.worker", "e.json"]


def test_nodes_meet_at_the_c10d_rendezvous(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_nodes=2", "exp.num_local_replicas=4",
                "exp.rendezvous=node01:29500", "exp.node_rank=1")
    args = torchrun_arguments(exp)
    assert "--nnodes=2" in args and "--nproc-per-node=4" in args
    assert "--rdzv-backend=c10d" in args and "--rdzv-endpoint=node01:29500" in args
    assert f"--rdzv-id={exp['exp.id']}" in args
    # c10d orders the nodes itself; torchrun ignores (and warns about) a node rank.
    assert not any(a.startswith("--node-rank") for a in args)
    assert "--standalone" not in args


def test_static_rendezvous_takes_the_node_rank(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_nodes=2", "exp.rendezvous=10.0.0.1:29500",
                "exp.rendezvous_backend=static", "exp.node_rank=1")
    args = torchrun_arguments(exp)
    assert "--rdzv-backend=static" in args and "--node-rank=1" in args


def test_replicas_share_the_cores_as_threads(tmp_path: Path) -> None:
    exp = _plan(tmp_path, "exp.num_local_replicas=2")
    env = worker_env(exp, {"PATH": "/bin"})
    assert env["PYTHONUNBUFFERED"] == "1"
    assert int(env["OMP_NUM_THREADS"]) >= 1
    assert worker_env(exp, {"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in worker_env(_plan(tmp_path), {})


@pytest.mark.parametrize(
    ("cores", "world", "shares"),
    [
        ([0, 1], 2, [[0], [1]]),
        ([0, 1, 2, 3, 4], 2, [[0, 1, 2], [3, 4]]),
        ([4, 5, 6, 7], 4, [[4], [5], [6], [7]]),
        ([0, 1, 2, 3, 4, 5, 6], 3, [[0, 1, 2], [3, 4], [5, 6]]),
    ],
)
def test_replicas_share_cores_contiguous_and_disjoint(
    cores: list[int], world: int, shares: list[list[int]]
) -> None:
    assert split_cores(cores, world) == shares


def test_each_replica_has_its_log() -> None:
    params = {"exp.log_file": "out/logs/x.log"}
    assert log_path(params, {}) == "out/logs/x.log"
    assert log_path(params, {"LOCAL_RANK": "0", "RANK": "2"}) == "out/logs/x.log"
    assert log_path(params, {"LOCAL_RANK": "1", "RANK": "3"}) == "out/logs/x.log.rank3"
    assert log_path(params, {"LOCAL_RANK": "0", "DLBENCH_LOG_FILE": "n1.log"}) == "n1.log"


def test_a_step_takes_the_slowest_replicas_time() -> None:
    assert step_times([[10.0, 12.0, 9.0], [11.0, 9.0, 9.5]]) == [11.0, 12.0, 9.5]
    with pytest.raises(ValueError, match="different numbers of steps"):
        step_times([[1.0], [1.0, 2.0]])


def test_rank_figures() -> None:
    figures = rank_results([[10.0, 30.0], [40.0, 40.0]], replica_batch=8)
    assert figures["results.rank_time"] == [20.0, 40.0]
    assert figures["results.rank_throughput"] == [400.0, 200.0]
    assert figures["results.rank_time_data"] == [[10.0, 30.0], [40.0, 40.0]]


def test_the_worker_gets_the_allow_list_the_listed_names_and_dlbench_s_own(
    tmp_path: Path,
) -> None:
    parent = {"PATH": "/bin", "LC_ALL": "C", "CUDA_VISIBLE_DEVICES": "1", "OMP_NUM_THREADS": "4",
              "SLURM_JOB_ID": "7", "DLBENCH_STRICT_KEYS": "1", "AWS_SECRET_ACCESS_KEY": "s3",
              "GITHUB_TOKEN": "t", "HF_TOKEN": "h", "TF_TOKEN_app_terraform_io": "tf",
              "TF_VAR_password": "p", "TF_CPP_MIN_LOG_LEVEL": "2", "LCX": "not a locale",
              "MY_FLAG": "on", "MY_OTHER": "2",
              "MY_THIRD": "3", "DLBENCH_WORKER_ENV": " MY_FLAG,MY_OTHER  NOT_SET "}
    assert worker_env(_plan(tmp_path), parent) == {
        "PATH": "/bin", "LC_ALL": "C", "CUDA_VISIBLE_DEVICES": "1", "OMP_NUM_THREADS": "4",
        "SLURM_JOB_ID": "7", "DLBENCH_STRICT_KEYS": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
        "MY_FLAG": "on", "MY_OTHER": "2",
        "DLBENCH_WORKER_ENV": " MY_FLAG,MY_OTHER  NOT_SET ", "PYTHONUNBUFFERED": "1"}
    # An empty list passes nothing more; nothing of the parent's is changed.
    assert worker_env(_plan(tmp_path), {"MY_FLAG": "on", "DLBENCH_WORKER_ENV": ""}) == {
        "DLBENCH_WORKER_ENV": "", "PYTHONUNBUFFERED": "1"}
    assert parent["AWS_SECRET_ACCESS_KEY"] == "s3"


def test_what_goes_into_a_container_is_on_the_allow_list() -> None:
    # The container wrapper forwards a subset of the worker's environment: each of its
    # names must reach the worker first, or it could never be forwarded.
    assert [name for name in FORWARDED if not passed_through(name)] == []
    assert all(passed_through(f"{prefix}X") for prefix in FORWARDED_PREFIXES)
    # So must the variables the worker records as changing performance (sys.env).
    assert [name for name in PERFORMANCE_ENV_VARS if not passed_through(name)] == []


def test_the_names_go_in_the_log_and_parse_back(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    with open(log, "ab") as handle:
        note_worker_env(handle, {"PATH": "/secret/bin", "HOME": "/home/me"})
    assert parse_log(log)[0][WORKER_ENV_KEY] == ["HOME", "PATH"]
    assert "/secret/bin" not in log.read_text()
