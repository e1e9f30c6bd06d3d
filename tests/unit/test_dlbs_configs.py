"""DLBS's configuration tests, translated to dlbench's command line.

Upstream (``python/dlbs/tests/``), each translated below under a name that says
what it checks:

- ``test_config_base.py``: ``test_base``, ``test_cpu``, ``test_gpu_01``,
  ``test_gpu_02``, ``test_gpu_03``. DLBS's GPU groups (``0:1,2:3``, one replica on
  several GPUs) give DLBS's derived values in dlbench's resolver, and the plan
  refuses them: no dlbench framework runs a replica on several GPUs.
- ``test_config_caffe.py``: ``test_bvlc_01``, ``test_nvidia_01``, ``test_intel_01``,
  ``test_bare_metal``, ``test_nvidia_precision_01``, ``test_nvidia_precision_02``.
  dlbench runs no Caffe: the equivalents are a title per framework, a container
  image per framework (``<framework>.docker_image``, used when exp.docker_image is
  empty), Caffe's own names planning as names dlbench carries without using, and
  the precisions dlbench does run.
- ``test_config_caffe2.py``: ``test_docker_images`` (a framework's image and the
  experiment's own image overriding it).
- ``test_config_loader.py``: ``test_update_param_info``, ``test_remove_info``,
  ``test`` (every standard parameter known, with a type and a description),
  ``test_path_none`` (a missing spec file is a one-line error).
- ``test_configs.py``: ``test_json_ok`` (dlbench's own example spec files load).
- ``test_helper.py``: ``test_help_with_params_01`` .. ``_03``,
  ``test_frameworks_help_01``, ``_02`` (``dlbench help --params/--text/--frameworks``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.config.registry import REGISTRY
from dlbench.config.resolve import Resolver
from dlbench.config.spec import Sourced, load_spec

ROOT = Path(__file__).resolve().parents[2]
BASE = ["-P", "exp.framework=fake", "-P", "exp.model=toy"]


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    status = main(["plan", "--format", "json", *BASE, *args])
    out, err = capsys.readouterr()
    assert status == 0, err
    data: list[dict[str, Any]] = json.loads(out)["data"]
    return data


def error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    status = main(["plan", *args])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    return err.removeprefix("dlbench: error: ").strip()


def derived(gpus: str, nodes: int) -> dict[str, Any]:
    raw = {name: Sourced(value, "default") for name, value in REGISTRY.defaults().items()}
    raw["exp.gpus"] = Sourced(gpus, "test")
    raw["exp.num_nodes"] = Sourced(nodes, "test")
    resolver = Resolver(raw)
    names = ("exp.replica_batch", "exp.effective_batch", "exp.num_local_replicas",
             "exp.num_local_gpus", "exp.num_replicas", "exp.num_gpus", "exp.device_type")
    return {name: resolver.get(name) for name in names}


# test_config_base.py


def test_inputs_come_back_with_titles(capsys: pytest.CaptureFixture[str]) -> None:
    [e] = plan(capsys, "-P", "exp.num_warmup_batches=7", "-P", "exp.num_batches=13",
               "-P", "exp.phase=inference", "-P", "exp.dtype=bfloat16", "-P", "user.proj=base")
    assert (e["exp.num_warmup_batches"], e["exp.num_batches"], e["exp.phase"],
            e["exp.dtype"], e["user.proj"]) == (7, 13, "inference", "bfloat16", "base")
    assert (e["exp.status"], e["exp.status_msg"]) == ("", "")
    assert (e["exp.framework_title"], e["exp.model_title"]) == ("Fake workload", "Toy MLP")


@pytest.mark.parametrize("nodes", [1, 3, 10])
def test_cpu_replicas_are_one_per_node(nodes: int) -> None:
    assert derived("", nodes) == {
        "exp.replica_batch": 16, "exp.effective_batch": 16 * nodes,
        "exp.num_local_replicas": 1, "exp.num_local_gpus": 0, "exp.num_replicas": nodes,
        "exp.num_gpus": 0, "exp.device_type": "cpu"}


@pytest.mark.parametrize("gpus,n", [("0", 1), ("0,1", 2), ("0,1,2,3", 4),
                                    ("0,1,2,3,4,5,6,7", 8)])
@pytest.mark.parametrize("nodes", [1, 2, 10])
def test_one_replica_per_gpu(gpus: str, n: int, nodes: int) -> None:
    assert derived(gpus, nodes) == {
        "exp.replica_batch": 16, "exp.effective_batch": 16 * n * nodes,
        "exp.num_local_replicas": n, "exp.num_local_gpus": n, "exp.num_replicas": n * nodes,
        "exp.num_gpus": n * nodes, "exp.device_type": "gpu"}


@pytest.mark.parametrize("gpus,replicas,per_node", [("0:1", 1, 2), ("0:1,2:3", 2, 4),
                                                    ("4:5:6", 1, 3)])
@pytest.mark.parametrize("nodes", [1, 4])
def test_gpu_groups_derive_as_in_dlbs(gpus: str, replicas: int, per_node: int,
                                      nodes: int) -> None:
    assert derived(gpus, nodes) == {
        "exp.replica_batch": 16, "exp.effective_batch": 16 * replicas * nodes,
        "exp.num_local_replicas": replicas, "exp.num_local_gpus": per_node,
        "exp.num_replicas": replicas * nodes, "exp.num_gpus": per_node * nodes,
        "exp.device_type": "gpu"}


def test_gpu_groups_are_refused_by_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert error(capsys, *BASE, "-P", "exp.gpus=0:1,2:3") == (
        "exp.gpus='0:1,2:3' (from -P flag) gives a replica several GPUs (DLBS's `:` groups), "
        "and framework fake runs one GPU per replica; use '0,1' for two replicas")


def test_gpu_lists_plan_with_derived_values(capsys: pytest.CaptureFixture[str]) -> None:
    [e] = plan(capsys, "-P", "exp.gpus=0,1", "-P", "exp.device_batch=8")
    assert (e["exp.num_gpus"], e["exp.num_local_gpus"], e["exp.num_replicas"],
            e["exp.replica_batch"], e["exp.device_batch"], e["exp.effective_batch"]) == (
        2, 2, 2, 8, 8, 16)


# test_config_caffe.py and test_config_caffe2.py


@pytest.mark.parametrize("framework,title", [("pytorch", "PyTorch"), ("fake", "Fake workload")])
def test_each_framework_has_a_title(capsys: pytest.CaptureFixture[str], framework: str,
                                    title: str) -> None:
    [e] = plan(capsys, "-P", f"exp.framework={framework}")
    assert e["exp.framework_title"] == title


def test_caffe_names_plan_and_are_carried(capsys: pytest.CaptureFixture[str]) -> None:
    [e] = plan(capsys, "-P", "caffe.fork=nvidia", "-P", "nvidia_caffe.precision=mixed",
               "-P", "user.log=${caffe.fork}_caffe")
    assert (e["caffe.fork"], e["nvidia_caffe.precision"], e["user.log"]) == (
        "nvidia", "mixed", "nvidia_caffe")


def test_a_frameworks_image_and_the_experiments_own(capsys: pytest.CaptureFixture[str]) -> None:
    [e] = plan(capsys, "-P", "exp.framework=pytorch")
    assert e["exp.docker_image"] == "" and e["pytorch.docker_image"].startswith("pytorch/")
    [e] = plan(capsys, "-P", "exp.framework=pytorch", "-P", "exp.docker_image=mine:1")
    assert e["exp.docker_image"] == "mine:1"


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_precisions_dlbench_runs(capsys: pytest.CaptureFixture[str], dtype: str) -> None:
    [e] = plan(capsys, "-P", f"exp.dtype={dtype}")
    assert e["exp.dtype"] == dtype


def test_a_precision_dlbench_does_not_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert error(capsys, *BASE, "-P", "exp.dtype=mixed").startswith(
        "exp.dtype='mixed' (from -P flag) is not one of 'float32', 'float16', 'bfloat16'")


# test_config_loader.py


def test_declared_form_gives_its_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "declared.json"
    spec.write_text(json.dumps({"parameters": {
        "user.p1": 1, "user.p2": "2", "user.p4": ["1", "2"], "user.p5": False,
        "user.p6": -3.5, "user.p7": {"val": "34", "type": "str", "desc": "a description"},
        "exp.num_batches": {"val": 9, "type": "int"},
    }, "extensions": [{"parameters": {"user.p8": {"val": 8, "desc": "from an extension"}}}]}))
    [e] = plan(capsys, "--config", str(spec))
    assert [e[f"user.p{i}"] for i in (1, 2, 4, 5, 6, 7, 8)] == [
        1, "2", ["1", "2"], False, -3.5, "34", 8]
    assert e["exp.num_batches"] == 9


def test_declared_form_with_an_unknown_type(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "declared.yaml"
    spec.write_text("parameters:\n  user.p7: {val: '34', type: s3tr}\n")
    assert error(capsys, "--config", str(spec)) == (
        f"{spec}: parameters: user.p7 declares type 's3tr'; accepted: str, int, float, bool")


def test_standard_parameters_are_known_with_type_and_description() -> None:
    for name in ("exp.status", "exp.status_msg", "exp.framework", "exp.framework_title",
                 "exp.model", "exp.model_title", "exp.num_warmup_batches", "exp.num_batches",
                 "exp.phase", "exp.dtype", "exp.effective_batch", "exp.replica_batch",
                 "exp.device_batch", "exp.gpus", "exp.num_local_replicas",
                 "exp.num_local_gpus", "exp.num_replicas", "exp.num_gpus",
                 "exp.device_type", "exp.id", "exp.log_file", "exp.rerun", "exp.num_nodes",
                 "exp.docker", "exp.docker_image", "monitor.frequency"):
        param = REGISTRY.get(name)
        assert param is not None and param.type and param.help, name


def test_a_missing_spec_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere" / "sweep.json"
    assert error(capsys, "--config", str(missing)) == f"spec file {missing} not found"


# test_configs.py


def test_the_example_spec_files_load() -> None:
    files = sorted((ROOT / "examples").glob("*.y*ml")) + sorted((ROOT / "examples").glob("*.json"))
    assert files
    for path in files:
        assert load_spec([path]).parameters or load_spec([path]).variables, path


# test_helper.py


def help_lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["help", *args]) == 0
    return [line for line in capsys.readouterr().out.splitlines()
            if line and not line.startswith(" ")]


def test_help_with_params(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(help_lines(capsys, "--params", "exp.status")) == 2  # status, status_msg
    assert len(help_lines(capsys, "--params", "^exp.status$")) == 1
    assert len(help_lines(capsys, "--params", "^exp.(status|num_gpus)$")) == 2
    for name in ("exp.num_gpus", "exp.framework_title", "exp.model_title", "exp.device_batch"):
        assert len(help_lines(capsys, "--params", f"^{name}$")) == 1, name


def test_help_with_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(help_lines(capsys, "--text", "cuDNN")) == 1  # pytorch.cudnn_benchmark
    assert len(help_lines(capsys, "--params", "docker", "--text", "framework")) >= 1


def test_frameworks_help(capsys: pytest.CaptureFixture[str]) -> None:
    out_lines = help_lines(capsys, "--frameworks", "fake")
    names = [line.split()[0] for line in out_lines if line.startswith("fake.")]
    assert names and all(name in REGISTRY for name in names)
