"""A run's records are one SQL table, ``results``, that plain ``sqlite3`` and pandas
read without dlbench; ``dlbench query`` writes the keys ``--columns`` names in every
format, Parquet included."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from dlbench.cli.main import main
from dlbench.errors import ResultsError
from dlbench.results.export import write_records
from dlbench.results.store import STORE_FILENAME, Store

FAKE = ["-P", "exp.framework=fake", "-P", "exp.num_batches=3", "-P", "exp.num_warmup_batches=0",
        "-P", "fake.step_ms=1"]

RECORDS = [
    {"exp.id": "a", "exp.status": "ok", "exp.model": "resnet50", "exp.replica_batch": 1,
     "results.time": 10.0, "results.throughput": 100.0, "results.time_data": [9.5, 10.5]},
    {"exp.id": "b", "exp.status": "ok", "exp.model": "resnet50", "exp.replica_batch": 2,
     "results.time": 16.0, "results.throughput": 125.0, "results.time_data": [16.0]},
    {"exp.id": "c", "exp.status": "failure", "exp.model": "vgg16", "exp.replica_batch": 1},
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of two fake experiments, written by ``dlbench run``."""
    out = tmp_path_factory.mktemp("run") / "out"
    assert main(["run", *FAKE, "-V", "exp.replica_batch=[2, 4]", "--out", str(out)]) == 0
    return out


def test_plain_sqlite3_and_pandas_read_a_runs_results_table(run_dir: Path) -> None:
    pandas = pytest.importorskip("pandas")
    with contextlib.closing(sqlite3.connect(run_dir / STORE_FILENAME)) as db:
        rows = db.execute('SELECT "exp.replica_batch", "exp.effective_batch", "results.time", '
                          '"results.throughput", "results.time_data" FROM results '
                          'ORDER BY "exp.replica_batch"').fetchall()
        frame = pandas.read_sql("SELECT * FROM results", db)
        types = {row[1]: row[2] for row in db.execute("PRAGMA table_info(results)")}
    assert [row[:2] for row in rows] == [(2, 2), (4, 4)]
    for _, _, time, _, data in rows:
        batch_times = json.loads(data)
        assert len(batch_times) == 3 and time == pytest.approx(sum(batch_times) / 3)
    # results.throughput = effective batch × 1000 / results.time, as the worker writes it.
    assert [t for *_, t, _ in rows] == pytest.approx([2000 / rows[0][2], 4000 / rows[1][2]])
    assert len(frame) == 2 and set(frame["exp.model"]) == {"resnet50"}
    assert set(frame["exp.status"]) == {"ok"}
    assert types["exp.replica_batch"] == "INTEGER" and types["results.time"] == "REAL"
    assert types["exp.model"] == "TEXT" and types["results.time_data"] == "JSON"
    with Store.in_directory(run_dir, create=False) as store:
        assert set(frame.columns) == set(store.keys())  # a column for every key


def test_sql_sees_each_value_as_sql_holds_it_dlbench_gives_it_back_exactly(
        tmp_path: Path) -> None:
    odd = {"exp.id": "odd", "exp.replica_batch": 2.0, "results.time": float("nan"),
           "results.throughput": 7, "results.stable": 1, "unknown": {"a": [1]}}
    with Store(tmp_path / "s.sqlite") as store:
        store.put_many([*RECORDS, odd])
        assert store.get("odd") == {**odd, "results.time": store.get("odd")["results.time"]}
        back = store.get("odd")
        assert back is not None and back["results.time"] != back["results.time"]  # NaN
        assert [type(back[k]) for k in ("exp.replica_batch", "results.throughput",
                                        "results.stable")] == [float, int, int]
    with contextlib.closing(sqlite3.connect(tmp_path / "s.sqlite")) as db:
        row = db.execute('SELECT "exp.replica_batch", "results.time", "results.throughput", '
                         '"unknown" FROM results WHERE "exp.id" = \'odd\'').fetchone()
    # 2.0 in a column of integers, NaN (SQL has none), 7 in a column of floats.
    assert row == (2, None, 7.0, '{"a":[1]}')


def test_query_columns_apply_to_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_records(RECORDS, tmp_path / "r.json")
    for source in (tmp_path / "r.json", tmp_path / "s.sqlite"):
        if source.suffix == ".sqlite":
            with Store(source) as store:
                store.put_many(RECORDS)
        assert main(["query", "--input", str(source), "--format", "json", "--where",
                     '{"exp.model": "resnet50"}', "--columns",
                     "results.time,exp.id,results.time_data"]) == 0
        assert json.loads(capsys.readouterr().out) == {"data": [
            {"results.time": 10.0, "exp.id": "a", "results.time_data": [9.5, 10.5]},
            {"results.time": 16.0, "exp.id": "b", "results.time_data": [16.0]}]}


