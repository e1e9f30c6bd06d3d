"""Writing records (:mod:`dlbench.results.store`).

A record is one row of ``results_scalars`` (its scalar keys) and one of
``results_series`` (its lists and dicts), both keyed by its position ``seq``; the view
``results`` joins them, a column per key. Its bookkeeping (``seq``, its status, when it
was written, its shape: which keys it has, in which order) is one row of
``experiments``. A key seen for the first time gets a column in one of the two tables
(``ALTER TABLE ADD COLUMN``; the view is made again) and a row in ``keys``; values a
column does not hold exactly also go to ``exact`` (:mod:`dlbench.results.store.columns`).

``keys.single`` and ``keys.first`` say, as records are written, whether every value
stored under a key is one value (so a report need not read the key to learn it): 1
with that value in ``first``, 0 once two values differ, NULL (not known) once a
record holding the key was replaced. Two values are one when their column holds the
same thing and ``exact`` the same text (or nothing); ``first`` is the JSON text of
``[column value, null]`` or ``[null, exact text]``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from dlbench.results.store.columns import (
    KEYS_COLUMNS,
    ROWS,
    SCALARS_TABLE,
    SERIES_TABLE,
    Key,
    column_name,
    column_type,
    dumps,
    encode_column,
    index_sql,
    key_from_row,
    quoted,
)

#: Experiments looked up per statement (SQLite allows 32766 parameters).
_LOOKUP = 500

#: Columns ``results`` may have: SQLite refuses tables of more than 2,000. Keys beyond
#: these keep their values in ``exact`` only (SQL readers do not see them).
MAX_COLUMNS = 1_900

#: ``meta.writes``: how many write transactions the store has committed, counted by
#: every one of them (format 5), so that two connections reading at once can tell
#: whether they read one state of the store.
WRITES = "writes"

#: The tables of a store, besides ``results`` (created with its first column).
SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE experiments (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    status TEXT,
    updated TEXT NOT NULL,
    shape INTEGER NOT NULL
);
CREATE TABLE keys (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    column_name TEXT,
    type TEXT NOT NULL,
    single INTEGER,
    first TEXT
);
CREATE TABLE shapes (id INTEGER PRIMARY KEY, keys TEXT NOT NULL UNIQUE);
CREATE TABLE exact (
    seq INTEGER NOT NULL,
    key INTEGER NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (seq, key)
) WITHOUT ROWID;
CREATE INDEX exact_by_key ON exact (key, seq);
CREATE TABLE results_scalars (seq INTEGER PRIMARY KEY, "exp.id" TEXT NOT NULL);
CREATE TABLE results_series (seq INTEGER PRIMARY KEY);
CREATE VIEW results AS SELECT r."exp.id" FROM results_scalars AS r;
INSERT INTO meta (key, value) VALUES ('{WRITES}', '0')
"""


def make_view(db: sqlite3.Connection) -> None:
    """(Re)make the view ``results``: ``exp.id`` and a column per key, in the order the
    keys were first stored, as the one table of format 3 had them."""
    keys = [key for key in map(key_from_row, db.execute(
        f"SELECT {KEYS_COLUMNS} FROM keys ORDER BY id")) if key.column and key.name != "exp.id"]
    names = ", ".join([quoted("exp.id"), *(key.sql for key in keys)])
    refs = ", ".join(['r."exp.id"', *(key.ref for key in keys)])
    rows = ROWS if any(key.table == SERIES_TABLE for key in keys) else f"{SCALARS_TABLE} AS r"
    db.execute("DROP VIEW IF EXISTS results")
    # (SQLite 3.40 names a view's column "true" or "false" columnN whatever it is
    # told: a key of that name is so named in the view, rightly in its table.)
    db.execute(f"CREATE VIEW results ({names}) AS SELECT {refs} FROM {rows}")


