"""Loading records from every source and writing them to every format."""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.results.io import dumps_records, load_dataframe, load_records, write_records
from dlbench.results.log.file import LogWriter
from dlbench.results.log.parser import ParseWarning
from dlbench.results.store import Store

RECORDS: list[dict[str, Any]] = [
    {
        "exp.id": "a1",
        "exp.model": "resnet50",
        "exp.gpus": "0",
        "exp.replica_batch": 32,
        "exp.use_amp": False,
        "results.time": 41.0,
        "results.time_data": [40.5, 41.5, 41],
        "results.use": {"gpu": {"mean": 97.5}},
        "sys.note": 'says "hi", then\nleaves',
    },
    {
        "exp.id": "b2",
        "exp.model": "alexnet",
        "exp.gpus": "",
        "exp.replica_batch": 64,
        "exp.status_msg": None,
        "user.looks_like_json": "[1, 2]",
        "user.text_true": "true",
        "user.text_nan": "NaN",
        "user.padded": " 7 ",
        "user.unicode": "é\u2028x",
        "user.big": 2**63,
        "user.nan": math.inf,
    },
    {"exp.id": "c3", "exp.model": "vgg16"},
]

FORMATS = ["out.json", "out.json.gz", "out.jsonl", "out.csv", "UPPER.JSON"]


@pytest.mark.parametrize("name", FORMATS)
def test_round_trip_through_every_format(tmp_path: Path, name: str) -> None:
    path = tmp_path / "exports" / name
    write_records(RECORDS, path)
    loaded = load_records([path])
    assert loaded == RECORDS
    # Types survive, not only values: 41.0 stays a float, 32 an int, "0" a string.
    for original, back in zip(RECORDS, loaded, strict=True):
        assert {k: type(v) for k, v in original.items()} == {k: type(v) for k, v in back.items()}
    assert [p.name for p in path.parent.iterdir()] == [name]  # no temp file left behind


@pytest.mark.parametrize("name", ["e.json", "e.json.gz", "e.jsonl", "e.csv"])
def test_empty_round_trip(tmp_path: Path, name: str) -> None:
    write_records([], tmp_path / name)
    assert load_records([tmp_path / name]) == []


def test_json_layout_and_dumps(tmp_path: Path) -> None:
    text = dumps_records([{"a": 1}, {"b": "x"}])
    assert text == '{"data": [\n{"a": 1},\n{"b": "x"}\n]}\n'
    write_records([{"a": 1}, {"b": "x"}], tmp_path / "r.json")
    assert (tmp_path / "r.json").read_text() == text
    write_records([{"a": 1}], tmp_path / "r.json.gz")
    assert json.loads(gzip.decompress((tmp_path / "r.json.gz").read_bytes())) == {
        "data": [{"a": 1}]
    }


def test_csv_layout(tmp_path: Path) -> None:
    rows = [{"exp.gpus": "0", "n": 1}, {"n": 2.5, "s": "plain", "l": [1, "x"]}]
    write_records(rows, tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text().splitlines() == [
        "exp.gpus,n,s,l",
        '"""0""",1,,',
        ',2.5,plain,"[1, ""x""]"',
    ]
    assert load_records([tmp_path / "r.csv"]) == rows


def test_bare_list_json_and_blank_jsonl_lines(tmp_path: Path) -> None:
    (tmp_path / "l.json").write_text('[{"a": 1}]')
    (tmp_path / "r.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n')
    assert load_records([tmp_path / "l.json", tmp_path / "r.jsonl"]) == [
        {"a": 1},
        {"a": 1},
        {"a": 2},
    ]


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("bad.json", "{", "not valid JSON"),
        ("bad.json", '{"rows": []}', "expected"),
        ("bad.json", "[1]", "record 0 is a int"),
        ("bad.jsonl", '{"a": 1}\n[2]\n', "bad.jsonl:2"),
        ("bad.json.gz", "not gzip", "cannot read"),
    ],
)
def test_bad_files_are_errors_naming_them(
    tmp_path: Path, name: str, content: str, fragment: str
) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(ResultsError, match=name.replace(".", r"\.")) as error:
        load_records([tmp_path / name])
    assert fragment in str(error.value)


