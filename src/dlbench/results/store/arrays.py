"""A store's keys as arrays, one key at a time, for code that works a column at a time.

:mod:`dlbench.results.store.read` builds a dict per record; over a million records
that costs seconds and gigabytes before any arithmetic starts. Here a key comes back
as NumPy arrays aligned with the selected experiments (in ``seq`` order), read from
its one column (and the rare values of ``exact``):

- which experiments have a key is read from their shapes (one short text per store);
- a key of a few distinct values comes back as small integer codes, and the list of
  those values;
- a numeric key comes back as a float array, with which experiments hold a number.

Every read is one query inside one read transaction, so the arrays are one snapshot
of the store. Records that are not in a store (logs, exported files) are written
through the store's own writer into a store in memory
(:meth:`StoreArrays.of_records`) and read the same way.

Example::

    with StoreArrays("runs/sweep/results.sqlite") as arrays:
        model = arrays.codes("exp.model")     # KeyCodes(codes=array([0, 1, 0]), ...)
        time, has_time = arrays.numbers("results.time")
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from dlbench.errors import ResultsError
from dlbench.results.store import Store
from dlbench.results.store.bulk import (
    CODED_TYPES,
    COMMA,
    DICTIONARY_JOINS,
    DICTIONARY_MAX,
    Coded,
    code_floats,
    column_joins,
    column_text,
    dense_codes,
    dictionary_text,
    float_texts,
    floats_exact,
    join_parts,
    parse_coded,
    parse_dictionary,
    parse_floats,
    parse_integers,
    seq_text,
)
from dlbench.results.store.columns import (
    INTEGER,
    JSON,
    REAL,
    ROWS,
    SCALARS_TABLE,
    SERIES_TABLE,
    TEXT,
    Key,
    decode_column,
)
from dlbench.results.store.parts import Part, in_parts, split
from dlbench.results.store.read import Reader
from dlbench.results.store.where import register
from dlbench.results.store.write import SCHEMA, Writer

#: Keys surveyed per statement by :meth:`StoreArrays.survey` (three results each;
#: SQLite allows 2,000 by default).
_SURVEYED = 500

#: Rows whose texts make the dictionaries a scan codes text columns against.
_SAMPLED = 4096

#: The key a record's own ``exp.id`` is kept under in a store of records
#: (:meth:`StoreArrays.of_records`), whose rows need ids of their own: records read
#: from logs may lack one, and two exported records may share one.
_RECORD_ID = "(record) exp.id"


@dataclass
class KeyCodes:
    """One key over the selected experiments: ``codes[i]`` indexes ``values``.

    An experiment without the key has the code of ``None`` (as ``record.get`` would
    give), and ``present`` tells the two apart. Two codes stand for values whose JSON
    texts differ, so ``1`` and ``1.0`` (equal in Python) have a code each: grouping
    by Python's equality is the caller's to decide.
    """

    codes: np.ndarray
    values: list[Any]
    present: np.ndarray


@dataclass
class KeyInfo:
    """What the store holds under one key, over the experiments read (all stored, or
    those a query selects)."""

    name: str
    #: Every value stored under the key is this one value (``first``, a list or dict
    #: too).
    single: bool
    first: Any

    def single_value(self) -> bool:
        """Whether every value stored under the key is one value (``first``)."""
        return self.single


class StoreArrays:
    """An open store, read key by key as arrays over the experiments ``where`` selects
    (a parsed query; all when None), in the order they were first stored.

    ``ResultsError`` for a path that is not a store.
    """

    def __init__(self, path: str | Path, where: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        # Opened as a Store, read-only: that checks it is one, and that its format is
        # one a read reads (the file is never converted by a read).
        store = Store(self.path, create=False)
        self._db = store.connection
        #: Whether ``exp.id`` is every experiment's own (a store), rather than the
        #: records' (:meth:`of_records`), which some may lack or share.
        self.stored_ids = True
        #: Whether the records are read from the file, which other connections may read
        #: in parts at once (not from a store in memory, :meth:`of_records`).
        self._in_file = True
        try:
            register(self._db)
            self._db.execute("BEGIN")  # one snapshot for every read below
            self._open(where)
        except sqlite3.Error as exc:
            self.close()
            raise ResultsError(f"cannot read results store {self.path}: {exc}") from exc
        except BaseException:
            self.close()
            raise

    @classmethod
    def of_records(cls, records: Sequence[Mapping[str, Any]], label: str = "records"
                   ) -> StoreArrays:
        """``records`` (all of them, in order, duplicates and records without an
        ``exp.id`` included) written to a store in memory by the store's own writer,
        and read as arrays; ``label`` names them in errors."""
        arrays = cls.__new__(cls)
        arrays.path = Path(label)
        arrays.stored_ids = False
        arrays._in_file = False
        arrays._db = sqlite3.connect(":memory:", isolation_level=None)
        try:
            for statement in SCHEMA.split(";"):
                arrays._db.execute(statement)
            rows = []
            for index, record in enumerate(records):
                row = {(_RECORD_ID if key == "exp.id" else key): value
                       for key, value in record.items()}
                row["exp.id"] = str(index)
                rows.append(row)
            register(arrays._db)
            arrays._db.execute("BEGIN")
            Writer(arrays._db).write(rows)
            arrays._open(None)
        except BaseException:
            arrays.close()
            raise
        # The records' own exp.id (where they have one) is what "exp.id" reads.
        own = arrays._keys.pop(_RECORD_ID, None)
        arrays._keys.pop("exp.id", None)
        if own is not None:
            arrays._keys["exp.id"] = own
        return arrays

    def _open(self, where: Mapping[str, Any] | None) -> None:
        reader = Reader(self._db, self.path, in_file=self._in_file)
        self._keys: dict[str, Key] = reader.catalogue()
        #: The rows every read scans, and the condition on ``exact``'s rows: the
        #: experiments ``where`` selects are all there is here, so a query choosing
        #: 1 record in 100 reads 1 row in 100 of each column.
        #: The records a scan of columns reads, in seq order (``ORDER BY r.seq``): the
        #: tables of the records alone, not joined to ``experiments`` row by row.
        self._rows = ROWS
        #: The same without the series, for an aggregate over scalar columns only
        #: (SQLite keeps an unused LEFT JOIN in an aggregate: a look-up in the series'
        #: table per row, its pages read from disk when cold).
        #: NOT INDEXED: the table's rows in seq order, never those of an index that
        #: holds every column read (``exp.model``'s), which come in its order.
        self._scalar_rows = f"{SCALARS_TABLE} AS r NOT INDEXED"
        #: The experiments alone (their seq, shape and status), or those chosen.
        self._experiments = "experiments AS e"
        self._in_exact = ""
        if where:
            chosen = reader.selected(where, self._keys)
            self._db.execute("CREATE TEMP TABLE IF NOT EXISTS arrays_chosen "
                             "(seq INTEGER PRIMARY KEY)")
            self._db.execute("DELETE FROM temp.arrays_chosen")
            self._db.executemany("INSERT INTO temp.arrays_chosen (seq) VALUES (?)",
                                 [(seq,) for seq in chosen])
            # CROSS JOIN: the chosen rows first, each looked up (left to itself,
            # SQLite scans every row of the table to follow ORDER BY).
            self._rows = (
                f"temp.arrays_chosen AS c CROSS JOIN {SCALARS_TABLE} AS r ON r.seq = c.seq "
                f"LEFT JOIN {SERIES_TABLE} AS j ON j.seq = c.seq")
            self._scalar_rows = (
                f"temp.arrays_chosen AS c CROSS JOIN {SCALARS_TABLE} AS r ON r.seq = c.seq")
            self._experiments = ("temp.arrays_chosen AS c CROSS JOIN experiments AS e "
                                 "ON e.seq = c.seq")
            self._in_exact = " AND seq IN (SELECT seq FROM temp.arrays_chosen)"
        # Two integers per experiment, as two texts NumPy parses: a million rows
        # fetched as Python tuples would cost a second.
        # Read in parts at once where every record is read (:mod:`~dlbench.results.
        # store.parts`): a query's chosen records are in this connection's own table.
        self._parts: list[Part] = [] if where or not self._in_file else split(
            self._db, self.path)
        texts = self._in_parts(
            "SELECT group_concat(seq), group_concat(shape) FROM "
            f"(SELECT e.seq AS seq, e.shape AS shape FROM {self._experiments} "
            f"{self._ranged('e')} ORDER BY e.seq)", [COMMA, COMMA])
        self._all_seqs, all_shapes = (_integers(text) for text in texts)
        self._mask: np.ndarray | None = None
        self.seqs = self._selected(self._all_seqs)
        # Shapes numbered 0..k-1 (few: one per kind of record in a sweep), so that
        # which experiments have a key is a lookup in a table of k booleans.
        shape_ids, dense = dense_codes(all_shapes)
        self._shape_ids = shape_ids.tolist()
        self._all_shape_index = dense.reshape(-1)
        self.shape_index = self._selected(self._all_shape_index)
        keys_of = {shape: frozenset(ids) for shape, ids in reader.shapes().items()}
        self._shape_keys = [keys_of.get(shape, frozenset()) for shape in self._shape_ids]
        self._present: dict[str, np.ndarray] = {}
        self._values: dict[str, list[Any]] = {}
        #: Keys read in bulk (:mod:`~dlbench.results.store.bulk`): their codes over the
        #: experiments holding them, and the float arrays of the measured values.
        self._coded: dict[str, Coded] = {}
        self._floats: dict[str, np.ndarray] = {}
        self._floats_exact: bool | None = None
        self._infos: dict[str, KeyInfo] = {}
        self._exact_ids: set[int] | None = None
        #: key id → (single, first) as the writer keeps them (:mod:`~dlbench.results.
        #: store.write`), over every record stored.
        self._single: dict[int, tuple[Any, Any]] = {
            int(row[0]): (row[1], row[2])
            for row in self._db.execute("SELECT id, single, first FROM keys")}

    def __len__(self) -> int:
        return int(self.seqs.size)

    def _positions(self) -> np.ndarray:
        """The positions of the selected experiments among all of them."""
        return np.arange(self._all_seqs.size) if self._mask is None else np.flatnonzero(self._mask)

    def info(self, key: str) -> KeyInfo | None:
        """What the store holds under ``key``; None when no experiment ever had it."""
        if key not in self._keys:
            return None
        if key not in self._infos:
            held = [v for v, p in zip(self._all_values(key), self._present_all(key).tolist(),
                                      strict=True) if p]
            single = bool(held) and not _varies(held)
            self._infos[key] = KeyInfo(key, single, held[0] if single else None)
        return self._infos[key]

    def survey(self, keys: Sequence[str], unread: Collection[str] = (),
               numbers: Collection[str] = ()) -> None:
        """Find out which of ``keys`` hold one value everywhere (what :meth:`info`
        says) without reading each key's values. The writer keeps, per key, whether
        every value stored is one (``keys.single``): one value in the store is one
        value in any selection of it; values that differ in the store, none of them in
        ``exact``, differ everywhere when nothing is selected. The others are found in
        one scan for all of them: per column, how many values are not NULL, and their
        least and greatest. A key none of whose values is in ``exact`` has every value
        of its column's one type (``columns._fits``), so least equal to greatest is one
        value (one JSON text, one list). Keys with values in ``exact`` are surveyed
        there where every value is; those without a column are left to :meth:`info`.
        Then the values of the scalar keys that vary, less ``unread``, are read in one
        more scan, and in that same scan the columns of ``numbers`` as
        :meth:`numbers` reads them."""
        exact = self._exact_keys()
        asked = [self._keys[k] for k in dict.fromkeys(keys)
                 if k in self._keys and k not in self._infos]
        shape_counts = np.bincount(self._all_shape_index, minlength=len(self._shape_keys))
        unknown = []
        for key in asked:
            single, first = self._single.get(key.id, (None, None))
            held = int(shape_counts[self.shape_has(key.name)].sum())
            if held and single == 1:
                value = json.loads(first)
                self._infos[key.name] = KeyInfo(key.name, True, json.loads(value[1])
                                                if value[1] is not None
                                                else decode_column([value[0]], key.type)[0])
            elif held and single == 0 and not self._in_exact and key.id not in exact:
                self._infos[key.name] = KeyInfo(key.name, False, None)
            else:
                unknown.append(key)
        self._survey_exact([k for k in unknown if k.id in exact])
        todo = [k for k in unknown if k.column and k.id not in exact]
        for start in range(0, len(todo), _SURVEYED):
            part = todo[start:start + _SURVEYED]
            columns = ", ".join(f"COUNT({k.ref}), MIN({k.ref}), MAX({k.ref})"
                                for k in part)
            # Every record, or those chosen.
            (row,) = self._query(f"SELECT {columns} FROM {self._rows_of(part)}")
            for index, key in enumerate(part):
                count, low, high = row[3 * index:3 * index + 3]
                held = int(shape_counts[self.shape_has(key.name)].sum())
                single, first = False, None
                if held and count == 0:
                    single = True  # every value held is None
                elif count == held and low == high:
                    single, first = True, decode_column([low], key.type)[0]
                self._infos[key.name] = KeyInfo(key.name, single, first)
        # Lists and dicts are read when they are asked for (their texts decoded).
        measured = [self._keys[k] for k in dict.fromkeys(numbers) if k in self._keys]
        self._read_columns([k for k in asked if k.column and k.id not in exact
                            and not self._infos[k.name].single
                            and k.name not in unread and k.type != JSON],
                           [k for k in measured if k.column and k.type in (REAL, INTEGER)
                            and k.name not in self._values and k.name not in self._floats])

    def _exact_keys(self) -> set[int]:
        """The ids of the keys with values in ``exact``."""
        if self._exact_ids is None:
            # A look-up per key in exact's index, not a walk of all of it.
            self._exact_ids = {row[0] for row in self._query(
                "SELECT id FROM keys WHERE EXISTS (SELECT 1 FROM exact WHERE key = keys.id)")}
        return self._exact_ids

    def _survey_exact(self, keys: list[Key]) -> None:
        """:meth:`survey` of keys with values in ``exact``: where every value held is
        there (``1`` under a key declared a float, in every record), one text is one
        value; otherwise :meth:`info` reads the key."""
        shape_counts = np.bincount(self._all_shape_index, minlength=len(self._shape_keys))
        for key in keys:
            held = int(shape_counts[self.shape_has(key.name)].sum())
            count, low, high = self._query(
                f"SELECT COUNT(*), MIN(value), MAX(value) FROM exact WHERE key = ?{self._in_exact}",
                (key.id,))[0]
            if held and count == held and low == high:
                self._infos[key.name] = KeyInfo(key.name, True, json.loads(low))

    def _read_columns(self, keys: list[Key], numbers: Sequence[Key] = ()) -> None:
        """Read the values of ``keys`` (with columns, none in ``exact``), and the
        columns of ``numbers`` as floats, in one scan: each column as one text where
        :mod:`~dlbench.results.store.bulk` can, the others row by row."""
        if (any(k.type == REAL for k in keys) or numbers) and self._floats_exact is None:
            self._floats_exact = floats_exact(self._db)
        exact_floats = bool(self._floats_exact)
        bulk = [k for k in keys if k.type in CODED_TYPES and (k.type != REAL or exact_floats)]
        floats = [*(k for k in bulk if k.type == REAL), *(numbers if exact_floats else [])]
        bulk = [k for k in bulk if k.type != REAL]
        keys = [k for k in keys if k not in bulk and k not in floats]
        if bulk or floats:
            texts = [seq_text("r.seq")]
            joins: list[str | None] = [COMMA]
            params: list[Any] = []
            dictionaries = self._dictionaries([k for k in bulk if k.type == TEXT])
            for key in bulk:
                if key.name in dictionaries:
                    sql, bound = dictionary_text(key.ref, dictionaries[key.name])
                    texts.extend(sql)
                    joins.extend(DICTIONARY_JOINS)
                    params.extend(bound)
                else:
                    texts.extend(column_text(key.ref, key.type))
                    joins.extend(column_joins(key.type))
            for key in floats:
                texts.extend(float_texts(key.ref))
                joins.extend((COMMA, COMMA))
            row = self._aggregate(texts, joins, params)
            seqs = None if row is None else parse_integers(row[0])
            if row is None or seqs is None or not np.array_equal(seqs, self._all_seqs):
                # Not aggregated in seq order (or not at all): every column row by row.
                keys = [*keys, *bulk, *(k for k in floats if k not in numbers)]
                bulk, floats, row = [], [], ()
            at = 1
            for key in bulk:
                coded: Coded | None
                if key.name in dictionaries:
                    coded = parse_dictionary(row[at:at + 3], dictionaries[key.name],
                                             self._present_all(key.name))
                    at += 3
                else:
                    held = int(np.count_nonzero(self._present_all(key.name)))
                    coded = parse_coded(row[at:at + 2], key.type, held)
                    at += 2
                if coded is None:
                    keys.append(key)  # a NULL, a separator: read row by row
                else:
                    self._coded[key.name] = coded
            for key in floats:
                mantissas, exponents = row[at:at + 2]
                at += 2
                parsed = parse_floats(mantissas, exponents, int(self._all_seqs.size))
                if key in numbers:
                    if parsed is not None:
                        self._floats[key.name] = parsed
                    continue
                coded = None if parsed is None else code_floats(
                    parsed[self._present_all(key.name)])
                if coded is None:
                    keys.append(key)  # a NULL, a number out of range: row by row
                else:
                    self._coded[key.name] = coded
        self._read_rows(keys)

    def _aggregate(self, texts: list[str], joins: list[str | None], params: list[Any]
                   ) -> tuple[Any, ...] | None:
        """The row of the aggregates ``texts`` (taking ``params``; each joined over
        parts as ``joins`` says, :func:`~dlbench.results.store.bulk.join_parts`) over
        the scalars of the rows read; None when SQLite cannot make it (a text longer
        than it allows)."""
        try:
            return self._in_parts(f"SELECT {', '.join(texts)} FROM {self._scalar_rows} "
                                  f"{self._ranged('r')}", joins, params)
        except sqlite3.Error:
            return None

    def _dictionaries(self, keys: list[Key]) -> dict[str, list[str]]:
        """The distinct texts of each of ``keys`` (text columns) among the first
        :data:`_SAMPLED` rows read, for those with :data:`~dlbench.results.store.bulk.
        DICTIONARY_MAX` at most: the dictionaries a scan codes them against
        (:func:`~dlbench.results.store.bulk.dictionary_text`). A text the first rows
        lack comes back as itself, so a dictionary need not hold every one."""
        if not keys:
            return {}
        rows = self._query(f"SELECT {', '.join(k.ref for k in keys)} FROM "
                           f"{self._scalar_rows} LIMIT {_SAMPLED}")
        found: dict[str, list[str]] = {}
        for index, key in enumerate(keys):
            texts = {row[index] for row in rows if type(row[index]) is str}
            if len(texts) <= DICTIONARY_MAX:
                found[key.name] = sorted(texts)
        return found

    def _ranged(self, table: str) -> str:
        """The condition on the ``seq`` of ``table`` that :meth:`_in_parts` binds to a
        part's first and last; none when a query chose the records."""
        return f"WHERE {table}.seq BETWEEN ? AND ?" if self._parts else ""

    def _in_parts(self, sql: str, joins: Sequence[str | None], params: Sequence[Any] = ()
                  ) -> tuple[Any, ...]:
        """The row of the aggregates of ``sql`` over the rows read, each joined over
        the parts as ``joins`` says (:func:`~dlbench.results.store.bulk.join_parts`):
        where every record is read, ``sql`` takes a part's first and last ``seq``
        (:meth:`_ranged`), and the parts are read at once
        (:func:`~dlbench.results.store.parts.in_parts`)."""
        if not self._parts:
            return tuple(self._db.execute(sql, params).fetchone())
        return join_parts(in_parts(self._db, self.path, self._parts, sql, params,
                                   lambda cursor: tuple(cursor.fetchone())), joins)

    def _rows_of(self, keys: Sequence[Key]) -> str:
        """The rows an aggregate over the columns of ``keys`` scans: the series
        joined only where one of them is there."""
        return self._rows if any(key.type == JSON for key in keys) else self._scalar_rows

    def _read_rows(self, keys: list[Key]) -> None:
        """Read the values of ``keys`` (with columns, none in ``exact``) in one scan,
        row by row."""
        if not keys:
            return
        columns = ", ".join(key.ref for key in keys)
        rows = self._query(f"SELECT {columns} FROM {self._rows} ORDER BY r.seq")
        if len(rows) != self._all_seqs.size:
            raise ResultsError(f"{self.path}: the rows of results do not match the "
                               "experiments (the file was changed by hand?)")
        for index, key in enumerate(keys):
            # A list per column (zip(*rows) over a million rows is four times slower).
            column = [row[index] for row in rows]
            try:
                self._values[key.name] = decode_column(column, key.type)
            except ValueError as exc:
                raise ResultsError(f"{self.path}: a stored value of {key.name} is corrupt"
                                   ) from exc

    def shape_has(self, key: str) -> np.ndarray:
        """For each shape (numbered as in :attr:`shape_index`), whether it has ``key``."""
        found = self._keys.get(key)
        return np.array([found is not None and found.id in keys for keys in self._shape_keys],
                        dtype=bool)

    def shape_keys(self, shapes: np.ndarray) -> set[str]:
        """Every key some experiment of one of ``shapes`` (numbered as in
        :attr:`shape_index`) has."""
        names = {key.id: name for name, key in self._keys.items()}
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

    def _all_values(self, key: str) -> list[Any]:
        """The value of ``key`` of every experiment stored (None where it has none)."""
        if key in self._values:
            return self._values[key]
        found = self._keys.get(key)
        size = int(self._all_seqs.size)
        if found is None:
            return [None] * size
        if key in self._coded:
            full, table = self._coded_codes(key)
            self._values[key] = [table[code] for code in full.tolist()]
            return self._values[key]
        if found.column:
            rows = self._query(f"SELECT {found.ref} FROM {self._rows} ORDER BY r.seq")
            if len(rows) != size:
                raise ResultsError(f"{self.path}: the rows of results do not match the "
                                   "experiments (the file was changed by hand?)")
            try:
                values = decode_column([row[0] for row in rows], found.type)
            except ValueError as exc:
                raise ResultsError(f"{self.path}: a stored value of {key} is corrupt") from exc
        else:
            values = [None] * size
        exact = self._query(f"SELECT seq, value FROM exact WHERE key = ?{self._in_exact} "
                            "ORDER BY seq", (found.id,))
        if exact:
            positions = np.searchsorted(self._all_seqs, [row[0] for row in exact]).tolist()
            for position, (_, text) in zip(positions, exact, strict=True):
                values[position] = json.loads(text)
        self._values[key] = values
        return values

    def _coded_codes(self, key: str) -> tuple[np.ndarray, list[Any]]:
        """The codes of a key read in bulk over all experiments, and their values, the
        last None (the code of an absent key: no value read in bulk is None)."""
        coded = self._coded[key]
        table = [*coded.values, None]
        full = np.full(self._all_seqs.size, len(table) - 1, dtype=np.int64)
        full[self._present_all(key)] = coded.codes
        return full, table

    def codes(self, key: str) -> KeyCodes:
        """``key`` over the selected experiments as codes into its distinct values."""
        present_all = self._present_all(key)
        if key not in self._keys or not present_all.any():
            size = len(self)
            return KeyCodes(np.zeros(size, dtype=np.int64), [None], np.zeros(size, dtype=bool))
        known = self._infos.get(key)
        if known is not None and known.single and key not in self._values:
            # One value everywhere (told by the survey): nothing to read.
            one = [known.first] if known.first is None else [known.first, None]
            full = np.where(present_all, 0, len(one) - 1).astype(np.int64)
            return KeyCodes(self._selected(full), one, self._selected(present_all))
        if key in self._coded and key not in self._values:
            full, table = self._coded_codes(key)
            return KeyCodes(self._selected(full), table, self._selected(present_all))
        all_values = self._all_values(key)
        held = (all_values if present_all.all()
                else list(itertools.compress(all_values, present_all.tolist())))
        index: dict[Any, int] = {}
        values: list[Any] = []
        ints = types_are_ints(held)
        found = self._keys[key]
        if found.column and found.type != JSON and found.id not in self._exact_keys():
            # Every value is of the column's one type, or None: a dict tells them apart
            # as their JSON texts do, without building a marker for each. Integers are
            # numbered in order, anything else in the order first held; all at C speed.
            distinct = sorted(set(held)) if ints else dict.fromkeys(held)
            plain = {value: code for code, value in enumerate(distinct)}
            codes = np.fromiter(map(plain.__getitem__, held), dtype=np.int64, count=len(held))
            values = list(plain)
            if None not in plain:
                values.append(None)
            full = np.full(self._all_seqs.size, values.index(None), dtype=np.int64)
            full[present_all] = codes
            return KeyCodes(self._selected(full), values, self._selected(present_all))
        if ints:
            values = sorted(set(held))
            index = {(int, v): i for i, v in enumerate(values)}
        for value in held:
            marker = _marker(value)
            if marker not in index:
                index[marker] = len(values)
                values.append(value)
        if (type(None), None) not in index:
            values.append(None)  # the code of an absent key
        none = index.get((type(None), None), len(values) - 1)
        full = np.full(self._all_seqs.size, none, dtype=np.int64)
        full[present_all] = [index[_marker(v)] for v in held]
        return KeyCodes(self._selected(full), values, self._selected(present_all))

    def first_value(self, key: str) -> Any:
        """The first scalar stored under ``key`` (the only one where :meth:`info` says
        it is single); None when there is none."""
        found = self.info(key)
        return None if found is None else found.first

    def other_than(self, key: str, value: str) -> tuple[np.ndarray, list[Any]]:
        """The positions of the selected experiments whose ``key`` is anything but the
        string ``value`` (``exp.status`` other than ``ok``), and those values."""
        if key not in self._keys:
            return np.zeros(0, dtype=np.int64), []
        present = self._present_all(key)
        texts: list[Any] | None = None
        if key == "exp.status" and key not in self._values:
            # The experiments table keeps the status as text: only the rows whose text
            # is not ``value`` can hold anything else, and only those are read. Where
            # every value of the key is a text (or None), that text is the value.
            rows = self._query(f"SELECT e.seq, e.status FROM {self._experiments} "
                               "WHERE e.status IS NOT ? ORDER BY e.seq", (value,))
            candidates = np.searchsorted(self._all_seqs, [row[0] for row in rows])
            found = self._keys[key]
            if found.type == TEXT and found.id not in self._exact_keys():
                texts = [row[1] for row in rows]
        else:
            candidates = np.arange(self._all_seqs.size)
        kept = present[candidates]
        if self._mask is not None:
            kept &= self._mask[candidates]
        candidates = candidates[kept]
        held = (self._values_at(key, candidates) if texts is None
                else list(itertools.compress(texts, kept.tolist())))
        keep = [i for i, v in enumerate(held) if not (type(v) is str and v == value)]
        # Positions among the selected experiments.
        selected = candidates if self._mask is None else np.cumsum(self._mask)[candidates] - 1
        return selected[keep].astype(np.int64), [held[i] for i in keep]

    def _values_at(self, key: str, all_positions: np.ndarray) -> list[Any]:
        """The values of ``key`` of the experiments at ``all_positions`` (among all),
        read row by row when they are few and the key's column has not been read."""
        if key in self._values or all_positions.size > self._all_seqs.size // 8:
            values = self._all_values(key)
            return [values[i] for i in all_positions.tolist()]
        found = self._keys[key]
        seqs = self._all_seqs[all_positions].tolist()
        out: list[Any] = [None] * len(seqs)
        if found.column:
            for start in range(0, len(seqs), 500):
                part = seqs[start:start + 500]
                marks = ", ".join("?" * len(part))
                rows = dict(self._query(
                    f"SELECT r.seq, {found.ref} FROM {ROWS} WHERE r.seq IN ({marks})",
                    part))
                decoded = decode_column([rows.get(seq) for seq in part], found.type)
                out[start:start + len(part)] = decoded
        where = {seq: i for i, seq in enumerate(seqs)}
        for seq, text in self._query("SELECT seq, value FROM exact WHERE key = ?", (found.id,)):
            if seq in where:
                out[where[seq]] = json.loads(text)
        return out

    def numbers(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``key`` over the selected experiments as floats, and which hold a finite
        number (an int or a float, not a bool: what a report can average)."""
        found = self._keys.get(key)
        if found is None:
            values = np.full(self._all_seqs.size, np.nan)
        elif key in self._values or not found.column or found.type not in (REAL, INTEGER):
            values = np.full(self._all_seqs.size, np.nan)
            for position, held in enumerate(self._all_values(key)):
                if type(held) in (int, float):
                    values[position] = _as_float(held)
        else:
            # A column of numbers, converted by NumPy (NULL is NaN); a value it does not
            # hold exactly is in exact.
            read = self._floats.pop(key, None)  # read in bulk by survey()
            if read is None:
                rows = self._query(
                    f"SELECT CASE WHEN typeof({found.ref}) IN ('integer', 'real') "
                    f"THEN {found.ref} END FROM {self._rows} ORDER BY r.seq")
                if len(rows) != self._all_seqs.size:
                    raise ResultsError(f"{self.path}: the rows of results do not match the "
                                       "experiments (the file was changed by hand?)")
                read = np.array(rows, dtype=float).reshape(-1)
            values = read
            exact = self._query(f"SELECT seq, value FROM exact WHERE key = ?{self._in_exact}",
                                (found.id,))
            if exact:
                positions = np.searchsorted(self._all_seqs, [row[0] for row in exact])
                for position, (_, text) in zip(positions.tolist(), exact, strict=True):
                    held = json.loads(text)
                    values[position] = _as_float(held) if type(held) in (int, float) else np.nan
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
        if key not in self._keys:
            return default
        all_position = int(self._positions()[position])
        if not self._present_all(key)[all_position]:
            return default
        return self._values_at(key, np.array([all_position]))[0]

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


def _integers(text: str | None) -> np.ndarray:
    """The integers of SQLite's ``group_concat`` of integers (None: of no rows)."""
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.fromstring(text, dtype=np.int64, sep=",")


def _as_float(value: int | float) -> float:
    """``value`` as a float; NaN for an int too large for one (not a number a report
    can average either)."""
    try:
        return float(value)
    except OverflowError:
        return math.nan


def types_are_ints(values: list[Any]) -> bool:
    """Whether every value is an ``int`` (not a bool): their codes follow their order."""
    return bool(values) and set(map(type, values)) == {int}


def _marker(value: Any) -> Any:
    """What tells two values apart as their JSON texts do, hashable."""
    if isinstance(value, (list, dict)):
        return ("json", json.dumps(value, sort_keys=True))
    return (type(value), value)


def _varies(values: list[Any]) -> bool:
    return len({_marker(v) for v in values}) > 1
