"""Reading the records of stores of formats 1 and 2, to convert them (see the history
in :mod:`dlbench.results.store`); nothing else reads those formats. A store of format
3 is converted in SQL (:func:`convert_format3`).

Format 1 keeps each record as JSON text in ``experiments.record``. Format 2 keeps a
narrow table per key: ``v_<key id>(seq, v)`` its scalars (INTEGER, REAL and TEXT as
SQLite's own, ``true``/``false``/``null``, NaN and integers beyond 64 bits as a BLOB
of their JSON text) and ``s_<key id>(seq, v)`` its lists and dicts (a list of floats
as its raw doubles, anything else as JSON text); ``shapes.keys`` lists a record's key
ids in order. Both are read a range of ``seq`` at a time, so that converting a large
store holds one chunk of records in memory. A store of format 4 gains what format 5
adds in SQL (:func:`convert_format4`).

Converting writes, so it would fire a trigger planted in the store: a store holding a
trigger or a view dlbench did not make (:func:`foreign_objects`) is never converted.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dlbench.errors import ResultsError
from dlbench.results.store.columns import (
    KEYS_COLUMNS,
    SCALARS_TABLE,
    SERIES_TABLE,
    Key,
    index_sql,
    key_from_row,
)
from dlbench.results.store.write import WRITES, form, make_view

#: Columns counted per statement when a format 3 store's keys are surveyed.
_SURVEYED = 500

_CONSTANTS: dict[bytes, Any] = {b"true": True, b"false": False, b"null": None}


def foreign_objects(db: sqlite3.Connection, version: int) -> list[str]:
    """The triggers and views of the store ``db`` reads that dlbench did not make, as
    ``trigger NAME`` or ``view NAME``: every trigger (dlbench makes none), and every
    view but ``results`` in a store of format 4 or later (which dlbench remakes)."""
    rows = db.execute("SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') "
                      "ORDER BY type, name").fetchall()
    own = {("view", "results")} if version >= 4 else set()
    return [f"{kind} {name}" for kind, name in rows if (kind, name) not in own]


def refuse_foreign(path: Path, planted: list[str]) -> None:
    """ResultsError, in one line naming ``path`` and ``planted`` (see
    :func:`foreign_objects`), when there is any: the store is not converted."""
    if planted:
        raise ResultsError(
            f"results store {path} holds {', '.join(planted)}, which dlbench did not "
            "create, so it is not converted (converting would run them): drop them with "
            f"an SQLite client if they are not wanted, then run: dlbench store upgrade {path}")


def _scalar(stored: Any) -> Any:
    if type(stored) is bytes:
        if stored in _CONSTANTS:
            return _CONSTANTS[stored]
        return json.loads(stored)
    return stored


def _series(stored: Any) -> Any:
    if type(stored) is bytes:
        return array("d", stored).tolist()
    return json.loads(stored)


def format1_records(db: sqlite3.Connection, table: str, chunk: int
                    ) -> Iterator[list[tuple[str, str, str]]]:
    """``(id, updated, record JSON)`` of a format 1 ``table``, in ``seq`` order, by chunks."""
    cursor = db.cursor()  # its own cursor: the writer uses the connection meanwhile
    cursor.execute(f"SELECT id, updated, record FROM {table} ORDER BY seq")
    while rows := cursor.fetchmany(chunk):
        yield rows


def format2_records(db: sqlite3.Connection, suffix: str, chunk: int
                    ) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """``(updated, record)`` of a format 2 store whose tables ``experiments``, ``keys``
    and ``shapes`` were renamed with ``suffix``, in ``seq`` order, by chunks."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    names = {int(key_id): str(name)
             for key_id, name in db.execute(f"SELECT id, name FROM keys{suffix}")}
    shapes = {int(shape): json.loads(text)
              for shape, text in db.execute(f"SELECT id, keys FROM shapes{suffix}")}
    seqs = [int(row[0]) for row in db.execute(f"SELECT seq FROM experiments{suffix} ORDER BY seq")]
    for start in range(0, len(seqs), chunk):
        low, high = seqs[start], seqs[min(start + chunk, len(seqs)) - 1]
        values: dict[int, dict[int, Any]] = {}
        for key_id in names:
            for prefix, decode in (("v", _scalar), ("s", _series)):
                table = f"{prefix}_{key_id}"
                if table not in tables:
                    continue
                found = values.setdefault(key_id, {})
                for seq, stored in db.execute(
                        f"SELECT seq, v FROM {table} WHERE seq BETWEEN ? AND ?", (low, high)):
                    found[int(seq)] = decode(stored)
        out = []
        for seq, updated, shape in db.execute(
                f"SELECT seq, updated, shape FROM experiments{suffix} WHERE seq BETWEEN ? AND ? "
                "ORDER BY seq", (low, high)).fetchall():
            record: dict[str, Any] = {}
            for key_id in shapes.get(int(shape), []):
                column = values.get(key_id, {})
                if seq in column:
                    record[names[key_id]] = column[seq]
            out.append((str(updated), record))
        yield out


