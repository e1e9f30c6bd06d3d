"""Hostile values on the command line of ``dlbench run --launcher slurm`` and ``dlbench
plan``/``run`` with containers and torchrun: refused in one line, exit status 2, before
anything is written or submitted (and without needing Slurm or an engine installed)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CliRunner

FAKE = ["-P", "exp.framework=fake", "-P", "exp.num_warmup_batches=1", "-P", "exp.num_batches=3"]
SLURM = ["run", "--launcher", "slurm", *FAKE]
#: The run directory is checked once the Slurm launcher exists, which needs submitit.
needs_submitit = pytest.mark.skipif(importlib.util.find_spec("submitit") is None,
                                    reason="--launcher slurm needs submitit (dlbench[slurm])")


def refused(proc: subprocess.CompletedProcess[str], start: str) -> str:
    """The one line of a refusal that starts with ``start``."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dlbench: error: {start}"), proc.stderr
    return lines[0]


@needs_submitit
@pytest.mark.parametrize("where", [["--out", "runs/x\n$(touch pwned)"],
                                   ["-P", 'exp.out_dir="runs/x\\n$(touch pwned)"'],
                                   ["--out", "runs/x\n#SBATCH --partition=other"]])
def test_a_run_directory_with_a_newline_is_refused_before_anything_is_made(
    dlbench: CliRunner, tmp_path: Path, where: list[str]
) -> None:
    line = refused(dlbench(*SLURM, *where), "exp.out_dir=")
    assert "cannot hold a control character (\\n)" in line
    assert list(tmp_path.iterdir()) == []  # no run directory, no pwned file


def test_a_local_run_refuses_it_too(dlbench: CliRunner, tmp_path: Path) -> None:
    refused(dlbench("run", *FAKE, "--out", "runs/x\r\x1b[2J"), "exp.out_dir=")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("flags", "start"), [
    (["--slurm-account", "acct\n"], "--slurm-account 'acct\\n': expected"),
    (["--slurm-gres", "gpu:1\n"], "--slurm-gres 'gpu:1\\n': expected"),
    (["--slurm-partition", "debug\n#SBATCH --qos=high"], "--slurm-partition 'debug\\n"),
    (["--slurm-time", "90\n"], "--slurm-time '90\\n': holds a control character"),
    (["--slurm-time", "²"], "--slurm-time '²': expected MINUTES"),
    (["--slurm-array-parallelism", "²"], "--slurm-array-parallelism '²': expected"),
    (["--slurm-option", "comment=x\n#SBATCH --partition=other"],
     "--slurm-option 'comment=x\\n#SBATCH --partition=other': it holds a control character"),
    (["--slurm-option", "comment=a\x1b[2Jb"], "--slurm-option 'comment=a\\x1b[2Jb': it holds"),
    (["--slurm-option", "comment=see\\'quote"], "--slurm-option \"comment=see\\\\'quote\": it "
                                                "holds a backslash"),
    (["--slurm-option", "outp=/tmp/elsewhere"], "--slurm-option 'outp=/tmp/elsewhere': dlbench "
                                                "sets --output itself"),
    (["--slurm-option", "comment=hetjob"], "--slurm-option 'comment=hetjob': it holds 'hetjob'"),
])
def test_slurm_flags_that_would_change_the_job_script_are_refused(
    dlbench: CliRunner, tmp_path: Path, flags: list[str], start: str
) -> None:
    refused(dlbench(*SLURM, *flags, "--out", "out"), start)
    assert not (tmp_path / "out").exists()


