"""exp.docker: the command that runs the worker inside a container, for each engine,
and the plan-time checks."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

import dlbench
from dlbench.config import load_spec, plan_experiments
from dlbench.errors import ConfigError
from dlbench.launch.command import worker_argv
from dlbench.launch.container import container_argv, forwarded_names, gpu_indices

PACKAGE = str(Path(dlbench.__file__).resolve().parent)
RUN = "/runs/r1"
EXP_JSON = Path(RUN) / "experiments" / "abc.json"
WORKER = ["/host/venv/bin/python", "-m", "dlbench.worker", str(EXP_JSON)]
ENV = {"PATH": "/host/venv/bin:/usr/bin", "PYTHONPATH": "/host/src", "PYTHONUNBUFFERED": "1",
       "OMP_NUM_THREADS": "4", "DLBENCH_LOG_FILE": f"{RUN}/logs/x.log", "NCCL_DEBUG": "INFO",
       "CUDA_VISIBLE_DEVICES": "3", "HOME": "/root", "LD_LIBRARY_PATH": "/host/lib"}


@pytest.fixture(autouse=True)
def engines_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand-in engine commands on PATH, so planning finds each engine (none is run)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("docker", "podman", "apptainer"):
        command = bin_dir / name
        command.write_text("#!/bin/sh\nexit 1\n")
        command.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def plan(*params: str) -> dict[str, Any]:
    spec = load_spec(params=["exp.framework=pytorch", "exp.model=toy", "exp.docker=true",
                             *params], overrides={"exp.out_dir": (RUN, "test")})
    (experiment,) = plan_experiments(spec)
    return experiment


def error_of(*params: str) -> str:
    with pytest.raises(ConfigError) as err:
        plan(*params)
    return str(err.value)


def pairs(argv: list[str], flag: str) -> list[str]:
    """Every value given to ``flag``."""
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == flag]


def test_docker_command() -> None:
    experiment = plan("exp.gpus=1")
    argv = container_argv(experiment, WORKER, ENV, Path(RUN))
    image = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"
    assert argv[:4] == ["docker", "run", "--rm", "--init"]
    assert pairs(argv, "--user") == [f"{os.getuid()}:{os.getgid()}"]
    # GPUs 0 and 1 pass, so that the worker's cuda:1 is the host's GPU 1.
    assert pairs(argv, "--gpus") == ['"device=0,1"']
    assert pairs(argv, "--volume") == [f"{RUN}:{RUN}", f"{PACKAGE}:/opt/dlbench/dlbench:ro"]
    assert pairs(argv, "--workdir") == [os.getcwd()]
    # Names only: docker reads the values from the environment the runner gives it.
    assert pairs(argv, "-e") == ["HOME=/tmp", "DLBENCH_LOG_FILE", "NCCL_DEBUG",
                                 "OMP_NUM_THREADS", "PYTHONUNBUFFERED",
                                 "PYTHONPATH=/opt/dlbench"]
    assert "--network" not in argv and "--ipc" not in argv  # one replica
    assert argv[argv.index(image):] == [image, "python", "-m", "dlbench.worker", str(EXP_JSON)]
    assert all(isinstance(arg, str) for arg in argv)


def test_podman_command_uses_cdi_devices_and_keeps_the_user() -> None:
    experiment = plan("exp.gpus=2", "exp.container_engine=podman",
                      "exp.docker_image=localhost/bench:1", "exp.container_python=python3")
    argv = container_argv(experiment, WORKER, ENV, Path(RUN))
    assert argv[:2] == ["podman", "run"]
    assert pairs(argv, "--device") == ["nvidia.com/gpu=0", "nvidia.com/gpu=1",
                                       "nvidia.com/gpu=2"]
    assert ("--userns=keep-id" in argv) == (os.geteuid() != 0)
    assert argv[argv.index("localhost/bench:1") + 1] == "python3"


def test_apptainer_command_passes_values_and_binds() -> None:
    experiment = plan("exp.gpus=0", "exp.container_engine=apptainer",
                      "exp.container_mounts=['/scratch/data:/data:ro', '/models']")
    argv = container_argv(experiment, WORKER, ENV, Path(RUN))
    engine = argv.index("apptainer")
    assert argv[engine:engine + 4] == ["apptainer", "exec", "--cleanenv", "--nv"]
    assert pairs(argv, "--bind") == [f"{RUN}:{RUN}", f"{PACKAGE}:/opt/dlbench/dlbench:ro",
                                     "/scratch/data:/data:ro", "/models:/models"]
    # The values go in through apptainer's own environment, where no comma splits them.
    assert argv[:engine] == [
        "env", f"APPTAINERENV_DLBENCH_LOG_FILE={RUN}/logs/x.log", "APPTAINERENV_NCCL_DEBUG=INFO",
        "APPTAINERENV_OMP_NUM_THREADS=4", "APPTAINERENV_PYTHONUNBUFFERED=1",
        "APPTAINERENV_PYTHONPATH=/opt/dlbench"]
    assert "--env" not in argv
    image = argv.index("docker://pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime")
    assert argv[image - 1] == "--"
    assert "--user" not in argv  # apptainer runs as the caller already


def test_host_paths_never_go_in() -> None:
    assert forwarded_names(ENV) == ["DLBENCH_LOG_FILE", "NCCL_DEBUG", "OMP_NUM_THREADS",
                                    "PYTHONUNBUFFERED"]
    argv = container_argv(plan(), WORKER, ENV, Path(RUN))
    for name in ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"):
        assert name not in pairs(argv, "-e")
    assert "--gpus" not in argv and gpu_indices(plan()) == []  # the CPU


def test_torchrun_inside_shares_the_hosts_network_and_ipc() -> None:
    experiment = plan("exp.gpus=0,1")
    argv = worker_argv(experiment, EXP_JSON, "/host/venv/bin/python")
    assert pairs(argv, "--network") == ["host"] and pairs(argv, "--ipc") == ["host"]
    inner = argv[argv.index(experiment["pytorch.docker_image"]) + 1:]
    assert inner[:3] == ["python", "-m", "torch.distributed.run"]
    assert inner[-3:] == ["-m", "dlbench.worker", str(EXP_JSON)]


def test_a_parallel_copy_is_held_by_the_engine() -> None:
    copy = {**plan("exp.gpus=1"), "exp.copy": 2, "exp.copy_cpus": "4-7",
            "exp.copy_memory_mb": 2048}
    argv = container_argv(copy, WORKER, ENV, Path(RUN))
    assert pairs(argv, "--cpuset-cpus") == ["4-7"]
    assert pairs(argv, "--memory") == ["2048m"] and pairs(argv, "--memory-swap") == ["2048m"]
    assert "OMP_NUM_THREADS=4" in pairs(argv, "-e") and "OMP_NUM_THREADS" not in pairs(argv, "-e")


def test_data_dir_and_options_go_in(tmp_path: Path) -> None:
    data = tmp_path / "corpus.txt"
    data.write_text("some words\n")
    experiment = plan("exp.model=gpt2_small", f"exp.data_dir={data}",
                      "exp.container_options=['--shm-size=8g', '--pull=never']")
    argv = container_argv(experiment, WORKER, ENV, Path(RUN))
    assert f"{data}:{data}:ro" in pairs(argv, "--volume")
    assert pairs(argv, "--ipc") == ["host"]
    image = argv.index(experiment["pytorch.docker_image"])
    assert argv[image - 3:image] == ["--shm-size=8g", "--pull=never", "--"]


def test_without_docker_the_command_is_the_plain_worker() -> None:
    experiment = {**plan(), "exp.docker": False}
    assert worker_argv(experiment, EXP_JSON, "/py") == ["/py", "-m", "dlbench.worker",
                                                         str(EXP_JSON)]


def test_plan_refuses_a_missing_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert error_of() == ("exp.docker=true needs docker on PATH (exp.container_engine='docker' "
                          "(from default)); found none of docker, podman, apptainer")
    only = tmp_path / "only"
    only.mkdir()
    (only / "podman").write_text("#!/bin/sh\n")
    (only / "podman").chmod(0o755)
    monkeypatch.setenv("PATH", str(only))
    assert error_of().endswith("; found podman: set exp.container_engine to it")
    assert plan("exp.container_engine=podman")["exp.docker"] is True


def test_plan_refuses_a_missing_image_and_bad_mounts() -> None:
    assert error_of("exp.framework=fake") == (
        "exp.docker=true (from -P flag) needs an image: set exp.docker_image (framework fake "
        "has no fake.docker_image)")
    assert error_of("pytorch.docker_image=") == (
        "exp.docker=true (from -P flag) needs an image: set exp.docker_image "
        "(pytorch.docker_image is empty)")
    assert "the folder inside the container must be absolute" in error_of(
        "exp.container_mounts=['/a:b']")
    assert "is not HOST[:CONTAINER[:ro]]" in error_of("exp.container_mounts=['/a:/b:rx']")
    assert "must be a list of strings" in error_of("exp.container_options=[1]")


def test_apptainer_image_file_or_uri_is_kept() -> None:
    for image, expected in (("images/torch.sif", "images/torch.sif"),
                            ("oras://host/torch:1", "oras://host/torch:1"),
                            ("nvidia/pytorch:24.01", "docker://nvidia/pytorch:24.01")):
        experiment = plan("exp.container_engine=apptainer", f"exp.docker_image={image}")
        argv = container_argv(experiment, WORKER, ENV, Path(RUN))
        assert argv[argv.index("python") - 1] == expected


def test_the_framework_need_not_be_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from dlbench.config import catalog

    missing = dataclasses.replace(catalog.FRAMEWORKS["pytorch"], requires=("no_such_module",))
    monkeypatch.setitem(catalog.FRAMEWORKS, "pytorch", missing)
    assert plan()["exp.docker"] is True  # the image has it
    assert "no_such_module not installed" in error_of("exp.docker=false")
