"""Columns of a store read in bulk: each column SQLite hands over as one text, which
NumPy parses, instead of a Python object per value.

Over a million records, ``sqlite3`` building a Python object for each value of the
few keys a report groups by costs seconds; ``group_concat`` of a column is one
string, parsed at C speed (integers by NumPy, texts split on a separator none of
them holds, floats as two integers SQL computes exactly), and the distinct values
coded with NumPy or a dict. What cannot be read so is said (None), and the caller
reads that column row by row:

- a column whose present values include NULL (a key held as ``None``): the text
  skips NULLs, so the values would not line up with the records;
- a text holding the separator (``\\x1f``): it splits into one value too many;
- rows that SQLite did not aggregate in ``seq`` order (it promises no order; the
  ``seq`` of the rows, aggregated beside, tells);
- floats outside 1e-280 to 1e300, or all floats where SQLite lacks the math
  functions the split needs (:func:`floats_exact`, checked once per connection).

Example::

    texts = [seq_text("r.seq"), *column_text('r."exp.model"', TEXT),
             *float_texts('r."results.time"')]
    row = db.execute(f"SELECT {', '.join(texts)} FROM results_scalars AS r").fetchone()
    coded = parse_coded(row[1:3], TEXT, present_count)  # Coded(codes=..., values=[...])
    times = parse_floats(row[3], row[4], size)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlbench.results.store.columns import BOOLEAN, INTEGER, REAL, TEXT

#: The separator of texts: a control character values do not hold in practice
#: (one that does sends its column to the row-by-row read).
SEPARATOR = "\x1f"

#: A double ``v`` as two integers SQL computes exactly, ``v = m * 2**(e - 60)``:
#: ``e`` is ``log2(|v|)`` cut to an integer, within one of v's binary exponent (as
#: ``log2`` rounds, and the cut goes towards zero), so that ``m`` holds v's 53 bits
#: in 60 to 62 bits of an integer: multiplying by a power of two and ``CAST`` of an
#: integral double are exact. (Texts from SQLite's ``printf`` cost twice as much to
#: make and to parse, and 17 digits of SQLite 3.40 are off in the last digit for some
#: large exponents.) Outside 1e-280 to 1e300, where ``power`` over- or underflows,
#: and for infinities, the exponent is :data:`_OUTSIDE` and the column is read row by
#: row; NULL or a text is :data:`_NOT_A_NUMBER`, NaN (a text in a column of numbers
#: is in ``exact`` too, which corrects it). The common case takes the first branch.
_EXPONENT = "CAST(log2(abs({0})) AS INTEGER)"
_MANTISSA = "ifnull(CAST({0} * power(2, 60 - " + _EXPONENT + ") AS INTEGER), 0)"
_NOT_A_NUMBER, _OUTSIDE = 100_000, 100_001
_EXPONENT_OR_MARK = ("CASE WHEN abs({0}) BETWEEN 1e-280 AND 1e300 THEN " + _EXPONENT
                     + " WHEN typeof({0}) NOT IN ('integer', 'real') THEN "
                     + f"{_NOT_A_NUMBER} WHEN {{0}} = 0 THEN 0 ELSE {_OUTSIDE} END")

#: Doubles that check the conversion once per connection: extremes of the range,
#: halfway cases, powers of two and their neighbours (where ``log2`` rounds).
_CHECKED = (0.1, 1 / 3, 2 / 3, 1e23, 1.0, 2.0, 0.5, 1024.0, 1.0000000000000002,
            0.9999999999999999, 2.0 ** 52 + 1, 2.0 ** 53, 9007199254740993.0,
            1.4634758521019183e+228, 1.2309183894571453e+207, 1.0392537651625673e+127,
            0.14415961271963373, 123456.789, 4.35, 2.675, 1.000001e-280, 9.99999e299,
            8.98846567431158e+299, 3.141592653589793, 6.02214076e23, 1.602176634e-19,
            2.0 ** -900, 2.0 ** 900 * (1 - 2.0 ** -53), 7, 2 ** 62 + 1, 2 ** 63 - 1)

#: The types whose columns are read in bulk for coding.
CODED_TYPES = (INTEGER, REAL, TEXT, BOOLEAN)

_BOOLS = {0: False, 1: True}


@dataclass
class Coded:
    """A column's values over the records holding its key: ``codes[i]`` indexes
    ``values``, integers numbered in their order, anything else in the order first
    held (as :meth:`~dlbench.results.store.arrays.StoreArrays.codes` numbers them)."""

    codes: np.ndarray
    values: list[Any]


def floats_exact(db: sqlite3.Connection) -> bool:
    """Whether SQL on this connection splits doubles into integers exactly
    (:func:`float_texts`): SQLite may lack its math functions (``log2``, ``power``:
    a compile option), and ``pow`` is the C library's."""
    rng = np.random.default_rng(20261126)
    drawn = rng.normal(0.0, 1.0, 64) * 10.0 ** rng.integers(-270, 290, 64)
    checked = [*_CHECKED, *(-v for v in _CHECKED), *drawn.tolist()]
    rows = ", ".join("(?)" for _ in checked)
    mantissas, exponents = float_texts("x")
    try:
        found = db.execute(f"WITH t(x) AS (VALUES {rows}) SELECT {mantissas}, {exponents} "
                           "FROM t", checked).fetchone()
    except sqlite3.Error:
        return False
    parsed = parse_floats(found[0], found[1], len(checked))
    return parsed is not None and bool(np.array_equal(parsed, np.array(checked, dtype=float)))


