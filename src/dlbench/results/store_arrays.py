"""A store's keys as arrays, one key at a time, for code that works a column at a time.

:mod:`dlbench.results.store_read` builds a dict per record; over a million records
that costs seconds and gigabytes before any arithmetic starts. Here a key comes back
as NumPy arrays aligned with the selected experiments (in ``seq`` order), without a
Python object per record where SQLite can avoid one:

- which experiments have a key is read from their shapes (one short text per store),
  so a key stored with one value everywhere (``keys.constant``) is never read;
- a key of a few distinct values comes back as small integer codes, which SQLite
  writes as one text (``group_concat`` of a ``CASE``) that NumPy parses, and the list
  of those values;
- a numeric key comes back as a float array, with which experiments hold a number.

Every read is one query per key table inside one read transaction, so the arrays are
one snapshot of the store. What this module does not cover (a key holding lists or
dicts, a stored value SQLite cannot compare exactly, values that differ in type but
are equal in Python) raises :class:`NotColumnar`; callers then read records whole.

Example::

    with StoreArrays("runs/sweep/results.sqlite") as arrays:
        model = arrays.codes("exp.model")     # KeyCodes(codes=array([0, 1, 0]), ...)
        time, has_time = arrays.numbers("results.time")
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from dlbench.errors import ResultsError
from dlbench.results import query_sql
from dlbench.results.sqlite_files import connect_read_only
from dlbench.results.store import Store
from dlbench.results.store_columns import (
    BLOB,
    FLOAT,
    INT,
    KEYS_COLUMNS,
    KeyInfo,
    decode,
    decode_series,
    key_from_row,
)

#: More distinct values than this and a key's codes are built in Python from its
#: values rather than by a ``CASE`` in SQL (which tests every branch per row).
MAX_CASE_VALUES = 256

#: How many of a key's first rows its values are guessed from (see ``_distinct_codes``).
_SAMPLE = 4096


class NotColumnar(Exception):
    """The store holds something the array reads do not cover; read records whole."""


@dataclass
class KeyCodes:
    """One key over the selected experiments: ``codes[i]`` indexes ``values``.

    An experiment without the key has the code of ``None`` (as ``record.get`` would
    give), and ``present`` tells the two apart. Two codes never stand for values that
    Python finds equal (``1`` and ``1.0``, ``True`` and ``1``): such a key raises
    :class:`NotColumnar` instead.
    """

    codes: np.ndarray
    values: list[Any]
    present: np.ndarray


def _ints(text: str | None) -> np.ndarray:
    """Comma-separated integers (from ``group_concat``) as an int64 array."""
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.array(text.split(","), dtype=np.int64) if len(text) < 64 else \
        np.fromstring(text, sep=",", dtype=np.int64)


class StoreArrays:
    """An open store, read key by key as arrays over the experiments ``where`` selects
    (a parsed query; all when None), in the order they were first stored.

    ``ResultsError`` for a path that is not a store.
    """

    def __init__(self, path: str | Path, where: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        # Opening it as a Store checks that it is one and converts an old format.
        with Store(self.path, create=False):
            pass
        self._db = connect_read_only(self.path, "results store")
        try:
            query_sql.register(self._db)
            self._db.execute("BEGIN")  # one snapshot for every read below
            self._open(where)
        except sqlite3.Error as exc:
            self.close()
            raise ResultsError(f"cannot read results store {self.path}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def _open(self, where: Mapping[str, Any] | None) -> None:
        rows = self._db.execute(f"SELECT {KEYS_COLUMNS} FROM keys").fetchall()
        self._keys = {info.name: info for info in map(key_from_row, rows)}
        count, low, high = self._db.execute(
            "SELECT count(*), min(seq), max(seq) FROM experiments").fetchone()
        shapes_text = self._db.execute(
            "SELECT group_concat(shape) FROM (SELECT shape FROM experiments ORDER BY seq)"
        ).fetchone()[0]
        if count and high - low + 1 == count:
            all_seqs = np.arange(low, high + 1, dtype=np.int64)  # no gaps: nothing to read
        else:
            all_seqs = _ints(self._db.execute(
                "SELECT group_concat(seq) FROM (SELECT seq FROM experiments ORDER BY seq)"
            ).fetchone()[0])
        self._all_seqs = all_seqs
        if where:
            condition, params = query_sql.where_sql(where, self._keys)
            (chosen,) = self._db.execute(
                f"SELECT group_concat(seq) FROM (SELECT seq FROM experiments WHERE "
                f"{condition} ORDER BY seq)", params).fetchone()
            self._mask: np.ndarray | None = np.isin(all_seqs, _ints(chosen))
        else:
            self._mask = None
        self.seqs = self._selected(all_seqs)
        # Shapes numbered 0..k-1 (few: one per kind of record in a sweep), so that
        # which experiments have a key is a lookup in a table of k booleans.
        shape_ids, dense = np.unique(_ints(shapes_text), return_inverse=True)
        self._shape_ids = shape_ids.tolist()
        self._all_shape_index = dense.reshape(-1)
        self.shape_index = self._selected(self._all_shape_index)
        keys_of = {int(shape): frozenset(json.loads(text))
                   for shape, text in self._db.execute("SELECT id, keys FROM shapes")}
        self._shape_keys = [keys_of.get(shape, frozenset()) for shape in self._shape_ids]
        self._present: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return int(self.seqs.size)

    def info(self, key: str) -> KeyInfo | None:
        """The catalogue entry of ``key``; None when no experiment ever had it."""
        return self._keys.get(key)

    def shape_has(self, key: str) -> np.ndarray:
        """For each shape (numbered as in :attr:`shape_index`), whether it has ``key``."""
        info = self.info(key)
        return np.array([info is not None and info.id in keys for keys in self._shape_keys],
                        dtype=bool)

    def shape_keys(self, shapes: np.ndarray) -> set[str]:
        """Every key some experiment of one of ``shapes`` (numbered as in
        :attr:`shape_index`) has."""
        names = {info.id: name for name, info in self._keys.items()}
        ids: set[int] = set()
        for shape in np.unique(shapes).tolist():
            ids.update(self._shape_keys[shape])
        return {names[i] for i in ids if i in names}

    def _present_all(self, key: str) -> np.ndarray:
        """Which of all experiments have the key, from their shapes."""
        if key not in self._present:
            self._present[key] = self.shape_has(key)[self._all_shape_index]
        return self._present[key]

    def _selected(self, column: np.ndarray) -> np.ndarray:
        return column if self._mask is None else column[self._mask]

    def present(self, key: str) -> np.ndarray:
        """Which selected experiments have ``key`` (with any value, ``None`` included)."""
        return self._selected(self._present_all(key))

    def _query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise ResultsError(f"cannot read results store {self.path}: {exc}") from exc

    def _mismatch(self, key: str) -> ResultsError:
        return ResultsError(f"{self.path}: the values of {key} do not match the experiments "
                            "that have it (the file was changed by hand?)")

    def codes(self, key: str) -> KeyCodes:
        """``key`` over the selected experiments as codes into its distinct values."""
        info = self.info(key)
        present_all = self._present_all(key)
        if info is None or not present_all.any():
            size = len(self)
            return KeyCodes(np.zeros(size, dtype=np.int64), [None], np.zeros(size, dtype=bool))
        if info.has_scalars() and info.has_series():
            raise NotColumnar(f"{key} holds lists or dicts in some records, not in others")
        if info.kinds & BLOB or (info.kinds & INT and info.kinds & FLOAT):
            # NaN, and 1 next to 1.0 (SQL finds them one value, the first record's
            # shows): what a dict of records does there is left to it.
            raise NotColumnar(f"{key} holds values SQL does not tell apart as Python does")
        uniform = self._uniform_series(info) if info.has_series() else None
        if info.single_value() or uniform is not None:
            values = [decode(info.first) if uniform is None else uniform[0]]
            stored = np.zeros(int(present_all.sum()), dtype=np.int64)
        else:
            values, stored = self._distinct_codes(info)
            if stored.size != int(present_all.sum()):
                raise self._mismatch(key)
        values = _with_none(values)
        full = np.full(self._all_seqs.size, values.index(None), dtype=np.int64)
        full[present_all] = stored
        return KeyCodes(self._selected(full), values, self._selected(present_all))

    def first_value(self, key: str) -> Any:
        """The first scalar stored under ``key`` (the only one where the catalogue
        says it is constant); None when there is none."""
        info = self.info(key)
        return None if info is None or info.first is None else decode(info.first)

    def _uniform_series(self, info: KeyInfo) -> tuple[Any] | None:
        """``(value,)`` when every list or dict stored under the key is the same one
        (the catalogue says so for scalars only); one scan that stops at a difference."""
        first = self._query(f"SELECT v FROM {info.series} LIMIT 1")
        if not first or self._query(
                f"SELECT 1 FROM {info.series} WHERE v IS NOT ? LIMIT 1", (first[0][0],)):
            return None
        return (decode_series(first[0][0]),)

    def _distinct_codes(self, info: KeyInfo) -> tuple[list[Any], np.ndarray]:
        series = info.has_series()
        table = info.series if series else info.scalars
        if info.kinds == INT:
            # Integers are their own exact text: one pass, numbered by NumPy.
            ((text,),) = self._query(
                f"SELECT group_concat(v) FROM (SELECT v FROM {table} ORDER BY seq)")
            return _numbered(_ints(text))
        # The values of a sweep's parameter mostly appear in its first records: guess
        # them from those, and look at every row only when the guess missed one.
        distinct = [row[0] for row in self._query(
            f"SELECT DISTINCT v FROM (SELECT v FROM {table} ORDER BY seq LIMIT {_SAMPLE})")]
        stored = self._case_codes(table, distinct)
        if stored is None:
            distinct = [row[0] for row in self._query(f"SELECT DISTINCT v FROM {table}")]
            stored = self._case_codes(table, distinct)
        if stored is None:
            index = {value: i for i, value in enumerate(distinct)}
            cursor = self._db.execute(f"SELECT v FROM {table} ORDER BY seq")
            stored = np.fromiter(map(index.__getitem__, itertools.chain.from_iterable(cursor)),
                                 dtype=np.int64)
        return [decode_series(v) if series else decode(v) for v in distinct], stored

    def _case_codes(self, table: str, distinct: list[Any]) -> np.ndarray | None:
        """Each row's index in ``distinct``, by a ``CASE`` in SQL; None when a row holds
        none of them, or when they are too many for a ``CASE``."""
        if len(distinct) > MAX_CASE_VALUES:
            return None
        branches = " ".join(f"WHEN ? THEN {i}" for i in range(len(distinct)))
        ((text,),) = self._query(
            f"SELECT group_concat(CASE v {branches} ELSE -1 END) FROM "
            f"(SELECT v FROM {table} ORDER BY seq)", distinct)
        stored = _ints(text)
        return None if stored.size and int(stored.min()) < 0 else stored

    def other_than(self, key: str, value: str) -> tuple[np.ndarray, list[Any]]:
        """The positions of the selected experiments whose ``key`` is a scalar other
        than the string ``value``, and those values: few where most hold ``value``
        (``exp.status`` other than ``ok``), so only they are read."""
        info = self.info(key)
        if info is None or not info.has_scalars() or (
                info.single_value() and decode(info.first) == value):
            return np.zeros(0, dtype=np.int64), []
        if info.has_series():
            raise NotColumnar(f"{key} holds lists or dicts")
        rows = self._query(
            f"SELECT seq, v FROM {info.scalars} WHERE v IS NOT ? ORDER BY seq", (value,))
        seqs = np.array([row[0] for row in rows], dtype=np.int64)
        positions = np.searchsorted(self.seqs, seqs)
        chosen = positions < self.seqs.size
        chosen[chosen] = self.seqs[positions[chosen]] == seqs[chosen]
        values = [decode(row[1]) for row, kept in zip(rows, chosen.tolist(), strict=True)
                  if kept]
        return positions[chosen], values

    def numbers(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``key`` over the selected experiments as floats, and which hold a finite
        number (an int or a float, not a bool: what a report can average)."""
        info = self.info(key)
        present_all = self._present_all(key)
        values = np.full(self._all_seqs.size, np.nan)
        if info is not None and info.has_scalars() and present_all.any():
            if info.kinds & BLOB:
                raise NotColumnar(f"{key} holds values SQL does not compare exactly (NaN, ...)")
            numeric = "typeof(v) IN ('integer', 'real')"
            if info.kinds & ~(INT | FLOAT):
                # Some hold text, a bool or a list: find the ones that hold numbers.
                ((text,),) = self._query(
                    f"SELECT group_concat(seq) FROM (SELECT seq FROM {info.scalars} "
                    f"WHERE {numeric} ORDER BY seq)")
                rows = np.isin(self._all_seqs, _ints(text))
                where = f" WHERE {numeric}"
            else:
                rows, where = present_all, ""
            cursor = self._db.execute(f"SELECT v FROM {info.scalars}{where} ORDER BY seq")
            found = np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.float64)
            if found.size != int(rows.sum()):
                raise self._mismatch(key)
            values[rows] = found
        values = self._selected(values)
        return values, np.isfinite(values)

    def ids(self, positions: np.ndarray) -> list[str]:
        """The ``exp.id`` of the selected experiments at ``positions``."""
        seqs = [int(s) for s in self.seqs[positions]]
        if not seqs:
            return []
        marks = ", ".join("?" * len(seqs))
        found = dict(self._query(f"SELECT seq, id FROM experiments WHERE seq IN ({marks})",
                                 seqs))
        return [str(found[seq]) for seq in seqs]

    def value(self, key: str, position: int, default: Any = None) -> Any:
        """The value of ``key`` of the selected experiment at ``position`` (a list or
        dict too), or ``default`` when it has none."""
        info = self.info(key)
        if info is None:
            return default
        seq = int(self.seqs[position])
        if info.has_scalars():
            found = self._query(f"SELECT v FROM {info.scalars} WHERE seq = ?", (seq,))
            if found:
                return decode(found[0][0])
        if info.has_series():
            found = self._query(f"SELECT v FROM {info.series} WHERE seq = ?", (seq,))
            if found:
                return decode_series(found[0][0])
        return default

    def close(self) -> None:
        """End the read transaction and close the connection."""
        try:
            if self._db.in_transaction:
                self._db.execute("COMMIT")
        except sqlite3.Error:
            pass  # a read transaction has nothing to keep; a damaged file says so itself
        finally:
            self._db.close()

    def __enter__(self) -> StoreArrays:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _numbered(ints: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The distinct values of ``ints`` (ascending) and each one's index among them;
    without a sort where they span a small range (batch sizes, counts)."""
    if not ints.size:
        return [], ints
    low = int(ints.min())
    if int(ints.max()) - low < 1 << 20:
        counts = np.bincount(ints - low)
        table = np.cumsum(counts > 0) - 1
        return (np.flatnonzero(counts) + low).tolist(), table[ints - low]
    found, stored = np.unique(ints, return_inverse=True)
    return found.tolist(), stored.reshape(-1)


def _with_none(values: list[Any]) -> list[Any]:
    """``values`` with ``None`` among them (the code of an absent key), after checking
    that no two of them are equal in Python, as a dict of records would merge them."""
    # A set merges 1, 1.0 and True, as dict keys do; lists and dicts compare as JSON.
    seen = {("json", json.dumps(v, sort_keys=True)) if isinstance(v, (list, dict)) else v
            for v in values}
    if len(seen) < len(values):
        raise NotColumnar(f"some values are equal in Python but stored apart: {values[:8]}")
    return values if any(v is None for v in values) else [*values, None]
