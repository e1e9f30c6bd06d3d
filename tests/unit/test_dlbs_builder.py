"""DLBS's plan-builder tests, restated for dlbench's plan.

Each upstream test of ``python/dlbs/tests/test_builder.py`` has a counterpart here,
with our own data, going through ``dlbench plan --format json`` (in process) or
``plan_experiments``:

- test_builder_1: parameters alone make one experiment
- test_builder_2: a parameter given on the command line joins the spec's
- test_builder_3: a variable makes one experiment per value
- test_builder_4: an extension whose condition matches sets its parameters
- test_builder_5: a condition on two keys matches only where both do
- test_builder_6: two variables, an extension matching one combination
- test_builder_7: extensions apply one after the other
- test_builder_8: a condition's groups (``_0`` whole value, ``_1``, ``_2``) feed the
  extension's parameters, which may overwrite the matched key itself
- test_builder_9: as 8, with a nested reference resolved after the extension

DLBS lists its Cartesian product in dict order (hash order under Python 2); dlbench
varies variables like nested loops in declaration order, the last one fastest, and
these tests check that order. The processor's behaviour that DLBS's configuration
tests rely on (values computed whatever their order, nested references, computed
values, environment variables) closes the module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.config import load_spec, plan_experiments

BASE = {"exp.framework": "fake", "exp.model": "toy"}


def plan_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: dict[str, Any],
              *flags: str) -> list[dict[str, Any]]:
    """``dlbench plan --format json --config spec.json FLAGS`` run in process."""
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    assert main(["plan", "--format", "json", "--config", str(path), *flags]) == 0
    data: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["data"]
    return data


def pick(experiments: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(exp.get(name) for name in names) for exp in experiments]


def test_parameters_alone_make_one_experiment(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "user.suite": "Vision", "user.net": "vgg"}}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "exp.framework", "exp.model", "user.suite", "user.net") == [
        ("fake", "toy", "Vision", "vgg")]


def test_command_line_parameter_joins_the_spec(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "user.net": "vgg"}}
    exps = plan_file(tmp_path, capsys, spec, "-P", "exp.replica_batch=24")
    assert pick(exps, "user.net", "exp.replica_batch") == [("vgg", 24)]


def test_variable_makes_one_experiment_per_value(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": BASE, "variables": {"exp.replica_batch": [12, 48]}}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "exp.model", "exp.replica_batch") == [("toy", 12), ("toy", 48)]


def test_matching_extension_sets_its_parameters(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "user.fw": "Torch"},
            "extensions": [{"condition": {"user.fw": "Torch"},
                            "parameters": {"exp.replica_batch": 96}}]}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "user.fw", "exp.replica_batch") == [("Torch", 96)]


def test_condition_on_two_keys_needs_both(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "user.fw": "Torch", "exp.replica_batch": 40},
            "variables": {"user.net": ["vgg", "lstm"]},
            "extensions": [{"condition": {"user.fw": "Torch", "user.net": "lstm"},
                            "parameters": {"exp.replica_batch": 80}}]}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "user.net", "exp.replica_batch") == [("vgg", 40), ("lstm", 80)]


def test_two_variables_and_one_matching_combination(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "exp.replica_batch": 40},
            "variables": {"user.fw": ["Torch", "Jax"], "user.net": ["vgg", "lstm"]},
            "extensions": [{"condition": {"user.fw": "Torch", "user.net": "lstm"},
                            "parameters": {"exp.replica_batch": 80}}]}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "user.fw", "user.net", "exp.replica_batch") == [
        ("Torch", "vgg", 40), ("Torch", "lstm", 80), ("Jax", "vgg", 40), ("Jax", "lstm", 40)]


def test_extensions_apply_one_after_the_other(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "user.fw": "Torch"},
            "extensions": [
                {"condition": {"user.fw": "Torch"}, "parameters": {"exp.replica_batch": 64}},
                {"condition": {"exp.replica_batch": 64}, "parameters": {"user.flag": "on"}},
            ]}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "exp.replica_batch", "user.flag") == [(64, "on")]


def test_condition_groups_feed_parameters(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "user.fw": "intel_tflow"},
            "extensions": [{"condition": {"user.fw": "([^_]+)_(.+)"},
                            "parameters": {"exp.replica_batch": 72,
                                           "user.fw_id": "${__condition.user.fw_0}",
                                           "user.fork": "${__condition.user.fw_1}",
                                           "user.fw": "${__condition.user.fw_2}"}}]}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "user.fw", "user.fw_id", "user.fork", "exp.replica_batch") == [
        ("tflow", "intel_tflow", "intel", 72)]


def test_condition_groups_and_a_nested_reference(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"parameters": {**BASE, "user.fw": "intel_tflow",
                           "user.home": "${user.${user.fork}_tflow_home}",
                           "user.intel_tflow_home": "/srv/tflow-intel"},
            "extensions": [{"condition": {"user.fw": "([^_]+)_(.+)"},
                            "parameters": {"user.fork": "${__condition.user.fw_1}",
                                           "user.fw": "${__condition.user.fw_2}"}}]}
    exps = plan_file(tmp_path, capsys, spec)
    assert pick(exps, "user.fw", "user.fork", "user.home", "user.intel_tflow_home") == [
        ("tflow", "intel", "/srv/tflow-intel", "/srv/tflow-intel")]


def test_whole_value_capture_keeps_its_type() -> None:
    ext = {"condition": {"exp.replica_batch": [8, 32]},
           "parameters": {"user.seen": "${__condition.exp.replica_batch_0}",
                          "user.label": "bs${__condition.exp.replica_batch_0}"}}
    spec = load_spec(params=[f"{k}={v}" for k, v in BASE.items()],
                     variables=["exp.replica_batch=[8, 16]"], extensions=[json.dumps(ext)])
    exps = plan_experiments(spec)
    assert pick(exps, "exp.replica_batch", "user.seen", "user.label") == [
        (8, 8, "bs8"), (16, None, None)]


def test_empty_string_condition_matches_only_empty() -> None:
    ext = {"condition": {"user.dir": ""}, "parameters": {"user.data": "synthetic"}}
    spec = load_spec(params=[f"{k}={v}" for k, v in BASE.items()],
                     variables=["user.dir=['', /data]"], extensions=[json.dumps(ext)])
    assert pick(plan_experiments(spec), "user.dir", "user.data") == [
        ("", "synthetic"), ("/data", None)]


# The processor: what DLBS's configuration tests rely on.

def test_values_are_computed_whatever_their_order() -> None:
    # user.c needs user.b which needs user.a, declared in the opposite order.
    spec = load_spec(params=[*(f"{k}={v}" for k, v in BASE.items()),
                             "user.c=$(${user.b} * 2)$", "user.b=$(${user.a} + 1)$", "user.a=3"])
    [exp] = plan_experiments(spec)
    assert (exp["user.a"], exp["user.b"], exp["user.c"]) == (3, 4, 8)


def test_computed_value_from_derived_values_as_dlbs_writes_them() -> None:
    # As DLBS's configs write them: quoted string references, bare numbers and bools.
    spec = load_spec(params=[
        *(f"{k}={v}" for k, v in BASE.items()), "exp.gpus=0,1", "user.docker=false",
        "user.bs=$(32 if '${exp.device_type}' == 'gpu' else 16)$",
        "user.tag=$(\"${exp.gpus}\".replace(\",\", \".\"))$",
        "user.where=$('/workspace' if ${user.docker} else '/host')$",
        "user.layout=$('NCHW' if '${exp.device_type}' == 'gpu' else 'NHWC')$",
        "user.log=${exp.model}_$(\"${exp.gpus}\".replace(\",\", \".\"))$.log",
    ])
    [exp] = plan_experiments(spec)
    assert pick([exp], "user.bs", "user.tag", "user.where", "user.layout", "user.log") == [
        (32, "0.1", "/host", "NCHW", "toy_0.1.log")]


def test_environment_variable_reference(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BENCH_ROOT_T", "/opt/bench")
    spec = {"parameters": {**BASE, "user.logs": "${BENCH_ROOT_T}/logs",
                           "user.where": "$('${BENCH_ROOT_T}'.split('/')[-1])$"}}
    [exp] = plan_file(tmp_path, capsys, spec)
    assert (exp["user.logs"], exp["user.where"]) == ("/opt/bench/logs", "bench")
    assert exp["exp.env_refs"] == {"BENCH_ROOT_T": "/opt/bench"}
