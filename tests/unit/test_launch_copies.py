"""exp.parallel_jobs: shares of the node, the copies' experiments, their limits, one
record from their records, and the plan-time checks."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.config.run_params import copy_count
from dlbench.errors import ConfigError
from dlbench.launch.copies.copies import (
    Share,
    combine_copies,
    copies_outcome,
    copy_env,
    copy_experiment,
    plan_shares,
    wait_copies,
    with_memory_cap,
)
from dlbench.launch.copies.limits import Limits
from dlbench.measure.sysinfo import cpu_list_text, split_cores

MIB = 2**20


def plan(*params: str) -> dict[str, Any]:
    spec = load_spec(params=["exp.framework=fake", "exp.model=toy", *params])
    (experiment,) = plan_experiments(spec)
    return experiment


def error_of(*params: str) -> str:
    with pytest.raises(ConfigError) as err:
        plan(*params)
    return str(err.value)


def test_split_cores_contiguous_disjoint_leftovers_first() -> None:
    assert split_cores([0, 1, 2, 3, 4, 5, 6, 7], 4) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert split_cores([2, 3, 4, 5, 6], 2) == [[2, 3, 4], [5, 6]]
    assert split_cores([0, 1, 2], 3) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="cannot split 2 cores into 3"):
        split_cores([0, 1], 3)


def test_cpu_list_text() -> None:
    assert cpu_list_text([3, 0, 1, 2, 8, 10, 11]) == "0-3,8,10-11"
    assert cpu_list_text([5]) == "5"


def test_shares_of_cores_memory_and_gpus() -> None:
    experiment = {"exp.parallel_jobs": 2, "exp.gpus": "0,1", "exp.parallel_memory_mb": 0}
    shares = plan_shares(experiment, cores=[0, 1, 2, 3, 4], memory_bytes=1000 * MIB)
    assert shares == [
        Share(1, 2, (0, 1, 2), 500 * MIB, "0"),
        Share(2, 2, (3, 4), 500 * MIB, "1"),
    ]
    own = plan_shares({**experiment, "exp.parallel_memory_mb": 64, "exp.gpus": ""},
                      cores=[0, 1], memory_bytes=1000 * MIB)
    assert [(s.memory_mb, s.gpu) for s in own] == [(64, ""), (64, "")]


def test_gpus_word_is_one_copy_per_gpu() -> None:
    assert copy_count({"exp.parallel_jobs": "gpus", "exp.gpus": "0,2,5"}) == 3
    assert copy_count({"exp.parallel_jobs": 1, "exp.gpus": "0,2,5"}) == 1


def test_copy_experiment_has_its_gpu_log_threads_and_share() -> None:
    experiment = plan("exp.parallel_jobs=2")
    experiment.update({"exp.framework": "pytorch", "pytorch.num_threads": 0,
                       "exp.log_file": "/run/logs/x.log", "exp.gpus": "0,1"})
    share = Share(2, 2, (4, 5, 6), 300 * MIB, "1")
    copy = copy_experiment(experiment, share, "held by test")
    assert copy["exp.gpus"] == "1"
    assert copy["exp.log_file"] == "/run/logs/x.log.copy2"
    assert copy["pytorch.num_threads"] == 3
    assert (copy["exp.copy"], copy["exp.copy_cpus"], copy["exp.copy_memory_mb"]) == (2, "4-6", 300)
    assert copy["exp.copy_limits"] == "held by test"
    assert experiment["exp.gpus"] == "0,1"  # the experiment itself is left alone
    # A thread count the user set is the user's.
    assert copy_experiment({**experiment, "pytorch.num_threads": 1}, share)[
        "pytorch.num_threads"] == 1
    assert copy_env({"PATH": "/bin"}, share) == {"PATH": "/bin", "OMP_NUM_THREADS": "3"}


def test_num_local_replicas_is_one_per_copy() -> None:
    experiment = plan("exp.gpus=0,1", "exp.parallel_jobs=2")
    assert (experiment["exp.num_local_replicas"], experiment["exp.num_replicas"],
            experiment["exp.effective_batch"]) == (1, 1, 16)
    per_gpu = plan("exp.gpus=0,1", "exp.parallel_jobs=gpus")
    assert per_gpu["exp.num_replicas"] == 1
    assert plan("exp.gpus=0,1", "exp.framework=pytorch")["exp.num_local_replicas"] == 2


def _copy(number: int, time_ms: float, times: Sequence[float], **more: Any) -> dict[str, Any]:
    return {"exp.status": "ok", "exp.status_msg": "", "exp.log_file": f"x.log.copy{number}",
            "exp.copy_cpus": str(number - 1), "exp.gpus": "", "sys.cpu_affinity": str(number - 1),
            "sys.hostname": "node", "results.time": time_ms, "results.time_data": list(times),
            "results.throughput": 4 * 1000 / time_ms, "results.throughput_unit": "samples/s",
            "results.num_batches": len(times), "results.stop_reason": "count",
            "results.start_time": f"2025-01-01T00:00:0{number}", "results.stable": True,
            "results.unstable_reasons": [], "results.end_time": f"2025-01-01T00:01:0{number}",
            **more}


def test_combined_record_sums_throughput_and_averages_time() -> None:
    experiment = {"exp.id": "abc", "exp.gpus": "", "exp.log_file": "x.log",
                  "exp.parallel_jobs": 2}
    copies = [_copy(1, 10.0, [9.0, 11.0], **{"results.tflops": 1.0, "results.mfu": 0.1}),
              _copy(2, 20.0, [20.0, 20.0], **{"results.tflops": 0.5, "results.mfu": 0.05})]
    record = combine_copies(experiment, copies, "rlimit")
    assert record["results.copy_throughput"] == [400.0, 200.0]
    assert record["results.throughput"] == 600.0
    assert record["results.time"] == 15.0
    assert record["results.copy_time"] == [10.0, 20.0]
    assert record["results.copy_num_batches"] == [2, 2]
    assert record["results.time_data"] == [9.0, 11.0, 20.0, 20.0]
    assert record["results.time_max"] == 20.0
    assert record["results.tflops"] == 1.5
    assert record["results.mfu"] == pytest.approx(0.15)  # CPU copies share one peak
    assert record["results.copy_cpu_affinity"] == ["0", "1"]
    assert record["results.copy_log_files"] == ["x.log.copy1", "x.log.copy2"]
    assert record["results.num_batches"] == 4
    assert record["results.start_time"] == "2025-01-01T00:00:01"
    assert record["results.end_time"] == "2025-01-01T00:01:02"
    assert record["exp.log_file"] == "x.log" and "sys.cpu_affinity" not in record
    assert (record["exp.status"], record["results.copy_isolation"]) == ("ok", "rlimit")
    on_gpus = combine_copies({**experiment, "exp.gpus": "0,1"}, copies, "cgroup")
    assert on_gpus["results.mfu"] == pytest.approx(0.075)  # each GPU has its own peak


def test_failed_copy_names_itself_and_its_memory() -> None:
    experiment = {"exp.id": "abc", "exp.log_file": "x.log"}
    failed = {**_copy(2, 10.0, [10.0]), "exp.status": "failure",
              "exp.status_msg": "out of memory in set-up (peak RSS 39.5 MiB): MemoryError: "
                                "(at fake.py:54 in setup)"}
    killed = {**_copy(1, 10.0, [10.0]), "exp.status": "failure",
              "exp.status_msg": "worker killed by SIGTERM"}
    record = copies_outcome(experiment, [killed, failed], 1, ["", "over the cap (x)"], "rlimit")
    assert record["exp.status"] == "failure"
    # One "out of memory", the cap that was hit, and no RSS figure beside it.
    assert record["exp.status_msg"] == (
        "copy 2 of 2: out of memory in set-up: over the cap (x): MemoryError: "
        "(at fake.py:54 in setup)")
    assert not any(k.startswith("results.") and k not in (
        "results.copies", "results.copy_isolation", "results.copy_log_files") for k in record)
    assert with_memory_cap("worker killed by SIGKILL in set-up", "over the cap") == (
        "out of memory: over the cap: worker killed by SIGKILL in set-up")
    assert with_memory_cap("out of memory (peak RSS 1 GiB): MemoryError", "over the cap") == (
        "out of memory: over the cap: MemoryError")
    timeout = [{**c, "exp.status": "timeout", "exp.status_msg": "timed out after 5 s"}
               for c in (killed, failed)]
    assert copies_outcome(experiment, timeout, None, ["", ""], "rlimit")[
        "exp.status_msg"] == "timed out after 5 s"


def _fake_cgroup(root: Path, controllers: str) -> Path:
    root.mkdir()
    (root / "cgroup.controllers").write_text(controllers)
    (root / "cgroup.subtree_control").write_text("")
    return root


def test_cgroup_v2_limits_are_written_and_removed(tmp_path: Path) -> None:
    # A folder that stands in for a cgroup2 directory: what dlbench writes is checked;
    # the kernel's side is not (this machine may not let a test create cgroups).
    base = _fake_cgroup(tmp_path / "cg", "cpuset cpu io memory pids\n")
    shares = [Share(1, 2, (0,), 100 * MIB, ""), Share(2, 2, (1, 2, 3), 100 * MIB, "")]
    created: list[Path] = []

    with Limits({}, shares, cgroup_dir=base) as limits:
        assert limits.mechanism == "cgroup"
        assert (base / "cgroup.subtree_control").read_text() == "+cpuset +memory"
        for share in shares:
            path = base / f"dlbench-{os.getpid()}-copy{share.number}"
            created.append(path)
            assert (path / "memory.max").read_text() == str(100 * MIB)
            assert (path / "cpuset.cpus").read_text() == cpu_list_text(share.cpus)
            assert str(path) in limits.note(share)
        (created[1] / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
        assert limits.out_of_memory(shares[1], "worker killed by SIGKILL") == (
            "over the copy's memory cap of 100 MiB (exp.parallel_memory_mb; killed by the "
            "kernel at its cgroup's memory.max)")
        assert limits.out_of_memory(shares[0], "worker killed by SIGKILL") == ""
        # The copy joins its cgroup from its own process, before it runs.
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            preexec_fn=limits.setup(shares[0]), capture_output=True, text=True, check=True)
        assert (created[0] / "cgroup.procs").read_text() == child.stdout.strip()
        for path in created:  # the files stand in for the kernel's own
            for file in path.iterdir():
                file.unlink()
    assert not any(path.exists() for path in created)
    assert (base / "cgroup.subtree_control").read_text() == "-cpuset -memory"


def test_without_cgroup_controllers_affinity_and_rlimit_hold_the_copy(tmp_path: Path) -> None:
    base = _fake_cgroup(tmp_path / "cg", "cpu io\n")
    share = Share(1, 1, (min(os.sched_getaffinity(0)),), 256 * MIB, "")
    with Limits({}, [share], cgroup_dir=base) as limits:
        assert limits.mechanism == "rlimit"
        assert "no cpuset or memory controller" in limits.note(share)
        child = subprocess.run(
            [sys.executable, "-c",
             "import os, resource; print(sorted(os.sched_getaffinity(0)), "
             "resource.getrlimit(resource.RLIMIT_DATA)[0])"],
            preexec_fn=limits.setup(share), capture_output=True, text=True, check=True)
        assert child.stdout.split() == [f"[{share.cpus[0]}]", str(256 * MIB)]
        assert limits.out_of_memory(share, "MemoryError: ") == (
            "over the copy's memory cap of 256 MiB (exp.parallel_memory_mb; RLIMIT_DATA, "
            "which counts memory allocated, resident or not)")
        # OpenBLAS's message, from NumPy loading under the cap with 8 threads' buffers
        assert limits.out_of_memory(
            share, "worker exited with status 1: OpenBLAS error: Memory allocation still "
                   "failed after 10 retries, giving up.").startswith(
            "over the copy's memory cap of 256 MiB")


def test_docker_copies_are_held_by_the_engine() -> None:
    share = Share(1, 1, (0,), 256 * MIB, "")
    with Limits({"exp.docker": True, "exp.container_engine": "docker"}, [share]) as limits:
        assert limits.mechanism == "docker"
        assert "--cpuset-cpus" in limits.note(share)


def _sleeper(seconds: float, code: int = 0) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c",
                             f"import time, sys; time.sleep({seconds}); sys.exit({code})"])


def test_wait_copies_returns_the_first_failure_at_once() -> None:
    processes = [_sleeper(30), _sleeper(0.2, code=3)]
    try:
        assert wait_copies(processes, timeout=20) == (1, False)
        # At once: the 30 s sleeper still runs (stopping the others is the runner's).
        assert processes[0].poll() is None
    finally:
        processes[0].kill()
        processes[0].wait()


def test_wait_copies_times_out_and_waits_for_all() -> None:
    processes = [_sleeper(30), _sleeper(0.1)]
    try:
        assert wait_copies(processes, timeout=0.8) == (None, True)
    finally:
        processes[0].kill()
        processes[0].wait()
    assert wait_copies([_sleeper(0.1), _sleeper(0.3)], timeout=20) == (None, False)


def test_plan_refuses_what_cannot_run() -> None:
    cores = len(os.sched_getaffinity(0))
    assert error_of("exp.parallel_jobs=0") == (
        "exp.parallel_jobs=0 (from -P flag) must be >= 1, or 'gpus'")
    assert error_of(f"exp.parallel_jobs={cores + 1}") == (
        f"exp.parallel_jobs={cores + 1} (from -P flag): {cores + 1} copies need a core each, "
        f"and this node has {cores} usable cores")
    assert "names 1" in error_of("exp.gpus=0", "exp.parallel_jobs=2")
    assert "exp.gpus='' (from default) names none" in error_of("exp.parallel_jobs=gpus")
    assert error_of("exp.parallel_jobs=2", "exp.num_nodes=2").startswith(
        "exp.parallel_jobs=2 (from -P flag) runs copies of one replica each, and "
        "exp.num_replicas=2 (from default) asks for a data-parallel run")
    assert "use one or the other" in error_of("exp.parallel_jobs=2",
                                              "exp.num_local_replicas=2")
    assert "must be >= 0" in error_of("exp.parallel_memory_mb=-5")
    assert "is not an int or 'gpus'" in error_of("exp.parallel_jobs=many")
    assert plan("exp.parallel_jobs=1")["exp.parallel_jobs"] == 1


def test_runner_moves_into_a_leaf_when_its_cgroup_holds_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cgroup v2 refuses (EBUSY) to give controllers to the children of a cgroup that
    # holds processes, other than the root: the runner moves into a leaf, then tries
    # again, and moves back at the end. The kernel's refusal is imitated here.
    base = _fake_cgroup(tmp_path / "cg", "cpuset memory\n")
    leaf = base / f"dlbench-{os.getpid()}-runner"
    real_write = Path.write_text

    def write_text(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if self.name == "cgroup.subtree_control" and data.startswith("+") and not (
                leaf / "cgroup.procs").exists():
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))
        return real_write(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    share = Share(1, 1, (0,), 64 * MIB, "")
    limits = Limits({}, [share], cgroup_dir=base)
    assert limits.mechanism == "cgroup"
    assert (leaf / "cgroup.procs").read_text() == str(os.getpid())
    assert (base / "cgroup.subtree_control").read_text() == "+cpuset +memory"
    for folder in (leaf, base / f"dlbench-{os.getpid()}-copy1"):
        for file in folder.iterdir():  # the files stand in for the kernel's own
            file.unlink()
    limits.close()
    assert (base / "cgroup.procs").read_text() == str(os.getpid())
    assert (base / "cgroup.subtree_control").read_text() == "-cpuset -memory"
    assert not leaf.exists()
