"""Loading sweep specs: files, flags, merging, provenance and malformed input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import dlbench.config
from dlbench.config import SweepSpec, load_spec
from dlbench.config.spec import Sourced
from dlbench.errors import SpecError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_public_api_is_exactly_the_documented_names() -> None:
    expected = ["Source", "SweepSpec", "load_spec", "plan_experiments"]
    assert sorted(dlbench.config.__all__) == expected


def test_yaml_file_parameters_variables_extensions(tmp_path: Path) -> None:
    path = write(tmp_path / "sweep.yaml", """
parameters:
  exp.framework: fake
  exp.num_batches: 5
variables:
  exp.replica_batch: [8, 16]
  exp.phase: inference
extensions:
  - condition: {exp.replica_batch: 16}
    parameters: {exp.num_batches: 2}
""")
    spec = load_spec([path])
    assert isinstance(spec, SweepSpec)
    source = f"file {path}"
    assert spec.parameters == {
        "exp.framework": Sourced("fake", source),
        "exp.num_batches": Sourced(5, source),
    }
    assert spec.variables["exp.replica_batch"] == Sourced([8, 16], source)
    assert spec.variables["exp.phase"] == Sourced(["inference"], source)  # scalar: one value
    [ext] = spec.extensions
    assert ext.condition == {"exp.replica_batch": 16}
    assert ext.parameters == {"exp.num_batches": 2}
    assert ext.cases is None
    assert ext.source == f"extension 1 of {path}"


def test_json_file(tmp_path: Path) -> None:
    data = {"parameters": {"exp.model": "toy"}, "variables": {"user.a": [1, 2]}}
    path = write(tmp_path / "sweep.json", json.dumps(data))
    spec = load_spec([str(path)])
    assert spec.parameters["exp.model"] == Sourced("toy", f"file {path}")
    assert spec.variables["user.a"].value == [1, 2]


@pytest.mark.parametrize("name,text", [("empty.yaml", ""), ("comments.yaml", "# nothing\n\n"),
                                       ("empty.json", "  \n")])
def test_an_empty_file_is_refused_rather_than_planning_the_default_sweep(
        tmp_path: Path, name: str, text: str) -> None:
    # Changed deliberately (issue 11.4): an empty file used to plan the default sweep.
    path = write(tmp_path / name, text)
    with pytest.raises(SpecError, match=f"^spec file {re.escape(str(path))} is empty: "):
        load_spec([path])


def test_two_files_merge_in_order(tmp_path: Path) -> None:
    first = write(tmp_path / "a.yaml", """
parameters: {exp.model: toy, exp.num_batches: 5}
variables: {user.v: [1, 2], user.w: [3]}
extensions: [{parameters: {user.e: 1}}]
""")
    second = write(tmp_path / "b.yaml", """
