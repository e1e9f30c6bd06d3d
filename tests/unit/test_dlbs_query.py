"""Queries match as DLBS's ``DictUtils.match`` does, for every command that takes one.

Restated here, with our own data, from DLBS's ``python/dlbs/tests/test_utils.py``:

- ``test_match_1``: a string, a one-element list and a two-element list all select
  the record; a key the record lacks does not match (DLBS's ``strict`` policy, the
  one its reports use; its ``relaxed`` policy has no counterpart: ``$exists`` says
  what to do about a missing key); a different value does not match; several keys
  must all match, lists and numbers mixed.
- ``test_match_2``, ``test_match_3``, ``test_match_4``: a regular expression with
  groups matches from the start of the value (DLBS also returns the groups; a
  dlbench query only selects, and a sweep extension's condition captures them).
- ``test_match_5``: a regular expression that does not match.
- ``test_match_6``: ``""`` matches only an empty value; ``" "`` and longer blanks
  do not match a non-blank value.

``test_ensure_exists_1..3`` and ``test_lists_to_strings_1..2`` test DLBS helpers with
no counterpart in a query (filling a default into a dict, joining list values for a
shell command line), so they are not restated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.errors import ResultsError
from dlbench.report.charts.charts import build_series
from dlbench.results.io import write_records
from dlbench.results.query import match

RUN = {"exp.framework": "pytorch", "exp.model": "ResNet152", "exp.replica_batch": 32,
       "exp.data_dir": "", "exp.gpus": "0,1"}


@pytest.mark.parametrize("framework", ["pytorch", ["pytorch"], ["pytorch", "jax"]])
def test_string_and_lists_select_the_record(framework: Any) -> None:  # test_match_1
    assert match(RUN, {"exp.framework": framework})
    assert not match(RUN, {"exp.backend": framework})  # a missing key never matches


def test_values_and_conjunctions() -> None:  # test_match_1
    assert not match(RUN, {"exp.framework": "jax"})
    assert match(RUN, {"exp.framework": "pytorch", "exp.replica_batch": 32})
    assert match(RUN, {"exp.framework": ["pytorch", "jax"], "exp.replica_batch": 32})
    assert not match(RUN, {"exp.framework": "pytorch", "exp.replica_batch": 64})
    assert not match(RUN, {"exp.framework": "pytorch", "exp.effective_batch": 64})
    assert match(RUN, {"exp.framework": "pytorch", "exp.effective_batch": {"$exists": False}})


@pytest.mark.parametrize(
    ("query", "matched"),
    [
        ({"exp.model": r"([^\d]+)(\d+)"}, True),  # test_match_2
        ({"exp.framework": "([^t]+)t(.+)"}, True),  # test_match_3, test_match_4
        ({"exp.framework": "([^t]+)X(.+)"}, False),  # test_match_5
        ({"exp.model": r"\d+"}, False),  # anchored at the start
        ({"exp.model": "ResNet15"}, True),  # ...but not at the end
    ],
)
def test_regular_expressions_match_from_the_start(query: dict[str, Any], matched: bool) -> None:
    assert match(RUN, query) is matched


def test_empty_string_matches_only_an_empty_value() -> None:  # test_match_6
    for blank in ("", " ", "  ", "    "):
        assert not match(RUN, {"exp.framework": blank})
    assert match(RUN, {"exp.data_dir": ""})
    assert not match(RUN, {"exp.data_dir": " "})


GPUS = ["", "0", "0,1", "1", "10"]


def records_on(gpus: list[str]) -> list[dict[str, Any]]:
    return [{"exp.gpus": g, "exp.model": "toy", "exp.replica_batch": 8, "exp.status": "ok",
             "exp.id": f"id{n}", "results.throughput": 100.0 + n} for n, g in enumerate(gpus)]


@pytest.mark.parametrize(
    ("query", "selected"),
    [
        ({"exp.gpus": ""}, [""]),  # CPU runs only (not every record)
        ({"exp.gpus": ["0"]}, ["0"]),  # membership (not every record starting with 0)
        ({"exp.gpus": ["0", "1"]}, ["0", "1"]),
        ({"exp.gpus": "0"}, ["0", "0,1"]),  # a pattern from the start
        ({"exp.gpus": "1"}, ["1", "10"]),
        ({"exp.gpus": "1$"}, ["1"]),
        ({"exp.gpus": {"$ne": ""}}, ["0", "0,1", "1", "10"]),
        ({"exp.gpus": [0]}, []),  # a number is not the string "0"
    ],
)
def test_gpu_queries(query: dict[str, Any], selected: list[str]) -> None:
    assert [r["exp.gpus"] for r in records_on(GPUS) if match(r, query)] == selected


@pytest.fixture
def multi_gpu_only(tmp_path: Path) -> Path:
    path = tmp_path / "r.json"
    write_records(records_on(["0,1", "1"]), path)
    return path


@pytest.mark.parametrize("where", ['{"exp.gpus": ""}', '{"exp.gpus": ["0"]}'])
@pytest.mark.parametrize(("command", "flag"), [("query", "--where"), ("report", "--query")])
def test_every_command_uses_the_same_matching(
    multi_gpu_only: Path, capsys: pytest.CaptureFixture[str], command: str, flag: str,
    where: str,
) -> None:
    # Under the old matching both queries selected both records; now neither does.
    assert main([command, "--input", str(multi_gpu_only), flag, where]) == 2
    error = capsys.readouterr().err
    assert f"{flag} {json.dumps(json.loads(where))} matches none of the 2 record(s)" in error
    with pytest.raises(ResultsError, match="query 1"):
        build_series(records_on(["0,1", "1"]), "exp.replica_batch", "results.throughput",
                     queries=[json.loads(where)])


def test_query_selects_by_membership_end_to_end(
    multi_gpu_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", "--input", str(multi_gpu_only), "--where", '{"exp.gpus": ["1"]}',
                 "--format", "json"]) == 0
    assert [r["exp.gpus"] for r in json.loads(capsys.readouterr().out)["data"]] == ["1"]
