"""The row shape of a history (format 2): a column per key, as a run's results store has.

A history row is one row of ``history_records``: the history's own columns
(:data:`OWN_COLUMNS`) and a column per key of the record's configuration, environment
and results, named and typed as the results store's ``results`` table names and types
that key (:mod:`dlbench.results.store.columns`): ``"exp.model"`` TEXT,
``"results.throughput"`` REAL..., so that ``SELECT "exp.model", "results.throughput"
FROM history_records`` works in sqlite3, psql and pandas. A key seen for the first time
gets its column (``ALTER TABLE ADD COLUMN``) and a row in ``history_keys``. Beside it:

- ``history_shapes``: which keys of a row are its configuration, its environment and
  its results (``hw.device_name`` is in both the first two); a row's ``shape`` names one;
- ``history_exact``: a value its column does not hold exactly (``1`` among floats,
  ``true`` in a column of integers), as JSON, which readers take first; the column
  holds it as near as SQL allows (the results store's rule, and its ``exact`` table).

The two databases differ in their types (PostgreSQL's ``BIGINT``, ``DOUBLE
PRECISION``, ``BOOLEAN`` and ``JSONB`` for the store's INTEGER, REAL, BOOLEAN and JSON),
in what a column refuses (PostgreSQL's text and JSON hold no NUL character, its JSON
no NaN) and in their limits (columns per table, bytes per column name): a
:class:`Dialect` each.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.results.history.records import HistoryRow
from dlbench.results.jsontext import loads_json
from dlbench.results.store.columns import (
    BOOLEAN,
    INTEGER,
    JSON,
    REAL,
    TEXT,
    column_name,
    column_type,
    decode_column,
    dumps,
    encode_column,
    quoted,
)

#: The history's own columns of ``history_records``, before the keys' columns.
OWN_COLUMNS = ("run_id", "exp_id", "run_time", "record_time", "config_key", "status",
               "revision", "source", "imported", "shape")

#: The parts of a row whose keys a shape lists, in :class:`HistoryRow`'s names.
PARTS = ("config", "environment", "results")

_INT64 = (-(2**63), 2**63 - 1)


def _sqlite_cell(value: Any, sql_type: str) -> tuple[Any, bool]:
    written, inexact = encode_column([value], sql_type)
    return written[0], bool(inexact)


def _postgres_cell(value: Any, sql_type: str) -> tuple[Any, bool]:
    """What a PostgreSQL column of ``sql_type`` holds of ``value``, and whether that is
    not exactly ``value``: the store's rule, then what PostgreSQL's stricter types
    refuse (a near value of another type, a NUL character, NaN in JSON) made NULL."""
    cell, inexact = _sqlite_cell(value, sql_type)
    if cell is None:
        return None, inexact
    near: Any = None
    if sql_type == BOOLEAN:
        near = bool(cell) if type(cell) is int and cell in (0, 1) else None
    elif sql_type == INTEGER:
        near = cell if type(cell) is int and _INT64[0] <= cell <= _INT64[1] else None
    elif sql_type == REAL:
        try:
            near = float(cell) if type(cell) in (int, float) else None
        except OverflowError:  # an integer beyond any float
            near = None
    elif sql_type == TEXT:
        near = cell if type(cell) is str else dumps(cell)
        if "\x00" in near:
            near, inexact = near.replace("\x00", ""), True
    elif sql_type == JSON:
        near = cell if _jsonb_accepts(cell) else None
    return near, inexact or (near is None)


def _jsonb_accepts(text: Any) -> bool:
    """Whether PostgreSQL's jsonb takes ``text``: JSON without NaN, infinities or NUL."""
    if type(text) is not str or "\\u0000" in text:
        return False
    try:
        json.loads(text, parse_constant=_refuse)
    except ValueError:
        return False
    return True


def _refuse(constant: str) -> Any:
    raise ValueError(constant)


