"""DLBS's tutorial and recipe configs plan in dlbench as DLBS plans them.

Each file under ``tests/data/dlbs/`` has the structure of one of DLBS's configs
(``tutorials/dlcookbook/configs/*.json``, ``tutorials/recipes/**/config.json``,
``tutorials/recipes/tensorflow_mkl/inference*.json``), with values of its own. With
``exp.framework`` changed to ``pytorch`` the plan must give the experiments DLBS's own
experimenter gives for the same file and the same change: how many, the derived
values (GPUs, replicas, effective batch, device type) and the log file names. The
expected values below were taken from DLBS's builder and processor run on these
files, with ``BENCH_ROOT`` set to the run directory as DLBS's run scripts set it.

Where a config needs more than the framework changed, the test says what and why:
values DLBS's run scripts give with ``-P`` (a rank), DLBS's defaults for a framework
dlbench does not run (``caffe.fork``), and what dlbench needs of a multi-node run
(``exp.rendezvous``). A ``docker`` on PATH is a stand-in, since ``exp.docker=true``
asks the plan to find one.

DLBS's own configs that do not plan, by design: ``recipes/openvino`` (its models are
OpenVINO model files, not models of dlbench's zoo) and the ``int8`` precision of
``recipes/inference`` (dlbench runs float32, float16 and bfloat16); both are refused
in one line, tested below.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main

DATA = Path(__file__).resolve().parent.parent / "data" / "dlbs"

#: Per config: extra flags, then one row per planned experiment: model, gpus,
#: replica batch, effective batch, num_gpus, num_local_gpus, num_replicas,
#: num_local_replicas, device type, log file under the run directory, dtype.
EXPECTED: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {
    "scaling.json": ([], [
        ("resnet50", "0", 64, 64, 1, 1, 1, 1, "gpu", "logs/1gpu_resnet50_64.log", "float16"),
        ("resnet50", "0,1", 64, 128, 2, 2, 2, 2, "gpu", "logs/2gpu_resnet50_128.log", "float16"),
        ("resnet50", "0,1,2,3", 64, 256, 4, 4, 4, 4, "gpu", "logs/4gpu_resnet50_256.log",
         "float16"),
    ]),
    "cpu_inference.json": ([], [
        (model, "", batch, batch, 0, 0, 1, 1, "cpu", f"logs/inference/{model}_{batch}.log",
         "float32")
        for model in ("googlenet", "resnet50") for batch in (1, 4, 32)
    ]),
    "distributed.json": (["-P", "mxnet.rank=1", "-P", "exp.rendezvous=10.0.0.1:29500"], [
        ("resnet50", "0,1,2,3", 32, 256, 8, 4, 8, 4, "gpu", "logs/rank_1.log", "float16"),
    ]),
    "caffe_fork.json": (["-P", "caffe.fork=bvlc"], [
        (model, "0", 8, 8, 1, 1, 1, 1, "gpu", f"bvlc_caffe/{model}.log", "float32")
        for model in ("alexnet", "resnet18")
    ]),
    "disabled_grid.json": ([], [
        (model, gpus, batch, batch * n, n, n, n, n, "gpu",
         f"pytorch/{gpus.replace(',', '.')}_{model}_{batch * n}.log", "float32")
        for gpus, n in (("0", 1), ("0,1", 2))
        for model, batch in (("alexnet", 64), ("alexnet", 128), ("vgg16", 16), ("vgg16", 32),
                             ("resnet50", 32))
    ]),
    "gpu_inference.json": ([], [
        (model, "0", batch, batch, 1, 1, 1, 1, "gpu",
         f"logs/trt/a100/{dtype}/0_{model}_{batch}.log", dtype)
        for model in ("resnet18", "deep_mnist") for batch in (2, 64)
        for dtype in ("float32", "float16")
    ]),
}

FIELDS = ("exp.model", "exp.gpus", "exp.replica_batch", "exp.effective_batch", "exp.num_gpus",
          "exp.num_local_gpus", "exp.num_replicas", "exp.num_local_replicas",
          "exp.device_type", "exp.log_file", "exp.dtype")


@pytest.fixture
def dlbs_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run directory that is also BENCH_ROOT, and a stand-in docker on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text("#!/bin/sh\nexit 0\n")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    run_dir = tmp_path / "run"
    monkeypatch.setenv("BENCH_ROOT", str(run_dir))
    return run_dir


def plan(capsys: pytest.CaptureFixture[str], run_dir: Path, config: str,
         *flags: str) -> list[dict[str, Any]]:
    """The planned experiments of a DLBS config with exp.framework=pytorch."""
    framework = ("-V", "exp.framework=[pytorch]") if config == "disabled_grid.json" else (
        "-P", "exp.framework=pytorch")
    status = main(["plan", "--format", "json", "--config", str(DATA / config), *framework,
                   "--out", str(run_dir), *flags])
    out, err = capsys.readouterr()
    assert status == 0, err
    data: list[dict[str, Any]] = json.loads(out)["data"]
    return data


@pytest.mark.parametrize("config", sorted(EXPECTED))
def test_a_dlbs_config_plans_as_dlbs_plans_it(
        capsys: pytest.CaptureFixture[str], dlbs_env: Path, config: str) -> None:
    flags, rows = EXPECTED[config]
    experiments = plan(capsys, dlbs_env, config, *flags)
    got = [tuple(e[name] for name in FIELDS) for e in experiments]
    want = [(*row[:9], str(dlbs_env / row[9]), row[10]) for row in rows]
    assert got == want
    assert {e["exp.framework_title"] for e in experiments} == {"PyTorch"}


def test_the_names_dlbs_configs_make_up_are_carried(
        capsys: pytest.CaptureFixture[str], dlbs_env: Path) -> None:
    [first, *_] = plan(capsys, dlbs_env, "gpu_inference.json")
    carried = (first["exp.gpu_id"], first["exp.trial"], first["exp.sys_info"])
    assert carried == ("a100", 1, "cpuinfo")
    assert first["monitor.enabled"] is False  # monitor.frequency=0: off, as in DLBS


def test_a_precision_dlbench_does_not_run_is_refused_in_one_line(
        capsys: pytest.CaptureFixture[str], dlbs_env: Path) -> None:
    status = main(["plan", "--config", str(DATA / "gpu_inference.json"), "-P",
                   "exp.framework=pytorch", "--out", str(dlbs_env), "-V",
                   "exp.dtype=[float32, int8]"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("dlbench: error: exp.dtype='int8' (from -V flag) is not one of")
    assert err.count("\n") == 1


def test_a_model_outside_the_zoo_is_refused_in_one_line(
        capsys: pytest.CaptureFixture[str], dlbs_env: Path) -> None:
    status = main(["plan", "-P", "exp.framework=pytorch", "--out", str(dlbs_env), "-P",
                   "exp.model=mobilenetv2-int8-tf-0001/FP32"])
    err = capsys.readouterr().err
    assert status == 2
    assert "exp.model='mobilenetv2-int8-tf-0001/FP32' (from -P flag) is not a known model" in err
