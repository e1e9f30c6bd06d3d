"""``dlbench query``'s table from a store: the columns chosen in SQL and the few keys
read are exactly what choosing from whole records gives, on values of every kind."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlbench.cli.main import main
from dlbench.errors import ResultsError
from dlbench.results.export import write_records
from dlbench.results.io import load_selected, load_table
from dlbench.results.store import Store
from dlbench.results.text_table import choose_columns, format_table

PREFERRED = ["exp.model", "exp.status", "results.time", "results.throughput"]

# exp.* values that a careless comparison would take for equal (1 and 1.0, 0.0 and
# -0.0, a dict in two key orders), or for different (NaN), lists beside scalars, keys
# some records lack, and a simulated framework (its model reads "fake(...)").
RECORDS: list[dict[str, Any]] = [
    {"exp.id": "a", "exp.framework": "fake", "exp.model": "resnet50", "exp.b": 1,
     "exp.z": 0.0, "exp.d": {"x": 1, "y": 2}, "exp.n": math.nan, "exp.l": [1, 2],
     "exp.log_file": "a.log", "results.time": 1.5, "exp.status": "ok"},
    {"exp.id": "b", "exp.framework": "pytorch", "exp.model": "resnet50", "exp.b": 1.0,
     "exp.z": -0.0, "exp.d": {"y": 2, "x": 1}, "exp.n": math.nan, "exp.l": [1, 2],
     "exp.log_file": "b.log", "results.time": 0.25, "exp.status": "ok", "exp.only": None},
    {"exp.id": "c", "exp.framework": "pytorch", "exp.model": "resnet18", "exp.b": 1,
     "exp.z": 0.0, "exp.d": {"x": 1, "y": 2}, "exp.n": math.nan, "exp.l": 7,
     "exp.log_file": "c.log", "results.time": 3.0, "exp.status": "failure",
     "exp.big": 2**70, "exp.t": True},
    {"exp.id": "d", "exp.framework": "pytorch", "exp.model": "resnet18", "exp.b": 1,
     "exp.z": 0.0, "exp.d": {"x": 1, "y": 2}, "exp.n": math.nan, "exp.l": [1, 2],
     "exp.log_file": "d.log", "exp.status": "ok", "exp.big": 2**70, "exp.t": True},
]

QUERIES = [{}, {"exp.model": "resnet"}, {"exp.model": "resnet50"}, {"exp.model": "resnet18"},
           {"exp.b": 1}, {"exp.id": ["a", "c"]}, {"exp.id": ["c", "d"]}, {"exp.l": 7},
           {"exp.id": "d"}]


def _whole(records: list[dict[str, Any]], query: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Columns and table lines as chosen from whole records (a file source)."""
    selected = load_selected([records_file(records)], query, "--where", "src")
    columns = choose_columns(selected, PREFERRED)
    return columns, format_table(selected, columns)


_FILES: dict[str, Path] = {}


def records_file(records: list[dict[str, Any]]) -> Path:
    return _FILES[json.dumps(records, sort_keys=True)]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("table")
    with Store(directory / "results.sqlite") as store:
        store.put_many(RECORDS)
    _FILES[json.dumps(RECORDS, sort_keys=True)] = directory / "r.json"
    write_records(RECORDS, directory / "r.json")
    return directory / "results.sqlite"


@pytest.mark.parametrize("query", QUERIES, ids=[json.dumps(q) for q in QUERIES])
def test_a_stores_table_is_the_table_of_whole_records(
    store_path: Path, query: dict[str, Any]
) -> None:
    records, columns = load_table([store_path], query, "--where", "src", preferred=PREFERRED)
    expected_columns, expected_lines = _whole(RECORDS, query)
    assert columns == expected_columns
    assert format_table(records, columns) == expected_lines
    # Only what the table shows was read.
    assert {key for record in records for key in record} <= {*columns, "exp.framework"}


def test_given_columns_and_no_match_come_out_as_from_whole_records(store_path: Path) -> None:
    records, columns = load_table([store_path], {"exp.model": "resnet"}, "--where", "src",
                                  preferred=PREFERRED, columns=["exp.model", "exp.l"])
    assert columns == ["exp.model", "exp.l"]
    assert format_table(records, columns, fmt="csv") == [
        "exp.model,exp.l", "resnet50,\"[1,2]\"", "resnet50,\"[1,2]\"", "resnet18,7",
        "resnet18,\"[1,2]\""]
    none = {"exp.model": "vgg"}
    with pytest.raises(ResultsError) as pushed:
        load_table([store_path], none, "--where", "src", preferred=PREFERRED)
    with pytest.raises(ResultsError) as whole:
        load_selected([records_file(RECORDS)], none, "--where", "src")
    assert str(pushed.value) == str(whole.value)


