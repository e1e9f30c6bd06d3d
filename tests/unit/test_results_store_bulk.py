"""Columns of a store read in bulk (one text per column, parsed by NumPy) and the
row-by-row read they fall back to: codes and values worked out by hand, the same
either way."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.results.store import Store
from dlbench.results.store.arrays import StoreArrays
from dlbench.results.store.bulk import (
    COMMA,
    DICTIONARY_JOINS,
    SEPARATOR,
    SUM,
    code_floats,
    column_text,
    dense_codes,
    dictionary_text,
    float_texts,
    floats_exact,
    join_parts,
    parse_coded,
    parse_dictionary,
    parse_floats,
    parse_integers,
)
from dlbench.results.store.columns import BOOLEAN, INTEGER, TEXT


def test_texts_are_coded_in_the_order_first_held() -> None:
    coded = parse_coded(("b\x1fa\x1fb\x1fc", 4), TEXT, 4)
    assert coded is not None
    assert coded.values == ["b", "a", "c"]
    assert coded.codes.tolist() == [0, 1, 0, 2]


def test_texts_coded_in_sql_against_a_dictionary() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, s TEXT)")
    db.executemany("INSERT INTO t (s) VALUES (?)",
                   [("b",), (None,), ("a",), ("c",), ("b",), ("d\x1fe",), ("c",)])
    sql, params = dictionary_text("s", ["a", "b"])
    assert params == ["a", "b", "a", "b"]
    row = db.execute(f"SELECT {', '.join(sql)} FROM t", params).fetchone()
    # Each row's index in the dictionary (-1: NULL, or a text not in it), those texts.
    assert row == ("1,-1,0,-1,1,-1,-1", "c\x1fd\x1fe\x1fc", 6)
    present = np.array([True, False, True, True, True, True, True])
    assert parse_dictionary(row, ["a", "b"], present) is None  # "d\x1fe" splits in two
    # A record held as None (NULL where the shape says it has the key): not said.
    assert parse_dictionary(row, ["a", "b"], np.ones(7, dtype=bool)) is None
    db.execute("UPDATE t SET s = 'd' WHERE seq = 6")
    row = db.execute(f"SELECT {', '.join(sql)} FROM t", params).fetchone()
    coded = parse_dictionary(row, ["a", "b"], present)
    assert coded is not None
    # In the order first held, as parse_coded codes the texts themselves.
    assert coded.values == ["b", "a", "c", "d"]
    assert coded.codes.tolist() == [0, 1, 2, 0, 3, 2]
    plain = parse_coded(db.execute(f"SELECT {', '.join(column_text('s', TEXT))} FROM t"
                                   ).fetchone(), TEXT, 6)
    assert plain is not None and plain.values == coded.values
    assert plain.codes.tolist() == coded.codes.tolist()
    # No dictionary: every text comes back as itself.
    sql, params = dictionary_text("s", [])
    row = db.execute(f"SELECT {', '.join(sql)} FROM t", params).fetchone()
    empty = parse_dictionary(row, [], present)
    assert empty is not None and empty.values == coded.values
    assert len(DICTIONARY_JOINS) == len(sql)


def test_integers_are_coded_in_their_order() -> None:
    coded = parse_coded(("5,3,5,-7", 4), INTEGER, 4)
    assert coded is not None
    assert coded.values == [-7, 3, 5]
    assert coded.codes.tolist() == [2, 1, 2, 0]
    assert all(type(v) is int for v in coded.values)


def test_booleans_and_floats_are_coded_in_the_order_first_held() -> None:
    flags = parse_coded(("1,0,1", 3), BOOLEAN, 3)
    assert flags is not None and flags.values == [True, False]
    assert flags.codes.tolist() == [0, 1, 0]
    ratios = code_floats(np.array([2.5, 0.1, 2.5]))
    assert ratios is not None and ratios.values == [2.5, 0.1]
    assert ratios.codes.tolist() == [0, 1, 0]
    assert code_floats(np.array([2.5, math.nan])) is None  # a key held as None


def test_dense_codes_are_numpy_unique_by_a_table_or_a_sort() -> None:
    distinct, codes = dense_codes(np.array([7, 3, 7, 1000, 3]))
    assert distinct.tolist() == [3, 7, 1000] and codes.tolist() == [1, 0, 1, 2, 0]
    wide = np.array([2**40, -(2**40), 2**40])  # too wide a span for a table
    distinct, codes = dense_codes(wide)
    assert distinct.tolist() == [-(2**40), 2**40] and codes.tolist() == [1, 0, 1]
    many = np.array([5, 1, 9, 1, 17, 5, 0, 2, 3, 4, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16])
    coded = code_floats(many.astype(float))  # more than 16 values: a scatter
    assert coded is not None and coded.values[:4] == [5.0, 1.0, 9.0, 17.0]
    assert coded.codes[:7].tolist() == [0, 1, 2, 1, 3, 0, 4]


@pytest.mark.parametrize("found, sql_type, held", [
    (("a\x1fb", 1), TEXT, 1),    # one value holding the separator: two parts
    (("a", 1), TEXT, 2),         # a NULL among the two records holding the key
    (("1,2", 2), INTEGER, 3),
    (("1,x", 2), INTEGER, 2),    # not a number
    (("1,2,3", 3), INTEGER, 2),  # more values than records
])
def test_what_the_text_cannot_say_is_none(found: tuple[Any, ...], sql_type: str, held: int
                                          ) -> None:
    assert parse_coded(found, sql_type, held) is None


def test_integers_and_floats_texts() -> None:
    assert parse_integers("3,1,2").tolist() == [3, 1, 2]  # type: ignore[union-attr]
    assert parse_integers(None).size == 0  # type: ignore[union-attr]
    assert parse_integers("1,a") is None
    # 3 * 2**59 * 2**(1 - 60) = 3; 0; not a number; 2**60 * 2**(-3 - 60) = 1/8.
    parsed = parse_floats(f"{3 * 2**59},0,0,{2**60}", "1,0,100000,-3", 4)
    assert parsed is not None and parsed[0] == 3.0 and parsed[1] == 0.0
    assert math.isnan(parsed[2]) and parsed[3] == 0.125
    assert parse_floats("1,2", "0", 2) is None  # fewer exponents
    assert parse_floats("0", "100001", 1) is None  # a number out of range
    assert parse_floats(None, None, 0).size == 0  # type: ignore[union-attr]


def test_sql_texts_give_back_every_value_exactly() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, x REAL, n INTEGER, s TEXT)")
    xs = [0.1, 1 / 3, 1.4634758521019183e+228, 5e-324, None, 2.0, -1e-270]
    rows = [(i, x, i * 10 if i != 2 else None, f"s{i % 2}") for i, x in enumerate(xs)]
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    db.execute("INSERT INTO t VALUES (7, 'text', 70, 's1')")
    if not floats_exact(db):
        pytest.skip("this SQLite has no math functions (log2, power)")
    texts = [*float_texts("x"), *column_text("n", INTEGER), *column_text("s", TEXT)]
    row = db.execute(f"SELECT {', '.join(texts)} FROM t").fetchone()
    assert parse_floats(row[0], row[1], 8) is None  # 5e-324: out of range, row by row
    db.execute("UPDATE t SET x = -0.0 WHERE seq = 3")
    row = db.execute(f"SELECT {', '.join(texts)} FROM t").fetchone()
    floats = parse_floats(row[0], row[1], 8)
    assert floats is not None
    expected = [0.1, 1 / 3, 1.4634758521019183e+228, 0.0, math.nan, 2.0, -1e-270, math.nan]
    assert np.array_equal(floats, np.array(expected), equal_nan=True)
    assert parse_coded(row[2:4], INTEGER, 8) is None  # row 2's NULL
    ints = parse_coded(row[2:4], INTEGER, 7)  # were the NULL a record without the key
    assert ints is not None and ints.values == [0, 10, 30, 40, 50, 60, 70]
    texts_coded = parse_coded(row[4:6], TEXT, 8)
    assert texts_coded is not None and texts_coded.values == ["s0", "s1"]
    assert texts_coded.codes.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]


RECORDS: list[dict[str, Any]] = [
    {"exp.id": "r0", "exp.model": "b", "exp.replica_batch": 8, "user.ratio": 0.5,
     "user.flag": True, "user.sep": "x\x1fy", "user.maybe": 1, "results.time": 10.0},
    {"exp.id": "r1", "exp.model": "a", "exp.replica_batch": 4, "user.ratio": 0.25,
     "user.flag": False, "user.sep": "z", "user.maybe": None, "results.time": 20},
    {"exp.id": "r2", "exp.model": "b", "exp.replica_batch": 8, "user.ratio": 0.5,
     "user.flag": True, "user.sep": "z", "user.maybe": 2, "results.time": 30.5},
    {"exp.id": "r3", "exp.model": "c", "exp.replica_batch": 16,
     "user.sep": "x\x1fy", "results.time": "slow"},
]
KEYS = ["exp.model", "exp.replica_batch", "user.ratio", "user.flag", "user.sep", "user.maybe"]


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    path = tmp_path / "results.sqlite"
    with Store(path) as opened:
        opened.put_many(RECORDS)
    return path


@pytest.mark.parametrize("sampled", [4096, 1])
def test_a_store_read_in_bulk_and_row_by_row(
        store: Path, sampled: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import dlbench.results.store.arrays as arrays_module

    # The texts coded against those of the first rows (all of them, or one row's).
    monkeypatch.setattr(arrays_module, "_SAMPLED", sampled)
    with StoreArrays(store) as arrays:
        arrays.survey(KEYS, numbers=["results.time"])
        # Texts, integers, floats and booleans in bulk, a text holding the separator
        # too (in the dictionary: a parameter of the SQL, not a part of its text); a
        # key held as None row by row. With one row sampled, "a", "c" and "z" come
        # back as themselves.
        assert set(arrays._coded) == {"exp.model", "exp.replica_batch", "user.ratio",
                                      "user.flag", "user.sep"}
        model = arrays.codes("exp.model")
        assert model.values == ["b", "a", "c", None]
        assert model.codes.tolist() == [0, 1, 0, 2]
        batch = arrays.codes("exp.replica_batch")
        assert batch.values == [4, 8, 16, None]
        assert batch.codes.tolist() == [1, 0, 1, 2]
        ratio = arrays.codes("user.ratio")  # r3 lacks it: the code of None
        assert ratio.values == [0.5, 0.25, None]
        assert ratio.codes.tolist() == [0, 1, 0, 2]
        assert ratio.present.tolist() == [True, True, True, False]
        flag = arrays.codes("user.flag")
        assert flag.values == [True, False, None]
        assert [type(v) for v in flag.values[:2]] == [bool, bool]
        sep = arrays.codes("user.sep")
        assert sep.values == ["x\x1fy", "z", None]
        assert sep.codes.tolist() == [0, 1, 1, 0]
        maybe = arrays.codes("user.maybe")  # 1, None, 2, absent
        assert maybe.values == [1, None, 2]
        assert maybe.codes.tolist() == [0, 1, 2, 1]
        assert maybe.present.tolist() == [True, True, True, False]
        # The measured value: 20 is an int under a float key (in exact), "slow" no number.
        times, numeric = arrays.numbers("results.time")
        assert np.array_equal(times, [10.0, 20.0, 30.5, math.nan], equal_nan=True)
        assert numeric.tolist() == [True, True, True, False]
        # A record's own values, rebuilt from the codes.
        assert arrays.value("exp.model", 2) == "b"
        assert arrays.value("user.ratio", 3, "absent") == "absent"


def test_bulk_and_row_by_row_give_the_same_codes(store: Path) -> None:
    with StoreArrays(store) as bulk, StoreArrays(store) as rows:
        bulk.survey(KEYS)
        for key in KEYS:
            assert bulk.codes(key).values == rows.codes(key).values, key
            assert bulk.codes(key).codes.tolist() == rows.codes(key).codes.tolist(), key


def test_a_selection_is_read_in_bulk(store: Path) -> None:
    with StoreArrays(store, {"exp.model": ["b", "c"]}) as arrays:
        arrays.survey(KEYS, numbers=["results.time"])
        assert "exp.replica_batch" in arrays._coded
        batch = arrays.codes("exp.replica_batch")
        assert batch.values == [8, 16, None]
        assert batch.codes.tolist() == [0, 0, 1]
        times, numeric = arrays.numbers("results.time")
        assert np.array_equal(times, [10.0, 30.5, math.nan], equal_nan=True)
        assert numeric.tolist() == [True, True, False]


def test_rows_not_aggregated_in_seq_order_are_read_row_by_row(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dlbench.results.store.arrays as arrays_module

    # As if SQLite had aggregated the rows in another order than seq's.
    monkeypatch.setattr(arrays_module, "seq_text", lambda ref: f"group_concat(-{ref})")
    with StoreArrays(store) as arrays:
        arrays.survey(KEYS, numbers=["results.time"])
        assert arrays._coded == {} and arrays._floats == {}
        model = arrays.codes("exp.model")
        assert model.values == ["b", "a", "c", None]
        assert model.codes.tolist() == [0, 1, 0, 2]
        times, _ = arrays.numbers("results.time")
        assert np.array_equal(times, [10.0, 20.0, 30.5, math.nan], equal_nan=True)


def test_floats_out_of_range_are_read_row_by_row(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    with Store(path) as opened:
        opened.put_many([{"exp.id": "t0", "user.tiny": 1e-300, "results.time": 1e-300},
                         {"exp.id": "t1", "user.tiny": 2.0, "results.time": 1e300 * 10}])
    with StoreArrays(path) as arrays:
        arrays.survey(["user.tiny"], numbers=["results.time"])
        assert "user.tiny" not in arrays._coded and "results.time" not in arrays._floats
        tiny = arrays.codes("user.tiny")
        assert tiny.values == [1e-300, 2.0, None] and tiny.codes.tolist() == [0, 1]
        times, numeric = arrays.numbers("results.time")
        assert times.tolist() == [1e-300, 1e301] and numeric.tolist() == [True, True]


def _report_records(model_b: str) -> list[dict[str, Any]]:
    times = {("a", 8): [100.0, 110.0], ("a", 16): [150.5], (model_b, 8): [90.0, 96.0, 99.0]}
    return [{"exp.id": f"{model}-{batch}-{i}", "exp.framework": "fake", "exp.model": model,
             "exp.replica_batch": batch, "exp.effective_batch": batch, "exp.num_nodes": 1,
             "exp.num_replicas": 1, "exp.status": "ok", "results.time": time}
            for (model, batch), values in times.items() for i, time in enumerate(values)]


@pytest.mark.parametrize("model_b", ["b", "b\x1fc"])  # plain; a text read row by row
def test_report_means_of_a_store_read_in_bulk(tmp_path: Path, model_b: str) -> None:
    from dlbench.report.tables.columnar import table_report

    path = tmp_path / "results.sqlite"
    with Store(path) as opened:
        opened.put_many(_report_records(model_b))
    report = table_report([path], {}, "--where", "exploration")
    (table,) = [t for t in report.tables if t.title.startswith("Batch time")]
    assert table.columns == ["exp.model", "8", "16"]
    means = {row[0]: [None if c is None else (c.mean, c.n) for c in row[1:]]
             for row in table.rows}
    # a: (100 + 110) / 2 at batch 8, 150.5 at 16; b: (90 + 96 + 99) / 3 = 95 at 8 only.
    assert means == {"a": [(105.0, 2), (150.5, 1)], model_b: [(95.0, 3), None]}


def test_texts_longer_than_sqlite_allows_are_read_row_by_row(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    with Store(path) as opened:
        opened.put_many([{"exp.id": f"e{i}", "exp.model": f"model-{i % 3}",
                          "results.time": i / 4} for i in range(300)])
    with StoreArrays(path) as arrays:
        length = getattr(sqlite3, "SQLITE_LIMIT_LENGTH", None)
        setlimit = getattr(arrays._db, "setlimit", None)
        if length is None or setlimit is None:
            pytest.skip("Connection.setlimit needs Python 3.11")
        # 300 models of 7 characters make a text of 2,399 bytes: SQLite refuses it.
        setlimit(length, 1000)
        arrays.survey(["exp.model"], numbers=["results.time"])
        assert arrays._coded == {} and arrays._floats == {}
        model = arrays.codes("exp.model")
        assert model.values == ["model-0", "model-1", "model-2", None]
        assert model.codes[:4].tolist() == [0, 1, 2, 0]
        times, _ = arrays.numbers("results.time")
        assert times[:3].tolist() == [0.0, 0.25, 0.5] and times[299] == 74.75


def test_parts_of_the_rows_join_into_the_aggregates_over_all() -> None:
    # seq; a text column and its count; an integer column; a float's two texts.
    parts = [("1,2", "a\x1fb", 2, "5,6", None, "7,8", "0,1"),
             (None, None, 0, None, None, None, None),  # a part with no rows
             ("3", "", 1, "9", None, "9", "2")]
    joins = [COMMA, SEPARATOR, SUM, COMMA, None, COMMA, COMMA]
    assert join_parts(parts, joins) == ("1,2,3", "a\x1fb\x1f", 3, "5,6,9", None, "7,8,9",
                                        "0,1,2")
    assert join_parts([parts[1]], joins) == (None, None, 0, None, None, None, None)


def _many(count: int, model: str = "m") -> list[dict[str, Any]]:
    return [{"exp.id": f"e{i:03d}", "exp.model": f"{model}{i % 3}", "exp.replica_batch": i % 5,
             "user.ratio": i / 8, "exp.status": "ok" if i % 7 else "failure",
             "results.time": 1.0 + i / 16} for i in range(count)]


@pytest.fixture()
def parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores of a few records read in three parts, as a million are on three
    processors."""
    import dlbench.results.store.parts as parts_module

    monkeypatch.setattr(parts_module, "PART_MIN", 10)
    monkeypatch.setattr(parts_module, "usable_cores", lambda: 3)


