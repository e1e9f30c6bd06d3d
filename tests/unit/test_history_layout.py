"""The history's row shape (format 2) on SQLite: a column per key named and typed as a
run's results store names and types it, values a column cannot hold kept exactly, and
a format-1 history converted on first open with nothing lost."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dlbench.errors import ResultsError
from dlbench.results.history.layout import POSTGRES
from dlbench.results.history.records import HistoryRow
from dlbench.results.history.store import open_history
from dlbench.results.store import Store
from dlbench.results.store.columns import BOOLEAN, INTEGER, JSON, REAL, TEXT


def _row(exp_id: str, **parts: Any) -> HistoryRow:
    config = {"exp.framework": "pytorch", "exp.model": "resnet50", **parts.pop("config", {})}
    return HistoryRow(run_id=parts.pop("run_id", "run1"), exp_id=exp_id,
                      run_time="2024-01-01T02:00:00.000000+00:00",
                      record_time=parts.pop("record_time", "2024-01-01T02:00:00.000000+00:00"),
                      config_key=parts.pop("config_key", "k" + exp_id), status="ok",
                      config=config, **parts)


#: Rows of every kind a history holds: lists and dicts, a key in two parts, no results,
#: text beyond ASCII, None, booleans, and values their column does not hold exactly.
VARIED = [
    _row("a", config={"exp.replica_batch": 32, "hw.device_name": "A100"},
         environment={"hw.device_name": "A100", "sys.framework_version": "2.3.0",
                      "hw.cpu_freq_mhz": {"current": 2000}, "sys.gpus": ["A100", "A100"]},
         results={"results.throughput": 812.5, "results.time": 39.4}),
    _row("b", config={"exp.replica_batch": 64, "user.note": "désolé ☃"},
         environment={"sys.framework_version": None},
         results={"results.throughput": 3, "results.passed": True}, revision="abc123"),
    _row("c", config={"exp.replica_batch": "64"},  # text where integers are declared
         results={"results.throughput": -0.0, "results.time": 2**70}),
    _row("d", run_id="run2", source="night2.json"),
]


def _exact(value: Any) -> Any:
    """``value`` with its types spelled out: ``3`` and ``3.0`` (and ``True``) differ."""
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    if isinstance(value, float):
        return ("float", repr(value))  # -0.0 is not 0.0, NaN is NaN
    return (type(value).__name__, value)


def _rows(rows: list[HistoryRow]) -> list[Any]:
    return sorted((_exact(vars(row)) for row in rows), key=json.dumps)


def test_rows_are_a_column_per_key_typed_as_the_results_store_types_it(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with open_history(str(path)) as history:
        assert history.put(VARIED) == (4, 0)
        assert _rows(history.rows()) == _rows(VARIED)
        assert history.put(VARIED[:1]) == (0, 1)
        assert history.count() == 4
    with Store(tmp_path / "results.sqlite") as store:
        store.put({"exp.id": "x", "exp.model": "m", "exp.replica_batch": 1,
                   "results.throughput": 1.5, "hw.cpu_freq_mhz": {"current": 1}})
    with contextlib.closing(sqlite3.connect(path)) as db:
        history_types = {name: kind for _, name, kind, *_ in
                         db.execute("PRAGMA table_info(history_records)")}
        found = db.execute('SELECT exp_id, "exp.model", "results.throughput", '
                           '"exp.replica_batch", "hw.device_name" FROM history_records '
                           'ORDER BY exp_id').fetchall()
        exact = db.execute("SELECT exp_id, name, value FROM history_exact JOIN history_keys "
                           "ON key = id ORDER BY exp_id, name").fetchall()
        frame = pd.read_sql('SELECT "results.throughput" FROM history_records '
                            'WHERE "exp.replica_batch" = 32', db)
    with contextlib.closing(sqlite3.connect(tmp_path / "results.sqlite")) as db:
        store_types = {name: kind for _, name, kind, *_ in
                       db.execute("PRAGMA table_info(results)")}
    for name in ("exp.model", "exp.replica_batch", "results.throughput", "hw.cpu_freq_mhz"):
        assert history_types[name] == store_types[name]
    assert history_types["results.throughput"] == "REAL"
    # SQL sees each value as near as its column allows; the exact ones are kept aside.
    assert found == [("a", "resnet50", 812.5, 32, "A100"), ("b", "resnet50", 3.0, 64, None),
                     ("c", "resnet50", -0.0, 64, None), ("d", "resnet50", None, None, None)]
    assert exact == [("b", "results.throughput", "3"), ("c", "exp.replica_batch", '"64"'),
                     ("c", "results.throughput", "-0.0"),
                     ("c", "results.time", str(2**70))]
    assert frame["results.throughput"].tolist() == [812.5]


def test_keys_sql_would_take_for_one_column_get_their_own(tmp_path: Path) -> None:
    rows = [_row("a", config={"user.Label": "x", "user.label": "y", "status": "mine"})]
    with open_history(str(tmp_path / "h.sqlite")) as history:
        history.put(rows)
        assert _rows(history.rows()) == _rows(rows)
    with contextlib.closing(sqlite3.connect(tmp_path / "h.sqlite")) as db:
        columns = dict(db.execute("SELECT name, column_name FROM history_keys"))
        status = db.execute("SELECT status FROM history_records").fetchone()
    assert columns["user.Label"] == "user.Label"
    assert columns["user.label"].startswith("user.label#")
    assert columns["status"].startswith("status#") and status == ("ok",)


def test_a_key_with_two_values_in_one_row_is_refused(tmp_path: Path) -> None:
    row = _row("a", config={"hw.device_name": "A100"}, environment={"hw.device_name": "H100"})
    with open_history(str(tmp_path / "h.sqlite")) as history:
        with pytest.raises(ValueError, match=r"hw\.device_name is 'A100' in one part"):
            history.put([row])
        assert history.count() == 0


@pytest.mark.parametrize(("value", "sql_type", "expected"), [
    (1.5, REAL, (1.5, False)),
    (3, REAL, (3.0, True)),
    (2**70, REAL, (None, True)),  # the store writes it as text, which REAL refuses
    (True, INTEGER, (1, True)),
    (2**70, INTEGER, (None, True)),
    ("a\x00b", TEXT, ("ab", True)),
    (5, TEXT, ("5", True)),
    (True, BOOLEAN, (True, False)),
    (2, BOOLEAN, (None, True)),
    ([1, 2], JSON, ("[1,2]", False)),
    ([1, float("nan")], JSON, (None, True)),
    ({"a": "\x00"}, JSON, (None, True)),
    (None, REAL, (None, False)),
])
def test_what_a_postgresql_column_holds_of_a_value(
    value: Any, sql_type: str, expected: tuple[Any, bool]
) -> None:
    cell = POSTGRES.cell(value, sql_type)
    assert cell == expected and type(cell[0]) is type(expected[0])


# ------------------------------------------------------------------ format 1

FORMAT1_TABLE = """CREATE TABLE history_records (
    run_id TEXT NOT NULL, exp_id TEXT NOT NULL, run_time TEXT NOT NULL,
    record_time TEXT NOT NULL, config_key TEXT NOT NULL, status TEXT, revision TEXT,
    source TEXT, imported TEXT NOT NULL, config {json} NOT NULL,
    environment {json} NOT NULL, results {json} NOT NULL, PRIMARY KEY (run_id, exp_id))"""


def write_format1(db: Any, rows: list[HistoryRow], *, json_type: str = "TEXT",
                  mark: str = "?") -> None:
    """A history as dlbench wrote format 1: three JSON columns (``jsonb`` in
    PostgreSQL), the meta table saying 1."""
    db.execute("CREATE TABLE history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO history_meta VALUES ('format_version', '1')")
    db.execute(FORMAT1_TABLE.format(json=json_type))
    db.execute("CREATE INDEX history_records_series "
               "ON history_records (config_key, run_time, record_time)")
    cast = "::jsonb" if json_type == "JSONB" else ""
    for number, row in enumerate(rows):
        db.execute(f"INSERT INTO history_records VALUES ({', '.join([mark] * 9)}, "
                   f"{mark}{cast}, {mark}{cast}, {mark}{cast})",
                   (row.run_id, row.exp_id, row.run_time, row.record_time, row.config_key,
                    row.status, row.revision, row.source, f"2024-02-0{number + 1}T00:00:00",
                    json.dumps(row.config), json.dumps(row.environment),
                    json.dumps(row.results)))


def test_a_format1_history_converts_on_first_writable_open(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        write_format1(db, VARIED)
        db.commit()
    # A reader reads it as it is and writes nothing.
    with open_history(str(path), create=False) as history:
        assert _rows(history.rows()) == _rows(VARIED)
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT value FROM history_meta").fetchone() == ("1",)
    with open_history(str(path)) as history:
        assert _rows(history.rows()) == _rows(VARIED)
    with open_history(str(path), create=False) as history:
        assert _rows(history.rows()) == _rows(VARIED)
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT value FROM history_meta").fetchone() == ("2",)
        imported = db.execute("SELECT imported FROM history_records ORDER BY exp_id").fetchall()
        assert db.execute('SELECT "results.throughput" FROM history_records '
                          "WHERE exp_id = 'a'").fetchone() == (812.5,)
    assert imported == [("2024-02-01T00:00:00",), ("2024-02-02T00:00:00",),
                        ("2024-02-03T00:00:00",), ("2024-02-04T00:00:00",)]


@pytest.mark.parametrize(("statement", "words"), [
    ("UPDATE history_records SET config = '[1]' WHERE exp_id = 'b'", "not a JSON object"),
    ("UPDATE history_records SET environment = '{\"hw.device_name\": \"H100\"}' "
     "WHERE exp_id = 'a'", "hw.device_name is 'A100' in one part"),
])
def test_a_format1_history_that_cannot_convert_is_left_as_it_was(
    tmp_path: Path, statement: str, words: str
) -> None:
    path = tmp_path / "h.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        write_format1(db, VARIED)
        db.execute(statement)
        db.commit()
    with pytest.raises(ResultsError, match="has format 1 and could not be converted") as caught:
        open_history(str(path))
    assert words in str(caught.value) and "\n" not in str(caught.value)
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT value FROM history_meta").fetchone() == ("1",)
        assert db.execute("SELECT COUNT(*) FROM history_records").fetchone() == (4,)


def test_a_newer_history_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    open_history(str(path)).close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("UPDATE history_meta SET value = '3'")
        db.commit()
    with pytest.raises(ResultsError, match="has format 3; this dlbench reads up to 2"):
        open_history(str(path))
