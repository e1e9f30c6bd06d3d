"""Hostile input through the real command line: each case finishes (a generous
subprocess timeout guards against a hang) with the right answer or one error line
and exit status 2."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from dlbench.results.io import write_records
from tests.conftest import CliRunner

#: A guard against a hang only: every case answers in about a second.
GUARD = 60

EVIL = "(a+)+b"
AAA = "a" * 35
BIG = "1" * 5000

RECORDS = [
    {"exp.id": "a", "exp.model": AAA, "exp.status": "ok", "exp.replica_batch": 1,
     "results.time": 1.0},
    {"exp.id": "b", "exp.model": "x\ud800y", "exp.status": "ok", "exp.replica_batch": 2,
     "results.time": 2.0},
]


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "r.json"
    write_records(RECORDS, path)
    return path


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("dlbench: error: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_a_backtracking_where_answers(dlbench: CliRunner, records: Path) -> None:
    done = dlbench("query", "--input", str(records), "--columns", "exp.id",
                   "--where", json.dumps({"exp.model": {"$ne": EVIL}}), timeout=GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["a", "b"]
    done = dlbench("query", "--input", str(records),
                   "--where", json.dumps({"exp.model": EVIL}), timeout=GUARD)
    _one_line(done, "matches none of the 2 record(s)")


def test_a_surrogate_in_where_and_in_records(dlbench: CliRunner, records: Path) -> None:
    done = dlbench("query", "--input", str(records), "--columns", "exp.id", "--format", "json",
                   "--where", '{"exp.model": "x\\ud800"}', timeout=GUARD)
    assert done.returncode == 0, done.stderr
    assert [r["exp.id"] for r in json.loads(done.stdout)["data"]] == ["b"]


def test_a_backtracking_extension_and_help_answer(dlbench: CliRunner) -> None:
    extension = json.dumps({"condition": {"user.name": EVIL}, "parameters": {"user.hit": 1}})
    done = dlbench("plan", "-P", "exp.framework=fake", "-P", f"user.name={AAA}",
                   "-E", extension, "--format", "json", timeout=GUARD)
    assert done.returncode == 0, done.stderr
    (experiment,) = json.loads(done.stdout)
    assert "user.hit" not in experiment
    done = dlbench("help", "--params", "(e+)+$", timeout=GUARD)
    names = [line.split()[0] for line in done.stdout.splitlines() if not line[:1].isspace()]
    assert done.returncode == 0 and names and all(name.endswith("e") for name in names)
    done = dlbench("help", "--text", r"(a)\1", timeout=GUARD)
    _one_line(done, r"--text '(a)\\1' is not a regular expression", "RE2 syntax")


@pytest.mark.parametrize(("args", "words"), [
    (["plan", "--max-experiments", "1000000000"],
     ["--max-experiments 1000000000: give a limit of at most 500,000"]),
    (["plan", "-P", f"user.a={BIG}"], ["-P 'user.a=111", "more than 4,300 digits"]),
    (["query", "--input", "r.json", "--where", '{"results.time": ' + BIG + "}"],
     ["--where: an integer of more than 4,300 digits"]),
    (["plot", "--input", "r.json", "--x", "exp.replica_batch", "--y", "results.time",
      "--baseline-x", BIG, "--output", "c.png"], ["--baseline-x '111", "4,300 digits"]),
    (["plan", "--config", "/dev/zero"], ["spec file /dev/zero is larger than 16,777,216 bytes"]),
    (["query", "--input", "bomb.json.gz"], ["bomb.json.gz: not valid JSON (a NUL byte"]),
    (["peak", "--gpus", "", "--size", "100000000", "--no-save"],
     ["--size 100000000:", "accepted: a size of at most"]),
    (["compare", "r.json", "r.json", "--threshold", "-5%"],
     ["--threshold -5%: expected a positive percentage, e.g. 5%"]),
])
def test_hostile_input_is_one_line(dlbench: CliRunner, records: Path, tmp_path: Path,
                                   args: list[str], words: list[str]) -> None:
    with gzip.open(tmp_path / "bomb.json.gz", "wb") as bomb:
        bomb.write(bytes(16 << 20))
    done = dlbench(*args, timeout=GUARD)
    line = _one_line(done, *words)
    assert len(line) < 600
    assert not (tmp_path / "c.png").exists()
