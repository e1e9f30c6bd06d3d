"""Histories of format 1: read as they are, or converted to the row shape of format 2.

Format 1 kept a record's configuration, environment and results as three JSON
columns (``jsonb`` in PostgreSQL) of ``history_records``. A writer converts such a
history when it opens it (:func:`convert`), in the caller's transaction: every row is
read, the table dropped and made again in the new shape, and the rows written back
with their ``imported`` times. A reader (``history check`` on a read-only file) reads
format 1 as it is (:func:`format1_rows`) and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dlbench.results.history.layout import Dialect, HistoryTable, schema
from dlbench.results.history.records import HistoryRow
from dlbench.results.jsontext import loads_json

_COLUMNS = ("run_id", "exp_id", "run_time", "record_time", "config_key", "status",
            "revision", "source", "imported", "config", "environment", "results")
_JSON_COLUMNS = ("config", "environment", "results")


def _row(values: Sequence[Any]) -> tuple[HistoryRow, str]:
    named = dict(zip(_COLUMNS, values, strict=True))
    for column in _JSON_COLUMNS:
        if isinstance(named[column], str):  # SQLite: text; psycopg decodes jsonb itself
            named[column] = loads_json(named[column], f"column {column}")
        if not isinstance(named[column], dict):
            raise ValueError(f"column {column} of run {named['run_id']!r} is not a JSON object")
    imported = str(named.pop("imported"))
    return HistoryRow(**named), imported


def _read(db: Any, order: str) -> list[tuple[HistoryRow, str]]:
    return [_row(values) for values in db.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM history_records ORDER BY {order}").fetchall()]


def format1_rows(db: Any) -> list[HistoryRow]:
    """Every row of a format-1 history, in the order :meth:`HistoryStore.rows` gives.
    ValueError for a JSON column that is not a JSON object."""
    return [row for row, _ in _read(db, "config_key, run_time, record_time, exp_id")]


def convert(db: Any, dialect: Dialect) -> int:
    """Convert the format-1 history of ``db`` to format 2 inside the caller's
    transaction (the caller sets the format version); how many rows it holds.
    ValueError for a row that cannot be read or held (a key with two values)."""
    rows = _read(db, "run_id, exp_id")
    # Dropped, not renamed: PostgreSQL names the key's index after the table, and the
    # new table's would take the same name.
    db.execute("DROP TABLE history_records")
    for statement in schema(dialect):
        db.execute(statement)
    HistoryTable(db, dialect).write([row for row, _ in rows], [imported for _, imported in rows])
    return len(rows)