def column_text(ref: str, sql_type: str) -> tuple[str, str]:
    """The SQL of the two aggregates that read column ``ref`` (of ``sql_type``, one of
    :data:`CODED_TYPES`) in bulk: its values as one text (NULLs left out) and, for
    texts, how many are not NULL (integers tell by their number: none holds the
    separator); :func:`parse_coded` reads them."""
    if sql_type == TEXT:
        # The separator as a literal: char(31) would be a call, and a string allocated,
        # per row (a third of the column's cost, and a lock two scans in parallel share).
        return f"group_concat({ref}, '{SEPARATOR}')", f"COUNT({ref})"
    return f"group_concat({ref})", "NULL"


#: How the values of one aggregate over parts of the rows make the aggregate over all
#: of them (:func:`join_parts`): texts of numbers joined by a comma, texts of texts by
#: :data:`SEPARATOR`, counts added; None, an aggregate that is NULL throughout.
COMMA, SUM = ",", "+"


def column_joins(sql_type: str) -> tuple[str, str | None]:
    """How each of :func:`column_text`'s two aggregates joins over parts."""
    return (SEPARATOR, SUM) if sql_type == TEXT else (COMMA, None)


def join_parts(parts: Sequence[Sequence[Any]], joins: Sequence[str | None]) -> tuple[Any, ...]:
    """The row of aggregates over all the rows, from the rows of the same aggregates
    over consecutive parts of them (in order), each aggregate joined as ``joins``
    says (:data:`COMMA`, :data:`SEPARATOR`, :data:`SUM` or None). A part with no rows
    has NULL texts and zero counts."""
    joined: list[Any] = []
    for index, join in enumerate(joins):
        values = [part[index] for part in parts]
        if join is None:
            joined.append(None)
        elif join == SUM:
            joined.append(sum(int(v or 0) for v in values))
        else:
            texts = [v for v in values if v is not None]
            joined.append(join.join(texts) if texts else None)
    return tuple(joined)


#: A text column is coded in SQL against a dictionary of at most this many texts
#: (:func:`dictionary_text`; a ``CASE`` of as many branches per row).
DICTIONARY_MAX = 64

#: How :func:`dictionary_text`'s three aggregates join over parts.
DICTIONARY_JOINS: tuple[str | None, ...] = (COMMA, SEPARATOR, SUM)


def dictionary_text(ref: str, values: Sequence[str]) -> tuple[list[str], list[str]]:
    """The SQL of the three aggregates that read text column ``ref`` coded against
    ``values`` (distinct texts, a few: those of the first rows read), and the
    parameters they take: every row's index in ``values`` (-1 for NULL and for a
    text not among them), those other texts (joined by :data:`SEPARATOR`, NULLs left
    out), and how many values are not NULL. :func:`parse_dictionary` reads them.

    SQLite hands over a million small integers as one text NumPy parses; the texts
    themselves would be a million Python strings to split and code."""
    if not values:
        return ["group_concat(-1)", f"group_concat({ref}, '{SEPARATOR}')", f"COUNT({ref})"], []
    branches = " ".join(f"WHEN ? THEN {index}" for index in range(len(values)))
    marks = ", ".join("?" * len(values))
    return ([f"group_concat(CASE {ref} {branches} ELSE -1 END)",
             f"group_concat(CASE WHEN {ref} IN ({marks}) THEN NULL ELSE {ref} END, "
             f"'{SEPARATOR}')", f"COUNT({ref})"], [*values, *values])


def parse_dictionary(found: Sequence[Any], values: Sequence[str], present: np.ndarray
                     ) -> Coded | None:
    """The values of :func:`dictionary_text`'s three aggregates (``found``) coded as
    :func:`parse_coded` codes a text column, over the records ``present`` says hold
    the key (``present`` over every row read); None when they cannot say (a NULL
    among them, another text holding the separator, a damaged value)."""
    codes_text, others_text, count = found
    held = int(np.count_nonzero(present))
    if count != held:
        return None  # a key held as None
    codes = parse_integers(codes_text)
    if codes is None or codes.size != present.size:
        return None
    codes = codes[present]
    if held == 0:
        return Coded(np.zeros(0, dtype=np.int64), [])
    coding = {value: index for index, value in enumerate(values)}
    missing = np.flatnonzero(codes < 0)
    if missing.size:
        others = others_text.split(SEPARATOR) if others_text is not None else []
        if len(others) != missing.size:
            return None  # a text holds the separator
        codes[missing] = [coding.setdefault(text, len(coding)) for text in others]
    table = list(coding)
    coded = _first_held(*dense_codes(codes))
    coded.values = [table[index] for index in coded.values]
    return coded