@needs_submitit
@pytest.mark.parametrize("name", ["runs/50%u", "runs/%x-%j", "runs/a\\b", "runs/hetjob"])
def test_a_run_directory_slurm_would_read_otherwise_is_refused_before_slurm_is_asked(
    dlbench: CliRunner, tmp_path: Path, name: str
) -> None:
    env_path = str(Path(sys.executable).parent)  # no Slurm commands: their check comes after
    proc = subprocess.run([sys.executable, "-m", "dlbench", *SLURM, "--out", name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": env_path})
    line = refused(proc, "exp.out_dir '")
    assert "--launcher slurm names the run directory in the job script" in line
    assert not (tmp_path / name / "slurm").exists()


@pytest.fixture
def engine(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has stand-in container engines (none is run)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("docker", "apptainer"):
        (bin_dir / name).write_text("#!/bin/sh\nexit 1\n")
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def plan(tmp_path: Path, env: dict[str, str], *params: str) -> subprocess.CompletedProcess[str]:
    args = [arg for param in params for arg in ("-P", param)]
    return subprocess.run([sys.executable, "-m", "dlbench", "plan", *FAKE, "-P", "exp.docker=true",
                           *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.mark.parametrize(("params", "start"), [
    (["exp.docker_image=--privileged"], "exp.docker_image='--privileged' (from -P flag): not an "
                                        "image: starts with '-'"),
    (["exp.docker_image=--volume=/:/host"], "exp.docker_image='--volume=/:/host'"),
    (["exp.docker_image=Ubuntu"], "exp.docker_image='Ubuntu' (from -P flag): not an image: "
                                  "expected an image reference"),
    (["exp.docker_image=ubuntu", "exp.container_options=['--privileged', 'evil/image']"],
     "exp.container_options=['--privileged', 'evil/image'] (from -P flag): 'evil/image' is "
     "not an option"),
    (["exp.docker_image=ubuntu", "exp.container_options=['--', '--privileged']"],
     "exp.container_options="),
    (["exp.docker_image=ubuntu", "exp.container_python=-c"], "exp.container_python='-c'"),
    (["exp.docker_image=ubuntu", "exp.container_mounts=['/a,b:/c']"],
     "exp.container_mounts=['/a,b:/c'] (from -P flag): '/a,b' holds a ','"),
    (["exp.container_engine=apptainer", "exp.docker_image=docker://--privileged"],
     "exp.docker_image='docker://--privileged'"),
])
def test_container_values_that_would_be_options_are_refused(
    tmp_path: Path, engine: dict[str, str], params: list[str], start: str
) -> None:
    refused(plan(tmp_path, engine, *params), start)


def test_a_run_directory_the_mounts_would_split_is_refused(
    tmp_path: Path, engine: dict[str, str]
) -> None:
    line = refused(plan(tmp_path, engine, "exp.docker_image=ubuntu", "exp.out_dir=runs/a:b"),
                   "exp.out_dir='runs/a:b' (from -P flag) is mounted into the container")
    assert "holds a ':'" in line


def test_good_container_values_plan(tmp_path: Path, engine: dict[str, str]) -> None:
    proc = plan(tmp_path, engine, "exp.docker_image=nvcr.io/nvidia/pytorch:24.01-py3",
                "exp.container_options=['--shm-size=8g']", "exp.container_mounts=['/m:/data:ro']")
    assert proc.returncode == 0, proc.stderr


def test_a_rendezvous_with_a_newline_is_refused(dlbench: CliRunner) -> None:
    proc = dlbench("plan", *FAKE, "-P", "exp.num_nodes=2", "-P",
                   'exp.rendezvous="node01:29500\\n"')
    refused(proc, "exp.rendezvous='node01:29500\\n' (from -P flag): a run on 2 nodes needs")
    for endpoint in ("--rdzv-conf=x:1", "node 01:29500"):
        refused(dlbench("plan", *FAKE, "-P", "exp.num_nodes=2", "-P",
                        f"exp.rendezvous={endpoint}"), "exp.rendezvous=")


def test_slurm_messages_show_a_run_directory_escaped(dlbench: CliRunner, tmp_path: Path) -> None:
    from tests.e2e.test_slurm import _slurm_problem

    problem = _slurm_problem()
    if problem:
        pytest.skip(f"no Slurm to submit to: {problem}")
    name = "runs/r\u202eexe.txt"  # shown as runs/rtxt.exe where the override acts
    proc = dlbench(*SLURM, "--out", name, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "\u202e" not in proc.stdout + proc.stderr
    assert "runs/r\\u202eexe.txt/slurm)" in proc.stderr
    assert (tmp_path / name / "slurm").is_dir()
