"""Text, markdown and CSV tables, and choosing a sweep's columns."""

from __future__ import annotations

from typing import Any

import pytest

from dlbench.results.text_table import choose_columns, format_table

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