def _sqlite_decode(values: list[Any], sql_type: str) -> list[Any]:
    if sql_type != JSON:
        return decode_column(values, sql_type)
    # The store's decoding, but a history is read from files a user hands dlbench:
    # JSON nested too deep is one line, not a RecursionError.
    return [loads_json(v, "a JSON column of history_records") if type(v) is str else v
            for v in values]


def _postgres_decode(values: list[Any], sql_type: str) -> list[Any]:
    # psycopg gives booleans and decoded JSON already.
    return values


def _parts(text: Any, shape: Any) -> dict[str, list[str]]:
    """A shape's parts read back; ValueError unless it is what :class:`HistoryTable` writes."""
    parts = loads_json(str(text), f"history_shapes row {shape}")
    if not isinstance(parts, dict) or set(parts) != set(PARTS) or not all(
            isinstance(names, list) and all(isinstance(n, str) for n in names)
            for names in parts.values()):
        raise ValueError(f"history_shapes row {shape} is not a JSON object of "
                         f"{', '.join(PARTS)} key lists")
    return parts


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL databases a history lives in."""

    #: ``sqlite`` or ``postgresql``.
    name: str
    #: The parameter placeholder of the driver.
    mark: str
    #: The store's SQL type of a key → the type of its column here.
    types: Mapping[str, str]
    #: Columns ``history_records`` may have; keys beyond are kept in history_exact only.
    max_columns: int
    #: The longest column name, in UTF-8 bytes (None: no limit that matters).
    max_name_bytes: int | None
    #: ``(cell, inexact)`` of a value in a column of a store SQL type.
    cell: Callable[[Any, str], tuple[Any, bool]]
    #: The Python values of a column's cells (not NULL) read back.
    decode: Callable[[list[Any], str], list[Any]]

    def column(self, name: str) -> str:
        """A column's name as this driver's statements with parameters write it
        (psycopg reads ``%`` as the start of a placeholder)."""
        text = quoted(name)
        return text.replace("%", "%%") if self.mark == "%s" else text

    def placeholder(self, sql_type: str) -> str:
        """The placeholder of a value for a column of a store SQL type."""
        return f"{self.mark}::jsonb" if self.name == "postgresql" and sql_type == JSON \
            else self.mark


SQLITE = Dialect(
    "sqlite", "?", {t: t for t in (INTEGER, REAL, TEXT, BOOLEAN, JSON)},
    # SQLite refuses a table of more than 2,000 columns.
    max_columns=1_900, max_name_bytes=None, cell=_sqlite_cell, decode=_sqlite_decode)

POSTGRES = Dialect(
    "postgresql", "%s",
    {INTEGER: "BIGINT", REAL: "DOUBLE PRECISION", TEXT: "TEXT", BOOLEAN: "BOOLEAN",
     JSON: "JSONB"},
    # PostgreSQL refuses more than 1,600 columns, and cuts names at 63 bytes.
    max_columns=1_500, max_name_bytes=63, cell=_postgres_cell, decode=_postgres_decode)


def schema(dialect: Dialect) -> list[str]:
    """The statements that create a history's tables (those missing)."""
    return [
        "CREATE TABLE IF NOT EXISTS history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS history_records (
            run_id TEXT NOT NULL, exp_id TEXT NOT NULL,
            run_time TEXT NOT NULL, record_time TEXT NOT NULL,
            config_key TEXT NOT NULL, status TEXT, revision TEXT, source TEXT,
            imported TEXT NOT NULL, shape INTEGER NOT NULL,
            PRIMARY KEY (run_id, exp_id))""",
        "CREATE INDEX IF NOT EXISTS history_records_series "
        "ON history_records (config_key, run_time, record_time)",
        """CREATE TABLE IF NOT EXISTS history_keys (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, column_name TEXT NOT NULL,
            type TEXT NOT NULL)""",
        "CREATE TABLE IF NOT EXISTS history_shapes (id INTEGER PRIMARY KEY, "
        "parts TEXT NOT NULL UNIQUE)",
        """CREATE TABLE IF NOT EXISTS history_exact (
            run_id TEXT NOT NULL, exp_id TEXT NOT NULL, key INTEGER NOT NULL,
            value TEXT NOT NULL, PRIMARY KEY (run_id, exp_id, key))""",
    ]


@dataclass(frozen=True)
class _Key:
    id: int
    name: str
    #: Its column in history_records; empty when the table has no room left for it.
    column: str
    type: str


def _values(row: HistoryRow) -> dict[str, Any]:
    """The row's keys and values, one value per key: a key in two parts (the device's
    name is configuration and environment) must hold one value in both."""
    merged: dict[str, Any] = {}
    for part in PARTS:
        for name, value in getattr(row, part).items():
            if name in merged and dumps(merged[name]) != dumps(value):
                raise ValueError(
                    f"row {row.run_id}/{row.exp_id}: {name} is {merged[name]!r} in one part "
                    f"and {value!r} in another; a history row holds one value per key")
            merged[name] = value
    return merged


class HistoryTable:
    """``history_records`` and its side tables in an open connection (sqlite3 or
    psycopg), inside the caller's transaction."""

    def __init__(self, db: Any, dialect: Dialect) -> None:
        self._db = db
        self._dialect = dialect
        self._keys: dict[str, _Key] = {}
        self._taken: set[str] = set()
        self._shapes: dict[str, int] = {}

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._dialect.mark)

    def _load(self) -> None:
        self._keys = {
            str(name): _Key(int(key_id), str(name), str(column), str(sql_type))
            for key_id, name, column, sql_type in self._db.execute(
                "SELECT id, name, column_name, type FROM history_keys").fetchall()}
        self._taken = {name.lower() for name in OWN_COLUMNS}
        self._taken.update(key.column.lower() for key in self._keys.values() if key.column)
        self._shapes = {str(parts): int(shape_id) for shape_id, parts in self._db.execute(
            "SELECT id, parts FROM history_shapes").fetchall()}

    def _next_id(self, table: str) -> int:
        found = self._db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()
        return int(found[0]) + 1

    def _column_name(self, name: str, key_id: int) -> str:
        """The key's column (the results store's rule, :func:`column_name`, under this
        database's limit on a name's length); empty when the table has no room left."""
        if len(self._taken) >= self._dialect.max_columns:
            return ""
        return column_name(name, key_id, self._taken, self._dialect.max_name_bytes or 0)

    def _key(self, name: str, first: Any) -> _Key:
        key = self._keys.get(name)
        if key is not None:
            return key
        sql_type = column_type(name, first)
        key_id = self._next_id("history_keys")
        column = self._column_name(name, key_id)
        if column:
            self._db.execute(f"ALTER TABLE history_records ADD COLUMN {quoted(column)} "
                             f"{self._dialect.types[sql_type]}")
            self._taken.add(column.lower())
        self._db.execute(self._sql(
            "INSERT INTO history_keys (id, name, column_name, type) VALUES (?, ?, ?, ?)"),
            (key_id, name, column, sql_type))
        key = self._keys[name] = _Key(key_id, name, column, sql_type)
        return key

    def _shape(self, row: HistoryRow) -> int:
        parts = json.dumps({part: list(getattr(row, part)) for part in PARTS},
                           separators=(",", ":"))
        shape = self._shapes.get(parts)
        if shape is None:
            shape = self._shapes[parts] = self._next_id("history_shapes")
            self._db.execute(self._sql("INSERT INTO history_shapes (id, parts) VALUES (?, ?)"),
                             (shape, parts))
        return shape

    def write(self, rows: Sequence[HistoryRow], imported: Sequence[str]) -> tuple[int, int]:
        """Write ``rows`` (distinct keys; ``imported``: when each was imported), each
        replacing the row of its ``(run_id, exp_id)``; ``(added, replaced)``."""
        self._load()
        added = replaced = 0
        for row, when in zip(rows, imported, strict=True):
            key = (row.run_id, row.exp_id)
            gone = self._db.execute(self._sql(
                "DELETE FROM history_records WHERE run_id = ? AND exp_id = ?"), key).rowcount
            self._db.execute(self._sql(
                "DELETE FROM history_exact WHERE run_id = ? AND exp_id = ?"), key)
            added, replaced = (added, replaced + 1) if gone else (added + 1, replaced)
            columns = list(OWN_COLUMNS)
            marks = [self._dialect.mark] * len(columns)
            cells: list[Any] = [row.run_id, row.exp_id, row.run_time, row.record_time,
                                row.config_key, row.status, row.revision, row.source, when,
                                self._shape(row)]
            exact = []
            for name, value in _values(row).items():
                found = self._key(name, value)
                cell, inexact = (None, True) if not found.column else \
                    self._dialect.cell(value, found.type)
                if inexact:
                    exact.append((*key, found.id, dumps(value)))
                if found.column and cell is not None:
                    columns.append(self._dialect.column(found.column))
                    marks.append(self._dialect.placeholder(found.type))
                    cells.append(cell)
            self._db.execute(f"INSERT INTO history_records ({', '.join(columns)}) "
                             f"VALUES ({', '.join(marks)})", cells)
            if exact:
                self._db.cursor().executemany(self._sql(
                    "INSERT INTO history_exact (run_id, exp_id, key, value) VALUES (?, ?, ?, ?)"),
                    exact)
        return added, replaced

    def read(self) -> list[HistoryRow]:
        """Every row, ordered by configuration, then run time, record time, exp_id.
        ValueError for a row whose shape or exact value is not there or not JSON."""
        self._load()
        keys = {key.id: key for key in self._keys.values()}
        by_name = {key.name: key for key in self._keys.values()}
        stored = [key for key in self._keys.values() if key.column]
        shapes = {shape_id: _parts(parts, shape_id) for parts, shape_id in self._shapes.items()}
        exact: dict[tuple[str, str], dict[str, Any]] = {}
        for run_id, exp_id, key_id, value in self._db.execute(
                "SELECT run_id, exp_id, key, value FROM history_exact").fetchall():
            name = keys[int(key_id)].name
            exact.setdefault((run_id, exp_id), {})[name] = loads_json(
                str(value), f"history_exact value of {name}")
        own = len(OWN_COLUMNS)
        found = self._db.execute(
            f"SELECT {', '.join(OWN_COLUMNS)}"
            + "".join(f", {quoted(key.column)}" for key in stored)
            + " FROM history_records ORDER BY config_key, run_time, record_time, exp_id"
        ).fetchall()
        # Decoded a column at a time, as the results store does.
        columns = {key.name: self._dialect.decode(
            [row[own + i] for row in found], key.type) for i, key in enumerate(stored)}
        rows = []
        for index, cells in enumerate(found):
            named = dict(zip(OWN_COLUMNS, cells[:own], strict=True))
            parts = shapes.get(named["shape"])
            if parts is None:
                raise ValueError(f"row {named['run_id']}/{named['exp_id']} has shape "
                                 f"{named['shape']!r}, which history_shapes lacks")
            overrides = exact.get((named["run_id"], named["exp_id"]), {})

            def value(name: str, index: int = index, overrides: dict[str, Any] = overrides
                      ) -> Any:
                if name in overrides:
                    return overrides[name]
                key = by_name.get(name)
                return columns[name][index] if key is not None and key.column else None

            rows.append(HistoryRow(
                run_id=named["run_id"], exp_id=named["exp_id"], run_time=named["run_time"],
                record_time=named["record_time"], config_key=named["config_key"],
                status=named["status"], revision=named["revision"], source=named["source"],
                config={name: value(name) for name in parts["config"]},
                environment={name: value(name) for name in parts["environment"]},
                results={name: value(name) for name in parts["results"]}))
        return rows

