"""The SQLite store: upserts, order, statuses, format version, and surviving kill -9."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import dlbench
from dlbench.errors import ResultsError
from dlbench.results.store import FORMAT_VERSION, STORE_FILENAME, Store


def test_put_upserts_one_row_per_id_and_keeps_first_position(tmp_path: Path) -> None:
    with Store.in_directory(tmp_path) as store:
        store.put({"exp.id": "a", "exp.status": "failure", "results.time": None})
        store.put({"exp.id": "b", "exp.status": "ok", "results.time_data": [1.5, 2]})
        store.put({"exp.id": "c"})
        store.put({"exp.id": "a", "exp.status": "ok", "results.time": 3.25})
        assert len(store) == 3
        assert [r["exp.id"] for r in store.records()] == ["a", "b", "c"]
        assert store.get("a") == {"exp.id": "a", "exp.status": "ok", "results.time": 3.25}
        assert store.get("b") == {"exp.id": "b", "exp.status": "ok", "results.time_data": [1.5, 2]}
        assert store.get("zzz") is None
        # c was stored without a status (killed worker): not done, so not listed.
        assert store.statuses() == {"a": "ok", "b": "ok"}
    assert (tmp_path / STORE_FILENAME).is_file()


def test_columns_and_meta(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        store.put({"exp.id": "a", "exp.status": "ok", "results.time": 2.5,
                   "results.time_data": [2.5], "results.stable": True})
    db = sqlite3.connect(path)
    row = db.execute("SELECT id, status, updated, shape FROM experiments").fetchone()
    assert row[:2] == ("a", "ok")
    assert row[2].endswith("+00:00") and "T" in row[2]
    assert db.execute("SELECT value FROM meta WHERE key='format_version'").fetchone() == (
        str(FORMAT_VERSION),)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    # One row in one table, a column per key typed as the key is declared; a list as
    # its JSON text, a boolean as 1.
    columns = {row[1]: row[2] for row in db.execute("PRAGMA table_info(results)")}
    assert columns == {"exp.id": "TEXT", "exp.status": "TEXT", "results.time": "REAL",
                       "results.time_data": "JSON", "results.stable": "BOOLEAN"}
    assert db.execute('SELECT "exp.id", "results.time", typeof("results.time"), '
                      '"results.time_data", "results.stable" FROM results').fetchall() == [
        ("a", 2.5, "real", "[2.5]", 1)]
    assert db.execute("SELECT COUNT(*) FROM exact").fetchone() == (0,)
    db.close()


def test_reopening_keeps_records(tmp_path: Path) -> None:
    with Store.in_directory(tmp_path) as store:
        store.put({"exp.id": "a", "x": float("inf")})
    with Store.in_directory(tmp_path, create=False) as store:
        assert store.records() == [{"exp.id": "a", "x": float("inf")}]


@pytest.mark.parametrize("record", [{}, {"exp.id": ""}, {"exp.id": 7}])
def test_put_without_string_id_is_a_bug(tmp_path: Path, record: dict[str, object]) -> None:
    with Store(tmp_path / "s.sqlite") as store, pytest.raises(ValueError, match=r"exp\.id"):
        store.put(record)


def test_not_a_database_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    path.write_text("this is not sqlite " * 100)
    with pytest.raises(ResultsError, match=r"results\.sqlite"):
        Store(path)


def test_foreign_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE things (a)")
    db.commit()
    db.close()
    with pytest.raises(ResultsError, match="not a dlbench results store"):
        Store(path)
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("things",)]


def test_missing_store_without_create(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="does not exist"):
        Store(tmp_path / "none.sqlite", create=False)
    assert not (tmp_path / "none.sqlite").exists()


def test_newer_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = ? WHERE key = 'format_version'", (str(FORMAT_VERSION + 1),))
    db.commit()
    db.close()
    with pytest.raises(ResultsError, match=f"format version {FORMAT_VERSION + 1}"):
        Store(path)


WRITER = textwrap.dedent(
    """
    import sys
    from dlbench.results.store import Store
    store = Store(sys.argv[1])
    i = 0
    while True:
        store.put({"exp.id": f"e{i}", "exp.status": "ok", "results.time_data": [float(i)] * 500})
        print(i, flush=True)
        i += 1
    """
)


def test_committed_records_survive_kill_9_of_the_writer(tmp_path: Path) -> None:
    path = tmp_path / STORE_FILENAME
    env = dict(os.environ, PYTHONPATH=str(Path(dlbench.__file__).parents[1]))
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert writer.stdout is not None
    deadline = time.monotonic() + 4.0
    acknowledged = -1
    try:
        while acknowledged < 20 and time.monotonic() < deadline:
            line = writer.stdout.readline()
            if not line:
                break
            acknowledged = int(line)
    finally:
        # Killed while it is writing further experiments, in whatever state it is in.
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert acknowledged >= 20, "the writer did not start"
    with Store(path, create=False) as store:
        records = store.records()
    assert len(records) >= acknowledged + 1
    for i, record in enumerate(records):
        assert record == {
            "exp.id": f"e{i}",
            "exp.status": "ok",
            "results.time_data": [float(i)] * 500,
        }


def test_a_new_store_appears_whole(tmp_path: Path) -> None:
    # A reader opening the store as a run starts must never find an SQLite file
    # without its tables: the tables are made beside it and the file takes the name.
    from dlbench.results.store import _create_whole

    path = tmp_path / "results.sqlite"
    _create_whole(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.sqlite"]
    with Store(path, create=False) as store:
        assert list(store.records()) == []
    before = path.read_bytes()
    _create_whole(path)  # a store made meanwhile (by another runner) stands
    assert path.read_bytes() == before
