"""Reading records back from their tables (:mod:`dlbench.results.store`).

A read is one SQLite read transaction, so it sees every experiment whole even while
a runner writes. Only the columns of the keys wanted are read (a JSON column whose
lists are not wanted is read as ``IS NULL`` only, to tell a ``null`` from a list);
a record is then ``dict(zip(names, row))`` of its shape's keys, in the order they
were written, and the few values a column does not hold exactly come from ``exact``.

A query (``where``) is first SQL over the columns that keeps every record that may
match (:mod:`dlbench.results.store.where`), then :func:`dlbench.results.query.match`
on the records built from the keys it names, so which records match is decided by
one rule, the same for a store and a JSON file.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlbench.errors import ResultsError
from dlbench.results.memory import no_cyclic_gc
from dlbench.results.query import match
from dlbench.results.store.columns import (
    DECODERS,
    JOINED,
    JSON,
    KEYS_COLUMNS,
    SCALARS_TABLE,
    SERIES_TABLE,
    Key,
    key_from_row,
    series_wanted,
)
from dlbench.results.store.parts import Part, in_parts, split
from dlbench.results.store.where import where_sql

_FROM = JOINED

#: The rows of a selection (``temp.read_chosen``), each looked up.
_CHOSEN = (f"temp.read_chosen AS c CROSS JOIN {SCALARS_TABLE} AS r ON r.seq = c.seq "
           f"JOIN experiments AS e ON e.seq = c.seq LEFT JOIN {SERIES_TABLE} AS j "
           "ON j.seq = c.seq")

#: Rows fetched at a time.
_CHUNK = 10_000

@dataclass
class Survey:
    """What the records a query selects hold, found before building them whole."""

    #: How many records are selected.
    count: int = 0
    #: Every key some selected record has, in the order the records first have them.
    keys: list[str] = field(default_factory=list)
    #: Of the keys surveyed, those whose values differ between two selected records
    #: (a record without the key counting as a value of its own), values compared as
    #: their JSON text (``1`` is not ``1.0``, ``0.0`` is not ``-0.0``).
    varying: set[str] = field(default_factory=set)


@dataclass
class _Plan:
    """Which columns a read selects, and how a row becomes a record."""

    keys: list[Key]
    #: The keys read as their column (position in the row: index + 2).
    read: list[Key] = field(default_factory=list)
    #: JSON columns read as ``IS NOT NULL`` only: their lists are not wanted.
    flags: list[Key] = field(default_factory=list)

    def columns(self) -> str:
        parts = ["e.seq", "e.shape"]
        parts += [key.ref for key in self.read]
        parts += [f"{key.ref} IS NOT NULL" for key in self.flags]
        return ", ".join(parts)


class Reader:
    """Reads an open store's connection; every method is one read transaction.
    ``in_file``: ``db`` reads the file at ``path`` (not a store in memory), so a large
    read may be split among connections of its own (:mod:`~dlbench.results.store.parts`)."""

    def __init__(self, db: sqlite3.Connection, path: Path, *, in_file: bool = True) -> None:
        self._db = db
        self._path = path
        self._in_file = in_file

    def _fail(self, exc: Exception) -> ResultsError:
        return ResultsError(f"cannot read results store {self._path}: {exc}")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction around the block; SQLite errors as ResultsError."""
        try:
            self._db.execute("BEGIN")
            try:
                yield
            finally:
                if self._db.in_transaction:
                    self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of one SQL statement."""
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc

    def catalogue(self) -> dict[str, Key]:
        """Every key stored, by name, in the order first stored."""
        rows = self._db.execute(f"SELECT {KEYS_COLUMNS} FROM keys ORDER BY id").fetchall()
        return {key.name: key for key in map(key_from_row, rows)}

    def shapes(self) -> dict[int, list[int]]:
        """Every shape: its id → the ids of its keys, in record order."""
        return {int(shape): json.loads(text)
                for shape, text in self._db.execute("SELECT id, keys FROM shapes")}

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many experiments match ``where`` (all when None)."""
        with self.snapshot():
            if not where:
                return int(self._db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0])
            return len(self.selected(where, self.catalogue()))

    def selected(self, where: Mapping[str, Any], catalogue: dict[str, Key]) -> list[int]:
        """The ``seq`` of the experiments ``where`` selects, in order (inside a read)."""
        named = [catalogue[key].id for key in where if key in catalogue]
        exact = {key_id for key_id in named if self._db.execute(
            "SELECT EXISTS (SELECT 1 FROM exact WHERE key = ?)", (key_id,)).fetchone()[0]}
        condition, params = where_sql(where, catalogue, exact)
        rows = self._read(condition, params, catalogue, set(where), True, in_parts=True)
        return [seq for seq, record in rows if match(record, where)]

    def records(
        self,
        *,
        where: Mapping[str, Any] | None = None,
        keys: Collection[str] | None = None,
        series: bool | Collection[str] = True,
        exp_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """The records selected by ``where`` (or the one ``exp_id``), in ``seq`` order,
        with the ``keys`` wanted (all when None) and the ``series`` wanted (all when
        True, none when False, else those named)."""
        with self.snapshot():
            catalogue = self.catalogue()
            wanted = None if keys is None else set(keys)
            if exp_id is not None:
                rows = self._read("e.id = ?", [exp_id], catalogue, wanted, series)
            elif where:
                chosen = set(self.selected(where, catalogue))
                condition, params = where_sql(where, catalogue)
                rows = self._read(condition, params, catalogue, wanted, series, chosen)
            else:
                rows = self._read("1", [], catalogue, wanted, series)
            return [record for _, record in rows]

    def survey_records(
        self,
        *,
        where: Mapping[str, Any] | None,
        surveyed: Callable[[str], bool],
        choose: Callable[[Survey], Collection[str]],
    ) -> tuple[Survey, list[dict[str, Any]]]:
        """Survey the records ``where`` selects (which keys they have; which of the
        keys ``surveyed`` accepts vary), then build them with only the keys
        ``choose(survey)`` names, lists and dicts included; one read transaction."""
        with self.snapshot():
            catalogue = self.catalogue()
            if where:
                chosen: set[int] | None = set(self.selected(where, catalogue))
                condition, params = where_sql(where, catalogue)
            else:
                chosen, condition, params = None, "1", []
            if chosen is None:
                order = self._db.execute(
                    f"SELECT e.seq, e.shape FROM {_FROM} WHERE {condition} ORDER BY r.seq",
                    params).fetchall()
            else:
                self._choose(chosen)
                order = self._db.execute(
                    "SELECT e.seq, e.shape FROM temp.read_chosen AS c CROSS JOIN experiments "
                    "AS e ON e.seq = c.seq ORDER BY c.seq").fetchall()
            if not order:
                return Survey(), []
            counts: dict[int, int] = {}
            for _, shape in order:
                counts[shape] = counts.get(shape, 0) + 1
            shapes = self.shapes()
            by_id = {key.id: key for key in catalogue.values()}
            present: dict[str, int] = {}
            for shape, members in counts.items():
                for key_id in shapes.get(shape, []):
                    if key_id in by_id:
                        name = by_id[key_id].name
                        present[name] = present.get(name, 0) + members
            survey = Survey(len(order), list(present))
            dense = {name for name, count in present.items() if surveyed(name)}
            survey.varying = {name for name in dense if present[name] < len(order)}
            dense -= survey.varying
            if dense:
                rows = self._read(condition, params, catalogue, dense, True, chosen)
                for name in dense:
                    if _varies([record[name] for _, record in rows]):
                        survey.varying.add(name)
            wanted = set(choose(survey))
            rows = self._read(condition, params, catalogue, wanted, True, chosen)
            return survey, [record for _, record in rows]

    def _read(
        self,
        condition: str,
        params: list[Any],
        catalogue: dict[str, Key],
        wanted: set[str] | None,
        series: bool | Collection[str],
        chosen: set[int] | None = None,
        in_parts: bool = False,
    ) -> list[tuple[int, dict[str, Any]]]:
        """``(seq, record)`` of the rows ``condition`` selects (or the ``chosen`` seqs,
        some of those, when given), in ``seq`` order, with the keys and series wanted;
        ``in_parts``: the rows of a large store found in parts at once
        (:mod:`~dlbench.results.store.parts`), for a selection's few keys."""
        plan = _Plan([key for key in catalogue.values() if wanted is None or key.name in wanted])
        for key in plan.keys:
            if not key.column:
                continue
            if key.type == JSON and not series_wanted(key.name, series):
                plan.flags.append(key)
            else:
                plan.read.append(key)
        chunks: Iterable[list[Any]]
        if chosen is None:
            exact = self._exact(plan)
            sql = f"SELECT {plan.columns()} FROM {_FROM} WHERE ({condition})"
            parts = (split(self._db, self._path, lookups=True)
                     if in_parts and self._in_file else [])
            if len(parts) > 1:
                chunks = [[row for part in self._in_parts(sql, params, parts) for row in part]]
            else:
                cursor = self._db.execute(f"{sql} ORDER BY r.seq", params)
                chunks = iter(lambda: cursor.fetchmany(_CHUNK), [])
        else:
            # The rows chosen (a selection of those ``condition`` keeps) looked up one
            # by one, and only their values in exact: not a scan of the tables again.
            self._choose(chosen)
            exact = self._exact(plan, " AND seq IN (SELECT seq FROM temp.read_chosen)")
            cursor = self._db.execute(f"SELECT {plan.columns()} FROM {_CHOSEN} ORDER BY c.seq")
            chunks = iter(lambda: cursor.fetchmany(_CHUNK), [])
        out: list[tuple[int, dict[str, Any]]] = []
        with no_cyclic_gc():
            # A chunk of rows at a time: only the records built are held, not every
            # row besides them.
            for rows in chunks:
                try:
                    self._build(rows, plan, exact, series, out)
                except ValueError as exc:
                    raise ResultsError(f"{self._path}: a stored value is corrupt ({exc})"
                                       ) from exc
        return out

    def _in_parts(self, sql: str, params: list[Any], parts: list[Part]) -> list[list[Any]]:
        """The rows of ``sql`` (a SELECT ... WHERE, the rows of a store's records) in
        each of ``parts``, in seq order (:func:`~dlbench.results.store.parts.in_parts`).
        Each part's condition on ``seq`` is on the table's rowid where SQLite scans the
        table, and beside the query (``+r.seq``, which no index answers) where it
        answers the query from an index (``exp.model``'s): each part then walks the
        index and looks up its own rows."""
        plan = [str(row[-1]) for row in self._db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
        indexed = any(line.startswith("SEARCH r USING") and "INTEGER PRIMARY KEY" not in line
                      for line in plan)
        seq = "+r.seq" if indexed else "r.seq"
        return in_parts(self._db, self._path, parts,
                        f"{sql} AND {seq} BETWEEN ? AND ? ORDER BY r.seq", params,
                        lambda cursor: cursor.fetchall())

    def _choose(self, chosen: Collection[int]) -> None:
        """Make ``chosen`` the rows of ``temp.read_chosen`` (inside a read)."""
        self._db.execute("CREATE TEMP TABLE IF NOT EXISTS read_chosen (seq INTEGER PRIMARY KEY)")
        self._db.execute("DELETE FROM temp.read_chosen")
        self._db.executemany("INSERT INTO temp.read_chosen (seq) VALUES (?)",
                             [(seq,) for seq in chosen])

    def _exact(self, plan: _Plan, rows: str = "") -> dict[int, dict[int, Any]]:
        """``seq → key id → value`` of the values of the plan's keys kept in ``exact``
        (of the rows ``rows``, an SQL condition on ``seq``, says: all when empty)."""
        ids = [key.id for key in plan.keys]
        out: dict[int, dict[int, Any]] = {}
        if not ids:
            return out
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            marks = ", ".join("?" * len(part))
            for seq, key_id, text in self._db.execute(
                    f"SELECT seq, key, value FROM exact WHERE key IN ({marks}){rows}", part):
                try:
                    out.setdefault(int(seq), {})[int(key_id)] = json.loads(text)
                except ValueError as exc:
                    raise ResultsError(f"{self._path}: a stored value is corrupt ({exc})") from exc
        return out

    def _build(
        self,
        rows: list[tuple[Any, ...]],
        plan: _Plan,
        exact: dict[int, dict[int, Any]],
        series: bool | Collection[str],
        out: list[tuple[int, dict[str, Any]]],
    ) -> None:
        """Append ``(seq, record)`` of each row to ``out``."""
        shapes = self.shapes()
        position = {key.id: index for index, key in enumerate(plan.read, start=2)}
        flag_at = {key.id: index for index, key in
                   enumerate(plan.flags, start=2 + len(plan.read))}
        by_id = {key.id: key for key in plan.keys}
        # The columns whose values SQL does not give as Python's: 1/0 for booleans,
        # JSON text for lists and dicts.
        decoders = [(index, DECODERS[key.type]) for index, key in enumerate(plan.read, start=2)
                    if key.type in DECODERS]
        fast: dict[int, tuple[list[str], list[int], list[int]]] = {}
        for shape, key_ids in shapes.items():
            fast[shape] = ([by_id[i].name for i in key_ids if i in position],
                           [position[i] for i in key_ids if i in position],
                           [flag_at[i] for i in key_ids if i in flag_at])
        for row in rows:
            seq, shape = row[0], row[1]
            if decoders:
                values = list(row)
                for index, decode in decoders:
                    values[index] = decode(values[index])
                row = tuple(values)
            names, at, flags = fast.get(shape, ([], [], []))
            if seq in exact or any(row[i] == 0 for i in flags):
                record = self._slow(row, shapes.get(shape, []), by_id, position, flag_at,
                                    exact.get(seq, {}), series)
            else:
                record = dict(zip(names, map(row.__getitem__, at), strict=True))
            out.append((seq, record))

    @staticmethod
    def _slow(
        row: tuple[Any, ...],
        key_ids: list[int],
        by_id: dict[int, Key],
        position: dict[int, int],
        flag_at: dict[int, int],
        exact: dict[int, Any],
        series: bool | Collection[str],
    ) -> dict[str, Any]:
        """A record with values from ``exact`` or a ``null`` under a key of lists."""
        record: dict[str, Any] = {}
        for key_id in key_ids:
            key = by_id.get(key_id)
            if key is None:
                continue
            if key_id in exact:
                value = exact[key_id]
                if not isinstance(value, (list, dict)) or series_wanted(key.name, series):
                    record[key.name] = value
            elif key_id in position:
                record[key.name] = row[position[key_id]]
            elif key_id in flag_at and not row[flag_at[key_id]]:
                record[key.name] = None
        return record


def _varies(values: list[Any]) -> bool:
    """Whether two of ``values`` have different JSON texts."""
    first = values[0]
    if isinstance(first, (list, dict)) or any(isinstance(v, (list, dict)) for v in values):
        text = json.dumps(first, sort_keys=True)
        return any(json.dumps(v, sort_keys=True) != text for v in values)
    if type(first) is float and first != first:
        return not all(type(v) is float and v != v for v in values)
    # count() compares with == at C speed (1 == 1.0 == True): the types are checked
    # apart, and zeros' signs.
    if values.count(first) != len(values) or len(set(map(type, values))) > 1:
        return True
    if type(first) is float and first == 0.0:
        return len({math.copysign(1.0, v) for v in values}) > 1
    return False