def _read(path: Path, where: dict[str, Any] | None = None) -> dict[str, Any]:
    with StoreArrays(path, where) as arrays:
        arrays.survey(["exp.model", "exp.replica_batch", "user.ratio"],
                      numbers=["results.time"])
        found = {key: (arrays.codes(key).values, arrays.codes(key).codes.tolist())
                 for key in ("exp.model", "exp.replica_batch", "user.ratio")}
        found["parts"] = arrays._parts
        found["bulk"] = sorted(arrays._coded)
        found["time"] = arrays.numbers("results.time")[0].tolist()
        return found


def test_a_large_store_is_read_in_parts_as_in_one(tmp_path: Path, parts: None) -> None:
    path = tmp_path / "results.sqlite"
    with Store(path) as opened:
        opened.put_many(_many(40))
    whole = tmp_path / "whole.sqlite"
    with Store(whole) as opened:
        opened.put_many(_many(40))
    read = _read(path)
    assert read.pop("parts") == [(1, 13), (14, 27), (28, 40)]
    assert read["bulk"] == ["exp.model", "exp.replica_batch", "user.ratio"]
    assert read["exp.model"] == (["m0", "m1", "m2", None], [i % 3 for i in range(40)])
    assert read["time"] == [1.0 + i / 16 for i in range(40)]
    import dlbench.results.store.parts as parts_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parts_module, "usable_cores", lambda: 1)
        alone = _read(whole)
    assert alone.pop("parts") == [(1, 40)]
    assert read == alone
    # A selection is read in this connection only (its temporary table is its own).
    assert _read(path, {"exp.model": "m1"})["parts"] == []


