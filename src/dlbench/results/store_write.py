"""Writing records into the store's key tables (:mod:`dlbench.results.store`).

Everything here runs inside the caller's transaction. Records are written a shape at
a time (the records of a sweep share one): their values are turned into columns, a
column is checked and converted at C speed when its values share a type, and each
key table gets its rows in one ``executemany``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from dlbench.results.store_columns import (
    KEYS_COLUMNS,
    SERIES,
    KeyInfo,
    encode,
    encode_column,
    encode_series,
    key_from_row,
    same,
)

#: Experiments looked up per statement (SQLite allows 32766 parameters).
_LOOKUP = 500


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Writer:
    """The writing side of an open store: the key catalogue and shapes it has seen."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._keys: dict[str, KeyInfo] = {}
        self._shapes: dict[str, int] = {}

    def forget_caches(self) -> None:
        """Drop what was read of the catalogue (a transaction was rolled back)."""
        self._keys, self._shapes = {}, {}

    def _key(self, name: str) -> KeyInfo:
        info = self._keys.get(name)
        if info is None:
            cursor = self._db.execute("INSERT INTO keys (name) VALUES (?)", (name,))
            info = KeyInfo(int(cursor.lastrowid or 0), name)
            self._keys[name] = info
        return info

    def _shape(self, key_ids: list[int]) -> int:
        text = json.dumps(key_ids, separators=(",", ":"))
        shape = self._shapes.get(text)
        if shape is None:
            row = self._db.execute("SELECT id FROM shapes WHERE keys = ?", (text,)).fetchone()
            if row is None:
                row = (self._db.execute("INSERT INTO shapes (keys) VALUES (?)", (text,)).lastrowid,)
            shape = self._shapes[text] = int(row[0])
        return shape

    def _add_kinds(self, info: KeyInfo, kinds: int) -> None:
        """Record that ``info``'s key now holds values of ``kinds``; make its tables."""
        new = kinds & ~info.kinds
        if not new:
            return
        if new & SERIES and not info.has_series():
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {info.series} (seq INTEGER PRIMARY KEY, v NOT NULL)")
        if new & ~SERIES and not info.has_scalars():
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS {info.scalars} (seq INTEGER PRIMARY KEY, v NOT NULL)")
        info.kinds |= new
        self._db.execute("UPDATE keys SET kinds = kinds | ? WHERE id = ?", (new, info.id))

    def _existing(self, ids: list[str]) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        for start in range(0, len(ids), _LOOKUP):
            part = ids[start:start + _LOOKUP]
            marks = ", ".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT id, seq, shape FROM experiments WHERE id IN ({marks})", part)
            found.update((exp_id, (int(seq), int(shape))) for exp_id, seq, shape in rows)
        return found

    def write(self, records: Sequence[Mapping[str, Any]], updated: Sequence[str] = ()) -> None:
        """Store ``records`` (distinct ``exp.id``), each replacing any stored one of
        its id in that one's position; ``updated`` are their timestamps (now if none)."""
        rows = self._db.execute(f"SELECT {KEYS_COLUMNS} FROM keys").fetchall()
        self._keys = {info.name: info for info in map(key_from_row, rows)}
        ids = [str(record["exp.id"]) for record in records]
        existing = self._existing(ids)
        for seq, shape in existing.values():
            self._forget(seq, shape)
        top = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM experiments").fetchone()[0]
        seqs = []
        for exp_id in ids:
            if exp_id in existing:
                seqs.append(existing[exp_id][0])
            else:
                top += 1
                seqs.append(top)
        shapes: dict[tuple[str, ...], list[int]] = {}
        for index, record in enumerate(records):
            shapes.setdefault(tuple(record), []).append(index)
        pending: dict[str, list[tuple[int, Any]]] = {}
        shape_of = [0] * len(records)
        for names, members in shapes.items():
            infos = [self._key(name) for name in names]
            shape = self._shape([info.id for info in infos])
            member_seqs = [seqs[i] for i in members]
            columns = zip(*[list(records[i].values()) for i in members], strict=True)
            for info, column in zip(infos, columns, strict=True):
                self._column(info, member_seqs, column, pending)
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
        for table, values in pending.items():
            self._db.executemany(f"INSERT INTO {table} (seq, v) VALUES (?, ?)", values)

    def _column(
        self, info: KeyInfo, seqs: list[int], values: tuple[Any, ...],
        pending: dict[str, list[tuple[int, Any]]],
    ) -> None:
        """Queue one key's values for ``seqs``, and keep its catalogue entry true."""
        fast = encode_column(values)
        series: list[tuple[int, Any]] = []
        if fast is not None:
            stored, kinds = fast
            scalar_seqs = seqs
        else:
            stored, scalar_seqs, kinds = [], [], 0
            for seq, value in zip(seqs, values, strict=True):
                if isinstance(value, (list, tuple, dict)):
                    series.append((seq, encode_series(value)))
                    kinds |= SERIES
                    continue
                code, kind = encode(value)
                stored.append(code)
                scalar_seqs.append(seq)
                kinds |= kind
        self._add_kinds(info, kinds)
        if series:
            pending.setdefault(info.series, []).extend(series)
        if not stored:
            return
        pending.setdefault(info.scalars, []).extend(zip(scalar_seqs, stored, strict=True))
        if not info.constant:
            return
        if info.first is None:
            info.first = stored[0]
            self._db.execute("UPDATE keys SET first = ? WHERE id = ?", (info.first, info.id))
        first = info.first
        # count() runs at C speed but compares with ==, for which 1 is 1.0 and 0.0 is
        # -0.0: where that could matter, look closer.
        unsure = fast is None or type(stored[0]) is not type(first) or (
            type(first) is float and first == 0.0)
        if stored.count(first) != len(stored) or (
                unsure and not all(same(v, first) for v in stored)):
            info.constant = False
            self._db.execute("UPDATE keys SET constant = 0 WHERE id = ?", (info.id,))

    def _forget(self, seq: int, shape: int) -> None:
        """Delete the stored values of experiment ``seq`` (it is being replaced)."""
        text = self._db.execute("SELECT keys FROM shapes WHERE id = ?", (shape,)).fetchone()
        by_id = {info.id: info for info in self._keys.values()}
        for key_id in json.loads(text[0]) if text else []:
            info = by_id.get(key_id)
            if info is not None and info.has_scalars():
                self._db.execute(f"DELETE FROM {info.scalars} WHERE seq = ?", (seq,))
            if info is not None and info.has_series():
                self._db.execute(f"DELETE FROM {info.series} WHERE seq = ?", (seq,))
