"""Reading the records of stores of formats 1 and 2, to convert them (see the history
in :mod:`dlbench.results.store`); nothing else reads those formats.

Format 1 keeps each record as JSON text in ``experiments.record``. Format 2 keeps a
narrow table per key: ``v_<key id>(seq, v)`` its scalars (INTEGER, REAL and TEXT as
SQLite's own, ``true``/``false``/``null``, NaN and integers beyond 64 bits as a BLOB
of their JSON text) and ``s_<key id>(seq, v)`` its lists and dicts (a list of floats
as its raw doubles, anything else as JSON text); ``shapes.keys`` lists a record's key
ids in order. Both are read a range of ``seq`` at a time, so that converting a large
store holds one chunk of records in memory.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Iterator
from typing import Any

_CONSTANTS: dict[bytes, Any] = {b"true": True, b"false": False, b"null": None}


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