def form(written: Any, exact: str | None) -> str:
    """What ``keys.first`` keeps of a value: its ``exact`` text where it has one (which
    says it all), else what its column holds."""
    return json.dumps([None if exact is not None else written, exact], separators=(",", ":"))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Writer:
    """The writing side of an open store."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._keys: dict[str, Key] = {}
        self._columns: set[str] = set()
        self._shapes: dict[str, int] = {}
        #: key id → [single (1, 0 or None), first form], as ``keys`` has them.
        self._single: dict[int, list[Any]] = {}
        #: The keys whose ``single``/``first`` this write changed.
        self._changed: set[int] = set()
        self._new_columns = False

    def forget_caches(self) -> None:
        """Drop what was read of the catalogue (a transaction was rolled back)."""
        self._keys, self._columns, self._shapes, self._single = {}, set(), {}, {}

    def _load(self) -> None:
        rows = self._db.execute(f"SELECT {KEYS_COLUMNS}, single, first FROM keys").fetchall()
        self._keys = {key.name: key for key in map(key_from_row, rows)}
        self._single = {int(row[0]): [row[4], row[5]] for row in rows}
        self._columns = {str(row[1]).lower() for table in (SCALARS_TABLE, SERIES_TABLE)
                         for row in self._db.execute(f"PRAGMA table_info({table})")}
        self._columns.discard("seq")  # the tables' key, not a key's column
        self._new_columns = False

    def _key(self, name: str, first: Any) -> Key:
        key = self._keys.get(name)
        if key is not None:
            return key
        sql_type = column_type(name, first)
        cursor = self._db.execute("INSERT INTO keys (name, column_name, type) VALUES (?, ?, ?)",
                                  (name, "", sql_type))
        key_id = int(cursor.lastrowid or 0)
        # exp.id's column is the tables' own; "seq" is their key, never a key's column.
        taken = set() if name == "exp.id" else {*self._columns, "seq"}
        column = column_name(name, key_id, taken)
        if column and column.lower() not in self._columns:
            if len(self._columns) >= MAX_COLUMNS:
                column = ""
            else:
                made = Key(key_id, name, column, sql_type)
                self._db.execute(
                    f"ALTER TABLE {made.table} ADD COLUMN {made.sql} {sql_type}")
                index = index_sql(made)
                if index is not None:
                    self._db.execute(index)
                self._columns.add(column.lower())
                self._new_columns = True
        self._db.execute("UPDATE keys SET column_name = ? WHERE id = ?", (column, key_id))
        key = self._keys[name] = Key(key_id, name, column, sql_type)
        return key

    def _note_values(self, key: Key, column: Sequence[Any], written: Sequence[Any] | None,
                     inexact: Collection[int]) -> None:
        """Keep ``keys.single``/``first`` up to date with the values ``column`` of
        ``key`` (as written to its column, ``written``; None: it has no column)."""
        state = self._single.setdefault(key.id, [None, None])
        fresh = state == [None, None]  # no value stored yet (NULL alone: not known)
        if not fresh and state[0] != 1:
            return  # varies already, or not known: no value changes that

        def form_at(i: int) -> str:
            exact = dumps(column[i]) if written is None or i in inexact else None
            return form(None if written is None else written[i], exact)

        first = form_at(0) if fresh else str(state[1])
        if written is not None and not inexact:
            # The common case, at C speed: one column's values, all of its one type.
            ref = json.loads(first)
            single = ref[1] is None and list(written).count(ref[0]) == len(written)
        else:
            single = all(form_at(i) == first for i in range(len(column)))
        new = [1 if single else 0, first]
        if new != state:
            self._single[key.id] = new
            self._changed.add(key.id)

    def _shape(self, key_ids: list[int]) -> int:
        text = json.dumps(key_ids, separators=(",", ":"))
        shape = self._shapes.get(text)
        if shape is None:
            row = self._db.execute("SELECT id FROM shapes WHERE keys = ?", (text,)).fetchone()
            if row is None:
                row = (self._db.execute("INSERT INTO shapes (keys) VALUES (?)", (text,)).lastrowid,)
            shape = self._shapes[text] = int(row[0])
        return shape

    def _existing(self, ids: list[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(ids), _LOOKUP):
            part = ids[start:start + _LOOKUP]
            marks = ", ".join("?" * len(part))
            rows = self._db.execute(f"SELECT id, seq FROM experiments WHERE id IN ({marks})", part)
            found.update((exp_id, int(seq)) for exp_id, seq in rows)
        return found

    def _forget_single(self, seqs: list[int]) -> None:
        """The records at ``seqs`` are replaced: whether their keys hold one value is
        no longer known without reading them (a value that differed may be gone)."""
        for start in range(0, len(seqs), _LOOKUP):
            part = seqs[start:start + _LOOKUP]
            marks = ", ".join("?" * len(part))
            for (text,) in self._db.execute(
                    f"SELECT keys FROM shapes WHERE id IN (SELECT shape FROM experiments "
                    f"WHERE seq IN ({marks}))", part).fetchall():
                for key_id in json.loads(text):
                    state = self._single.get(int(key_id))
                    if state is not None and state[0] is not None:
                        state[0] = None
                        self._changed.add(int(key_id))

    def write(self, records: Sequence[Mapping[str, Any]], updated: Sequence[str] = ()) -> None:
        """Store ``records`` (distinct ``exp.id``), each replacing any stored one of
        its id in that one's position; ``updated`` are their timestamps (now if none)."""
        self._load()
        self._changed = set()
        ids = [str(record["exp.id"]) for record in records]
        existing = self._existing(ids)
        if existing:
            gone = [existing[i] for i in existing]
            self._forget_single(gone)
            for start in range(0, len(gone), _LOOKUP):
                part = gone[start:start + _LOOKUP]
                marks = ", ".join("?" * len(part))
                for table in (SCALARS_TABLE, SERIES_TABLE, "exact"):
                    self._db.execute(f"DELETE FROM {table} WHERE seq IN ({marks})", part)
        top = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM experiments").fetchone()[0]
        seqs = []
        for exp_id in ids:
            if exp_id in existing:
                seqs.append(existing[exp_id])
            else:
                top += 1
                seqs.append(top)
        shapes: dict[tuple[str, ...], list[int]] = {}
        for index, record in enumerate(records):
            shapes.setdefault(tuple(record), []).append(index)
        shape_of = [0] * len(records)
        exact: list[tuple[int, int, str]] = []
        for names, members in shapes.items():
            values = list(zip(*[list(records[i].values()) for i in members], strict=True))
            keys = [self._key(name, column[0]) for name, column in zip(names, values, strict=True)]
            shape = self._shape([key.id for key in keys])
            member_seqs = [seqs[i] for i in members]
            tables: dict[str, tuple[list[str], list[Any]]] = {
                SCALARS_TABLE: (["seq"], [member_seqs]), SERIES_TABLE: (["seq"], [member_seqs])}
            for key, column in zip(keys, values, strict=True):
                if not key.column:
                    exact.extend((seq, key.id, dumps(v))
                                 for seq, v in zip(member_seqs, column, strict=True))
                    self._note_values(key, column, None, ())
                    continue
                written, inexact = encode_column(column, key.type)
                exact.extend((member_seqs[i], key.id, dumps(column[i])) for i in inexact)
                self._note_values(key, column, written, set(inexact))
                columns, stored = tables[key.table]
                columns.append(key.sql)
                stored.append(written)
            for table, (columns, stored) in tables.items():
                if table == SERIES_TABLE and len(columns) == 1:
                    continue  # no lists: the view's join finds no row, as it should
                self._db.executemany(
                    f"INSERT INTO {table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})", zip(*stored, strict=True))
            for i in members:
                shape_of[i] = shape
        stamp = _now()
        experiment_rows = []
        for index, record in enumerate(records):
            status = record.get("exp.status")
            experiment_rows.append((
                seqs[index], ids[index], None if status is None else str(status),
                updated[index] if index < len(updated) else stamp, shape_of[index]))
        self._db.executemany(
            "INSERT INTO experiments (seq, id, status, updated, shape) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(seq) DO UPDATE SET status = excluded.status, "
            "updated = excluded.updated, shape = excluded.shape", experiment_rows)
        self._db.executemany("INSERT INTO exact (seq, key, value) VALUES (?, ?, ?)", exact)
        self._db.executemany("UPDATE keys SET single = ?, first = ? WHERE id = ?",
                             [(*self._single[i], i) for i in sorted(self._changed)])
        if self._new_columns:
            make_view(self._db)
        count_write(self._db)


def count_write(db: sqlite3.Connection) -> None:
    """Count one more write transaction in ``meta.writes`` (inside it)."""
    db.execute(f"UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = '{WRITES}'")