def seq_text(ref: str) -> str:
    """The SQL of one text of the rows' ``seq`` (column ``ref``), in the order the
    other aggregates of the statement saw the rows: the caller checks that order
    (SQLite promises none, though a scan gives the rows in ``seq`` order)."""
    return f"group_concat({ref})"


def parse_integers(text: str | None) -> np.ndarray | None:
    """The integers of a ``group_concat`` of integers (none for None); None when the
    text holds anything else."""
    if not text:
        return np.zeros(0, dtype=np.int64)
    try:
        return np.fromstring(text, dtype=np.int64, sep=",")
    except ValueError:
        return None


def float_texts(ref: str) -> tuple[str, str]:
    """The SQL of two texts of column ``ref`` as floats (NaN where it holds no number:
    NULL, a text), the integers of :data:`_MANTISSA` and :data:`_EXPONENT_OR_MARK`:
    :func:`parse_floats` reads them."""
    return (f"group_concat({_MANTISSA.format(ref)})",
            f"group_concat({_EXPONENT_OR_MARK.format(ref)})")


def parse_floats(mantissas: str | None, exponents: str | None, size: int
                 ) -> np.ndarray | None:
    """The ``size`` floats of :func:`float_texts`' two texts; None when they do not
    hold that many, or a number is outside the range they hold exactly."""
    if size == 0:
        return np.zeros(0)
    mantissa, exponent = parse_integers(mantissas), parse_integers(exponents)
    if mantissa is None or exponent is None or not mantissa.size == exponent.size == size:
        return None
    if np.any(exponent == _OUTSIDE):
        return None
    nan = exponent == _NOT_A_NUMBER
    # Exact: a mantissa holds at most 53 significant bits, and ldexp scales exactly.
    values = np.ldexp(mantissa.astype(float), np.where(nan, 0, exponent - 60).astype(np.int32))
    values[nan] = np.nan
    return np.asarray(values, dtype=float)


def code_floats(values: np.ndarray) -> Coded | None:
    """The floats of the records holding a key coded in the order first held; None
    when one of them is no number (a NULL: the key held as None)."""
    if np.isnan(values).any():
        return None
    return _first_held(*dense_codes(values))


def parse_coded(found: Sequence[Any], sql_type: str, held: int) -> Coded | None:
    """The values of :func:`column_text`'s two aggregates (``found``) coded, for a
    column (text, integer or boolean) whose key ``held`` records hold; None when the
    text cannot say (a NULL among them, a text holding the separator, a damaged
    value)."""
    text, count = found
    if count is not None and count != held:
        return None
    if held == 0:
        return Coded(np.zeros(0, dtype=np.int64), [])
    if sql_type == TEXT:
        texts = text.split(SEPARATOR)
        if len(texts) != held:
            return None  # a value holds the separator
        coding = {value: code for code, value in enumerate(dict.fromkeys(texts))}
        codes = np.fromiter(map(coding.__getitem__, texts), dtype=np.int64, count=held)
        return Coded(codes, list(coding))
    numbers = parse_integers(text)
    if numbers is None or numbers.size != held:
        return None
    distinct, codes = dense_codes(numbers)
    if sql_type == INTEGER:
        return Coded(codes, distinct.tolist())  # integers in their order
    coded = _first_held(distinct, codes)
    coded.values = [_BOOLS.get(v, v) for v in coded.values]
    return coded


#: Integers spanning up to this many values are coded by a table, not a sort.
_TABLE = 1 << 22


def dense_codes(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``numbers`` in order, and each number's index among them
    (``numpy.unique(numbers, return_inverse=True)``, in O(n) for integers of a
    small span: keys a report groups by, shapes)."""
    if numbers.size and numbers.dtype.kind == "i":
        low, high = int(numbers.min()), int(numbers.max())
        if high - low < _TABLE:
            offsets = numbers - low
            seen = np.zeros(high - low + 1, dtype=bool)
            seen[offsets] = True
            rank = np.cumsum(seen, dtype=np.int64) - 1
            return np.flatnonzero(seen) + low, rank[offsets]
    distinct, inverse = np.unique(numbers, return_inverse=True)
    return distinct, inverse.reshape(-1).astype(np.int64)


def _first_held(distinct: np.ndarray, codes: np.ndarray) -> Coded:
    """``codes`` into ``distinct`` renumbered in the order first held."""
    if distinct.size <= 16:
        # A pass per value: faster than a scatter over a million codes.
        firsts = np.array([int(np.argmax(codes == code)) for code in range(distinct.size)],
                          dtype=np.int64)
    else:
        firsts = np.full(distinct.size, codes.size, dtype=np.int64)
        np.minimum.at(firsts, codes, np.arange(codes.size, dtype=np.int64))
    order = np.argsort(firsts, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return Coded(rank[codes], distinct[order].tolist())
