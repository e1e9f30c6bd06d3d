"""Hostile and malformed specs end in one line and exit status 2, fast.

A corpus of spec files, flag values and parameter values, each planned through
``dlbench plan``; then Hypothesis over spec loading and -P/-V/-E parsing: any input
gives a spec or a one-line DlbenchError, within a bound on CPU time relative to
planning an ordinary spec (``tests/cpu_cost.py``: a ratio, which a loaded machine does
not move).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlbench.cli.main import main
from dlbench.config import plan_experiments
from dlbench.config.spec import load_spec
from dlbench.errors import DlbenchError
from tests.cpu_cost import CostBound

BASE = ["-P", "exp.framework=fake", "-P", "exp.model=toy"]

#: A hostile spec costs at most this many plannings of an ordinary one (CPU time).
WORK_BOUND = CostBound(
    lambda: plan_experiments(load_spec(params=["exp.framework=fake", "exp.model=toy"])),
    factor=1000)

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n" for i in range(8))

#: (file name, content, what the one-line error says).
FILES = [
    ("laughs.yaml", LAUGHS, "aliases (*name) are not accepted"),
    ("alias.yaml", "parameters: &p {user.a: 1}\nvariables: *p\n", "aliases"),
    ("deep.yaml", "parameters: {user.a: " + "[" * 20000 + "]" * 20000 + "}", "nest more than"),
    ("deep.json", '{"parameters": {"user.a": ' + "[" * 20000 + "]" * 20000 + "}}", "nest"),
    ("deepmap.json", '{"parameters": {"user.a": ' + '{"a":' * 5000 + "1" + "}" * 5000 + "}}",
     "nest"),
    ("dup.yaml", "parameters:\n  exp.model: toy\n  exp.model: resnet50\n",
     "duplicate key 'exp.model' (lines 2 and 3)"),
    ("dup_top.yaml", "parameters: {}\nparameters: {}\n", "duplicate key 'parameters'"),
    ("dup.json", '{"parameters": {\n"user.a": 1,\n"user.a": 2}}',
     "duplicate key 'user.a' (lines 2 and 3)"),
    ("empty.yaml", "", "is empty"),
    ("comments.yaml", "# only a comment\n", "is empty"),
    ("blank.json", "\n\n", "is empty"),
    ("list.yaml", "- 1\n- 2\n", "a spec must be a mapping"),
    ("scalar.yaml", "42\n", "a spec must be a mapping"),
    ("text.json", '"parameters"', "a spec must be a mapping"),
    ("unknown_key.yaml", "params: {}\n", "unknown top-level key 'params'"),
    ("bad_yaml.yaml", "parameters: [1, 2\n", "invalid YAML"),
    ("bad_json.json", '{"parameters": }', "invalid JSON"),
    ("tab.yaml", "parameters:\n\tuser.a: 1\n", "invalid YAML"),
    ("params_list.yaml", "parameters: [1, 2]\n", "must be a mapping"),
    ("vars_scalar.yaml", "variables: 3\n", "must be a mapping"),
    ("empty_var.yaml", "variables: {user.a: []}\n", "has no values"),
    ("ext_map.yaml", "extensions: {a: 1}\n", "extensions must be a list"),
    ("ext_item.yaml", "extensions: [1]\n", "an extension must be an object"),
    ("ext_key.yaml", "extensions: [{when: {}}]\n", "unknown key 'when'"),
    ("ext_regex.yaml", "extensions: [{condition: {exp.model: '('}}]\n",
     "not a valid regular expression"),
    ("ext_cases.yaml", "extensions: [{cases: 3}]\n", "cases must be a list"),
    ("ext_case.yaml", "extensions: [{cases: [3]}]\n", "must be a mapping"),
    ("int_key.yaml", "parameters: {1: 2}\n", "key 1 is not a string"),
    ("set.yaml", "parameters: {user.a: !!set {x}}\n", "is not a JSON value"),
    ("binary.yaml", "parameters: {user.a: !!binary aGk=}\n", "is not a JSON value"),
    ("python.yaml", "parameters: {user.a: !!python/object:os.system x}\n", "invalid YAML"),
    ("nan.yaml", "parameters: {user.a: .nan}\n", "is not a finite number"),
    ("declared.yaml", "parameters: {user.a: {val: 1, type: list}}\n", "declares type 'list'"),
    ("typo.yaml", "parameters: {exp.replica_bach: 8}\n", "did you mean exp.replica_batch"),
    ("zzz.yaml", "parameters: {zzz.qqq: 1}\n", "unknown parameter zzz.qqq"),
    ("latin1.yaml", b"parameters: {user.a: \xe9}\n", "cannot be read"),
]

#: (flags, what the one-line error says).
FLAGS: list[tuple[list[str], str]] = [
    (["-P", "novalue"], "expected name=value"),
    (["-P", "=1"], "expected name=value"),
    (["-P", "exp model=1"], "expected name=value"),
    (["-P", "user.a=[1, 2"], "cannot parse the value"),
    (["-P", "user.a=" + "[" * 20000], "cannot parse the value"),
    (["-P", "user.a=" + "[" * 20000 + "]" * 20000], "nest more than"),
    (["-P", "user.a=&x [1]"], ""),  # an anchor alone is harmless: see the test
    (["-P", "user.a=*x"], "aliases"),
    (["-P", "user.a={b: 1, b: 2}"], "duplicate key 'b'"),
    (["-V", "user.a=[]"], "has no values"),
    (["-V", "user.a={x: 1, x: 1}"], "duplicate key"),
    (["-E", "{"], "is not valid JSON"),
    (["-E", "[]"], "an extension must be an object"),
    (["-E", '{"cases": 1}'], "cases must be a list"),
    (["-E", "[" * 20000 + "]" * 20000], "nest"),
    (["-E", '{"parameters": {"user.a": 1, "user.a": 2}}'], "duplicate key 'user.a'"),
    (["-E", '{"condition": {"exp.model": "[", "x": 1}}'], "not a valid regular expression"),
    (["-E", '{"parameters": {"user.a": NaN}}'], "is not a finite number"),
    (["-P", "exp.replica_batch=1e26"], "is not an int"),
    (["-P", "exp.replica_batch=100000000000000000000000000"], "must be <= 1048576"),
    (["-P", "exp.replica_batch=1048577"], "must be <= 1048576"),
    (["-P", "exp.replica_batch=0"], "must be >= 1"),
    (["-P", "exp.max_batches=0"],
     "exp.max_batches=0 (from -P flag) must be between 1 and 10000000"),
    (["-P", "exp.max_batches=-5"], "must be between 1 and 10000000"),
    (["-P", "exp.num_batches=0"], "must be between 1 and 10000000, or 'auto'"),
    (["-P", "monitor.frequency=0.001"], "give at least 0.01"),
    (["-P", "monitor.frequency=0", "-P", "monitor.enabled=true"], "0 turns the monitor off"),
    (["-P", "monitor.frequency=-1"], "must be between 0 and 86400"),
    (["-P", "exp.gpus=0:1"], "gives a replica several GPUs"),
    (["-P", "exp.gpus=0,,1"], "is not a GPU list"),
    (["-P", "exp.gpus=a"], "is not a GPU list"),
    (["-P", "exp.status=ok!"], "is not one of '', 'ok', 'disabled', 'inactive'"),
    (["-P", "exp.status=failure"], "is not one of"),
    (["-P", "exp.id=x"], "cannot be set"),
    (["-P", "exp.log_file=/etc/passwd"], "is outside the run directory"),
    (["-P", "exp.log_file=${exp.out_dir}/../x.log"], "is outside the run directory"),
    (["-P", "exp.log_file=${exp.out_dir}"], "is outside the run directory"),
    # A quote in exp.gpus is reported as exp.gpus, not as a value derived from it.
    (["-P", 'exp.gpus=0"'], """exp.gpus='0"' (from -P flag) is not a GPU list"""),
    (["-P", "exp.log_file=${exp.out_dir}/results.sqlite"], "which dlbench writes itself"),
    (["-P", "exp.log_file=${exp.out_dir}/results.sqlite-wal"], "which dlbench writes itself"),
    (["-P", "exp.log_file=${exp.out_dir}/results.sqlite-shm"], "which dlbench writes itself"),
    (["-P", "exp.log_file=${exp.out_dir}/experiments/a.json"], "which dlbench writes itself"),
    (["-P", "exp.log_file=${exp.out_dir}/one.log", "-V", "exp.replica_batch=[1,2]"],
     "is the same for experiments"),
]


def plan_error(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    statuses: list[int] = []
    WORK_BOUND.check(lambda: statuses.append(main(["plan", *args])), " ".join(args))
    err = capsys.readouterr().err
    assert statuses == [2], err
    assert err.startswith("dlbench: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("name,content,expected", FILES, ids=[f[0] for f in FILES])
def test_a_malformed_spec_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           name: str, content: str | bytes,
                                           expected: str) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    err = plan_error(capsys, [*BASE, "--out", str(tmp_path / "run"), "--config", str(path)])
    assert expected in err


@pytest.mark.parametrize("flags,expected", FLAGS, ids=[" ".join(f[0])[:40] for f in FLAGS])
def test_a_malformed_flag_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      flags: list[str], expected: str) -> None:
    args = [*BASE, "--out", str(tmp_path / "run"), *flags]
    if not expected:  # the harmless anchor: plans
        assert main(["plan", *args]) == 0
        return
    assert expected in plan_error(capsys, args)


def test_an_existing_unrelated_file_is_not_overwritten(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "run" / "notes.txt"
    precious.parent.mkdir()
    precious.write_text("keep me")
    err = plan_error(capsys, [*BASE, "--out", str(tmp_path / "run"),
                              "-P", "exp.log_file=${exp.out_dir}/notes.txt"])
    assert "exists and is not a log of this experiment" in err
    assert precious.read_text() == "keep me"


def test_an_earlier_log_of_the_same_experiment_may_be_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--format", "json", *BASE, "--out", str(tmp_path / "run")]
    assert main(args) == 0
    [experiment] = json.loads(capsys.readouterr().out)["data"]
    log = Path(experiment["exp.log_file"])
    log.parent.mkdir(parents=True)
    log.write_text(f"__exp.id__={json.dumps(experiment['exp.id'])}\n")
    assert main(args) == 0


def test_a_log_left_by_a_worker_killed_before_its_parameters_may_be_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The runner writes the worker's input, then opens the log: a worker killed before
    # it wrote a line leaves an empty log, or only the framework's own output.
    args = ["plan", "--format", "json", *BASE, "--out", str(tmp_path / "run")]
    assert main(args) == 0
    [experiment] = json.loads(capsys.readouterr().out)["data"]
    log = Path(experiment["exp.log_file"])
    log.parent.mkdir(parents=True)
    log.write_text("")
    assert main(args) == 0
    capsys.readouterr()
    log.write_text("some framework warning\n")
    assert "is not a log of this experiment" in plan_error(capsys, args[3:])
    started = tmp_path / "run" / "experiments" / f"{experiment['exp.id']}.json"
    started.parent.mkdir()
    started.write_text(json.dumps(experiment))
    assert main(args) == 0


def test_empty_cases_are_no_cases_as_in_dlbs(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "--format", "json", *BASE, "-V", "exp.replica_batch=[1,2]"]
    assert main(args) == 0
    without = json.loads(capsys.readouterr().out)["data"]
    assert main([*args, "-E", '{"cases": []}']) == 0
    assert json.loads(capsys.readouterr().out)["data"] == without


def test_disabled_experiments_are_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--format", "json", *BASE, "-V", "exp.replica_batch=[1,2,3]",
                 "-E", '{"condition": {"exp.replica_batch": 2}, '
                       '"parameters": {"exp.status": "disabled"}}']) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert [(e["exp.replica_batch"], e["exp.status"]) for e in data] == [(1, ""), (3, "")]


# Hypothesis: anything in, a spec or one line out.

_TEXT = st.text(alphabet=st.sampled_from(list("ab:{}[]\"',=&*!#-\n $().0123456789e")),
                max_size=60)


def _one_line_or_value(call: object) -> None:
    assert callable(call)
    try:
        WORK_BOUND.check(call)
    except DlbenchError as error:
        assert "\n" not in str(error) and str(error)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["user.a", "exp.model", "a", "user.a b"]), value=_TEXT)
def test_any_flag_value_loads_or_fails_in_one_line(name: str, value: str) -> None:
    _one_line_or_value(lambda: load_spec(params=[f"{name}={value}"]))
    _one_line_or_value(lambda: load_spec(variables=[f"{name}={value}"]))
    _one_line_or_value(lambda: load_spec(extensions=[value]))


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=_TEXT, suffix=st.sampled_from([".yaml", ".json"]))
def test_any_spec_file_loads_or_fails_in_one_line(tmp_path: Path, text: str,
                                                  suffix: str) -> None:
    path = tmp_path / f"spec{suffix}"
    path.write_text(text)
    _one_line_or_value(lambda: load_spec([path]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                          lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                          max_leaves=10))
def test_any_json_extension_loads_or_fails_in_one_line(value: object) -> None:
    _one_line_or_value(lambda: load_spec(extensions=[json.dumps(value)]))


#: Values that would plan a run that cannot finish, or that the worker would fail on
#: after starting: (flags, the whole message after the flags' source).
BOUNDS = [
    (["-P", "exp.scenario=single_stream", "-P", "exp.replica_batch=1",
      "-P", "exp.latency_percentile=99.99999999999999"],
     "exp.latency_percentile=99.99999999999999 (from -P flag) must be between 50 and "
     "99.99, or 'auto'"),
    (["-P", "exp.latency_percentile=1e-320"],
     "exp.latency_percentile=1e-320 (from -P flag) must be between 50 and 99.99, or 'auto'"),
    (["-P", "exp.scenario=offline", "-P", "exp.scenario_min_queries=99999999999999999999999"],
     "exp.scenario_min_queries=99999999999999999999999 (from -P flag) must be between 1 and "
     "100000000, or 'auto'"),
    (["-P", "exp.profile_start=1000000000000000000000"],
     "exp.profile_start=1000000000000000000000 (from -P flag) must be between 0 and "
     "10000000"),
    (["-P", "exp.num_batches=10000001"],
     "exp.num_batches=10000001 (from -P flag) must be between 1 and 10000000, or 'auto'"),
    (["-P", "exp.num_warmup_batches=10000001"],
     "exp.num_warmup_batches=10000001 (from -P flag) must be between 0 and 10000000, or "
     "'auto'"),
    (["-P", "exp.max_duration=86401"],
     "exp.max_duration=86401.0 (from -P flag) must be between 0 and 86400"),
    (["-P", "exp.scenario_min_duration=inf"], "exp.scenario_min_duration="),
    (["-P", "exp.scenario=server", "-P", "exp.target_qps=1e308"],
     "exp.target_qps=1e+308 (from -P flag) must be between 0 and 1000000, or 'auto'"),
    (["-P", "exp.scenario=server", "-P", "exp.target_qps=1e-300"],
     "exp.target_qps=1e-300 (from -P flag): exp.scenario=server needs a rate between 0.01 "
     "and 1000000 queries/s, or 'auto' to search the highest under exp.latency_bound_ms"),
    (["-P", "exp.scenario_seed=-1"],
     "exp.scenario_seed=-1 (from -P flag) must be between 0 and 4294967295"),
    (["-P", "exp.framework=pytorch", "-P", "exp.scenario=offline", "-P", "exp.profile=torch"],
     "exp.profile='torch' (from -P flag) is not supported with exp.scenario=offline yet; "
     "use exp.profile=none"),
]


@pytest.mark.parametrize("flags,expected", BOUNDS, ids=[" ".join(f[0])[-40:] for f in BOUNDS])
def test_a_value_that_cannot_finish_is_refused_by_the_plan(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        expected: str) -> None:
    args = [*BASE, "-P", "exp.phase=inference", "--out", str(tmp_path / "run"), *flags]
    assert plan_error(capsys, args).startswith(f"dlbench: error: {expected}")


def test_the_bounds_are_at_the_edge_accepted(tmp_path: Path) -> None:
    # The largest value of each bound plans (nothing runs).
    assert main(["plan", *BASE, "-P", "exp.phase=inference", "--out", str(tmp_path / "run"),
                 "-P", "exp.num_batches=10000000", "-P", "exp.profile_start=10000000",
                 "-P", "exp.scenario=server", "-P", "exp.target_qps=0.01",
                 "-P", "exp.latency_percentile=99.99",
                 "-P", "exp.scenario_min_queries=100000000",
                 "-P", "exp.scenario_seed=4294967295"]) == 0


def test_help_shows_the_accepted_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "--params", "exp.scenario_min_queries$"]) == 0
    assert "    accepted: between 1 and 100000000, or auto\n" in capsys.readouterr().out


@pytest.mark.parametrize("argv,expected", [
    (["peak", "--seconds", "nan"], "--seconds nan: must be a number of seconds > 0 and <= 3600"),
    (["peak", "--seconds", "3601"], "--seconds 3601: must be a number of seconds > 0"),
    (["peak", "--seconds", "0"], "--seconds 0: must be a number of seconds > 0"),
    (["query", "--input", "R", "--columns", ",,,"], "--columns ',,,' names no key"),
    # A value that starts with a minus and a digit is the flag's value, not a flag.
    (["compare", "A", "B", "--threshold", "-5%"],
     "--threshold -5%: expected a positive percentage, e.g. 5%"),
    (["compare", "A", "B", "--threshold=-5%"],
     "--threshold -5%: expected a positive percentage, e.g. 5%"),
    (["compare", "A", "B", "--threshold", "-x"],
     "--threshold: needs a value (one that starts with '-' is written --threshold=VALUE)"),
    (["compare", "A", "B", "--threshold", "500%"],
     "--threshold '500%': expected a percentage such as 5% or a fraction such as 0.05 "
     "(from 0 to below 100%)"),
])
def test_a_command_flag_out_of_range_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        argv: list[str], expected: str) -> None:
    monkeypatch.chdir(tmp_path)  # nothing is read or written: no such inputs exist
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dlbench: error: {expected}") and err.count("\n") == 1, err
    assert not list(tmp_path.iterdir())
