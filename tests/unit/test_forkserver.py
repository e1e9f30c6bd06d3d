"""The fork server (exp.fork_server=auto): which experiments it may start, the same
records as plain workers, timeouts, and falling back to plain workers when it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import devices, load_spec, plan_experiments
from dlbench.launch.command import worker_env, write_input
from dlbench.launch.forkserver import client as forkserver
from dlbench.launch.forkserver.client import ForkedWorker, ForkServer, unsuitable
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.local.process import kill_worker, start_worker
from dlbench.launch.records import worker_record
from dlbench.launch.sweep import Sweep

#: Keys that may differ between two runs of one experiment: times, rates, the
#: monitor's samples, and what the parent adds.
_VARYING = ("results.time", "results.throughput", "results.use.", "results.start_time",
            "results.end_time", "results.timed_seconds", "results.tflops", "results.mfu",
            "results.stable", "results.unstable_reasons", "results.stability",
            "results.warmup", "results.progress", "exp.log_file", "sys.env", "sys.pid")


def _plan(out: Path, *params: str, variables: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    spec = load_spec(params=["exp.num_warmup_batches=0", "exp.num_batches=2",
                             f"exp.out_dir={out}", *params], variables=variables)
    return plan_experiments(spec)


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if not k.startswith(_VARYING)}


def test_only_one_cpu_process_of_a_fork_safe_framework_is_forked(tmp_path: Path) -> None:
    [toy] = _plan(tmp_path, "exp.model=toy")
    env = {"CUDA_VISIBLE_DEVICES": ""}  # hides every GPU, whatever the machine has
    assert not devices.cuda_device_visible(env) and not devices.cuda_device_visible(
        {"CUDA_VISIBLE_DEVICES": "-1"})
    assert unsuitable(toy, env) == ""
    assert unsuitable({**toy, "exp.fork_server": "never"}, env) == "exp.fork_server=never"
    # PyTorch's children start CUDA themselves: its GPU experiments are forked too.
    assert unsuitable({**toy, "exp.gpus": "0"}, env) == ""
    assert "container" in unsuitable({**toy, "exp.docker": True}, env)
    assert "several" in unsuitable({**toy, "exp.parallel_jobs": 2}, env)
    assert "Nsight" in unsuitable({**toy, "exp.profile": "nsys"}, env)
    assert "repeat" in unsuitable({**toy, "exp.repeat": 3}, env)  # fresh processes
    [fake] = _plan(tmp_path, "exp.framework=fake")
    assert "framework" in unsuitable(fake, env)


def test_gpu_experiments_are_forked_only_for_frameworks_whose_cuda_starts_in_a_child(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forkserver, "FORK_SAFE_MODULES",
                        forkserver.FORK_SAFE_MODULES | {"dlbench.backends.fake"})
    monkeypatch.setattr(devices.glob, "glob", lambda pattern: ["/dev/nvidia0"])
    [fake] = _plan(tmp_path, "exp.framework=fake")
    [toy] = _plan(tmp_path, "exp.model=toy")
    hidden, shown = {"CUDA_VISIBLE_DEVICES": ""}, {"CUDA_VISIBLE_DEVICES": "0"}
    assert not forkserver.uses_gpu(fake, hidden)
    assert forkserver.uses_gpu(fake, shown)  # a GPU it could start CUDA on
    assert forkserver.uses_gpu({**fake, "exp.gpus": "0"}, hidden)
    assert unsuitable(fake, hidden) == ""  # fork-safe on the CPU
    assert "GPU" in unsuitable(fake, shown)  # but not known to start CUDA in a child
    assert "GPU" in unsuitable({**fake, "exp.gpus": "0"}, hidden)
    assert unsuitable(toy, shown) == unsuitable({**toy, "exp.gpus": "0"}, shown) == ""


def test_the_server_is_told_which_workers_use_a_gpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[bool] = []

    class Recording:
        def __init__(self, python: str, env: Any, modules: list[str]) -> None:
            self.key = (python, tuple(sorted(env.items())), tuple(modules))
            self.closed = False

        def fork(self, exp_json: Path, log: Path, env: Any, gpu: bool = False) -> Any:
            requests.append(gpu)
            return "forked"

    monkeypatch.setattr(forkserver, "ForkServer", Recording)
    [toy] = _plan(tmp_path, "exp.model=toy")
    forks = forkserver.Forks(warn=print)
    env = {"CUDA_VISIBLE_DEVICES": ""}
    assert forks.start(toy, tmp_path / "a.json", tmp_path / "a.log", env, None) == "forked"
    assert forks.start({**toy, "exp.gpus": "0"}, tmp_path / "b.json", tmp_path / "b.log",
                       env, None) == "forked"
    assert requests == [False, True]


def test_the_server_refuses_a_gpu_worker_once_the_cuda_driver_is_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dlbench.launch.forkserver import server as forkserver_main

    monkeypatch.setattr(forkserver_main.threading, "active_count", lambda: 1)
    clean, loaded = tmp_path / "clean", tmp_path / "loaded"
    clean.write_text("7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n")
    loaded.write_text(clean.read_text() + "7f02-7f03 r-xp 0 08:01 2 /usr/lib/libcuda.so.1\n")
    assert forkserver_main.cuda_driver_path(str(clean)) == ""
    assert forkserver_main.cuda_driver_path(str(loaded)) == "/usr/lib/libcuda.so.1"
    assert forkserver_main.cuda_driver_path(str(tmp_path / "missing")) == ""
    many = 10_000  # threads at start: the test process's own threads do not count here
    assert forkserver_main._unsafe_to_fork(many, gpu=True, maps=str(clean)) == ""
    assert "CUDA driver" in forkserver_main._unsafe_to_fork(many, gpu=True, maps=str(loaded))
    # A CPU worker never starts CUDA: the driver in the server does not concern it.
    assert forkserver_main._unsafe_to_fork(many, gpu=False, maps=str(loaded)) == ""
    # Loaded but not initialised (importing PyTorch's CUDA build maps the driver):
    # the driver's own answer decides, asked of the library the map names.
    asked: list[str] = []

    def answer(code: int) -> Callable[[str], int]:
        def probe(path: str) -> int:
            asked.append(path)
            return code
        return probe

    not_initialised = answer(forkserver_main.CUDA_ERROR_NOT_INITIALIZED)
    assert forkserver_main._unsafe_to_fork(many, True, str(loaded), not_initialised) == ""
    assert asked == ["/usr/lib/libcuda.so.1"]
    assert "CUDA driver is initialised" in forkserver_main._unsafe_to_fork(
        many, True, str(loaded), answer(0))
    assert forkserver_main.cuda_driver_initialised(str(clean), answer(0)) is False

    class Cuda:
        @staticmethod
        def is_initialized() -> bool:
            return True

    monkeypatch.setitem(sys.modules, "torch", type("torch", (), {"cuda": Cuda}))
    assert "CUDA is initialised" in forkserver_main._unsafe_to_fork(many, maps=str(clean))


@pytest.mark.slow
def test_a_forked_toy_worker_writes_the_record_a_plain_one_does(tmp_path: Path) -> None:
    """Known answers (the toy's parameters, its FLOPs, the seeded loss) and every other
    key that is not a time, plain and forked. The plain worker runs while the server
    imports, so the test pays for one framework import, not two."""
    [plain] = _plan(tmp_path / "plain", "exp.model=toy")
    [forked] = _plan(tmp_path / "forked", "exp.model=toy")
    env = worker_env(plain)
    logs = []
    for experiment in (plain, forked):
        log = Path(experiment["exp.log_file"])
        log.parent.mkdir(parents=True, exist_ok=True)
        logs.append(log)
    plain_json, forked_json = (write_input(e, Path(e["exp.out_dir"])) for e in (plain, forked))
    with open(logs[0], "ab") as log:
        process = start_worker([sys.executable, "-m", "dlbench.worker", str(plain_json)],
                               log, env)
        server = ForkServer(sys.executable, env, [forkserver.WORKER_MODULE,
                                                  str(forked["exp.framework_module"])])
        try:
            child = server.fork(forked_json, logs[1], env)
            assert child.wait(120) == 0 and process.wait(120) == 0
        finally:
            server.close()
    records = [worker_record(e, log, 0, False, False)
               for e, log in zip((plain, forked), logs, strict=True)]
    for record in records:
        assert record["exp.status"] == "ok", record["exp.status_msg"]
        assert record["sys.model_params"] == 9610
        # 64 -> 128 -> 10: the forward (18944), both weight gradients (18944 again) and
        # the hidden layer's input gradient (2 x 128 x 10); the input needs none.
        assert record["results.flops_per_sample"] == 2 * 18944 + 2 * 128 * 10
    assert records[0]["results.loss_last"] == records[1]["results.loss_last"]
    assert records[0]["sys.framework_build"] == records[1]["sys.framework_build"]
    # the record says how each worker started (a forked one's memory reads lower)
    assert [r["sys.worker_start"] for r in records] == ["fresh", "forked"]
    assert _comparable(records[0]) | {"exp.out_dir": "", "sys.worker_start": ""} == (
        _comparable(records[1]) | {"exp.out_dir": "", "sys.worker_start": ""})


@pytest.fixture(autouse=True)
def no_gpu_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork server serves only where no GPU is visible to a worker: on a machine
    with one these tests hide it, as a CPU machine has none."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")


@pytest.fixture
def fake_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake framework counts as fork-safe (it is: no threads, no device), so the
    runner's use of the server is tested without importing a framework."""
    monkeypatch.setattr(forkserver, "FORK_SAFE_MODULES",
                        forkserver.FORK_SAFE_MODULES | {"dlbench.backends.fake"})


def test_a_forked_worker_times_out_and_a_dead_server_falls_back_to_plain_workers(
    tmp_path: Path, fake_forks: None
) -> None:
    lines: list[str] = []
    launcher = LocalLauncher(lines.append)
    runner = Sweep(launcher, report=lines.append)
    try:
        hung = runner.run(_plan(tmp_path / "a", "exp.framework=fake", "exp.timeout=0.5",
                                variables=("fake.failure=[hang, none]",)))
        # Killed by the runner's timeout as a plain worker is; the server serves on.
        assert [o.status for o in hung.outcomes] == ["timeout", "ok"]
        # A forked worker's log names its environment as a plain worker's does.
        assert "PYTHONUNBUFFERED" in hung.outcomes[1].record["sys.worker_env"]
        server = launcher._forks.server
        assert server is not None and not launcher._forks.broken
        assert not any("fork server" in line for line in lines)
        server.process.kill()
        server.process.wait()
        after = runner.run(_plan(tmp_path / "b", "exp.framework=fake",
                                 variables=("fake.step_ms=[1, 2]",)))
        assert [o.status for o in after.outcomes] == ["ok", "ok"]
        assert launcher._forks.broken
        assert sum("fork server" in line for line in lines) == 1  # one warning
    finally:
        runner.close()


def test_kill_worker_ends_a_forked_workers_process_group(tmp_path: Path, fake_forks: None) -> None:
    [experiment] = _plan(tmp_path, "exp.framework=fake", "fake.failure=hang")
    env = worker_env(experiment)
    log = Path(experiment["exp.log_file"])
    log.parent.mkdir(parents=True)
    server = ForkServer(sys.executable, env, [forkserver.WORKER_MODULE, "dlbench.backends.fake"])
    try:
        child = server.fork(write_input(experiment, tmp_path), log, env)
        assert isinstance(child, ForkedWorker) and child.poll() is None
        assert os.getpgid(child.pid) == child.pid  # a session (and group) of its own
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(0.05)
        kill_worker(child, grace_seconds=1.0)
        assert child.returncode in (-signal.SIGTERM, -signal.SIGKILL, 1)
    finally:
        server.close()