def test_dlbench_query_prints_the_same_table_from_a_store_and_from_a_file(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed: dict[str, list[str]] = {}
    for fmt in ("text", "csv", "json"):
        for source in (store_path, records_file(RECORDS)):
            assert main(["query", "--input", str(source), "--where", '{"exp.model": "res"}',
                         "--format", fmt]) == 0
            printed.setdefault(fmt, []).append(capsys.readouterr().out)
        assert printed[fmt][0] == printed[fmt][1], fmt
    assert "fake(resnet50)" in printed["text"][0]


_VALUES = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, 1.0, 0.0, -0.0, math.nan, 2**70, "1", ""]),
    st.lists(st.integers(0, 1), max_size=2),
    st.sampled_from([{"p": 1, "q": 2}, {"q": 2, "p": 1}]))


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.dictionaries(st.sampled_from(["exp.k", "exp.m", "exp.model"]),
                                       _VALUES), min_size=1, max_size=5))
def test_any_values_give_the_columns_whole_records_give(
    tmp_path_factory: pytest.TempPathFactory, values: list[dict[str, Any]]
) -> None:
    records = [{"exp.id": f"e{i}", **v} for i, v in enumerate(values)]
    directory = tmp_path_factory.mktemp("h")
    with Store(directory / "s.sqlite") as store:
        store.put_many(records)
    selected, columns = load_table([directory / "s.sqlite"], {}, "--where", "src",
                                   preferred=PREFERRED)
    assert columns == choose_columns(records, PREFERRED)
    assert format_table(selected, columns) == format_table(records, columns)


def _row_by_row(rows: list[dict[str, Any]], columns: list[str], fmt: str) -> list[str]:
    """format_table as it was written before it went a column at a time."""
    from dlbench.results.text_table import (
        MISSING,
        _format_cell,
        csv_line,
        label_value,
        one_line,
    )
    from dlbench.results.values import is_number

    def recorded(row: dict[str, Any], column: str) -> Any:  # a CSV cell: the value as stored
        return row.get(column)

    shown = recorded if fmt == "csv" else label_value
    missing = "" if fmt == "csv" else MISSING
    cells = [[missing if row.get(c) is None else
              _format_cell(shown(row, c), None, truncate=fmt != "csv") for c in columns]
             for row in rows]
    if fmt == "csv":
        return [csv_line(line) for line in [columns, *cells]]
    numeric = [any(row.get(c) is not None for row in rows)
               and all(row.get(c) is None or is_number(row.get(c)) for row in rows)
               for c in columns]
    header = [one_line(h) for h in columns]
    cells = [[one_line(cell) for cell in line] for line in cells]
    if fmt == "markdown":
        header = [h.replace("|", "\\|") for h in header]
        cells = [[cell.replace("|", "\\|") for cell in line] for line in cells]
    widths = [max([len(header[i])] + [len(line[i]) for line in cells])
              for i in range(len(columns))]
    if fmt == "markdown":
        widths = [max(width, 3) for width in widths]

    def aligned(line: list[str]) -> list[str]:
        return [cell.rjust(w) if right else cell.ljust(w)
                for cell, w, right in zip(line, widths, numeric, strict=True)]

    if fmt == "markdown":
        rule = [("-" * (w - 1) + ":") if r else "-" * w
                for w, r in zip(widths, numeric, strict=True)]
        return ["| " + " | ".join(line) + " |"
                for line in [aligned(header), rule, *map(aligned, cells)]]
    rule = ["-" * w for w in widths]
    return ["  ".join(line).rstrip() for line in [aligned(header), rule, *map(aligned, cells)]]


_CELLS = st.one_of(_VALUES, st.sampled_from(["a|b", "x\ny", "\x1b[2J", "é", 2.5e-7, 1e300]))


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.dictionaries(st.sampled_from(["exp.model", "exp.framework", "c"]),
                                     _CELLS), max_size=4),
       columns=st.lists(st.sampled_from(["exp.model", "c", "d"]), max_size=3, unique=True),
       fmt=st.sampled_from(["text", "markdown", "csv"]))
def test_a_table_made_a_column_at_a_time_is_the_table_made_row_by_row(
    rows: list[dict[str, Any]], columns: list[str], fmt: str
) -> None:
    rows = [{**row, "exp.framework": "fake"} if i % 2 else row for i, row in enumerate(rows)]
    assert format_table(rows, columns, fmt=fmt) == _row_by_row(rows, columns, fmt)
