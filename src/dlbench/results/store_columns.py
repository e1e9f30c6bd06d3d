"""How the results store keeps values: one narrow table per key, typed values.

A key's scalar values (numbers, strings, booleans, null) live in ``v_<id>(seq, v)``,
one row per experiment that has the key; its lists and dicts (``results.time_data``,
the monitor's series, ``sys.env``) live apart, in ``s_<id>(seq, v)`` (JSON text, or
for a list of floats their raw doubles: see :func:`encode_series`), so that reading
scalars never reads a series. ``<id>`` is the key's row in the
``keys`` table, which also says which kinds of value the key holds and whether every
scalar stored so far is the same (then readers need not read its table at all).

A scalar is stored as SQLite's own type where one exists (INTEGER for a 64-bit
``int``, REAL for a ``float``, TEXT for a ``str``), so that SQL compares it exactly;
the rest (``true``, ``false``, ``null``, NaN, an integer beyond 64 bits, a string
SQLite cannot encode) is a BLOB holding its JSON text.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

#: Bits of ``keys.kinds``: the kinds of value stored under a key, ever.
INT, FLOAT, TEXT, CONST, BLOB, SERIES = 1, 2, 4, 8, 16, 32
#: The kinds kept in the key's scalar table.
SCALAR_KINDS = INT | FLOAT | TEXT | CONST | BLOB

#: BLOB values that are decoded by a table lookup rather than by JSON.
CONSTANTS: dict[bytes, Any] = {b"true": True, b"false": False, b"null": None}
_TRUE, _FALSE, _NULL = b"true", b"false", b"null"
_INT64 = (-(2**63), 2**63 - 1)


def encode(value: Any) -> tuple[Any, int]:
    """``(stored, kind)`` of a scalar value; ``(JSON text, SERIES)`` of a list or dict.

    ``TypeError`` for a value JSON cannot hold (as ``json.dumps`` raises it).
    """
    cls = type(value)
    if cls is str:
        if value.isascii():
            return value, TEXT
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate: SQLite's TEXT is UTF-8, JSON escapes it.
            return json.dumps(value).encode(), BLOB
        return value, TEXT
    if cls is float:
        return (value, FLOAT) if value == value else (b"NaN", BLOB)
    if cls is int:
        if _INT64[0] <= value <= _INT64[1]:
            return value, INT
        return str(value).encode(), BLOB
    if value is True:
        return _TRUE, CONST
    if value is False:
        return _FALSE, CONST
    if value is None:
        return _NULL, CONST
    if isinstance(value, (list, tuple, dict)):
        return encode_series(value), SERIES
    # Subclasses (an IntEnum, NumPy's float64) are stored as the JSON value they write.
    return encode(json.loads(json.dumps(value)))


def encode_series(value: list[Any] | tuple[Any, ...] | dict[str, Any]) -> str | bytes:
    """A list or dict as stored: JSON text, or, for a list of floats only (batch times,
    monitor samples), their IEEE 754 doubles, which write and read many times faster
    and come back exactly (NaN, infinities and -0.0 included)."""
    if type(value) is list and value and set(map(type, value)) == {float}:
        return array("d", value).tobytes()
    return json.dumps(value)


def decode_series(stored: str | bytes) -> Any:
    """The list or dict :func:`encode_series` stored."""
    if type(stored) is bytes:
        return array("d", stored).tolist()
    return json.loads(stored)


_BOOLS = {True: b"true", False: b"false"}


def encode_column(values: Sequence[Any]) -> tuple[list[Any], int] | None:
    """The stored scalars of a column of values of one type, and its kind, when a
    check at C speed shows they need no conversion (or one by table); None otherwise
    (then :func:`encode` each value)."""
    types = set(map(type, values))
    if len(types) != 1:
        return None
    cls = types.pop()
    if cls is float:
        return None if any(map(math.isnan, values)) else (list(values), FLOAT)
    if cls is str:
        return (list(values), TEXT) if all(map(str.isascii, values)) else None
    if cls is int:
        fits = _INT64[0] <= min(values) and max(values) <= _INT64[1]
        return (list(values), INT) if fits else None
    if cls is bool:
        return list(map(_BOOLS.__getitem__, values)), CONST
    if cls is type(None):
        return [_NULL] * len(values), CONST
    return None


def decode(stored: Any) -> Any:
    """The value of a stored scalar (see :func:`encode`)."""
    if type(stored) is bytes:
        found = CONSTANTS.get(stored, CONSTANTS)
        return json.loads(stored) if found is CONSTANTS else found
    return stored


def decode_column(values: list[Any], kinds: int) -> list[Any]:
    """Decode a column of stored scalars of a key whose ``keys.kinds`` is ``kinds``."""
    if kinds & CONST:
        # dict.get(v, v) through map runs at C speed; only BLOB constants change.
        values = list(map(CONSTANTS.get, values, values))
    if kinds & BLOB:
        values = [decode(v) if type(v) is bytes else v for v in values]
    return values


def same(a: Any, b: Any) -> bool:
    """Whether two stored scalars are the same value: same type, equal, and for
    floats the same sign of zero (0.0 and -0.0 print differently)."""
    if a is b:
        return True
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not float or a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b)


def series_wanted(name: str, series: bool | Collection[str]) -> bool:
    """Whether a reader asking for ``series`` (all: True, none: False, or names, where
    one ending in ``*`` stands for every key it starts, ``"exp.*"``) takes the list
    or dict under ``name``."""
    if isinstance(series, bool):
        return series
    return name in series or any(
        wanted.endswith("*") and name.startswith(wanted[:-1]) for wanted in series)


@dataclass
class KeyInfo:
    """One row of the ``keys`` table."""

    id: int
    name: str
    kinds: int = 0
    first: Any = None
    constant: bool = True

    @property
    def scalars(self) -> str:
        """The name of the key's scalar table."""
        return f"v_{self.id}"

    @property
    def series(self) -> str:
        """The name of the key's series table."""
        return f"s_{self.id}"

    def has_scalars(self) -> bool:
        """Whether any scalar value was ever stored under the key."""
        return bool(self.kinds & SCALAR_KINDS)

    def has_series(self) -> bool:
        """Whether any list or dict was ever stored under the key."""
        return bool(self.kinds & SERIES)

    def single_value(self) -> bool:
        """Whether every value stored under the key is one scalar (``first``), so that
        a reader knows it from the record's shape alone."""
        return self.constant and self.has_scalars() and not self.has_series()


KEYS_COLUMNS = "id, name, kinds, first, constant"


def key_from_row(row: tuple[Any, ...]) -> KeyInfo:
    """A :class:`KeyInfo` from ``SELECT {KEYS_COLUMNS} FROM keys``."""
    return KeyInfo(int(row[0]), str(row[1]), int(row[2]), row[3], bool(row[4]))
