"""Plan checks: every error names the parameter and where its value came from."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.config.catalog import FRAMEWORKS, MODELS
from dlbench.errors import ConfigError, DlbenchError

BASE = ["exp.framework=fake", "exp.model=toy"]


def plan(
    params: Sequence[str] = (), variables: Sequence[str] = (), extensions: Sequence[Any] = ()
) -> list[dict[str, Any]]:
    exts = [json.dumps(e) for e in extensions]
    spec = load_spec(params=[*BASE, *params], variables=variables, extensions=exts)
    return plan_experiments(spec)


def error_of(
    params: Sequence[str] = (), variables: Sequence[str] = (), extensions: Sequence[Any] = ()
) -> str:
    with pytest.raises(ConfigError) as err:
        plan(params, variables, extensions)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_unknown_parameter_with_suggestion() -> None:
    assert error_of(variables=["exp.replica_bach=[8]"]) == (
        "unknown parameter exp.replica_bach (from -V flag); did you mean exp.replica_batch?"
    )


def test_unknown_parameter_without_a_close_name(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("parameters: {zzz.qqq: 1}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        plan_experiments(load_spec([path]))
    assert f"unknown parameter zzz.qqq (from file {path})" in str(err.value)
    assert "user." in str(err.value)


def test_unknown_parameter_in_an_extension() -> None:
    message = error_of(extensions=[{"parameters": {"exp.num_batchs": 3}}])
    assert message.startswith("unknown parameter exp.num_batchs (from -E flag 1)")


def test_user_parameters_are_accepted() -> None:
    [exp] = plan(params=["user.anything=1", "user.more.dots=x"])
    assert (exp["user.anything"], exp["user.more.dots"]) == (1, "x")


@pytest.mark.parametrize("name", ["exp.id", "exp.status_msg", "exp.num_gpus"])
def test_computed_parameters_cannot_be_set(name: str) -> None:
    message = error_of(params=[f"{name}=x"])
    assert message.startswith(f"{name} (from -P flag) cannot be set")


def test_computed_parameter_in_a_case_cannot_be_set() -> None:
    message = error_of(extensions=[{"cases": [{"exp.id": "abc"}]}])
    assert message.startswith("exp.id (from case 1 of -E flag 1) cannot be set")


def test_exp_status_takes_only_what_a_spec_may_ask_for() -> None:
    # Changed deliberately (issue 10.3): exp.status may be set, to run an experiment
    # ('' or 'ok') or to leave it out of the plan ('disabled', DLBS's way).
    message = error_of(params=["exp.status=failure"])
    assert message.startswith("exp.status='failure' (from -P flag) is not one of '', 'ok', "
                              "'disabled', 'inactive'")


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("exp.replica_batch=abc", "exp.replica_batch='abc' (from -P flag) is not an int"),
        ("exp.timeout=[1]", "exp.timeout=[1] (from -P flag) is not a float"),
        ("pytorch.compile=maybe", "pytorch.compile='maybe' (from -P flag) is not a bool"),
        ("exp.gpus=true", "exp.gpus=True (from -P flag) is not a string"),
    ],
)
def test_wrong_types(flag: str, expected: str) -> None:
    assert error_of(params=[flag]).startswith(expected)


def test_value_outside_choices_lists_accepted_values() -> None:
    assert error_of(params=["exp.dtype=float8"]) == (
        "exp.dtype='float8' (from -P flag) is not one of 'float32', 'float16', 'bfloat16'"
    )


def test_unknown_model_lists_known_models() -> None:
    with pytest.raises(ConfigError) as err:
        plan_experiments(load_spec(params=["exp.framework=fake"], variables=["exp.model=resnet5"]))
    assert str(err.value) == (
        "exp.model='resnet5' (from -V flag) is not a known model; known: " + ", ".join(MODELS)
    )
    assert "toy, deep_mnist" in str(err.value)


def test_unknown_framework_lists_known_frameworks() -> None:
    assert error_of(variables=["exp.framework=caffe2"]) == (
        "exp.framework='caffe2' (from -V flag) is not a known framework; known: "
        + ", ".join(FRAMEWORKS)
    )


def test_framework_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dataclasses.replace(
        FRAMEWORKS["fake"], requires=("dlbench_no_such_package",), install_hint="pip install fakefw"
    )
    monkeypatch.setitem(FRAMEWORKS, "fake", missing)
    message = error_of()
    assert message.startswith("exp.framework=fake needs `pip install fakefw`")
    assert "dlbench_no_such_package" in message and "-P flag" in message


def test_phase_not_supported_by_the_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(FRAMEWORKS, "fake", dataclasses.replace(FRAMEWORKS["fake"],
                                                                phases=("inference",)))
    assert plan(params=["exp.phase=inference"])[0]["exp.phase"] == "inference"
    message = error_of(variables=["exp.phase=training"])
    assert message.startswith("exp.phase='training' (from -V flag) is not supported by framework")
    assert "supported: inference" in message


def test_replicas_of_a_framework_without_data_parallelism_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    single = dataclasses.replace(FRAMEWORKS["fake"], data_parallel="none")
    monkeypatch.setitem(FRAMEWORKS, "fake", single)
    message = error_of(params=["exp.num_local_replicas=2"])
    assert message.startswith("exp.num_replicas=2 (derived)") or message.startswith(
        "exp.num_replicas=2")
    assert "framework fake runs one replica per experiment" in message
    assert "exp.num_local_replicas=2 (from -P flag)" in message


@pytest.mark.parametrize(
    ("flags", "start", "says"),
    [
        (["exp.num_local_replicas=2", "exp.num_batches=auto"], "exp.num_batches='auto'",
         "same number of batches"),
        (["exp.num_local_replicas=2", "exp.num_warmup_batches=auto"],
         "exp.num_warmup_batches='auto'", "same number of batches"),
        (["exp.num_local_replicas=2", "exp.dist_backend=nccl"], "exp.dist_backend='nccl'",
         "needs GPUs"),
        (["exp.num_nodes=2"], "exp.rendezvous=''", "HOST:PORT"),
        (["exp.num_nodes=2", "exp.rendezvous=nohost"], "exp.rendezvous='nohost'", "HOST:PORT"),
        (["exp.num_nodes=2", "exp.node_rank=2", "exp.rendezvous=h:1"], "exp.node_rank=2",
         "from 0 to exp.num_nodes - 1"),
        (["exp.gpus=0,1", "exp.num_local_replicas=3"], "exp.num_local_replicas=3",
         "one replica per GPU"),
        (["exp.num_local_replicas=2", "exp.collective_timeout=0"],
         "exp.collective_timeout=0", "between 1 and 86400"),
    ],
)
def test_replica_checks(flags: list[str], start: str, says: str) -> None:
    message = error_of(params=flags)
    assert message.startswith(start), message
    assert says in message
    assert "(from -P flag)" in message or "(from default)" in message


def test_replicas_plan_with_their_derived_sizes() -> None:
    (experiment,) = plan(params=["exp.num_nodes=2", "exp.num_local_replicas=2",
                                 "exp.rendezvous=node01:29500", "exp.replica_batch=8"])
    assert experiment["exp.num_replicas"] == 4
    assert experiment["exp.effective_batch"] == 32


@pytest.mark.parametrize("gpus", ["0;1", "a", "0,", ",0", " 0", "0, 1", "-1"])
def test_gpu_list_syntax(gpus: str) -> None:
    message = error_of(params=[f"exp.gpus='{gpus}'"])
    assert message.startswith(f"exp.gpus={gpus!r} (from -P flag) is not a GPU list")


@pytest.mark.parametrize("gpus", ["", "0", "7", "12"])
def test_valid_gpu_lists(gpus: str) -> None:
    assert plan(params=[f"exp.gpus='{gpus}'"])[0]["exp.gpus"] == gpus


@pytest.mark.parametrize(
    ("flag", "bound"),
    [
        ("exp.replica_batch=0", ">= 1"),
        ("exp.num_batches=0", "between 1 and 10000000, or 'auto'"),
        ("exp.num_warmup_batches=-1", "between 0 and 10000000, or 'auto'"),
        ("exp.timeout=-1", "between 0 and 604800, or 'auto'"),
        ("exp.num_nodes=0", ">= 1"),
        ("fake.step_ms=-0.5", "between 0 and 86400000"),
        ("exp.image_size=-1", ">= 0"),
    ],
)
def test_numeric_sanity(flag: str, bound: str) -> None:
    name, value = flag.split("=")
    message = error_of(variables=[f"{name}=[{value}]"])
    assert message.startswith(f"{name}=") and "(from -V flag)" in message
    assert message.endswith(bound)


def test_image_size_below_the_models_minimum_is_refused() -> None:
    # alexnet's pooling needs at least 39 px (catalog); resnets compute at any size >= 8.
    message = error_of(params=["exp.model=alexnet", "exp.image_size=32"])
    assert message.startswith("exp.image_size=32 (from -P flag) is too small for alexnet")
    assert message.endswith("use 0 (its own 227 px) or at least 39")
    assert plan(params=["exp.model=alexnet", "exp.image_size=39"])[0]["exp.image_size"] == 39
    message = error_of(params=["exp.model=resnet50", "exp.image_size=4"])
    assert message.endswith("use 0 (its own 224 px) or at least 8")
    # models without image input ignore the knob
    assert plan(params=["exp.model=toy", "exp.image_size=16"])[0]["exp.image_size"] == 16


def test_numeric_edges_are_accepted() -> None:
    [exp] = plan(params=["exp.num_warmup_batches=0", "exp.timeout=0", "exp.image_size=8",
                         "fake.step_ms=0", "exp.replica_batch=1", "exp.num_batches=1"])
    assert (exp["exp.image_size"], exp["exp.timeout"]) == (8, 0.0)


def test_same_log_file_for_two_experiments_names_both_ids() -> None:
    with pytest.raises(ConfigError) as err:
        plan(params=["exp.log_file=dlbench-out/one.log"],
             variables=["exp.replica_batch=[8, 16]"])
    ids = [e["exp.id"] for e in plan(variables=["exp.replica_batch=[8, 16]"])]
    message = str(err.value)
    assert message.startswith(
        "exp.log_file='dlbench-out/one.log' (from -P flag) is the same for")
    assert ids[0] in message and ids[1] in message


def test_experiments_differing_only_in_non_identity_values_share_a_log_file() -> None:
    message = error_of(variables=["exp.timeout=[1, 2]"])
    assert "exp.log_file=" in message and "(from default)" in message


def test_errors_are_dlbench_errors_with_exit_status_2() -> None:
    with pytest.raises(DlbenchError) as err:
        plan(params=["exp.replica_batch=0"])
    assert err.value.exit_status == 2


def test_a_valid_plan_has_plain_json_values() -> None:
    exps = plan(params=["exp.gpus=0", "user.x=$(${exp.replica_batch} // 2)$"],
                variables=["exp.phase=[training, inference]"])
    assert json.loads(json.dumps(exps)) == exps
    assert [e["exp.device_type"] for e in exps] == ["gpu", "gpu"]
    assert [e["user.x"] for e in exps] == [8, 8]