def test_parts_read_after_a_write_are_read_again_in_the_reader_s_state(
        tmp_path: Path, parts: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import dlbench.results.store.parts as parts_module

    path = tmp_path / "results.sqlite"
    with Store(path) as opened:
        opened.put_many(_many(40))
    connections: list[str] = []
    connect = parts_module.open_for_reading

    def counted(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connections.append("opened")
        return connect(*args, **kwargs)

    monkeypatch.setattr(parts_module, "open_for_reading", counted)
    # A run writing the store keeps it open from its start (its -wal and -shm there),
    # so the reader reads under the writer's locks.
    with Store(path) as writer, StoreArrays(path) as arrays:
        # Written after the reader began: each record of the last part replaced in
        # place, another added. The reader's state has neither.
        writer.put_many([*_many(40, model="new")[27:], {"exp.id": "late"}])
        arrays.survey(["exp.model"], numbers=["results.time"])
        model = arrays.codes("exp.model")
        assert model.values == ["m0", "m1", "m2", None]
        assert model.codes.tolist() == [i % 3 for i in range(40)]
    # A connection for each other part of the experiments, read before the write, and
    # one for each other part of the scalars, whose reads were not of the reader's
    # state and were read again in its own.
    assert len(connections) == 4


@pytest.mark.parametrize("odd", [False, True])
def test_statuses_other_than_ok_are_read_from_the_experiments(tmp_path: Path, odd: bool
                                                              ) -> None:
    path = tmp_path / "results.sqlite"
    records: list[dict[str, Any]] = [
        {"exp.id": "a", "exp.status": "ok"}, {"exp.id": "b", "exp.status": "failure"},
        {"exp.id": "c", "exp.status": None}, {"exp.id": "d"},
        {"exp.id": "e", "exp.status": 3 if odd else "skipped"}, {"exp.id": "f", "exp.status": "ok"}]
    with Store(path) as opened:
        opened.put_many(records)
    with StoreArrays(path) as arrays:
        positions, values = arrays.other_than("exp.status", "ok")
        assert positions.tolist() == [1, 2, 4]
        assert values == ["failure", None, 3 if odd else "skipped"]
    with StoreArrays(path, {"exp.id": ["a", "c", "e"]}) as arrays:
        positions, values = arrays.other_than("exp.status", "ok")
        assert positions.tolist() == [1, 2] and values == [None, 3 if odd else "skipped"]


@pytest.mark.parametrize("query", [
    {"exp.model": "m1"},  # the index, each part walking it
    {"exp.model": ["m0", "m2"], "exp.replica_batch": {"$gte": 2}},
    {"exp.replica_batch": 3},  # a scan, each part its own rows
    {"exp.model": "^m[12]$", "user.ratio": {"$lt": 3}},  # a regular expression, in Python
    {"results.time": 1.0},  # values in exact: 1.0 is held as the float it is
])
def test_a_selection_is_found_in_parts_as_in_one(
        tmp_path: Path, parts: None, monkeypatch: pytest.MonkeyPatch, query: dict[str, Any]
) -> None:
    import dlbench.results.store.parts as parts_module
    import dlbench.results.store.read as read_module

    path = tmp_path / "results.sqlite"
    records = _many(40)
    records[5]["results.time"] = 1  # an int under a float key: in exact
    with Store(path) as opened:
        opened.put_many(records)
    statements: list[str] = []
    spread = read_module.in_parts

    def spy(db: sqlite3.Connection, *args: Any) -> Any:
        statements.append(args[2])
        plan = " ".join(str(row[-1]) for row in db.execute(
            f"EXPLAIN QUERY PLAN {args[2]}", [*args[3], 1, 2]))
        statements.append(plan)
        return spread(db, *args)

    monkeypatch.setattr(read_module, "in_parts", spy)
    with Store(path, create=False) as store:
        found = [r["exp.id"] for r in store.records(where=query, keys=["exp.id"])]
    monkeypatch.setattr(parts_module, "PART_MIN", 1000)  # 40 records: one part
    with Store(path, create=False) as store:
        alone = [r["exp.id"] for r in store.records(where=query, keys=["exp.id"])]
    from dlbench.results.query import match

    assert found == alone == [r["exp.id"] for r in records if match(r, query)]
    assert found  # every query selects some
    sql, plan = statements  # read in parts once, not when alone
    if "exp.model" in query and query["exp.model"] != "^m[12]$":
        assert "+r.seq BETWEEN" in sql and "INDEX by exp.model" in plan
    else:
        assert "AND r.seq BETWEEN" in sql and "INTEGER PRIMARY KEY" in plan
