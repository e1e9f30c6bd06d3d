"""Text, markdown and CSV tables, and choosing a sweep's columns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import dlbench
from dlbench.results.text_table import (
    aligned_columns,
    aligned_lines,
    choose_columns,
    csv_line,
    format_table,
)

ROWS: list[dict[str, Any]] = [
    {"exp.model": "resnet50", "exp.replica_batch": 32, "results.time": 41.666, "x": [1, 2]},
    {"exp.model": "alexnet|2", "exp.replica_batch": 128, "results.time": None, "ok": True},
    {"exp.model": "vgg16", "exp.replica_batch": 8, "results.time": 7.0, "x": list(range(30))},
]
COLUMNS = ["exp.model", "exp.replica_batch", "results.time", "x", "ok"]
HEADERS = ["model", "batch", "time (ms)", "x", "ok"]


def test_text_golden() -> None:
    assert format_table(ROWS, COLUMNS, HEADERS) == [
        "model      batch  time (ms)  x                                         ok",
        "---------  -----  ---------  ----------------------------------------  ----",
        "resnet50      32      41.67  [1,2]                                     -",
        "alexnet|2    128          -  -                                         true",
        "vgg16          8       7.00  [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,…  -",
    ]


def test_markdown_golden() -> None:
    assert format_table(ROWS, COLUMNS[:3], fmt="markdown", floatfmt="{:.1f}") == [
        "| exp.model  | exp.replica_batch | results.time |",
        "| ---------- | ----------------: | -----------: |",
        "| resnet50   |                32 |         41.7 |",
        "| alexnet\\|2 |               128 |            - |",
        "| vgg16      |                 8 |          7.0 |",
    ]


def test_csv_golden() -> None:
    assert format_table(ROWS, COLUMNS, HEADERS, fmt="csv") == [
        "model,batch,time (ms),x,ok",
        'resnet50,32,41.67,"[1,2]",',
        "alexnet|2,128,,,true",
        'vgg16,8,7.00,"[' + ",".join(str(i) for i in range(30)) + ']",',
    ]


def test_narrow_markdown_columns_and_multiline_cells() -> None:
    rows = [{"a": 1, "b": "two\nlines"}]
    assert format_table(rows, ["a", "b"], fmt="markdown") == [
        "|   a | b         |",
        "| --: | --------- |",
        "|   1 | two lines |",
    ]


def test_empty_rows_still_give_a_header() -> None:
    assert format_table([], ["a", "bb"]) == ["a  bb", "-  --"]


def test_bad_arguments_are_bugs() -> None:
    with pytest.raises(ValueError, match="accepted: text, markdown, csv"):
        format_table(ROWS, COLUMNS, fmt="html")
    with pytest.raises(ValueError, match="headers"):
        format_table(ROWS, COLUMNS, headers=["one"])


def test_choose_columns_for_a_sweep() -> None:
    records = [
        {
            "exp.id": "1",
            "exp.model": "resnet50",
            "exp.replica_batch": 16,
            "exp.dtype": "float32",
            "exp.log_file": "a.log",
            "results.time": 1.0,
        },
        {
            "exp.id": "2",
            "exp.model": "resnet50",
            "exp.replica_batch": 32,
            "exp.dtype": "float32",
            "exp.log_file": "b.log",
            "results.time": 2.0,
            "exp.gpus": "0",
        },
    ]
    preferred = ["exp.model", "results.time", "results.throughput"]
    assert choose_columns(records, preferred) == [
        "exp.model",
        "results.time",
        "exp.replica_batch",
        "exp.gpus",  # present in one record only: it varies
    ]
    assert choose_columns([], preferred) == []


def test_aligned_lines_known_answers() -> None:
    headers, cells = ["name", "ms", "meaning"], [["a|b", "1.5", "x"], ["c", "12.25", "longer"]]
    right = [False, True, False]
    assert aligned_lines(headers, cells, right, markdown=False) == [
        "name     ms  meaning",
        "----  -----  -------",
        "a|b     1.5  x",
        "c     12.25  longer",
    ]
    # Markdown: '|' escaped, three dashes at least, ':' for a right-aligned column
    # unless the caller keeps its rule plain.
    assert aligned_lines(headers, cells, right, markdown=True) == [
        "| name |    ms | meaning |",
        "| ---- | ----: | ------- |",
        "| a\\|b |   1.5 | x       |",
        "| c    | 12.25 | longer  |",
    ]
    assert aligned_lines(headers, cells, right, markdown=True, mark_right=False)[1] == (
        "| ---- | ----- | ------- |")
    # A free-text last column: its rule spans the header, not the longest cell.
    assert aligned_lines(["k", "what"], [["a", "a long text"]], [False, False],
                         markdown=False, free_last=True) == ["k  what", "-  ----", "a  a long text"]
    # Rows and columns give the same table; no row still gives the header and rule.
    assert aligned_columns(headers, [list(c) for c in zip(*cells, strict=True)], right,
                           count=2) == aligned_lines(headers, cells, right, markdown=False)
    assert aligned_lines(["a", "bb"], [], [False, True], markdown=False) == ["a  bb", "-  --"]
    with pytest.raises(ValueError):
        aligned_lines(["a"], [["1", "2"]], [False], markdown=False)


def test_csv_line_quotes_as_the_csv_module() -> None:
    assert csv_line(["a,b", 'say "hi"', 1.5, "", None]) == '"a,b","say ""hi""",1.5,,'
    # A newline inside a value is quoted: the row reads back as one record.
    assert csv_line(["two\nlines"]) == '"two\nlines"'
    assert format_table([{"b": "two\nlines"}], ["b"], fmt="csv") == ["b", '"two\nlines"']


def test_one_table_layout_in_the_source() -> None:
    # Every aligned table (query, status, reports, compare, the key list) is laid out
    # by one module: no other draws a dashed rule or right-aligns a column.
    src = Path(dlbench.__file__).parent
    laying_out = sorted(str(path.relative_to(src)) for path in src.rglob("*.py")
                        if re.search(r'"-" \*|\.rjust\(|:>\{', path.read_text(encoding="utf-8")))
    assert laying_out == [str(Path("results/text_table.py"))]
