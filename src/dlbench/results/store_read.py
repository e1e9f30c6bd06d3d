"""Reading records back from the store's key tables (:mod:`dlbench.results.store`).

A read is one SQLite read transaction, so it sees every experiment whole even while
a runner writes. The selected experiments (all, or those a query picks in SQL) come
with their shapes; each key wanted is then read as one column, in ``seq`` order:

- a key holding one value in every record stored (``keys.constant``) is not read at
  all: its value is known, and which records have it is their shape;
- a key every selected record has is read as a plain list, aligned with the
  selection;
- any other key (absent from some records, or holding lists in some and scalars in
  others) is read as a ``seq → value`` mapping.

Records are then built shape by shape, ``dict(zip(names, row))`` at C speed, their
keys in the order they were written.
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlbench.errors import ResultsError
from dlbench.results.memory import no_cyclic_gc
from dlbench.results.query_sql import where_sql
from dlbench.results.store_columns import (
    KEYS_COLUMNS,
    TEXT,
    KeyInfo,
    decode,
    decode_column,
    decode_series,
    key_from_row,
    series_wanted,
)

_ABSENT: Any = object()
_SELECTION = "temp.dl_selection"


class _Constant:
    """A column whose every value is ``value``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


Column = list[Any] | dict[int, Any] | _Constant


@dataclass
class Survey:
    """What the records a query selects hold, found without building them."""

    #: How many records are selected.
    count: int = 0
    #: Every key some selected record has, in the order the records first have them.
    keys: list[str] = field(default_factory=list)
    #: Of the keys surveyed, those whose values differ between two selected records
    #: (a record without the key counting as a value of its own), values compared as
    #: their JSON text (``1`` is not ``1.0``, ``0.0`` is not ``-0.0``).
    varying: set[str] = field(default_factory=set)


