"""Columns of a store read in bulk: each column SQLite hands over as one text, which
NumPy parses, instead of a Python object per value.

Over a million records, ``sqlite3`` building a Python object for each value of the
few keys a report groups by costs seconds; ``group_concat`` of a column is one
string, parsed at C speed (integers and floats by NumPy, texts split on a separator
none of them holds), and the distinct values coded with NumPy or a dict. What
cannot be read so is said (None), and the caller reads that column row by row:

- a column whose present values include NULL (a key held as ``None``): the text
  skips NULLs, so the values would not line up with the records;
- a text holding the separator (``\\x1f``): it splits into one value too many;
- rows that SQLite did not aggregate in ``seq`` order (it promises no order; the
  ``seq`` of the rows, aggregated beside, tells);
- floats, where SQLite's ``printf`` does not give back every double exactly
  (:func:`floats_exact`, checked once per connection).

Example::

    expressions = [column_text('r."exp.model"', TEXT), float_text('r."results.time"')]
    row = db.execute(f"SELECT {', '.join(expressions)} FROM results_scalars AS r").fetchone()
    coded = parse_coded(row[0:2], TEXT, present_count)  # Coded(codes=..., values=[...])
    times = parse_floats(row[2], size)
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

#: A double as a text NumPy parses back to the same double: 21 significant digits
#: (``!`` allows up to 26), where 17 from SQLite's ``printf`` (long double arithmetic)
#: are off in the last digit for some large exponents.
_FLOAT_FORMAT = "printf('%!.20e', {})"

#: Doubles that check SQLite's conversion: extremes, subnormals, halfway cases, and
#: ones whose 17-digit text from SQLite 3.40 is wrong.
_CHECKED = (0.1, 1 / 3, 2 / 3, 1e23, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
            9007199254740993.0, 1.4634758521019183e+228, 1.2309183894571453e+207,
            -1.0392537651625673e+127, 0.14415961271963373, 123456.789, 4.35, 2.675,
            1e-300, 8.98846567431158e+307, 3.141592653589793, 1.0000000000000002,
            0.9999999999999999, 6.02214076e23, 1.602176634e-19)

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
    """Whether SQLite's ``printf`` on this connection writes doubles that NumPy reads
    back exactly (it computes in long double, whose width the platform decides)."""
    rng = np.random.default_rng(20261126)
    drawn = rng.normal(0.0, 1.0, 64) * 10.0 ** rng.integers(-300, 300, 64)
    checked = [*_CHECKED, *(-v for v in _CHECKED), *drawn.tolist()]
    texts = ", ".join(_FLOAT_FORMAT.format("?") for _ in checked)
    try:
        row = db.execute(f"SELECT {texts}", checked).fetchone()
        parsed = np.array([float(t) for t in row])
    except (sqlite3.Error, ValueError):
        return False
    return bool(np.array_equal(parsed, np.array(checked)))


def column_text(ref: str, sql_type: str) -> tuple[str, str]:
    """The SQL of the two aggregates that read column ``ref`` (of ``sql_type``, one of
    :data:`CODED_TYPES`) in bulk: its values as one text (NULLs left out) and how many
    are not NULL; :func:`parse_coded` reads them."""
    if sql_type == TEXT:
        return f"group_concat({ref}, char(31))", f"COUNT({ref})"
    if sql_type == REAL:
        # printf() of NULL is a text (of 0): NULL left NULL, as group_concat skips it.
        text = _FLOAT_FORMAT.format(ref)
        return f"group_concat(CASE WHEN {ref} IS NOT NULL THEN {text} END)", f"COUNT({ref})"
    return f"group_concat({ref})", f"COUNT({ref})"


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


def float_text(ref: str) -> str:
    """The SQL of one text of column ``ref`` as floats, NaN where it holds no number
    (NULL, a text): :func:`parse_floats` reads it."""
    text = _FLOAT_FORMAT.format(ref)
    return (f"group_concat(CASE WHEN typeof({ref}) IN ('integer', 'real') THEN {text} "
            "ELSE 'nan' END)")


def parse_floats(text: str | None, size: int) -> np.ndarray | None:
    """The ``size`` floats of :func:`float_text`'s text; None when it does not hold
    that many."""
    if not text:
        return np.zeros(0) if size == 0 else None
    try:
        values = np.fromstring(text, dtype=float, sep=",")
    except ValueError:
        return None
    return values if values.size == size else None


def parse_coded(found: Sequence[Any], sql_type: str, held: int) -> Coded | None:
    """The values of :func:`column_text`'s two aggregates (``found``) coded, for a
    column whose key ``held`` records hold; None when the text cannot say (a NULL
    among them, a text holding the separator, a damaged value)."""
    text, count = found
    if count != held:
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
    try:
        numbers = np.fromstring(text, dtype=float if sql_type == REAL else np.int64, sep=",")
    except ValueError:
        return None
    if numbers.size != held:
        return None
    distinct, firsts, inverse = np.unique(numbers, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int64)
    if sql_type == INTEGER:
        return Coded(inverse, distinct.tolist())  # integers in their order
    # Numbered in the order first held.
    order = np.argsort(firsts, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    values = distinct[order].tolist()
    if sql_type == BOOLEAN:
        values = [_BOOLS.get(v, v) for v in values]
    return Coded(rank[inverse], values)
