"""How a key's values are kept in the ``results`` table: one column, of a declared type.

A key's column type comes from where the key is declared, so that every store types
it alike: ``results.*``, ``sys.*`` and ``hw.*`` from the key table
(:func:`dlbench.results.keys.lookup.lookup`), parameters (``exp.*``, ``pytorch.*``...) from
the parameter registry; a key declared nowhere (or as ``any``/``object``) takes the
type of its first value. The SQL types:

=========  ==========================  ====================================
type       Python values kept exactly  what SQL sees
=========  ==========================  ====================================
INTEGER    ``int`` (64 bits)           the integer
REAL       ``float`` (not NaN, -0.0)   the number
TEXT       ``str`` (valid UTF-8)       the text
BOOLEAN    ``bool``                    1 or 0
JSON       ``list``, ``dict``          their JSON text
=========  ==========================  ====================================

``null`` is SQL's NULL in every column (the record's shape tells it from a key the
record lacks). A value its column cannot hold exactly (an ``int`` in a REAL column,
NaN, ``True`` in an INTEGER column, a list where numbers are expected) is still
written to the column as near as SQL allows, for SQL readers, and kept exactly, as
JSON, in the ``exact`` table, which readers of records take first. Checking that a
column of values needs no such care runs at C speed (``set(map(type, ...))``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.results.keys import lookup as result_keys

#: The declared SQL types of the columns, and what each keeps exactly.
INTEGER, REAL, TEXT, BOOLEAN, JSON = "INTEGER", "REAL", "TEXT", "BOOLEAN", "JSON"
SQL_TYPES = (INTEGER, REAL, TEXT, BOOLEAN, JSON)

#: A declared type (key table or parameter registry) → the column's SQL type.
_DECLARED = {"int": INTEGER, "float": REAL, "str": TEXT, "bool": BOOLEAN, "dict": JSON,
             "list": JSON}
_INT64 = (-(2**63), 2**63 - 1)


def declared_type(name: str) -> str | None:
    """The SQL type the declaration of key ``name`` gives it; None when no declaration
    says (an undeclared key, or one of any type)."""
    from dlbench.config.registry import REGISTRY  # the registry imports backends lazily

    found = result_keys.lookup(name)
    if found is not None:
        declared = found.type
    else:
        param = REGISTRY.get(name)
        if param is None:
            return None
        declared = param.type
    if declared.startswith("list["):
        return JSON
    return _DECLARED.get(declared)


def value_type(value: Any) -> str:
    """The SQL type of a column whose first value is ``value``."""
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return REAL
    if isinstance(value, (list, tuple, dict)):
        return JSON
    return TEXT


def column_type(name: str, value: Any) -> str:
    """The SQL type of the column made for key ``name`` when it first holds ``value``."""
    return declared_type(name) or value_type(value)


def _fits(value: Any, sql_type: str) -> bool:
    """Whether the column keeps ``value`` exactly (None always: it is NULL)."""
    cls = type(value)
    if value is None:
        return True
    if sql_type == REAL:
        return cls is float and value == value and (value != 0.0 or
                                                    math.copysign(1.0, value) > 0)
    if sql_type == INTEGER:
        return cls is int and _INT64[0] <= value <= _INT64[1]
    if sql_type == TEXT:
        if cls is not str:
            return False
        try:
            value.encode("utf-8")  # a lone surrogate is not UTF-8, SQLite's TEXT
        except UnicodeEncodeError:
            return False
        return True
    if sql_type == BOOLEAN:
        return cls is bool
    return cls is list or cls is dict


def _near(value: Any) -> Any:
    """What an SQL reader sees of a value its column cannot hold exactly."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return None if value != value else value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else str(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return dumps(value)


def dumps(value: Any) -> str:
    """A value as JSON text, as the store writes it (NaN and infinities included)."""
    # ASCII only: a lone surrogate inside a string is escaped, never written raw
    # (SQLite's TEXT is UTF-8, which cannot hold one).
    return json.dumps(value, separators=(",", ":"))


def encode_column(values: Sequence[Any], sql_type: str) -> tuple[list[Any], list[int]]:
    """The values to write to a column of ``sql_type``, and the positions of those it
    does not hold exactly (kept in the ``exact`` table as well)."""
    types = set(map(type, values))
    types.discard(type(None))
    if sql_type == JSON and types <= {list, dict}:
        return [None if v is None else dumps(v) for v in values], []
    if sql_type == BOOLEAN and types <= {bool}:
        return [None if v is None else int(v) for v in values], []
    fast = (sql_type == REAL and types <= {float} and not any(map(math.isnan, filter(None, values)))
            and 0.0 not in values) or (
        sql_type == TEXT and types <= {str} and all(v.isascii() for v in values if v is not None)
    ) or (sql_type == INTEGER and types <= {int} and all(
        _INT64[0] <= v <= _INT64[1] for v in values if v is not None))
    if fast:
        return list(values), []
    stored: list[Any] = []
    inexact: list[int] = []
    for index, value in enumerate(values):
        fits = _fits(value, sql_type)
        if not fits:
            inexact.append(index)
        if value is None:
            stored.append(None)
        elif sql_type == JSON:
            stored.append(dumps(value))  # whatever it holds, a JSON column holds JSON
        elif fits:
            stored.append(int(value) if sql_type == BOOLEAN else value)
        else:
            stored.append(_near(value))
    return stored, inexact


