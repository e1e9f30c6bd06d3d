"""The store's format: values come back as they went in, shapes keep key order, one
value per key is read without its table; stores of older formats are converted by a
writer or ``upgrade``, never by a reader (format 4 is read as it is, older ones are
refused in one line)."""

from __future__ import annotations

import json
import math
import sqlite3
from array import array
from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.results import store as store_module
from dlbench.results.store import FORMAT_VERSION, Store
from dlbench.results.store.upgrade import upgrade

ODD: dict[str, Any] = {
    "exp.id": "odd",
    "nan": math.nan, "negzero": -0.0, "inf": -math.inf, "big": 2**70, "small": -(2**63),
    "true": True, "false": False, "null": None, "int": 3, "float": 3.0, "empty": "",
    "nul": "a\x00b", "unicode": "é😀", "surrogate": "\ud800", "text_number": "16",
    "list": [1, [2, {"a": None}]], "dict": {"k": [1.5]}, "empty_list": [], "empty_dict": {},
}


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a) == json.dumps(b)  # NaN == NaN, -0.0 != 0.0


def _refused_to_a_reader(path: Path, version: int) -> None:
    """A reader neither converts the store nor reads it: one line says how to convert it,
    and the file is left byte for byte as it was."""
    before = path.read_bytes()
    with pytest.raises(ResultsError, match=(
            f"format version {version}, .* run dlbench store upgrade {path}$")):
        Store(path, create=False)
    assert path.read_bytes() == before