parameters: {exp.num_batches: 7}
variables: {user.v: [9]}
extensions: [{parameters: {user.e: 2}}]
""")
    spec = load_spec([first, second])
    assert spec.parameters["exp.model"] == Sourced("toy", f"file {first}")
    assert spec.parameters["exp.num_batches"] == Sourced(7, f"file {second}")
    assert spec.variables["user.v"] == Sourced([9], f"file {second}")
    assert list(spec.variables) == ["user.v", "user.w"]
    assert [e.source for e in spec.extensions] == [
        f"extension 1 of {first}", f"extension 1 of {second}",
    ]
    assert [e.parameters["user.e"] for e in spec.extensions] == [1, 2]


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path / "sweep.yaml", "parameters: {}\nparams: {exp.model: toy}\n")
    with pytest.raises(SpecError) as err:
        load_spec([path])
    message = str(err.value)
    assert str(path) in message and "'params'" in message
    assert "parameters, variables, extensions" in message


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml", "parameters:\n  exp.model: toy\n  exp.phase: a: b\n")
    with pytest.raises(SpecError, match="^" + re.escape(f"{path}:3: invalid YAML")):
        load_spec([path])


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", '{\n  "parameters": {\n    "exp.model": "toy",\n  }\n}\n')
    with pytest.raises(SpecError, match="^" + re.escape(f"{path}:4: invalid JSON")):
        load_spec([path])


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    with pytest.raises(SpecError, match=r"nowhere\.yaml"):
        load_spec([path])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("parameters: [1, 2]\n", "parameters must be a mapping"),
        ("- 1\n- 2\n", "must be a mapping"),
        ("extensions: {condition: {}}\n", "extensions must be a list"),
        ("variables: {user.a: []}\n", "user.a"),
        ("extensions: [{condition: {exp.model: '(unclosed'}}]\n", "regular expression"),
        ("extensions: [{cases: [1]}]\n", "case 1"),
        ("parameters: {user.s: !!set {a: null}}\n", "not a JSON value"),
    ],
)
def test_malformed_spec_shapes(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path / "sweep.yaml", text)
    with pytest.raises(SpecError) as err:
        load_spec([path])
    assert problem in str(err.value) and str(path) in str(err.value)


def test_unknown_extension_key_names_extension_and_source(tmp_path: Path) -> None:
    path = write(tmp_path / "sweep.yaml", "extensions:\n  - {parameters: {}}\n  - {when: {}}\n")
    with pytest.raises(SpecError) as err:
        load_spec([path])
    assert f"extension 2 of {path}" in str(err.value) and "'when'" in str(err.value)
    with pytest.raises(SpecError, match=r"-E flag 2.*'param'"):
        load_spec(extensions=['{"parameters": {}}', '{"param": {}}'])


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("exp.phase=inference", "inference"),
        ("exp.num_batches=3", 3),
        ("exp.gpus=0,1", "0,1"),
        ("exp.gpus=", ""),
        ("exp.gpus=0", 0),
        ("exp.timeout=2.5", 2.5),
        ("pytorch.compile=true", True),
        ("user.list=[1, two]", [1, "two"]),
        ("user.map={a: 1}", {"a": 1}),
        ("user.date=2024-01-01", "2024-01-01"),
        ("user.eq=a=b", "a=b"),
        ("user.ref=${exp.model}-x", "${exp.model}-x"),
    ],
)
def test_param_flag_values_are_yaml(flag: str, value: object) -> None:
    name = flag.split("=", 1)[0]
    assert load_spec(params=[flag]).parameters[name] == Sourced(value, "-P flag")


def test_variable_flags() -> None:
    spec = load_spec(variables=["exp.replica_batch=[16,32]", "exp.model=toy", "exp.gpus="])
    assert spec.variables["exp.replica_batch"] == Sourced([16, 32], "-V flag")
    assert spec.variables["exp.model"] == Sourced(["toy"], "-V flag")
    assert spec.variables["exp.gpus"] == Sourced([""], "-V flag")


def test_extension_flags_are_numbered() -> None:
    spec = load_spec(extensions=['{"parameters": {"user.a": 1}}', '{"condition": {"user.a": 1}}'])
    assert [e.source for e in spec.extensions] == ["-E flag 1", "-E flag 2"]
    assert spec.extensions[1].condition == {"user.a": 1}


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"params": ["exp.model"]}, "-P 'exp.model'"),
        ({"params": ["=toy"]}, "-P '=toy'"),
        ({"params": ["user.x=[1,2"]}, "-P 'user.x=[1,2'"),
        ({"variables": ["user.v"]}, "-V 'user.v'"),
        ({"variables": ["user.v={a: [}"]}, "-V 'user.v={a: [}'"),
        ({"variables": ["user.v=[]"]}, "user.v (from -V flag)"),
        ({"extensions": ["{not json"]}, "-E flag 1: '{not json'"),
        ({"extensions": ["[1, 2]"]}, "-E flag 1"),
    ],
)
def test_bad_flags_name_the_flag_and_text(kwargs: dict[str, list[str]], expected: str) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(**kwargs)  # type: ignore[arg-type]
    assert expected in str(err.value)


def test_flags_apply_after_files_and_overrides_last(tmp_path: Path) -> None:
    path = write(tmp_path / "sweep.yaml", """
parameters: {exp.out_dir: from-file, exp.num_batches: 5}
variables: {user.v: [1, 2]}
""")
    spec = load_spec(
        [path],
        params=["exp.num_batches=6", "exp.out_dir=from-flag"],
        variables=["user.v=[3]"],
        overrides={"exp.out_dir": (tmp_path / "out", "--out flag")},
    )
    assert spec.parameters["exp.num_batches"] == Sourced(6, "-P flag")
    assert spec.parameters["exp.out_dir"] == Sourced(str(tmp_path / "out"), "--out flag")
    assert spec.variables["user.v"] == Sourced([3], "-V flag")