def format2_tables(db: sqlite3.Connection) -> list[str]:
    """The key tables of a format 2 store (dropped once it is converted)."""
    return [str(row[0]) for row in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND "
        "(name GLOB 'v_[0-9]*' OR name GLOB 's_[0-9]*')")]


def convert_format3(db: sqlite3.Connection) -> None:
    """Convert a format 3 store (one table ``results``) to format 4, inside the caller's
    transaction: its columns move to ``results_scalars`` and ``results_series`` (rows
    keyed by ``seq``, in the same order), ``results`` becomes their view, and ``keys``
    gains ``single``/``first``, found in SQL as :class:`~dlbench.results.store.write.
    Writer` would have kept them."""
    db.execute("ALTER TABLE results RENAME TO results_v3")
    db.execute("ALTER TABLE keys ADD COLUMN single INTEGER")
    db.execute("ALTER TABLE keys ADD COLUMN first TEXT")
    keys = [key_from_row(row) for row in
            db.execute(f"SELECT {KEYS_COLUMNS} FROM keys ORDER BY id").fetchall()]
    moved = [key for key in keys if key.column and key.column != "exp.id"]
    for table in (SCALARS_TABLE, SERIES_TABLE):
        mine = [key for key in moved if key.table == table]
        first = ', "exp.id" TEXT NOT NULL' if table == SCALARS_TABLE else ""
        db.execute(f"CREATE TABLE {table} (seq INTEGER PRIMARY KEY{first}"
                   + "".join(f", {key.sql} {key.type}" for key in mine) + ")")
        names = ["seq", *(['"exp.id"'] if table == SCALARS_TABLE else []),
                 *(key.sql for key in mine)]
        if len(names) == 1:
            continue
        values = ["e.seq", *(f"o.{name}" for name in names[1:])]
        db.execute(f"INSERT INTO {table} ({', '.join(names)}) SELECT {', '.join(values)} "
                   'FROM experiments AS e JOIN results_v3 AS o ON o."exp.id" = e.id '
                   "ORDER BY e.seq")
    db.execute("DROP TABLE results_v3")
    make_view(db)
    _survey_format3(db, keys)


def _survey_format3(db: sqlite3.Connection, keys: list[Key]) -> None:
    """Fill ``keys.single``/``first`` of a converted store (see :mod:`~dlbench.results.
    store.write`): per key, how many records hold it (their shapes say), and how many
    values its column and ``exact`` hold, least and greatest."""
    held: dict[int, int] = {}
    shapes = dict(db.execute("SELECT id, keys FROM shapes").fetchall())
    for shape, count in db.execute("SELECT shape, COUNT(*) FROM experiments GROUP BY shape"):
        for key_id in json.loads(shapes.get(shape, "[]")):
            held[int(key_id)] = held.get(int(key_id), 0) + int(count)
    exact = {int(row[0]): row[1:] for row in db.execute(
        "SELECT key, COUNT(*), MIN(value), MAX(value) FROM exact GROUP BY key")}
    column: dict[int, tuple[Any, ...]] = {}
    for table, alias in ((SCALARS_TABLE, "r"), (SERIES_TABLE, "j")):
        mine = [key for key in keys if key.column and key.table == table]
        for start in range(0, len(mine), _SURVEYED):
            part = mine[start:start + _SURVEYED]
            sql = ", ".join(f"COUNT({alias}.{k.sql}), MIN({alias}.{k.sql}), "
                            f"MAX({alias}.{k.sql})" for k in part)
            (row,) = db.execute(f"SELECT {sql} FROM {table} AS {alias}").fetchall()
            for index, key in enumerate(part):
                column[key.id] = tuple(row[3 * index:3 * index + 3])
    updates = []
    for key in keys:
        count = held.get(key.id, 0)
        stored, low, high = column.get(key.id, (0, None, None))
        in_exact, exact_low, exact_high = exact.get(key.id, (0, None, None))
        if not count:
            state: tuple[Any, Any] = (None, None)  # nothing held: as a key never written
        elif not in_exact:
            one = stored == 0 or (stored == count and low == high)
            state = (int(one), form(low, None))
        elif in_exact == count:
            state = (int(exact_low == exact_high), form(low, exact_low))
        else:
            state = (0, form(None, None))  # some values in exact, others not: they differ
        updates.append((*state, key.id))
    db.executemany("UPDATE keys SET single = ?, first = ? WHERE id = ?", updates)


def convert_format4(db: sqlite3.Connection) -> None:
    """Convert a format 4 store to format 5, inside the caller's transaction: the
    indexes of :data:`~dlbench.results.store.columns.INDEXED_KEYS` (a sort of their
    column: seconds for a million records, once), and the count of writes."""
    for key in map(key_from_row, db.execute(f"SELECT {KEYS_COLUMNS} FROM keys").fetchall()):
        index = index_sql(key)
        if index is not None:
            db.execute(index)
    db.execute(f"INSERT OR IGNORE INTO meta (key, value) VALUES ('{WRITES}', '0')")
