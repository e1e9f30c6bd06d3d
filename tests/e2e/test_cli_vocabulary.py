"""One vocabulary across commands: --where, --format text, help that shows defaults,
bare ``dlbench``, ``help --flags`` and ``help --suites``; all in this process."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from dlbench.cli import usage
from dlbench.cli.main import build_parser, main
from dlbench.results.io import write_records

RECORDS = [
    {"exp.id": "a1", "exp.framework": "pytorch", "exp.model": "resnet50", "exp.status": "ok",
     "exp.replica_batch": 8, "results.time": 41.666, "results.throughput": 192.0,
     "results.loss_last": 0.0034, "results.tflops": 0.0487},
    {"exp.id": "b2", "exp.framework": "pytorch", "exp.model": "alexnet", "exp.status": "ok",
     "exp.replica_batch": 16, "results.time": 7.0, "results.throughput": 2285.7,
     "results.loss_last": 1.5, "results.tflops": 0.00012345},
]


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "r.json"
    write_records(RECORDS, path)
    return path


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_option_has_help_that_shows_its_default() -> None:
    for name, parser in _commands().items():
        formatter = usage.HelpFormatter(prog=parser.prog)
        for action in usage.options(parser):
            shown = formatter._get_help_string(action) or ""
            assert shown.strip(), f"{name} {action.option_strings or action.dest}: no help"
            if usage.has_default(action):
                text = shown % {"default": action.default}
                assert "default" in text, f"{name} {action.option_strings}: {text}"
    # The rendered help carries it: compare's --metric, report's --type, plot's --y.
    assert "(default: results.throughput)" in " ".join(
        _commands()["compare"].format_help().split())
    assert "(default: exploration)" in " ".join(_commands()["report"].format_help().split())
    assert "the result on the y axis (default: results.throughput)" in " ".join(
        _commands()["plot"].format_help().split())


def test_help_flags_lists_every_option_once_per_command(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["help", "--flags"]) == 0
    out = capsys.readouterr().out
    blocks = re.split(r"\n(?=\S)", out.strip())
    listed = {block.split()[0]: block for block in blocks if not block.startswith("old")}
    commands = _commands()
    assert set(listed) == set(commands)
    for name, parser in commands.items():
        for action in usage.options(parser):
            flag = action.option_strings[-1] if action.option_strings else action.metavar
            assert len(re.findall(rf"(?<![\w-]){re.escape(str(flag))}(?![\w-])",
                                  listed[name])) == 1, (name, flag)
    assert "--where JSON" in listed["report"] and "--query" not in listed["report"]
    assert "old names, still accepted: --query (--where), --format table (text)" in out
    assert all(len(line) <= 80 for line in out.splitlines())


def test_bare_dlbench_lists_the_commands_and_exits_2(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: dlbench [--version] COMMAND")
    for name in _commands():
        assert re.search(rf"^  {name}  ", captured.err, re.M), name
    assert "dlbench help --flags" in captured.err


def test_where_everywhere_and_query_as_a_deprecated_alias(
    records: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = '{"exp.model": "alexnet"}'
    assert main(["report", "--input", str(records), "--where", where,
                 "--target-variable", "results.throughput"]) == 0
    captured = capsys.readouterr()
    assert "alexnet" in captured.out and "resnet50" not in captured.out
    assert captured.err == ""
    # The old flag still works, says so once (given twice), and errors name it.
    assert main(["report", "--input", str(records), "--query", '{"exp.model": "x"}',
                 "--query", where, "--target-variable", "results.throughput"]) == 0
    captured = capsys.readouterr()
    assert "alexnet" in captured.out and "resnet50" not in captured.out
    assert captured.err == ("dlbench: warning: --query is deprecated; use --where (same "
                            "meaning)\n")
    assert main(["baseline", "--input", str(records), "--query", "{oops",
                 "--output", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("dlbench: warning: --query is deprecated")
    assert err[1].startswith("dlbench: error: --query: not valid JSON")


def test_format_text_everywhere_and_table_as_its_alias(
    records: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for name in ("text", "table"):
        assert main(["query", "--input", str(records), "--format", name]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "resnet50" in outputs[0]
    assert main(["report", "--input", str(records), "--format", "table"]) == 0
    assert "Batch time" in capsys.readouterr().out
    assert main(["plan", "-P", "exp.framework=fake", "--format", "table"]) == 0
    assert capsys.readouterr().out.strip().endswith("1 experiment")


def test_query_prints_numbers_at_their_precision(
    records: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", "--input", str(records), "--columns",
                 "exp.model,results.time,results.loss_last,results.tflops"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["resnet50", "41.67", "0.0034", "0.0487"]
    assert lines[3].split() == ["alexnet", "7.00", "1.50", "0.0001234"]
    assert main(["query", "--input", str(records), "--format", "csv", "--columns",
                 "results.tflops"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["0.0487", "0.00012345"]


def test_help_suites_wraps_to_80_columns_off_a_terminal(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["help", "--suites"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["suite", "description"]
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert sum(1 for line in lines if re.match(r"^\S", line)) == 2 + 3  # head, rule, 3 suites
    assert usage.wrapped_rows([("a", "one two three four five six seven")], width=23) == [
        "a  one two three four", "   five six seven"]


def test_plan_says_the_fake_workload_is_simulated_and_warns_about_shadowed_p(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "-P", "exp.framework=fake", "-V", "exp.model=[resnet50, toy]",
                 "-P", "exp.model=alexnet"]) == 0
    captured = capsys.readouterr()
    assert "fake(resnet50)" in captured.out and "fake(toy)" in captured.out
    assert "fake(MODEL): simulated steps; the fake framework runs no model" in captured.out
    assert captured.err == (
        "dlbench: warning: -P exp.model=alexnet has no effect: exp.model is a variable "
        "(from -V flag: [\"resnet50\", \"toy\"]), which beats a parameter; to replace its "
        "values give -V 'exp.model=[alexnet]'\n")
    assert main(["plan", "-P", "exp.framework=fake", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data[0]["exp.model"] == "resnet50"  # the data keeps the id as given
