"""Writing records to the ``results`` table (:mod:`dlbench.results.store`).

A record is one row of ``results``; its bookkeeping (its position ``seq``, its
status, when it was written, its shape: which keys it has, in which order) is one row
of ``experiments``, joined to it by ``exp.id``. A key seen for the first time gets a
column (``ALTER TABLE ADD COLUMN``) and a row in ``keys``; values a column does not
hold exactly also go to ``exact`` (:mod:`dlbench.results.store.columns`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from dlbench.results.store.columns import (
    KEYS_COLUMNS,
    Key,
    column_type,
    dumps,
    encode_column,
    key_from_row,
    quoted,
)

#: Experiments looked up per statement (SQLite allows 32766 parameters).
_LOOKUP = 500

#: Columns ``results`` may have: SQLite refuses tables of more than 2,000. Keys beyond
#: these keep their values in ``exact`` only (SQL readers do not see them).
MAX_COLUMNS = 1_900

#: The tables of a store, besides ``results`` (created with its first column).
SCHEMA = """
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
    type TEXT NOT NULL
);
CREATE TABLE shapes (id INTEGER PRIMARY KEY, keys TEXT NOT NULL UNIQUE);
CREATE TABLE exact (
    seq INTEGER NOT NULL,
    key INTEGER NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (seq, key)
) WITHOUT ROWID;
CREATE INDEX exact_by_key ON exact (key, seq);
CREATE TABLE results ("exp.id" TEXT NOT NULL UNIQUE)
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Writer:
    """The writing side of an open store."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._keys: dict[str, Key] = {}
        self._columns: set[str] = set()
        self._shapes: dict[str, int] = {}

    def forget_caches(self) -> None:
        """Drop what was read of the catalogue (a transaction was rolled back)."""
        self._keys, self._columns, self._shapes = {}, set(), {}

    def _load(self) -> None:
        rows = self._db.execute(f"SELECT {KEYS_COLUMNS} FROM keys").fetchall()
        self._keys = {key.name: key for key in map(key_from_row, rows)}
        self._columns = {str(row[1]).lower()
                         for row in self._db.execute("PRAGMA table_info(results)")}

    def _key(self, name: str, first: Any) -> Key:
        key = self._keys.get(name)
        if key is not None:
            return key
        sql_type = column_type(name, first)
        column = name
        if column.lower() in self._columns and name != "exp.id":
            # SQL names are not case-sensitive: "exp.Model" next to "exp.model".
            column = ""
        cursor = self._db.execute("INSERT INTO keys (name, column_name, type) VALUES (?, ?, ?)",
                                  (name, column, sql_type))
        key_id = int(cursor.lastrowid or 0)
        if column == "" and len(self._columns) < MAX_COLUMNS:
            column = f"{name}#{key_id}"
        if column and column.lower() not in self._columns:
            if len(self._columns) >= MAX_COLUMNS:
                column = ""
            else:
                self._db.execute(
                    f"ALTER TABLE results ADD COLUMN {quoted(column)} {sql_type}")
                self._columns.add(column.lower())
        self._db.execute("UPDATE keys SET column_name = ? WHERE id = ?", (column, key_id))
        key = self._keys[name] = Key(key_id, name, column, sql_type)
        return key

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

    def write(self, records: Sequence[Mapping[str, Any]], updated: Sequence[str] = ()) -> None:
        """Store ``records`` (distinct ``exp.id``), each replacing any stored one of
        its id in that one's position; ``updated`` are their timestamps (now if none)."""
        self._load()
        ids = [str(record["exp.id"]) for record in records]
        existing = self._existing(ids)
        if existing:
            gone = list(existing)
            for start in range(0, len(gone), _LOOKUP):
                part = gone[start:start + _LOOKUP]
                marks = ", ".join("?" * len(part))
                self._db.execute(f'DELETE FROM results WHERE "exp.id" IN ({marks})', part)
                self._db.execute(f"DELETE FROM exact WHERE seq IN ({marks})",
                                 [existing[i] for i in part])
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
            columns, stored = [], []
            for key, column in zip(keys, values, strict=True):
                if not key.column:
                    exact.extend((seq, key.id, dumps(v))
                                 for seq, v in zip(member_seqs, column, strict=True))
                    continue
                written, inexact = encode_column(column, key.type)
                exact.extend((member_seqs[i], key.id, dumps(column[i])) for i in inexact)
                columns.append(key.sql)
                stored.append(written)
            self._db.executemany(
                f"INSERT INTO results ({', '.join(columns)}) "
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