def test_every_kind_of_value_comes_back_with_its_type_and_key_order(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        store.put(ODD)
        store.put({"exp.id": "other", "int": 3.0, "true": 1, "negzero": 0.0})
        odd, other = store.records()
        assert list(odd) == list(ODD) and _same(odd, ODD)
        assert _same(store.get("odd"), ODD)
        assert _same(other, {"exp.id": "other", "int": 3.0, "true": 1, "negzero": 0.0})
        scalars = store.records(series=False)[0]
        assert list(scalars) == [k for k, v in ODD.items() if not isinstance(v, (list, dict))]


def test_a_key_of_one_value_is_right_after_it_takes_another(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as first, Store(path) as second:
        first.put({"exp.id": "a", "x": 1, "y": "same"})
        first.put({"exp.id": "b", "x": 1, "y": "same"})
        assert [r["x"] for r in first.records()] == [1, 1]
        # Another connection (another runner process) changes the key's values.
        second.put({"exp.id": "c", "x": 1.0, "y": "same"})
        second.put({"exp.id": "a", "x": True, "y": "same"})
        assert [r["x"] for r in first.records()] == [True, 1, 1.0]
        assert [type(r["x"]) for r in first.records()] == [bool, int, float]
        assert first.records(where={"x": 1}, keys=["exp.id"]) == [{"exp.id": "b"},
                                                                   {"exp.id": "c"}]


def test_scalars_and_series_under_one_key(tmp_path: Path) -> None:
    records = [{"exp.id": "a", "r": [1.0, 2.0]}, {"exp.id": "b", "r": None},
               {"exp.id": "c"}, {"exp.id": "d", "r": 4.5}]
    with Store(tmp_path / "s.sqlite") as store:
        store.put_many(records)
        assert store.records() == records
        assert store.records(series=False) == [{"exp.id": "a"}, *records[1:]]
        assert store.records(keys=["r"], series=["r"]) == [
            {"r": [1.0, 2.0]}, {"r": None}, {}, {"r": 4.5}]


def test_put_many_is_put_one_by_one_in_one_transaction(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        store.put({"exp.id": "z", "v": 0})
        store.put_many([{"exp.id": "a", "v": 1}, {"exp.id": "z", "v": 2},
                        {"exp.id": "a", "v": 3, "w": [1]}])
        assert store.records() == [{"exp.id": "z", "v": 2}, {"exp.id": "a", "v": 3, "w": [1]}]
        with pytest.raises(ValueError, match=r"exp\.id"):
            store.put_many([{"exp.id": "b", "v": 4}, {"v": 5}])
        with pytest.raises(TypeError):
            store.put_many([{"exp.id": "b", "v": 4}, {"exp.id": "c", "v": object()}])
        assert len(store) == 2 and store.get("b") is None


def _v1_store(path: Path, rows: list[tuple[str, int, str | None, str, str]]) -> None:
    """A store as format 1 wrote it (that code is gone; its schema is not)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("CREATE TABLE experiments (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, "
               "status TEXT, updated TEXT NOT NULL, record TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('format_version', '1')")
    db.executemany("INSERT INTO experiments VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()


def test_a_format_1_store_is_converted_when_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "_MIGRATE_CHUNK", 2)  # three records: two chunks
    path = tmp_path / "results.sqlite"
    old = [
        {"exp.id": "b", "exp.status": "ok", "results.time": 2.5, "results.time_data": [2, 3],
         "results.stable": True, "x": math.nan},
        {"exp.id": "a", "exp.status": "failure", "results.time": None},
        {"exp.id": "c", "exp.model": "resnet50"},
    ]
    # seq, not the id or the row order, is the order of first storage.
    _v1_store(path, [(r["exp.id"], seq, r.get("exp.status"), f"2026-01-0{seq}T00:00:00+00:00",
                      json.dumps(r)) for seq, r in ((2, old[1]), (1, old[0]), (3, old[2]))])
    _refused_to_a_reader(path, 1)
    assert upgrade(path) == (1, FORMAT_VERSION)  # converts the file, as a writer would
    with Store(path, create=False) as store:
        assert _same(store.records(), [old[0], old[1], old[2]])
        assert store.statuses() == {"b": "ok", "a": "failure"}
        assert store.records(where={"results.time": {"$gt": 1}}, keys=["exp.id"]) == [
            {"exp.id": "b"}]
        with pytest.raises(ResultsError, match="open for reading only"):
            store.put({"exp.id": "d"})
    with Store(path) as store:
        store.put({"exp.id": "d"})
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchall() == [
        (str(FORMAT_VERSION),)]
    assert db.execute("SELECT id, updated FROM experiments ORDER BY seq LIMIT 1").fetchall() == [
        ("b", "2026-01-01T00:00:00+00:00")]
    db.close()
    with Store(path) as store:
        assert [r["exp.id"] for r in store.records()] == ["b", "a", "c", "d"]


def test_a_corrupt_format_1_store_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    _v1_store(path, [("a", 1, "ok", "2026-01-01T00:00:00+00:00", '{"exp.id": "a"}'),
                     ("b", 2, "ok", "2026-01-01T00:00:00+00:00", "{not json")])
    with pytest.raises(ResultsError, match="experiment b has a corrupt record"):
        Store(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta").fetchall() == [("1",)]
    assert db.execute("SELECT COUNT(*) FROM experiments").fetchone() == (2,)
    db.close()


def _v2_scalar(value: Any) -> Any:
    """A scalar as format 2 stored it in ``v_<key id>``."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value).encode()
    if isinstance(value, float) and value != value:
        return b"NaN"
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return str(value).encode()
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(value).encode()
    return value


def _v2_series(value: Any) -> Any:
    """A list or dict as format 2 stored it in ``s_<key id>``."""
    if type(value) is list and value and all(type(v) is float for v in value):
        return array("d", value).tobytes()
    return json.dumps(value)


def _v2_store(path: Path, records: list[dict[str, Any]]) -> None:
    """A store as format 2 wrote it (that code is gone; its schema is not)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE experiments (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            status TEXT, updated TEXT NOT NULL, shape INTEGER NOT NULL);
        CREATE TABLE keys (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
            kinds INTEGER NOT NULL DEFAULT 0, first, constant INTEGER NOT NULL DEFAULT 1);
        CREATE TABLE shapes (id INTEGER PRIMARY KEY, keys TEXT NOT NULL UNIQUE);
        INSERT INTO meta VALUES ('format_version', '2');
    """)
    ids: dict[str, int] = {}
    for seq, record in enumerate(records, start=1):
        for name in record:
            if name not in ids:
                ids[name] = len(ids) + 1
                db.execute("INSERT INTO keys (id, name) VALUES (?, ?)", (ids[name], name))
                db.execute(f"CREATE TABLE v_{ids[name]} (seq INTEGER PRIMARY KEY, v NOT NULL)")
                db.execute(f"CREATE TABLE s_{ids[name]} (seq INTEGER PRIMARY KEY, v NOT NULL)")
        shape = json.dumps([ids[name] for name in record], separators=(",", ":"))
        db.execute("INSERT OR IGNORE INTO shapes (keys) VALUES (?)", (shape,))
        (shape_id,) = db.execute("SELECT id FROM shapes WHERE keys = ?", (shape,)).fetchone()
        db.execute("INSERT INTO experiments VALUES (?, ?, ?, ?, ?)",
                   (seq, record["exp.id"], record.get("exp.status"),
                    f"2026-02-0{seq}T00:00:00+00:00", shape_id))
        for name, value in record.items():
            series = isinstance(value, (list, dict))
            db.execute(f"INSERT INTO {'s' if series else 'v'}_{ids[name]} VALUES (?, ?)",
                       (seq, _v2_series(value) if series else _v2_scalar(value)))
    db.commit()
    db.close()


def test_a_format_2_store_is_converted_with_every_kind_of_value(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    records = [
        {**ODD, "exp.status": "ok", "exp.model": "resnet50", "results.time": 2.5,
         "results.time_data": [2.5, -0.0, math.inf], "exp.replica_batch": 16},
        {"exp.id": "second", "exp.model": None, "results.time": 3, "list": 4.5,
         "exp.replica_batch": 32.0, "true": 1, "results.time_data": []},
        {"exp.id": "third", "exp.status": "failure", "results.time": None, "dict": "text"},
    ]
    _v2_store(path, records)
    _refused_to_a_reader(path, 2)
    assert upgrade(path) == (2, FORMAT_VERSION)
    with Store(path, create=False) as store:
        back = store.records()
        assert [list(r) for r in back] == [list(r) for r in records]
        assert all(_same(a, b) for a, b in zip(back, records, strict=True))
        assert [type(r["true"]) for r in back[:2]] == [bool, int]
        assert store.statuses() == {"odd": "ok", "third": "failure"}
        assert store.records(where={"exp.replica_batch": 32}, keys=["exp.id"]) == [
            {"exp.id": "second"}]
    with Store(path) as store:
        store.put({"exp.id": "fourth", "exp.model": "vgg16"})
    db = sqlite3.connect(path)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"meta", "experiments", "keys", "shapes", "exact", "results_scalars",
                      "results_series"}
    assert db.execute("SELECT type FROM sqlite_master WHERE name = 'results'").fetchone() == (
        "view",)
    assert db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchall() == [
        (str(FORMAT_VERSION),)]
    assert db.execute("SELECT updated FROM experiments ORDER BY seq LIMIT 1").fetchone() == (
        "2026-02-01T00:00:00+00:00",)
    # What an SQL reader sees: the value where SQL holds it, NULL for null and NaN.
    assert db.execute('SELECT "exp.id", "exp.model", "results.time", "exp.replica_batch", '
                      '"nan" FROM results ORDER BY rowid').fetchall() == [
        ("odd", "resnet50", 2.5, 16, None), ("second", None, 3.0, 32, None),
        ("third", None, None, None, None), ("fourth", "vgg16", None, None, None)]
    db.close()
    with Store(path) as store:
        assert len(store) == 4 and _same(store.records()[:3], records)


def _single(path: Path) -> dict[str, tuple[Any, Any]]:
    """``keys.single`` and ``keys.first`` of each key, by name."""
    db = sqlite3.connect(path)
    try:
        return {name: (single, first) for name, single, first in
                db.execute("SELECT name, single, first FROM keys ORDER BY id")}
    finally:
        db.close()


def test_keys_say_whether_a_key_holds_one_value_as_records_are_written(
        tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.put({"exp.id": "a", "x": 1, "nan": math.nan, "t": [1.5], "n": None})
        # first: [what its column holds, null] or [null, its exact text]
        assert _single(path) == {"exp.id": (1, '["a",null]'), "x": (1, "[1,null]"),
                                 "nan": (1, '[null,"NaN"]'), "t": (1, '["[1.5]",null]'),
                                 "n": (1, "[null,null]")}
        store.put({"exp.id": "b", "x": 1, "nan": math.nan, "t": [1.5], "n": None})
        assert _single(path)["x"] == (1, "[1,null]") and _single(path)["t"][0] == 1
        store.put({"exp.id": "c", "x": 2, "nan": 0.5, "t": [1.5], "n": 0})
        after = _single(path)
        # x, nan (a number after NaN) and n (0 after null) now vary; t does not.
        assert [after[k][0] for k in ("exp.id", "x", "nan", "t", "n")] == [0, 0, 0, 1, 0]
        # A record replaced: its keys' values may have been the ones that differed.
        store.put({"exp.id": "c", "x": 1})
        assert {k: v[0] for k, v in _single(path).items()} == {
            "exp.id": None, "x": None, "nan": None, "t": None, "n": None}
        store.put({"exp.id": "d", "x": 5, "new": True})
        assert _single(path)["new"] == (1, "[1,null]") and _single(path)["x"][0] is None


def test_a_key_known_to_vary_or_not_is_not_scanned_but_read_as_before(tmp_path: Path) -> None:
    from dlbench.results.store.arrays import StoreArrays

    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.put_many([{"exp.id": str(i), "m": "ab"[i % 2], "one": 7, "f": 1.0 if i else 1}
                        for i in range(4)])
    with StoreArrays(path) as arrays:
        arrays.survey(["m", "one", "f"])
        assert [arrays.info(k).single for k in ("m", "one", "f")] == [False, True, False]
        assert arrays.first_value("one") == 7
        assert arrays.codes("m").codes.tolist() == [0, 1, 0, 1]
    # A selection where a key of two values holds one: surveyed on the rows chosen.
    with StoreArrays(path, where={"m": "a"}) as arrays:
        arrays.survey(["m", "one"])
        assert arrays.info("m").single and arrays.first_value("m") == "a"
        assert arrays.first_value("one") == 7 and len(arrays) == 2


def test_results_is_a_view_of_a_column_per_key_in_the_order_first_stored(
        tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.put({"exp.id": "a", "exp.model": "m", "results.time_data": [1.0, 2.0]})
        store.put({"exp.id": "b", "results.time": 2.5, "exp.model": "n", "flag": True})
    db = sqlite3.connect(path)
    try:
        cursor = db.execute("SELECT * FROM results")
        assert [d[0] for d in cursor.description] == [
            "exp.id", "exp.model", "results.time_data", "results.time", "flag"]
        assert cursor.fetchall() == [("a", "m", "[1.0,2.0]", None, None),
                                     ("b", "n", None, 2.5, 1)]
        # The series live apart from the scalars, a row each keyed by the record's seq.
        assert db.execute("SELECT * FROM results_series").fetchall() == [(1, "[1.0,2.0]")]
        assert [d[1] for d in db.execute("PRAGMA table_info(results_scalars)")] == [
            "seq", "exp.id", "exp.model", "results.time", "flag"]
    finally:
        db.close()


def _as_format3(path: Path) -> None:
    """Turn a store of this format into format 3's layout: one table ``results``
    (``exp.id`` and a column per key, in key order), ``keys`` without ``single`` and
    ``first``."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        types = {column: kind for column, kind in
                 db.execute("SELECT column_name, type FROM keys ORDER BY id")}
        names = ["exp.id", *(name for name in types if name != "exp.id")]
        columns = ", ".join(f'"{n}" {types.get(n, "TEXT")}'  # an empty store: no keys
                            + (" NOT NULL UNIQUE" if n == "exp.id" else "") for n in names)
        db.execute("BEGIN")
        db.execute(f"CREATE TABLE results_v3 ({columns})")
        db.execute("INSERT INTO results_v3 SELECT * FROM results ORDER BY rowid")
        db.execute("DROP VIEW results")
        for table in ("results_scalars", "results_series"):
            db.execute(f"DROP TABLE {table}")
        db.execute("ALTER TABLE results_v3 RENAME TO results")
        for column in ("single", "first"):
            db.execute(f"ALTER TABLE keys DROP COLUMN {column}")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'format_version'")
        db.execute("COMMIT")
    finally:
        db.close()


def test_a_format_3_store_is_converted_with_every_kind_of_value(tmp_path: Path) -> None:
    records = [
        ODD,
        {"exp.id": "second", "nan": math.nan, "negzero": -0.0, "int": 3.0, "true": 1,
         "list": [1, [2, {"a": None}]], "dict": None, "text_number": "16"},
        {"exp.id": "third", "exp.status": "failure", "int": 3, "empty": "", "nan": math.nan},
        {"exp.id": "fourth", "results.time": 2.5, "exp.model": "m"},
    ]
    direct, old = tmp_path / "direct.sqlite", tmp_path / "old.sqlite"
    for path in (direct, old):
        with Store(path) as store:
            store.put_many(records[:2])
            store.put_many(records[2:])
    _as_format3(old)
    db = sqlite3.connect(old)
    assert db.execute("SELECT type FROM sqlite_master WHERE name = 'results'").fetchone() == (
        "table",)
    db.close()
    # A reader refuses it, as format 1 and 2 stores; a writer converts the file, once.
    _refused_to_a_reader(old, 3)
    with Store(old):
        pass
    with Store(old, create=False) as store:
        back = store.records()
        assert [list(r) for r in back] == [list(r) for r in records]
        assert _same(back, records)
        assert store.statuses() == {"third": "failure"}
        assert store.records(where={"int": 3}, keys=["exp.id"]) == [
            {"exp.id": "odd"}, {"exp.id": "second"}, {"exp.id": "third"}]
    # What the writer keeps of each key is what the conversion found in SQL (the
    # first value, where a key holds one).
    assert ({k: v if v[0] else v[0] for k, v in _single(old).items()}
            == {k: v if v[0] else v[0] for k, v in _single(direct).items()})
    assert _single(old)["big"] == (1, '[null,"1180591620717411303424"]')
    assert _single(old)["nan"] == (1, '[null,"NaN"]')  # NaN in every record holding it
    assert _single(old)["int"][0] == 0  # 3, then 3.0: one value to Python, not to JSON
    assert _single(old)["exp.model"] == (1, '["m",null]')
    db = sqlite3.connect(old)
    try:
        assert db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchall() == [
        (str(FORMAT_VERSION),)]
        assert db.execute("SELECT * FROM results").fetchall() == sqlite3.connect(
            direct).execute("SELECT * FROM results").fetchall()
    finally:
        db.close()
    with Store(old) as store:
        store.put({"exp.id": "fifth", "exp.model": "m"})
        assert len(store) == 5 and _same(store.records()[:4], records)


def test_an_empty_format_3_store_is_converted_and_takes_records(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    with Store(path):
        pass
    _as_format3(path)
    _refused_to_a_reader(path, 3)
    with Store(path) as store:
        store.put({"exp.id": "a", "x": [1]})
        assert store.records() == [{"exp.id": "a", "x": [1]}]
    assert _single(path) == {"exp.id": (1, '["a",null]'), "x": (1, '["[1]",null]')}
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT * FROM results").fetchall() == [("a", "[1]")]
    finally:
        db.close()


def _meta_and_indexes(path: Path) -> tuple[dict[str, str], list[str]]:
    db = sqlite3.connect(path)
    try:
        return (dict(db.execute("SELECT key, value FROM meta").fetchall()),
                [row[0] for row in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                    "AND tbl_name = 'results_scalars'")])
    finally:
        db.close()


def test_every_write_is_counted_and_the_model_indexed(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        assert _meta_and_indexes(path) == ({"format_version": str(FORMAT_VERSION),
                                            "writes": "0"}, [])
        store.put({"exp.id": "a", "exp.model": "m"})  # the column made, and its index
        store.put_many([{"exp.id": "b", "exp.model": "n"}, {"exp.id": "c"}])
        store.put({"exp.id": "a", "exp.model": "o"})  # a record replaced: a write too
        with pytest.raises(ValueError):
            store.put_many([{"exp.id": "d"}, {"exp.id": ""}])  # refused before writing
        assert _meta_and_indexes(path) == ({"format_version": str(FORMAT_VERSION),
                                            "writes": "3"}, ["by exp.model"])


def test_a_selection_by_model_reads_the_index(tmp_path: Path) -> None:
    from dlbench.results.store.columns import JOINED
    from dlbench.results.store.where import where_sql

    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.put_many([{"exp.id": f"e{i}", "exp.model": f"m{i % 4}", "exp.replica_batch": i}
                        for i in range(40)])
        catalogue = store._reader.catalogue()
        for query in ({"exp.model": "m1"}, {"exp.model": ["m1", "m2"]},
                      {"exp.model": "m1", "exp.replica_batch": {"$gt": 4}}):
            condition, params = where_sql(query, catalogue, set())
            plan = " ".join(row[-1] for row in store._db.execute(
                f"EXPLAIN QUERY PLAN SELECT r.seq FROM {JOINED} WHERE {condition}", params))
            assert "INDEX by exp.model (exp.model" in plan, (query, plan)
        # What the index finds is what the records match.
        assert [r["exp.id"] for r in store.records(where={"exp.model": "m1"})] == [
            f"e{i}" for i in range(1, 40, 4)]


def test_a_format_4_store_is_converted_to_an_index_and_a_count_of_writes(
        tmp_path: Path) -> None:
    records = [ODD, {"exp.id": "b", "exp.model": "m", "results.time": 2.5},
               {"exp.id": "c", "exp.model": "n"}]
    path = tmp_path / "old.sqlite"
    with Store(path) as store:
        store.put_many(records)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute('DROP INDEX "by exp.model"')
    db.execute("DELETE FROM meta WHERE key = 'writes'")
    db.execute("UPDATE meta SET value = '4' WHERE key = 'format_version'")
    db.close()
    before = path.read_bytes()
    with Store(path, create=False) as store:  # a reader reads it as it is
        assert _same(store.records(), records)
        assert [r["exp.id"] for r in store.records(where={"exp.model": "n"})] == ["c"]
    assert _meta_and_indexes(path) == ({"format_version": "4"}, [])
    assert path.read_bytes() == before
    with Store(path):  # a writer converts the file, once
        pass
    assert _meta_and_indexes(path) == ({"format_version": str(FORMAT_VERSION),
                                        "writes": "1"}, ["by exp.model"])
