"""Expansion: the variables' Cartesian product and extensions, DLBS semantics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.config import load_spec, plan_experiments
from dlbench.config.expand import apply_extension, expand
from dlbench.config.resolve import Resolver
from dlbench.config.spec import Extension
from dlbench.errors import ConfigError, SpecError

#: A framework and model every test machine can plan.
BASE = ["exp.framework=fake", "exp.model=toy"]


def plan(
    params: Sequence[str] = (),
    variables: Sequence[str] = (),
    extensions: Sequence[Any] = (),
) -> list[dict[str, Any]]:
    """The planned experiments (expanded, resolved and checked)."""
    exts = [e if isinstance(e, str) else json.dumps(e) for e in extensions]
    spec = load_spec(params=[*BASE, *params], variables=variables, extensions=exts)
    return plan_experiments(spec)


def expanded(
    params: Sequence[str] = (),
    variables: Sequence[str] = (),
    extensions: Sequence[Any] = (),
) -> list[dict[str, Any]]:
    """The expanded experiments, resolved but not checked: sweeps over user.* values
    only would share one log file (user.* values are not part of exp.id)."""
    exts = [e if isinstance(e, str) else json.dumps(e) for e in extensions]
    spec = load_spec(params=[*BASE, *params], variables=variables, extensions=exts)
    return [Resolver(raw).resolve_all() for raw in expand(spec)]


def column(experiments: list[dict[str, Any]], *names: str) -> list[tuple[Any, ...]]:
    return [tuple(e[n] for n in names) for e in experiments]


def test_cartesian_product_last_variable_fastest() -> None:
    exps = expanded(variables=["user.a=[1,2]", "user.b=[x,y]"])
    assert column(exps, "user.a", "user.b") == [(1, "x"), (1, "y"), (2, "x"), (2, "y")]


def test_planned_product_order() -> None:
    exps = plan(variables=["exp.replica_batch=[1,2]", "exp.phase=[training, inference]"])
    assert column(exps, "exp.replica_batch", "exp.phase") == [
        (1, "training"), (1, "inference"), (2, "training"), (2, "inference"),
    ]


def test_three_variables_nest_like_loops() -> None:
    exps = expanded(variables=["user.a=[1,2]", "user.b=[x]", "user.c=[p,q,r]"])
    assert column(exps, "user.a", "user.c") == [
        (1, "p"), (1, "q"), (1, "r"), (2, "p"), (2, "q"), (2, "r"),
    ]


def test_no_variables_is_one_experiment_with_its_own_parameters() -> None:
    from dlbench.config.registry import REGISTRY

    [exp] = plan()  # the fake framework
    own = {p.name for p in REGISTRY if p.namespace in ("exp", "monitor", "fake")}
    assert set(exp) == own
    assert exp["exp.num_batches"] == 20  # the default
    assert exp["fake.step_ms"] == 10.0


def test_other_frameworks_parameters_are_left_out_and_do_not_change_the_id() -> None:
    [fake] = plan(params=["pytorch.num_threads=3"])
    assert not any(name.startswith("pytorch.") for name in fake)
    [again] = plan()
    assert fake["exp.id"] == again["exp.id"]
    [torch] = plan(params=["exp.framework=pytorch", "fake.step_ms=3"])
    assert torch["pytorch.num_threads"] == 0 and "fake.step_ms" not in torch
    [torch_default] = plan(params=["exp.framework=pytorch"])
    assert torch["exp.id"] == torch_default["exp.id"]


def test_design_check_four_experiments() -> None:
    spec = load_spec(
        variables=["exp.model=[resnet18, alexnet]", "exp.replica_batch=[8,16]"],
        params=["exp.num_batches=3"],
    )
    exps = plan_experiments(spec)
    assert column(exps, "exp.model", "exp.replica_batch", "exp.num_batches") == [
        ("resnet18", 8, 3), ("resnet18", 16, 3), ("alexnet", 8, 3), ("alexnet", 16, 3),
    ]
    assert len({e["exp.id"] for e in exps}) == 4


def test_variable_beats_parameter(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("variables: {exp.replica_batch: [8]}\n", encoding="utf-8")
    spec = load_spec([path], params=[*BASE, "exp.replica_batch=4"])
    [exp] = plan_experiments(spec)
    assert exp["exp.replica_batch"] == 8


def test_extension_without_condition_applies_to_all() -> None:
    exps = expanded(variables=["user.a=[1,2]"], extensions=[{"parameters": {"user.b": "set"}}])
    assert column(exps, "user.b") == [("set",), ("set",)]


def test_regex_condition_is_anchored_at_the_start() -> None:
    ext = [{"condition": {"user.m": "net"}, "parameters": {"user.hit": True}},
           {"condition": {"user.m": "res"}, "parameters": {"user.res": True}}]
    exps = expanded(params=["user.hit=false", "user.res=false"],
                variables=["user.m=[resnet18, alexnet]"], extensions=ext)
    assert column(exps, "user.m", "user.hit", "user.res") == [
        ("resnet18", False, True), ("alexnet", False, False),
    ]


def test_list_condition_matches_any_element() -> None:
    # As DLBS: a list is membership by equality; its strings are not regular expressions.
    ext = {"condition": {"user.m": ["alexnet", "vgg"], "user.b": [8, 32]},
           "parameters": {"user.x": 1}}
    exps = expanded(params=["user.x=0"], variables=["user.m=[resnet18, alexnet]", "user.b=[8, 16]"],
                extensions=[ext])
    assert column(exps, "user.m", "user.b", "user.x") == [
        ("resnet18", 8, 0), ("resnet18", 16, 0), ("alexnet", 8, 1), ("alexnet", 16, 0),
    ]
    prefix = {"condition": {"user.m": ["alex"]}, "parameters": {"user.x": 1}}
    exps = expanded(params=["user.x=0"], variables=["user.m=[alexnet, alex]"], extensions=[prefix])
    assert column(exps, "user.m", "user.x") == [("alexnet", 0), ("alex", 1)]


def test_equality_condition_on_typed_values() -> None:
    ext = {"condition": {"exp.replica_batch": 16, "pytorch.compile": False},
           "parameters": {"exp.num_batches": 2}}
    exps = plan(variables=["exp.replica_batch=[8, 16]"], extensions=[ext])
    assert column(exps, "exp.replica_batch", "exp.num_batches") == [(8, 20), (16, 2)]


def test_equality_does_not_confuse_true_and_one() -> None:
    exps = plan(params=["user.flag=1"],
                extensions=[{"condition": {"user.flag": True}, "parameters": {"user.hit": 1}}])
    assert "user.hit" not in exps[0]


def test_condition_sees_resolved_values() -> None:
    # exp.device_type is derived: '$(... ${exp.gpus} ...)$' resolves to cpu here
    ext = {"condition": {"exp.device_type": "cpu"}, "parameters": {"user.on": "cpu"}}
    [exp] = plan(extensions=[ext])
    assert exp["user.on"] == "cpu"


def test_absent_key_is_ignored_as_dlbs_relaxed_match() -> None:
    ext = {"condition": {"user.absent": "x", "exp.phase": "train"}, "parameters": {"user.hit": 1}}
    [exp] = plan(extensions=[ext])
    assert exp["user.hit"] == 1
    other = {"condition": {"user.absent": "x", "exp.phase": "infer"},
             "parameters": {"user.hit": 1}}
    [exp] = plan(extensions=[other])
    assert "user.hit" not in exp


def test_cases_replace_the_experiment() -> None:
    ext = {
        "condition": {"user.m": "a"},
        "parameters": {"user.p": "shared"},
        "cases": [{"user.c": 1}, {"user.c": 2, "user.p": "own"}],
    }
    exps = expanded(params=["user.c=0", "user.p=none"], variables=["user.m=[a1, b1, a2]"],
                extensions=[ext])
    assert column(exps, "user.m", "user.c", "user.p") == [
        ("a1", 1, "shared"), ("a1", 2, "own"), ("b1", 0, "none"),
        ("a2", 1, "shared"), ("a2", 2, "own"),
    ]


def test_capture_groups_are_substituted() -> None:
    ext = {
        "condition": {"user.m": r"(res|alex)net(?P<depth>\d*)"},
        "parameters": {"user.family": "${__condition.user.m_1}",
                       "user.tag": "d${__condition.user.m_depth}-${__condition.user.m_2}"},
    }
    exps = expanded(variables=["user.m=[resnet18, alexnet]"], extensions=[ext])
    assert column(exps, "user.family", "user.tag") == [("res", "d18-18"), ("alex", "d-")]
    assert not any(k.startswith("__condition") for e in exps for k in e)


def test_capture_group_feeds_a_reference() -> None:
    ext = {"condition": {"user.m": "(alex|res)net"},
           "parameters": {"user.pick": "${user.${__condition.user.m_1}_image}"}}
    exps = expanded(params=["user.alex_image=img-a", "user.res_image=img-r"],
                variables=["user.m=[alexnet, resnet50]"], extensions=[ext])
    assert column(exps, "user.pick") == [("img-a",), ("img-r",)]


def test_unknown_capture_is_a_spec_error() -> None:
    ext = {"condition": {"user.m": "res"}, "parameters": {"user.x": "${__condition.user.m_1}"}}
    with pytest.raises(SpecError, match=r"-E flag 1.*__condition\.user\.m_1"):
        plan(params=["user.m=resnet"], extensions=[ext])


def test_extensions_apply_in_order_and_see_earlier_ones() -> None:
    exts = [
        {"parameters": {"user.stage": "one"}},
        {"condition": {"user.stage": "one"}, "parameters": {"user.stage": "two", "user.seen": 1}},
        {"condition": {"user.stage": "one"}, "parameters": {"user.stale": 1}},
    ]
    [exp] = plan(extensions=exts)
    assert (exp["user.stage"], exp["user.seen"]) == ("two", 1)
    assert "user.stale" not in exp


def test_extension_values_may_hold_references() -> None:
    ext = {"condition": {"exp.replica_batch": 16},
           "parameters": {"user.bs": "bs${exp.replica_batch}"}}
    exps = plan(params=["user.bs=none"], variables=["exp.replica_batch=[8, 16]"], extensions=[ext])
    assert column(exps, "user.bs") == [("none",), ("bs16",)]


def test_unknown_name_in_condition() -> None:
    ext = {"condition": {"exp.modle": "toy"}, "parameters": {"user.x": 1}}
    with pytest.raises(ConfigError, match=r"exp.modle \(from -E flag 1\).*exp.model"):
        plan(extensions=[ext])


def test_unknown_name_in_case_names_the_case() -> None:
    ext = {"cases": [{"user.ok": 1}, {"exp.replica_bach": 2}]}
    with pytest.raises(ConfigError, match=r"exp.replica_bach \(from case 2 of -E flag 1\)"):
        plan(extensions=[ext])


def test_varying_parameters_are_the_inputs_that_differ() -> None:
    from dlbench.config.identity import varying_parameters

    exps = plan(variables=["exp.replica_batch=[8,16]", "user.tag=[a,b]"],
                params=["exp.num_batches=3"])
    # exp.effective_batch differs too, but it is derived from exp.replica_batch;
    # exp.log_file and exp.id differ but do not define the measurement.
    assert varying_parameters(exps) == ["exp.replica_batch", "user.tag"]
    assert varying_parameters([]) == []


def test_sweep_over_the_limit_is_refused_before_building() -> None:
    spec = load_spec(params=BASE, variables=["user.a=[1,2,3]", "user.b=[1,2]"])
    assert len(plan_experiments(spec, max_experiments=6)) == 6
    with pytest.raises(ConfigError) as err:
        plan_experiments(spec, max_experiments=5)
    assert str(err.value) == (
        "the sweep has 6 experiments (user.a (3) x user.b (2)), more than the limit of 5; "
        "narrow the variables or raise the limit with --max-experiments")


def test_extension_cases_count_towards_the_limit() -> None:
    ext = {"condition": {"user.a": [1]}, "cases": [{"user.c": k} for k in range(4)]}
    spec = load_spec(params=BASE, variables=["user.a=[1,2]"], extensions=[json.dumps(ext)])
    assert len(plan_experiments(spec, max_experiments=5)) == 5
    with pytest.raises(ConfigError, match=r"^-E flag 1: its 4 cases make the sweep 5 "
                                          r"experiments, more than the limit of 4;"):
        plan_experiments(spec, max_experiments=4)


def test_max_experiments_flag(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["plan", "-P", "exp.framework=fake", "-P", "exp.model=toy", "-V", "user.a=[1,2,3]"]
    assert main([*flags, "--max-experiments", "2"]) == 2
    assert "more than the limit of 2" in capsys.readouterr().err
    assert main([*flags, "--max-experiments", "3"]) == 0
    assert "3 experiments" in capsys.readouterr().out
    assert main([*flags, "--max-experiments", "0"]) == 2
    assert "--max-experiments 0: give a limit of at least 1" in capsys.readouterr().err


def test_empty_cases_keep_the_matched_experiment() -> None:
    [raw] = expand(load_spec(params=BASE))
    ext = Extension({"exp.model": "toy"}, {"user.x": 1}, [], "-E flag 1")
    [one] = apply_extension([raw], ext)
    assert one["user.x"].value == 1
