"""References, computed values, casting and exp.id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.config.expand import expand
from dlbench.config.registry import REGISTRY
from dlbench.config.resolve import Resolver, cast_value
from dlbench.errors import ConfigError

BASE = ["exp.framework=fake", "exp.model=toy"]


def plan_one(*params: str) -> dict[str, Any]:
    [exp] = plan_experiments(load_spec(params=[*BASE, *params]))
    return exp


def resolver(*params: str, variables: Sequence[str] = ()) -> Resolver:
    """A resolver of the one experiment the flags describe (no plan checks)."""
    [raw] = expand(load_spec(params=[*BASE, *params], variables=variables))
    return Resolver(raw)


def test_whole_string_reference_keeps_the_type() -> None:
    exp = plan_one("user.a=5", "user.b=${user.a}", "user.l=[1, 2]", "user.m=${user.l}")
    assert exp["user.b"] == 5
    assert exp["user.m"] == [1, 2]


def test_reference_inside_a_string_interpolates() -> None:
    exp = plan_one("user.a=5", "user.l=[1, 2]", "user.t=true", "user.s=abc",
                   "user.x=n${user.a}-${user.s}-${user.t}-${user.l}")
    assert exp["user.x"] == "n5-abc-true-[1, 2]"


def test_reference_to_a_registry_parameter_is_cast_first() -> None:
    # '8' is a str in the spec; exp.replica_batch is an int, and references see the int
    exp = plan_one("exp.replica_batch='8'", "user.b=${exp.replica_batch}")
    assert exp["exp.replica_batch"] == 8
    assert exp["user.b"] == 8
    assert exp["exp.effective_batch"] == 8


def test_registry_parameter_from_a_reference() -> None:
    exp = plan_one("user.bs=32", "exp.replica_batch=${user.bs}", "exp.num_batches=${user.bs}0")
    assert (exp["exp.replica_batch"], exp["exp.num_batches"]) == (32, 320)


def test_nested_references_resolve_innermost_first() -> None:
    exp = plan_one("user.fake_image=img-f", "user.pytorch_image=img-p",
                   "user.img=${user.${exp.framework}_image}")
    assert exp["user.img"] == "img-f"


def test_references_inside_lists_and_dicts() -> None:
    exp = plan_one("user.a=7", "user.l=['${user.a}', 'x${user.a}']", "user.d={k: '${user.a}'}")
    assert exp["user.l"] == [7, "x7"]
    assert exp["user.d"] == {"k": 7}


def test_computed_value_keeps_the_type() -> None:
    # References are text inside $(...)$, as in DLBS: a string is quoted by the expression.
    exp = plan_one("user.a=5", "user.s=abc", "user.e=$(${user.a} * 2)$",
                   "user.u=$('${user.s}'.upper())$", "user.half=$(${user.a} / 2)$")
    assert (exp["user.e"], exp["user.u"], exp["user.half"]) == (10, "ABC", 2.5)


def test_computed_value_inside_a_string_interpolates_str() -> None:
    exp = plan_one("user.a=5", "user.x=bs=$(${user.a} * 2)$ ok=$(${user.a} > 1)$")
    assert exp["user.x"] == "bs=10 ok=True"


def test_computed_values_quote_strings_themselves() -> None:
    exp = plan_one("user.q=it's", "user.n=$(len(\"${user.q}\"))$")
    assert exp["user.n"] == len("it's")
    # The text goes in as it is: a quote of the same kind ends the literal early.
    with pytest.raises(ConfigError, match=r"^user.n=.*\(from -P flag\) cannot be computed: "
                                          r"invalid syntax.*\(evaluating \"len\('it's'\)\"\)$"):
        plan_one("user.q=it's", "user.n=$(len('${user.q}'))$")


@pytest.mark.parametrize(
    ("gpus", "device", "local"),
    [("", "cpu", 1), ("0", "gpu", 1), ("3", "gpu", 1), ("0,1", "gpu", 2), ("0,1,2,3", "gpu", 4)],
)
def test_registry_derived_defaults(gpus: str, device: str, local: int) -> None:
    res = resolver(f"exp.gpus='{gpus}'", "exp.num_nodes=2", "exp.replica_batch=8")
    assert res.get("exp.device_type") == device
    assert res.get("exp.num_local_replicas") == local
    assert res.get("exp.num_replicas") == 2 * local
    assert res.get("exp.effective_batch") == 2 * local * 8


def test_default_log_file() -> None:
    exp = plan_one("exp.out_dir=/runs/a", "exp.phase=inference")
    assert exp["exp.log_file"] == f"/runs/a/logs/fake-toy-inference-{exp['exp.id']}.log"


def test_reference_cycle_prints_the_cycle() -> None:
    with pytest.raises(ConfigError) as err:
        plan_one("user.a=${user.b}", "user.b=x${user.a}")
    assert str(err.value) == "reference cycle: user.a -> user.b -> user.a (user.a from -P flag)"


def test_self_reference_is_a_cycle() -> None:
    with pytest.raises(ConfigError, match=r"reference cycle: user.a -> user.a \(user.a from"):
        plan_one("user.a=$(${user.a} + 1)$")


def test_cycle_through_exp_id() -> None:
    cycle = r"reference cycle: exp.dtype -> exp.id -> exp.dtype \(exp.dtype from -P flag\)"
    with pytest.raises(ConfigError, match=cycle):
        plan_one("exp.dtype=${exp.id}")


def test_unknown_reference_with_suggestion() -> None:
    with pytest.raises(ConfigError) as err:
        plan_one("user.a=${exp.replica_bach}")
    assert str(err.value) == (
        "user.a='${exp.replica_bach}' (from -P flag) refers to unknown parameter "
        "exp.replica_bach; did you mean exp.replica_batch?"
    )


def test_unknown_reference_inside_a_computed_value() -> None:
    with pytest.raises(ConfigError, match=r"user.a=.*\(from -P flag\).*unknown parameter nothing"):
        plan_one("user.a=$(${nothing} + 1)$")


@pytest.mark.parametrize("text", ["${user.a", "x${}", "${${user.a}"])
def test_malformed_references(text: str) -> None:
    with pytest.raises(ConfigError, match=r"user.r=.*\(from -P flag\)"):
        plan_one("user.a=1", f"user.r={text}")


def test_failing_computed_value_names_parameter_and_source() -> None:
    with pytest.raises(ConfigError, match=r"user.z='\$\(1 / 0\)\$' \(from -P flag\) cannot be"):
        plan_one("user.z=$(1 / 0)$")


@pytest.mark.parametrize(
    ("value", "type_name", "expected"),
    [
        (16, "int", 16), (16.0, "int", 16), ("16", "int", 16), (" -3 ", "int", -3),
        (2, "float", 2.0), (2.5, "float", 2.5), ("1.5", "float", 1.5), ("3", "float", 3.0),
        (True, "bool", True), ("true", "bool", True), ("YES", "bool", True), ("1", "bool", True),
        ("False", "bool", False), ("no", "bool", False), ("0", "bool", False),
        ("x", "str", "x"), (16, "str", "16"), (1.5, "str", "1.5"), ("", "str", ""),
        ([1], "list", [1]), ({"a": 1}, "dict", {"a": 1}),
        ([1], "any", [1]), (None, "any", None),
    ],
)
def test_cast(value: Any, type_name: str, expected: Any) -> None:
    result = cast_value(value, type_name)
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        ("abc", "int"), (16.5, "int"), (True, "int"), ("1.0", "int"), (None, "int"), ([1], "int"),
        ("x", "float"), (False, "float"), ("inf", "float"), ("nan", "float"),
        ("maybe", "bool"), (2, "bool"), (None, "bool"), ([], "bool"),
        ([1], "str"), ({"a": 1}, "str"), (True, "str"), (None, "str"),
        ({"a": 1}, "list"), ("[1]", "list"), ([1], "dict"), ("x", "dict"),
    ],
)
def test_cast_refuses(value: Any, type_name: str) -> None:
    with pytest.raises(ValueError, match="is not"):
        cast_value(value, type_name)


def test_cast_error_message() -> None:
    with pytest.raises(ConfigError) as err:
        plan_one("exp.num_nodes=abc")
    assert str(err.value) == "exp.num_nodes='abc' (from -P flag) is not an int"
    with pytest.raises(ConfigError) as err:
        plan_one("exp.replica_batch=abc")
    assert str(err.value) == "exp.replica_batch='abc' (from -P flag) is not an int or 'auto'"


def test_cast_error_of_a_resolved_value_shows_both() -> None:
    with pytest.raises(ConfigError) as err:
        plan_one("user.v=[1]", "exp.dtype=${user.v}")
    assert str(err.value) == "exp.dtype=[1] (from -P flag: '${user.v}') is not a string"


def identity_hash(exp: dict[str, Any]) -> str:
    """exp.id worked out independently: sha256 of the canonical JSON of the identity
    params the experiment carries (its own framework's, not the others')."""
    identity = {p.name: exp[p.name] for p in REGISTRY if p.identity and p.name in exp}
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_exp_id_is_the_hash_of_identity_parameters() -> None:
    exp = plan_one()
    assert len(exp["exp.id"]) == 16
    assert exp["exp.id"] == identity_hash(exp)


def test_exp_id_is_stable_across_plans() -> None:
    def ids() -> list[str]:
        spec = load_spec(params=[*BASE, "exp.num_batches=3"],
                         variables=["exp.replica_batch=[8,16]"])
        return [e["exp.id"] for e in plan_experiments(spec)]

    first, second = ids(), ids()
    assert first == second and len(set(first)) == 2


@pytest.mark.parametrize(
    "change",
    ["exp.replica_batch=8", "exp.phase=inference", "exp.num_batches=21", "fake.step_ms=1",
     "exp.dtype=float16"],
)
def test_exp_id_changes_with_an_identity_parameter(change: str) -> None:
    assert plan_one(change)["exp.id"] != plan_one()["exp.id"]


def test_exp_id_ignores_another_frameworks_parameters() -> None:
    # The base experiment is a fake one: PyTorch's settings do not change its measurement.
    assert plan_one("pytorch.compile=true")["exp.id"] == plan_one()["exp.id"]


@pytest.mark.parametrize(
    "change",
    ["exp.out_dir=/elsewhere", "exp.log_file=dlbench-out/x.log", "exp.timeout=5",
     "exp.rerun=always", "exp.replica_batch='16'"],
)
def test_exp_id_ignores_non_identity_parameters(change: str) -> None:
    assert plan_one(change)["exp.id"] == plan_one()["exp.id"]


def test_exp_id_counts_a_users_own_values_as_written() -> None:
    # Varying only a user value (a repeat label, say) must give distinct experiments.
    ids = [e["exp.id"] for e in plan_experiments(
        load_spec(params=BASE, variables=["user.run=[1,2,3]"]))]
    assert len(set(ids)) == 3
    assert plan_one("user.note=hello")["exp.id"] != plan_one()["exp.id"]
    # The raw text counts, so a user value may refer to exp.id itself without a cycle.
    assert plan_one("user.tag=run-${exp.id}")["exp.id"] == plan_one("user.tag=run-${exp.id}")[
        "exp.id"]


def test_exp_id_referenced_by_a_user_value() -> None:
    exp = plan_one("user.tag=run-${exp.id}")
    assert exp["user.tag"] == f"run-{exp['exp.id']}"


def test_references_in_a_computed_value_are_text_as_in_dlbs() -> None:
    exp = plan_one("exp.gpus=0,1,2,3", "user.flag=true", "user.l=[a, 2]", "user.d={k: 1}",
                   "user.bs=$(32 if \"${exp.device_type}\" == \"gpu\" else 16)$",
                   "user.bs2=$(32 if '${exp.device_type}' == 'gpu' else 16)$",
                   "user.tag=$(\"${exp.gpus}\".replace(\",\",\".\"))$",
                   "user.on=$('yes' if ${user.flag} is True else 'no')$",
                   "user.items=$('${user.l}'.split())$", "user.js=$('${user.d}')$")
    assert (exp["user.bs"], exp["user.bs2"], exp["user.tag"], exp["user.on"]) == (
        32, 32, "0.1.2.3", "yes")
    assert (exp["user.items"], exp["user.js"]) == (["a", "2"], '{"k": 1}')


def test_environment_fallback_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLB_TEST_ROOT", "/srv/b")
    monkeypatch.setenv("user.shadowed", "from-env")
    exp = plan_one("user.shadowed=mine", "user.p=${DLB_TEST_ROOT}/x-${user.shadowed}")
    assert exp["user.p"] == "/srv/b/x-mine"  # a parameter beats the environment
    assert exp["exp.env_refs"] == {"DLB_TEST_ROOT": "/srv/b"}
    assert "exp.env_refs" not in plan_one("user.p=plain")


def test_unknown_name_is_neither_parameter_nor_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DLB_TEST_MISSING", raising=False)
    with pytest.raises(ConfigError) as err:
        plan_one("user.p=${DLB_TEST_MISSING}")
    assert str(err.value) == (
        "user.p='${DLB_TEST_MISSING}' (from -P flag) refers to unknown parameter "
        "DLB_TEST_MISSING")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (["user.a0=abcd", *(f"user.a{k}=${{user.a{k - 1}}}${{user.a{k - 1}}}"
                            for k in range(1, 25))],
         r"^user.a18=.* resolves to a string longer than 1000000 characters$"),
        (["user.l0=[1, 2]", *(f"user.l{k}=['${{user.l{k - 1}}}', '${{user.l{k - 1}}}']"
                              for k in range(1, 25))],
         r"^user.l18=.* resolves to a value larger than 1000000 elements$"),
        ([f"user.c{k}=${{user.c{k + 1}}}" for k in range(60)] + ["user.c60=1"],
         r"^user.c0=.*references chained more than 50 deep \(user.c0 -> user.c1 -> \.\.\."),
        (["user.r=" + "${" * 20 + "a" + "}" * 20], r"references nested more than 16 deep$"),
    ],
    ids=["string doubling", "list doubling", "chain", "nesting"],
)
def test_resolution_limits(params: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan_one(*params)
