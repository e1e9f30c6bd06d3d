"""A key no record has and dlbench does not declare is refused in one line with a
suggestion, wherever a flag names keys: ``query --columns``, ``compare --metric``,
``history check --metric``, ``baseline --metric``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CliRunner


@pytest.fixture
def records(tmp_path: Path) -> str:
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps({"exp.status": "ok", "exp.framework": "fake", "exp.model": "m",
                         "exp.replica_batch": batch, "exp.effective_batch": batch,
                         "results.time": 10.0, "results.throughput": 100.0 * batch,
                         "user.score": 0.5})
             for batch in (1, 2)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _one_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout
    err = proc.stderr
    assert err.count("\n") == 1 and err.startswith("dlbench: error: "), err
    return err.strip()


@pytest.mark.parametrize("fmt", ["text", "csv", "json"])
def test_query_refuses_an_unknown_column(dlbench: CliRunner, records: str, fmt: str) -> None:
    err = _one_error(dlbench("query", "--input", records, "--format", fmt, "--columns",
                             "exp.model,results.throughputt"))
    assert err == ("dlbench: error: --columns results.throughputt: not a declared key, and "
                   "none of the 2 record(s) has it; did you mean results.throughput?")


def test_query_takes_declared_and_present_keys(dlbench: CliRunner, records: str) -> None:
    # user.score is in the records; results.mfu is declared though these runs lack it.
    proc = dlbench("query", "--input", records, "--columns",
                   "exp.model,user.score,results.mfu")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:3] == ["exp.model", "user.score", "results.mfu"]
    err = _one_error(dlbench("query", "--input", records, "--columns", "user.scroe"))
    assert err.endswith("did you mean user.score?")


def test_compare_metric_typo_gets_a_suggestion(dlbench: CliRunner, records: str) -> None:
    err = _one_error(dlbench("compare", records, records, "--metric", "results.thruoghput"))
    assert err.startswith("dlbench: error: --metric results.thruoghput: is not a declared "
                          "result key")
    assert err.endswith("; did you mean results.throughput?")
    # With a direction given, a key is still refused when no record has it.
    err = _one_error(dlbench("compare", records, records, "--metric", "user.scroe",
                             "--better", "higher"))
    assert err == ("dlbench: error: --metric user.scroe: not a declared key, and none of the "
                   "4 record(s) has it; did you mean user.score?")
    proc = dlbench("compare", records, records, "--metric", "user.score", "--better", "higher")
    assert proc.returncode == 0, proc.stderr


def test_history_check_metric_typo_gets_a_suggestion(dlbench: CliRunner, records: str,
                                                     tmp_path: Path) -> None:
    store = str(tmp_path / "h.sqlite")
    assert dlbench("history", "import", records, "--store", store).returncode == 0
    err = _one_error(dlbench("history", "check", "--store", store, "--metric",
                             "results.latency_p9"))
    assert err.endswith("did you mean results.latency_p99?")


def test_baseline_metric_typo_gets_a_suggestion(dlbench: CliRunner, records: str,
                                                tmp_path: Path) -> None:
    out = tmp_path / "baseline.json"
    err = _one_error(dlbench("baseline", "--input", records, "--metric", "results.througput",
                             "--output", str(out)))
    assert err.endswith("none of the 2 record(s) has it; did you mean results.throughput?")
    assert not out.exists()