def test_run_directory_prefers_its_store(tmp_path: Path) -> None:
    with LogWriter(tmp_path / "logs" / "x.log") as log:
        log.write("exp.id", "from-log")
        log.write("exp.status", "ok")
    assert load_records([tmp_path]) == [{"exp.id": "from-log", "exp.status": "ok"}]
    with Store.in_directory(tmp_path) as store:
        store.put({"exp.id": "from-store", "exp.status": "ok"})
    assert load_records([tmp_path]) == [{"exp.id": "from-store", "exp.status": "ok"}]
    assert load_records([tmp_path / "results.sqlite"]) == load_records([tmp_path])


def test_run_directory_logs_report_warnings(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text('__exp.id__="a"\n__results.time__=[1,\n__exp.status__="ok"\n')
    (tmp_path / "empty").mkdir()
    warnings: list[ParseWarning] = []
    records = load_records([tmp_path, tmp_path / "empty"], parse_warnings=warnings)
    assert records == [{"exp.id": "a", "exp.status": "ok"}]
    assert [(Path(w.path).name, w.line) for w in warnings] == [("a.log", 2), ("empty", 0)]
    assert "no *.log or *.log.gz files" in str(warnings[1])


def test_a_log_file_is_a_source(tmp_path: Path) -> None:
    text = b'__exp.id__="a"\n__exp.status__="ok"\n'
    (tmp_path / "a.log").write_bytes(text)
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(text.replace(b'"a"', b'"b"')))
    (tmp_path / "c.log").write_bytes(b'__exp.id__="c"\n')
    warnings: list[ParseWarning] = []
    records = load_records([tmp_path / n for n in ("a.log", "b.log.gz", "c.log")],
                           parse_warnings=warnings)
    assert [(r["exp.id"], r["exp.status"]) for r in records] == [
        ("a", "ok"), ("b", "ok"), ("c", "incomplete")]
    assert [Path(w.path).name for w in warnings] == ["c.log"]


def test_sources_concatenate_in_order(tmp_path: Path) -> None:
    write_records(RECORDS[:1], tmp_path / "one.jsonl")
    write_records(RECORDS[1:], tmp_path / "two.csv")
    assert load_records([tmp_path / "two.csv", tmp_path / "one.jsonl"]) == RECORDS[1:] + RECORDS[:1]


def test_missing_and_unknown_sources(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match=r"nope\.json does not exist.*\.jsonl"):
        load_records([tmp_path / "nope.json"])
    (tmp_path / "r.xlsx").write_text("x")
    with pytest.raises(ResultsError, match=r"r\.xlsx.*\.csv or \.parquet"):
        load_records([tmp_path / "r.xlsx"])
    with pytest.raises(ResultsError, match=r"does not exist"):
        load_records([tmp_path / "missing.sqlite"])
    assert not (tmp_path / "missing.sqlite").exists()


def test_unknown_write_extension_lists_accepted(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match=r"r\.xlsx.*\.json \.json\.gz \.jsonl \.csv"):
        write_records(RECORDS, tmp_path / "r.xlsx")
    assert list(tmp_path.iterdir()) == []


def test_write_replaces_atomically_and_keeps_umask_mode(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("old")
    write_records(RECORDS, path)
    assert load_records([path]) == RECORDS
    umask = os.umask(0)
    os.umask(umask)
    new = tmp_path / "new.csv"
    write_records(RECORDS, new)
    assert new.stat().st_mode & 0o777 == 0o666 & ~umask


def test_load_dataframe(tmp_path: Path) -> None:
    write_records(RECORDS, tmp_path / "r.jsonl")
    frame = load_dataframe([tmp_path / "r.jsonl"])
    assert len(frame) == 3
    assert list(frame.columns[:4]) == ["exp.id", "exp.model", "exp.gpus", "exp.replica_batch"]
    assert frame.loc[0, "results.time_data"] == [40.5, 41.5, 41]
    assert frame["exp.model"].tolist() == ["resnet50", "alexnet", "vgg16"]


def test_public_api() -> None:
    import dlbench.results as results

    assert sorted(results.__all__) == sorted(
        [
            "FORMAT_VERSION", "LINE_RE", "OPERATORS", "STORE_FILENAME", "TABLE_FORMATS",
            "WRITE_FORMATS", "LogWriter", "ParseWarning", "Store", "choose_columns",
            "distinct_values", "dumps_records", "filter_records", "format_line", "format_table",
            "load_dataframe", "load_records", "match", "parse_log", "parse_logs", "parse_query",
            "select_records", "write_atomically", "write_records",
        ]
    )  # fmt: skip
    for name in results.__all__:
        assert getattr(results, name) is not None
