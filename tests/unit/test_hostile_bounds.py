"""Bounded work on hostile input, in this process: users' regular expressions run by
RE2 (linear time, no backreferences or lookaround), lone surrogates in records and
queries, the plan's hard limit, integers past Python's digit limit, spec and records
files past their size limits, a peak matmul that cannot fit, and flag values that
start with a minus sign. Each refusal is one line through ``dlbench.cli.main.main``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from dlbench.cli.main import main
from dlbench.config import expand as expand_module
from dlbench.config import load_spec, plan_experiments
from dlbench.config.expand import MAX_EXPERIMENTS_LIMIT, check_sweep_size
from dlbench.config.registry import REGISTRY
from dlbench.config.spec import MAX_INT_DIGITS, MAX_SPEC_BYTES, parse_flag_value
from dlbench.config.user_regex import compile_user_regex
from dlbench.errors import ConfigError, QueryError, ResultsError, SpecError
from dlbench.measure.peak.peaks import matmul_bytes, memory_problem
from dlbench.results import io as results_io
from dlbench.results.io import load_records, write_records
from dlbench.results.query import filter_records, parse_query
from dlbench.results.store import Store
from tests.io_helpers import one_error_line as _one_error_line

#: The classic catastrophic pattern and the text that makes ``re`` backtrack forever.
EVIL = "(a+)+b"
AAA = "a" * 35


# ------------------------------------------------------------ regular expressions


def test_a_backtracking_pattern_answers() -> None:
    regex = compile_user_regex(EVIL, "--where")
    assert regex.match(AAA) is None
    assert regex.search(AAA + "b") is not None
    assert regex.fullmatch(AAA * 100 + "c") is None


def test_match_search_and_fullmatch_keep_their_meaning() -> None:
    regex = compile_user_regex("net", "--where")
    assert regex.match("resnet50") is None
    assert regex.search("resnet50") is not None
    assert regex.finds("resnet50") and not regex.matches("resnet50")
    assert compile_user_regex("res", "x").matches("resnet50")
    assert compile_user_regex("res", "x").fullmatch("resnet") is None
    assert compile_user_regex("res.*", "x").fullmatch("resnet") is not None
    assert compile_user_regex("RES", "x", ignore_case=True).search("a resnet") is not None
    assert compile_user_regex("RES", "x").search("a resnet") is None


def test_groups_named_groups_and_groups_that_took_no_part() -> None:
    found = compile_user_regex(r"res(net)(?P<depth>\d+)(_v\d)?", "x").match("resnet50")
    assert found is not None
    assert found.group() == "resnet50" and found.group("depth") == "50"
    assert found.groups() == ("net", "50", None)
    assert found.groupdict() == {"depth": "50"}


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)", "(?!a)", "(?<=a)b", "res(net"])
def test_a_pattern_re2_cannot_run_is_refused_saying_what_is_accepted(pattern: str) -> None:
    with pytest.raises(QueryError) as error:
        parse_query(json.dumps({"exp.model": pattern}), "--where")
    message = str(error.value)
    assert message.startswith(f"--where: query: invalid regular expression {pattern!r}")
    assert "RE2 syntax" in message and "\n" not in message


def test_a_lone_surrogate_is_matched_and_captured_as_it_is() -> None:
    regex = compile_user_regex("x(.)y", "x")
    found = regex.match("x\ud800y")
    assert found is not None and found.groups() == ("\ud800",)
    assert compile_user_regex("x\udc00", "x").match("x\udc00z") is not None
    records = [{"exp.model": "x\ud800y"}, {"exp.model": "xay"}]
    assert filter_records(records, {"exp.model": "x\ud800"}) == records[:1]
    assert filter_records(records, {"exp.model": ["x\ud800y"]}) == records[:1]
    assert filter_records(records, {"exp.model": {"$ne": "x\ud800"}}) == records[1:]


@pytest.mark.parametrize("where", [
    {"exp.model": "x\ud800"},
    {"exp.model": "x\ud800."},
    {"exp.model": "x."},
    {"exp.model": ["x\ud800y", "abc"]},
    {"exp.model": {"$gt": "x\ud800"}},
    {"exp.model": {"$lt": "x\ud800z"}},
    {"exp.model": {"$ne": "x\ud800y"}},
    {"exp.model": EVIL},
    {"\ud800": {"$exists": False}},
])
def test_the_store_selects_what_a_list_of_records_selects(
        tmp_path: Path, where: dict[str, object]) -> None:
    records = [{"exp.id": "a", "exp.model": "x\ud800y"}, {"exp.id": "b", "exp.model": "abc"},
               {"exp.id": "c", "exp.model": AAA}, {"exp.id": "d", "exp.model": "x\ud800yz"}]
    with Store(tmp_path / "results.sqlite") as store:
        store.put_many(records)
        found = store.records(where=where)
    expected = filter_records(records, where)
    assert sorted(r["exp.id"] for r in found) == sorted(r["exp.id"] for r in expected)
    assert [r["exp.model"] for r in sorted(found, key=lambda r: r["exp.id"])] == [
        r["exp.model"] for r in sorted(expected, key=lambda r: r["exp.id"])]


def test_an_extension_condition_runs_in_linear_time_and_captures() -> None:
    spec = load_spec(params=["exp.framework=fake", f"user.name={AAA}"],
                     extensions=[json.dumps({"condition": {"user.name": EVIL},
                                             "parameters": {"user.hit": True}}),
                                 json.dumps({"condition": {"user.name": "(?P<head>a{3})a*$"},
                                             "parameters": {"user.head":
                                                            "${__condition.user.name_head}"}})])
    (experiment,) = plan_experiments(spec)
    assert "user.hit" not in experiment and experiment["user.head"] == "aaa"


def test_an_extension_with_a_backreference_is_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    condition = json.dumps({"condition": {"exp.model": r"(a)\1"}, "parameters": {"user.x": 1}})
    assert main(["plan", "-E", condition]) == 2
    _one_error_line(capsys, "-E flag 1: condition on exp.model", "not a valid regular expression",
                    "RE2 syntax")


def test_the_registry_search_runs_in_linear_time_and_folds_case() -> None:
    assert REGISTRY.search(name_regex="(e+)+$") == [
        p for p in REGISTRY.search(name_regex="e$")]
    assert [p.name for p in REGISTRY.search(name_regex="^EXP.REPLICA_BATCH$")] == [
        "exp.replica_batch"]
    with pytest.raises(ConfigError, match="RE2 syntax"):
        REGISTRY.search(text_regex="(?=x)")


@pytest.mark.parametrize(("flag", "pattern"), [("--params", "(?=x)"), ("--text", r"(a)\1"),
                                               ("--results", "(?<=x)y")])
def test_help_refuses_what_re2_cannot_run(capsys: pytest.CaptureFixture[str], flag: str,
                                          pattern: str) -> None:
    assert main(["help", flag, pattern]) == 2
    _one_error_line(capsys, f"{flag} {pattern!r} is not a regular expression", "RE2 syntax")


def test_help_results_with_a_backtracking_pattern(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "--results", "(e+)+$"]) == 0  # searched: names ending in e
    out = capsys.readouterr().out
    assert "\nresults.time " in out and "results.throughput " not in out
    assert main(["help", "--results", "^results\\.time$"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[2:] if line.strip()] == ["results.time"]


# ------------------------------------------------------------ the plan's hard limit


def test_max_experiments_past_the_hard_limit_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--max-experiments", str(MAX_EXPERIMENTS_LIMIT + 1)]) == 2
    _one_error_line(capsys, f"--max-experiments {MAX_EXPERIMENTS_LIMIT + 1}",
                    f"at most {MAX_EXPERIMENTS_LIMIT:,}")
    spec = load_spec(params=["exp.framework=fake"], variables=["user.a=[1,2]"])
    check_sweep_size(spec, MAX_EXPERIMENTS_LIMIT)  # the limit itself is accepted


def test_a_plan_past_the_limit_is_refused_before_anything_is_built(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def never(*_args: object) -> None:
        raise AssertionError("experiments were built")

    monkeypatch.setattr(expand_module, "expand_variables", never)
    values = json.dumps(list(range(1000)))
    argv = ["plan", "-V", f"user.a={values}", "-V", f"user.b={values}",
            "--max-experiments", str(MAX_EXPERIMENTS_LIMIT)]
    assert main(argv) == 2
    _one_error_line(capsys, "1,000,000 experiments", f"limit of {MAX_EXPERIMENTS_LIMIT:,}")


# ------------------------------------------------------------ big integers

BIG = "1" * (MAX_INT_DIGITS + 1)


@pytest.mark.parametrize("argv", [
    ["plan", "-P", f"user.a={BIG}"],
    ["plan", "-V", f"user.a=[1, {BIG}]"],
    ["plan", "-P", f"exp.replica_batch={BIG}"],
    ["plan", "-P", "user.a=0x" + "f" * 4000],
    ["plan", "-E", json.dumps({"parameters": {"user.a": 1}})[:-2] + BIG + "}}"],
])
def test_an_integer_past_the_digit_limit_in_a_flag_is_one_line(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    line = _one_error_line(capsys, argv[1], "more than 4,300 digits",
                           "accepted: integers of at most 4,300 digits")
    assert len(line) < 400  # the number itself is cut short


@pytest.mark.parametrize("name", ["big.yaml", "big.json"])
def test_an_integer_past_the_digit_limit_in_a_spec_file_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = tmp_path / name
    path.write_text(json.dumps({"parameters": {"user.a": 0}}).replace("0", BIG))
    assert main(["plan", "--config", str(path)]) == 2
    _one_error_line(capsys, name, "more than 4,300 digits")


def test_the_digit_limit_itself_is_accepted() -> None:
    assert parse_flag_value("-P", "9" * MAX_INT_DIGITS) == int("9" * MAX_INT_DIGITS)
    assert parse_flag_value("-P", "-" + "9" * MAX_INT_DIGITS) == -int("9" * MAX_INT_DIGITS)
    query = parse_query('{"results.time": ' + "9" * MAX_INT_DIGITS + "}", "--where")
    assert query["results.time"] == int("9" * MAX_INT_DIGITS)


def test_an_integer_past_the_digit_limit_in_a_query_is_one_line() -> None:
    with pytest.raises(QueryError, match=r"^--where: an integer of more than 4,300 digits"):
        parse_query('{"results.time": ' + BIG + "}", "--where")


# ------------------------------------------------------------ input sizes


def test_a_spec_file_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    zeros = tmp_path / "zeros.yaml"
    zeros.symlink_to("/dev/zero")
    with pytest.raises(SpecError, match=f"larger than {MAX_SPEC_BYTES:,} bytes"):
        load_spec([zeros])
    path = tmp_path / "long.yaml"
    path.write_bytes(b"# " + b"x" * MAX_SPEC_BYTES + b"\n")
    with pytest.raises(SpecError, match="at most 16 MiB"):
        load_spec([path])


@pytest.mark.parametrize("name", ["r.json", "r.jsonl", "r.csv", "r.json.gz"])
def test_a_records_file_past_the_limit_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    records = [{"exp.id": str(i), "exp.model": "m" * 100} for i in range(100)]
    path = tmp_path / name
    write_records(records, path)
    assert load_records([path]) == records  # under the limit: read whole
    monkeypatch.setattr(results_io, "MAX_RECORDS_INPUT_BYTES", 5000)
    with pytest.raises(ResultsError) as error:
        load_records([path])
    assert "more than 5,000 bytes" in str(error.value)
    assert ("decompressed" in str(error.value)) == name.endswith(".gz")


@pytest.mark.parametrize("name", ["zeros.json", "zeros.jsonl"])
def test_a_json_file_of_zeros_stops_at_once(tmp_path: Path, name: str) -> None:
    zeros = tmp_path / name
    zeros.symlink_to("/dev/zero")
    with pytest.raises(ResultsError, match="not valid JSON \\(a NUL byte at byte 0\\)"):
        load_records([zeros])


def test_a_gzip_bomb_stops_at_its_first_chunk(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        chunk = bytes(1 << 20)
        for _ in range(64):  # 64 MiB of zeros in about 64 KiB
            out.write(chunk)
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(ResultsError, match="a NUL byte at byte 0"):
        load_records([bomb])


def test_a_corrupt_gzip_is_one_line(tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json.gz"
    data = gzip.compress(b'{"data": [{"exp.id": "a"}]}' * 100)
    path.write_bytes(data[:20] + bytes(50) + data[70:])
    assert main(["query", "--input", str(path)]) == 2
    _one_error_line(capsys, "r.json.gz")


# ------------------------------------------------------------ peak sizes


def test_matmul_bytes_and_the_largest_size_that_fits() -> None:
    assert matmul_bytes(1024, ["float32"]) == 3 * 1024 * 1024 * 4
    assert matmul_bytes(1024, ["float16", "float32"]) == 3 * 1024 * 1024 * 4
    assert matmul_bytes(1024, ["bfloat16"]) == 3 * 1024 * 1024 * 2
    assert memory_problem(1024, ["float32"], 3 * 1024 * 1024 * 4, "the host") is None
    problem = memory_problem(1025, ["float32"], 3 * 1024 * 1024 * 4, "the host")
    assert problem is not None and problem.endswith("accepted: a size of at most 1024")
    huge = memory_problem(100_000_000, ["float32"], 2**30, "cuda:0")
    assert huge is not None and "106.6 PiB" in huge and "1.0 GiB free on cuda:0" in huge


def test_peak_refuses_a_size_that_cannot_fit_before_measuring(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["peak", "--gpus", "", "--size", "100000000", "--no-save"]) == 2
    _one_error_line(capsys, "--size 100000000: a 100000000x100000000 matmul needs",
                    "free on the host; accepted: a size of at most")


def test_peak_measures_a_gpu_by_its_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from dlbench.cli.commands import host

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (2**30, 2**32))
    host._check_memory(12000, ["float16"], "cuda:0")  # 0.8 GiB: fits; float32 does not
    with pytest.raises(ConfigError) as error:
        host._check_memory(12000, ["float32"], "cuda:0")
    assert str(error.value) == (
        "--size 12000: a 12000x12000 matmul needs 1.6 GiB for its operands and result, "
        "more than the 1.0 GiB free on cuda:0; accepted: a size of at most 9459")


# ------------------------------------------------------------ values with a minus sign


@pytest.mark.parametrize("argv", [
    ["compare", "A", "B", "--threshold", "-5%"],
    ["compare", "A", "B", "--threshold", "-0.05"],
    ["compare", "A", "B", "--threshold=-5%"],
])
def test_a_negative_threshold_says_it_must_be_positive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert line == f"dlbench: error: --threshold {argv[-1].removeprefix('--threshold=')}: " \
                   "expected a positive percentage, e.g. 5%"


@pytest.mark.parametrize(("argv", "said"), [
    (["peak", "--seconds", "-1e3"], "--seconds -1000: must be a number of seconds > 0"),
    (["plan", "--max-experiments", "-5"], "--max-experiments -5: give a limit of at least 1"),
    (["history", "check", "--store", "h.sqlite", "--window", "-3"],
     "--window -3: expected a whole number of at least 1"),
])
def test_numeric_flags_take_a_negative_value_and_judge_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        argv: list[str], said: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _one_error_line(capsys, said)
    assert "needs a value" not in line