class Reader:
    """Reads an open store's connection; every method is one read transaction."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path

    def _fail(self, exc: Exception) -> ResultsError:
        return ResultsError(f"cannot read results store {self._path}: {exc}")

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
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

    def _catalogue(self) -> dict[str, KeyInfo]:
        rows = self._db.execute(f"SELECT {KEYS_COLUMNS} FROM keys").fetchall()
        return {info.name: info for info in map(key_from_row, rows)}

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many experiments match ``where`` (all when None)."""
        with self._snapshot():
            if not where:
                return int(self._db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0])
            condition, params = where_sql(where, self._catalogue())
            sql = f"SELECT COUNT(*) FROM experiments WHERE {condition}"
            return int(self._db.execute(sql, params).fetchone()[0])

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
        with self._snapshot():
            catalogue = self._catalogue()
            if exp_id is not None:
                selected = self._select("id = ?", [exp_id])
            elif where:
                selected = self._select(*where_sql(where, catalogue))
            else:
                selected = False
            rows = self._db.execute(
                f"SELECT seq, shape FROM {_SELECTION if selected else 'experiments'} "
                "ORDER BY seq").fetchall()
            if not rows:
                return []
            with no_cyclic_gc():
                return self._build(rows, selected, catalogue, keys, series)

    def survey_records(
        self,
        *,
        where: Mapping[str, Any] | None,
        surveyed: Callable[[str], bool],
        choose: Callable[[Survey], Collection[str]],
    ) -> tuple[Survey, list[dict[str, Any]]]:
        """Survey the records ``where`` selects (which keys they have; which of the
        keys ``surveyed`` accepts vary, decided in SQL), then build them with only
        the keys ``choose(survey)`` names, lists and dicts included; one selection,
        one read transaction."""
        with self._snapshot():
            catalogue = self._catalogue()
            selected = self._select(*where_sql(where, catalogue)) if where else False
            rows = self._db.execute(
                f"SELECT seq, shape FROM {_SELECTION if selected else 'experiments'} "
                "ORDER BY seq").fetchall()
            if not rows:
                return Survey(), []
            groups: dict[int, int] = {}  # shape → its records, in order of first record
            for _, shape in rows:
                groups[shape] = groups.get(shape, 0) + 1
            shapes = self._shapes(list(groups))
            by_id = {info.id: info for info in catalogue.values()}
            present: dict[str, int] = {}
            for shape, members in groups.items():
                for key_id in shapes.get(shape, []):
                    info = by_id.get(key_id)
                    if info is not None:
                        present[info.name] = present.get(info.name, 0) + members
            survey = Survey(len(rows), list(present))
            for name, count in present.items():
                if surveyed(name) and (count < len(rows) or self._varies(catalogue[name],
                                                                         selected)):
                    survey.varying.add(name)
            wanted = set(choose(survey))
            with no_cyclic_gc():
                return survey, self._build(rows, selected, catalogue, wanted, True)

    def _varies(self, info: KeyInfo, selected: bool) -> bool:
        """Whether the selected records, which all have the key, hold two values of it
        with different JSON texts. Stops at the first difference it finds."""
        if info.single_value():
            return False

        def source(table: str) -> str:
            return (f"{_SELECTION} AS s CROSS JOIN {table} AS t ON t.seq = s.seq" if selected
                    else f"{table} AS t")

        first = None
        if info.has_scalars():
            first = self._db.execute(f"SELECT t.v FROM {source(info.scalars)} LIMIT 1").fetchone()
        if info.has_series():
            lists = self._db.execute(f"SELECT DISTINCT t.v FROM {source(info.series)}")
            if first is not None and lists.fetchone() is not None:
                return True  # a list or dict in one record, a scalar in another
            texts: set[str] = set()
            for (stored,) in lists:
                texts.add(json.dumps(decode_series(stored), sort_keys=True))
                if len(texts) > 1:
                    return True
            if first is None:
                return False
        value = first[0] if first is not None else None
        # Storage class and value: 1 is not 1.0; SQL's = alone would say they are.
        if self._db.execute(
                f"SELECT 1 FROM {source(info.scalars)} "
                "WHERE NOT (typeof(t.v) = typeof(?) AND t.v = ?) LIMIT 1",
                (value, value)).fetchone() is not None:
            return True
        if type(value) is float and value == 0.0:
            # SQL's = takes -0.0 for 0.0; their JSON texts differ.
            zeros = self._db.execute(f"SELECT t.v FROM {source(info.scalars)}")
            return len({math.copysign(1.0, v) for (v,) in zeros}) > 1
        return False

    def _select(self, condition: str, params: list[Any]) -> bool:
        self._db.execute(f"DROP TABLE IF EXISTS {_SELECTION}")
        self._db.execute(
            "CREATE TEMP TABLE dl_selection (seq INTEGER PRIMARY KEY, shape INTEGER)")
        self._db.execute(
            f"INSERT INTO {_SELECTION} SELECT seq, shape FROM experiments WHERE {condition}",
            params)
        return True

    def _shapes(self, ids: Collection[int]) -> dict[int, list[int]]:
        marks = ", ".join("?" * len(ids))
        rows = self._db.execute(f"SELECT id, keys FROM shapes WHERE id IN ({marks})", list(ids))
        return {int(shape): json.loads(text) for shape, text in rows}

    def _column(self, table: str, selected: bool, dense: bool) -> list[Any] | dict[int, Any]:
        """A key table's values for the selection: a list aligned with it (``dense``:
        every selected record has a row) or a ``seq → value`` mapping."""
        what = "t.v" if dense else "t.seq, t.v"
        if selected:
            sql = (f"SELECT {what} FROM {_SELECTION} AS s JOIN {table} AS t ON t.seq = s.seq "
                   "ORDER BY s.seq")
        else:
            sql = f"SELECT {what} FROM {table} AS t ORDER BY t.seq"
        cursor = self._db.execute(sql)
        # Both at C speed: no Python code runs per value.
        return list(itertools.chain.from_iterable(cursor)) if dense else dict(cursor)

    def _build(
        self,
        rows: list[tuple[int, int]],
        selected: bool,
        catalogue: dict[str, KeyInfo],
        keys: Collection[str] | None,
        series: bool | Collection[str],
    ) -> list[dict[str, Any]]:
        seqs = [row[0] for row in rows]
        groups: dict[int, list[int]] = {}
        for index, (_, shape) in enumerate(rows):
            groups.setdefault(shape, []).append(index)
        shapes = self._shapes(list(groups))
        by_id = {info.id: info for info in catalogue.values()}
        wanted = None if keys is None else set(keys)
        present: dict[int, int] = {}
        for shape, members in groups.items():
            for key_id in shapes.get(shape, []):
                info = by_id.get(key_id)
                if info is not None and (wanted is None or info.name in wanted):
                    present[key_id] = present.get(key_id, 0) + len(members)
        columns: dict[int, tuple[Column, dict[int, Any] | None]] = {}
        for key_id, count in present.items():
            info = by_id[key_id]
            with_series = info.has_series() and series_wanted(info.name, series)
            if not info.has_scalars() and not with_series:
                continue
            columns[key_id] = self._key_columns(
                info, selected, count, count == len(rows), with_series)
        out: list[dict[str, Any]] = [{}] * len(rows)  # every slot is filled below
        try:
            for shape, members in groups.items():
                self._fill(out, members, seqs, shapes.get(shape, []), by_id, columns)
        except ValueError as exc:
            raise ResultsError(f"{self._path}: a stored value is corrupt ({exc})") from exc
        return out

    def _key_columns(
        self, info: KeyInfo, selected: bool, count: int, everywhere: bool, with_series: bool
    ) -> tuple[Column, dict[int, Any] | None]:
        """The key's scalar column and, when wanted, its series as ``seq → JSON``."""
        scalars: Column = {}
        if info.single_value():
            scalars = _Constant(decode(info.first))
        elif info.has_scalars():
            dense = everywhere and not info.has_series()
            scalars = self._column(info.scalars, selected, dense)
            if dense and len(scalars) != count:
                raise ResultsError(f"{self._path}: the values of {info.name} do not match the "
                                   "experiments that have it (the file was changed by hand?)")
            if isinstance(scalars, list):
                scalars = decode_column(scalars, info.kinds)
                if info.kinds == TEXT:
                    # One str object per distinct value, not one per record.
                    interned: dict[str, str] = {}
                    scalars = list(map(interned.setdefault, scalars, scalars))
            else:
                scalars = {seq: decode(v) for seq, v in scalars.items()}
        texts = None
        if with_series:
            dense = everywhere and not info.has_scalars()
            found = self._column(info.series, selected, dense)
            if isinstance(found, list):
                return _decode_series_column(found), None
            texts = found
        return scalars, texts

    @staticmethod
    def _fill(
        out: list[dict[str, Any]],
        members: list[int],
        seqs: list[int],
        key_ids: list[int],
        by_id: dict[int, KeyInfo],
        columns: dict[int, tuple[Column, dict[int, Any] | None]],
    ) -> None:
        """Build the records of one shape, at the positions ``members``."""
        whole = len(members) == len(out)
        template: dict[str, Any] = {}  # every key, in order; the value of those with one
        varying: list[tuple[str, list[Any]]] = []
        gaps = False
        for key_id in key_ids:
            if key_id not in columns:
                continue
            scalars, texts = columns[key_id]
            name = by_id[key_id].name
            template[name] = None
            if isinstance(scalars, _Constant):
                template[name] = scalars.value
            elif isinstance(scalars, list):
                varying.append((name, scalars if whole else
                                list(map(scalars.__getitem__, members))))
            else:
                gaps = True
                varying.append((name, [_lookup(scalars, texts, seqs[i]) for i in members]))
        names = [name for name, _ in varying]
        rows = zip(*[values for _, values in varying], strict=True) if varying else \
            itertools.repeat((), len(members))
        # Copying a dict that holds every key in order, then setting the values that
        # vary, keeps the order and costs a memcpy where building costs an insertion
        # per key.
        copy = template.copy
        for index, row in zip(members, rows, strict=True):
            record = copy()
            record.update(zip(names, row, strict=True))
            if gaps:
                for name, value in zip(names, row, strict=True):
                    if value is _ABSENT:
                        del record[name]
            out[index] = record


_FLAT = (str, int, float, bool, type(None))


def _decode_series_column(stored: list[Any]) -> list[Any]:
    """Decode a column of stored lists and dicts. Where few are distinct (an empty
    ``results.unstable_reasons`` in most records), each is parsed once and every
    record gets its own copy of it."""
    distinct = set(stored)
    if len(distinct) * 4 > len(stored):
        return list(map(decode_series, stored))
    parsed = {text: decode_series(text) for text in distinct}
    shallow = {text: all(type(x) in _FLAT for x in (v.values() if isinstance(v, dict) else v))
               for text, v in parsed.items()}
    return [parsed[text].copy() if shallow[text] else decode_series(text) for text in stored]


def _lookup(scalars: dict[int, Any], texts: dict[int, Any] | None, seq: int) -> Any:
    value = scalars.get(seq, _ABSENT)
    if value is _ABSENT and texts is not None:
        text = texts.get(seq, _ABSENT)
        value = _ABSENT if text is _ABSENT else decode_series(text)
    return value