def test_query_output_file_and_parquet_refusals(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    write_records(RECORDS, tmp_path / "r.json")
    assert main(["query", "--input", str(tmp_path / "r.json"), "--format", "csv",
                 "--columns", "exp.id,exp.replica_batch", "--output",
                 str(tmp_path / "o.csv")]) == 0
    assert (tmp_path / "o.csv").read_text() == "exp.id,exp.replica_batch\na,1\nb,2\nc,1\n"
    assert main(["query", "--input", str(tmp_path / "r.json"), "--format", "parquet"]) == 2
    assert "--format parquet writes a binary file: give --output FILE" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # not installed
    assert main(["query", "--input", str(tmp_path / "r.json"), "--format", "parquet",
                 "--output", str(tmp_path / "o.parquet")]) == 2
    assert "writing Parquet needs pyarrow: pip install 'dlbench[parquet]'" in (
        capsys.readouterr().err)
    assert not (tmp_path / "o.parquet").exists()


def test_query_parquet_is_a_column_per_key(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    pandas = pytest.importorskip("pandas")
    with Store(tmp_path / "s.sqlite") as store:
        store.put_many(RECORDS)
    out = tmp_path / "o.parquet"
    assert main(["query", "--input", str(tmp_path / "s.sqlite"), "--format", "parquet",
                 "--output", str(out), "--columns",
                 "exp.id,exp.replica_batch,results.time,results.time_data"]) == 0
    frame = pandas.read_parquet(out)
    assert list(frame.columns) == ["exp.id", "exp.replica_batch", "results.time",
                                   "results.time_data"]
    assert frame["exp.replica_batch"].tolist() == [1, 2, 1]
    assert frame["results.time"].tolist()[:2] == [10.0, 16.0]
    assert frame["results.time_data"].tolist()[:2] == ["[9.5,10.5]", "[16.0]"]


def test_keys_sql_cannot_name_apart_or_beyond_its_columns_keep_their_values(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dlbench.results.store import write

    monkeypatch.setattr(write, "MAX_COLUMNS", 4)  # exp.id, exp.model, exp.Model#3, x
    records = [{"exp.id": "a", "exp.model": "m", "exp.Model": "M", "x": 1, "y": [2.5]},
               {"exp.id": "b", "y": None, "x": 2}]
    with Store(tmp_path / "s.sqlite") as store:
        store.put_many(records)
        assert store.records() == records
        assert store.records(where={"y": {"$exists": True}}, keys=["exp.id"]) == [
            {"exp.id": "a"}, {"exp.id": "b"}]
        assert store.records(where={"exp.Model": "M"}, keys=["exp.id"]) == [{"exp.id": "a"}]
    with contextlib.closing(sqlite3.connect(tmp_path / "s.sqlite")) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(results)")]
    assert columns == ["exp.id", "exp.model", "exp.Model#3", "x"]  # y: no room left


def test_parse_to_parquet_without_pyarrow_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ResultsError, match=r"o\.parquet: writing Parquet needs pyarrow"):
        write_records(RECORDS, tmp_path / "o.parquet")
    assert not (tmp_path / "o.parquet").exists()


def test_query_parquet_reads_back_as_the_records(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "o.parquet"
    assert main(["query", "--input", str(run_dir), "--format", "parquet", "--output",
                 str(out)]) == 0
    capsys.readouterr()
    shown = []
    for source in (run_dir, out):
        assert main(["query", "--input", str(source), "--format", "json"]) == 0
        shown.append(json.loads(capsys.readouterr().out))
    assert shown[0] == shown[1] and len(shown[0]["data"]) == 2
    for source in (run_dir, out):
        assert main(["report", "--input", str(source)]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[2] == shown[3]
    assert main(["compare", str(run_dir), str(out), "--format", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    # The same measurements on both sides: every configuration matched, unchanged.
    assert compared["counts"] == {"faster": 0, "slower": 0, "unchanged": 2, "inconclusive": 0}
    assert [row["A"] == row["B"] for row in compared["rows"]] == [True, True]


def test_parquet_keeps_what_its_columns_cannot_say(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from dlbench.results.io import load_records

    records = [
        {"exp.id": "a", "n": 1, "x": 2.5, "v": [1, {"k": None}], "s": "[1]", "m": 1,
         "big": 2**64, "none": None, "t": True, "u": "☃"},
        {"exp.id": "b", "x": 3, "m": "one", "none": 1.5, "s": "plain"},
        {"exp.id": "c"},
    ]
    write_records(records, tmp_path / "r.parquet")
    back = load_records([tmp_path / "r.parquet"])
    # Types too: the 3 among floats is an int again, a list is a list, "[1]" text
    # (keys in the file's column order: JSON objects are compared, not their order).
    assert json.dumps(back, sort_keys=True) == json.dumps(records, sort_keys=True)
    assert [type(r.get("x")) for r in back] == [float, int, type(None)]


def test_a_parquet_file_from_elsewhere_reads_as_its_columns(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from datetime import datetime

    from dlbench.results.io import load_records

    pq.write_table(pa.table({"exp.id": ["a", "b"], "n": [1, None], "xs": [[1.5], []],
                             "when": [datetime(2024, 5, 1, 2, 0), None]}),
                   tmp_path / "other.parquet")
    assert load_records([tmp_path / "other.parquet"]) == [
        {"exp.id": "a", "n": 1, "xs": [1.5], "when": "2024-05-01T02:00:00"},
        {"exp.id": "b", "xs": []}]


def test_parquet_input_errors_are_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp_path / "text.parquet").write_text("not parquet")
    table = pa.table({"exp.id": ["a"]})
    pq.write_table(table.replace_schema_metadata({"dlbench": '{"ints": [1]}'}),
                   tmp_path / "meta.parquet")
    write_records(RECORDS, tmp_path / "good.parquet")
    cases = [("text.parquet", "text.parquet: not a readable Parquet file"),
             ("meta.parquet", "meta.parquet: its dlbench metadata is not what dlbench writes")]
    for name, words in cases:
        assert main(["query", "--input", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # not installed
    for command in (["query"], ["report"], ["plot", "--x", "exp.replica_batch", "--output",
                                            str(tmp_path / "c.png")]):
        assert main([*command, "--input", str(tmp_path / "good.parquet")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "good.parquet: reading Parquet needs pyarrow: pip install 'dlbench[parquet]'" \
            in err