_BOOLS = {0: False, 1: True}

#: A value (not NULL) of a column of these types as Python's: SQL holds booleans as 1
#: and 0, lists and dicts as JSON text. Other columns' values are Python's already.
DECODERS: dict[str, Callable[[Any], Any]] = {
    BOOLEAN: lambda v: _BOOLS.get(v, v),
    JSON: lambda v: json.loads(v) if type(v) is str else v,
}


def decode_column(values: list[Any], sql_type: str) -> list[Any]:
    """The Python values of a column read back (before the ``exact`` table's)."""
    decode = DECODERS.get(sql_type)
    return values if decode is None else [None if v is None else decode(v) for v in values]


def series_wanted(name: str, series: bool | Collection[str]) -> bool:
    """Whether a reader asking for ``series`` (all: True, none: False, or names, where
    one ending in ``*`` stands for every key it starts, ``"exp.*"``) takes the list
    or dict under ``name``."""
    if isinstance(series, bool):
        return series
    return name in series or any(
        wanted.endswith("*") and name.startswith(wanted[:-1]) for wanted in series)


def quoted(name: str) -> str:
    """``name`` as an SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def column_name(name: str, key_id: int, taken: Collection[str], max_name_bytes: int = 0) -> str:
    """The column key ``name`` (numbered ``key_id``) is stored in, in a results store
    and in a history alike: its own name, unless SQL would take it for one of the
    columns ``taken`` (lower-cased: SQL names are not case-sensitive, so
    ``exp.Model`` clashes with ``exp.model``) or the database would cut it (longer
    than ``max_name_bytes``; 0: no limit); then ``name#key_id``, the name shortened
    until it fits.

    >>> column_name("exp.model", 7, set()), column_name("exp.Model", 8, {"exp.model"})
    ('exp.model', 'exp.Model#8')
    >>> column_name("user.long_name", 9, set(), max_name_bytes=8)
    'user.l#9'
    """
    fits = not max_name_bytes or len(name.encode()) <= max_name_bytes
    if name.lower() not in taken and fits:
        return name
    suffix = f"#{key_id}"
    column = name + suffix
    while max_name_bytes and len(column.encode()) > max_name_bytes:
        name = name[:-1]
        column = name + suffix
    return column


@dataclass(frozen=True)
class Key:
    """One row of the ``keys`` table: a key and its column in ``results``."""

    id: int
    name: str
    #: The column's name in ``results`` (the key's own, unless two keys differ only
    #: in case, which SQL does not tell apart); empty when ``results`` has no room
    #: left for it: then its values are all in ``exact``.
    column: str
    type: str

    @property
    def sql(self) -> str:
        """The column as SQL names it."""
        return quoted(self.column)

    @property
    def table(self) -> str:
        """The table that holds the key's column: lists and dicts (the large values,
        ``results.time_data``) apart from the scalars, so that a scan of the scalars
        reads few pages."""
        return SERIES_TABLE if self.type == JSON else SCALARS_TABLE

    @property
    def ref(self) -> str:
        """The column as a read names it: ``r.`` the scalars, ``j.`` the series
        (:data:`ROWS` joins them)."""
        return f"{'j' if self.type == JSON else 'r'}.{self.sql}"


KEYS_COLUMNS = "id, name, column_name, type"

#: The keys whose columns the store indexes (format 5): the parameter a query names
#: most (``--where '{"exp.model": "resnet50"}'``), so that a selection of a few
#: records in a million reads those rows, not every row (SQLite takes the index for
#: an equality, a list or a prefix). An index costs each write a look-up and each
#: record about 30 bytes; an index on a key that selects little (``exp.framework``
#: in a store of one framework) would make those queries slower, not faster.
INDEXED_KEYS = ("exp.model",)


def index_sql(key: Key) -> str | None:
    """The statement that indexes ``key``'s column (when not yet indexed): for the
    :data:`INDEXED_KEYS` that have a scalar column; None for any other key."""
    if key.name not in INDEXED_KEYS or not key.column or key.table != SCALARS_TABLE:
        return None
    return (f"CREATE INDEX IF NOT EXISTS {quoted('by ' + key.column)} "
            f"ON {SCALARS_TABLE} ({key.sql})")


#: The tables of the records (format 4): a row per record in each, keyed by its
#: position ``seq``; ``results`` is a view joining them, a column per key.
SCALARS_TABLE, SERIES_TABLE = "results_scalars", "results_series"

#: The records as the view joins them: ``r`` the scalar columns, ``j`` the series.
ROWS = f"{SCALARS_TABLE} AS r LEFT JOIN {SERIES_TABLE} AS j ON j.seq = r.seq"

#: The records with their bookkeeping (``e``), as reads join them (SQLite leaves out
#: the join to ``j`` where no column of it is read: ``seq`` is its key).
JOINED = (f"{SCALARS_TABLE} AS r JOIN experiments AS e ON e.seq = r.seq "
          f"LEFT JOIN {SERIES_TABLE} AS j ON j.seq = r.seq")


def key_from_row(row: tuple[Any, ...]) -> Key:
    """A :class:`Key` from ``SELECT {KEYS_COLUMNS} FROM keys``."""
    return Key(int(row[0]), str(row[1]), str(row[2] or ""), str(row[3]))
