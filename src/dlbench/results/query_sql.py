"""A query (:mod:`dlbench.results.query`) as SQL over the store's key tables.

Each key of a query becomes one condition on ``seq``: the experiments whose scalar
value matches (a ``WHERE`` on the key's table ``v_<id>``), or whose value is a list
or dict when the query would take any list or dict there (only ``$exists`` and
``$ne`` do; see :func:`_series_match`), or that lack the key when the query takes a
missing key (``{"$exists": false}``). SQL does what it does exactly: equality and
membership of strings and numbers (SQLite compares an integer and a real by value,
as Python does), ordering, a literal prefix (``"resnet"``). The rest runs in Python
inside the same statement, on that key's column only, through functions registered
on the connection (:func:`register`): a regular expression, a number written as a
string (``"16"``), an integer beyond 64 bits, and the rare stored BLOBs (NaN). Which
values match is decided by :func:`dlbench.results.query.match` in every case; the SQL
only decides it faster, and ``tests/unit/test_results_store_query.py`` checks both
agree on records of every kind of value.
"""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Mapping
from typing import Any

from dlbench.results.query import _check, _compile, match
from dlbench.results.store_columns import BLOB, CONST, FLOAT, INT, TEXT, KeyInfo, decode
from dlbench.results.values import is_number

_NUMERIC = "typeof(v) IN ('integer', 'real')"
_TEXT = "typeof(v) = 'text'"
_REGEX_SPECIAL = re.compile(r"[.^$*+?{}\[\]\\|()\x00]")
_SQL_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_BLOB_CONSTANTS = {True: "X'74727565'", False: "X'66616c7365'", None: "X'6e756c6c'"}
_INT64 = (-(2**63), 2**63 - 1)
_ANY = "__key__"


class _Fallback(Exception):
    """A condition SQL cannot say exactly: Python decides it, row by row."""


def _matches(value: Any, condition: Any) -> bool:
    return match({_ANY: value}, {_ANY: condition})


@functools.lru_cache(maxsize=64)
def _condition(text: str) -> Any:
    return json.loads(text)


def _dl_match(stored: Any, condition: str) -> int:
    return int(_matches(decode(stored), _condition(condition)))


# SQLite may call a function before the typeof() test beside it: each checks for itself.
def _dl_regex(pattern: str, value: Any) -> int:
    return int(isinstance(value, str) and _compile(pattern).match(value) is not None)


def _dl_json(value: Any) -> str | None:
    return json.dumps(value) if is_number(value) else None


def register(db: sqlite3.Connection) -> None:
    """Register the Python functions that compiled queries call on ``db``."""
    db.create_function("dl_match", 2, _dl_match, deterministic=True)
    db.create_function("dl_regex", 2, _dl_regex, deterministic=True)
    db.create_function("dl_json", 1, _dl_json, deterministic=True)


def _number(value: Any) -> bool:
    """A number SQL can bind and compare exactly (NaN compares false to everything)."""
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        raise _Fallback
    return is_number(value) and value == value


def _native(condition: Any, params: list[Any]) -> str:
    """SQL true exactly when a stored INTEGER, REAL or TEXT ``v`` matches ``condition``.

    ``v`` has no type affinity and a bound parameter none either, so SQLite converts
    neither: ``v = ?`` holds only between two numbers of equal value (an INTEGER and a
    REAL compare by value, as in Python) or two equal texts, and a text bound ranges
    over texts only (every number sorts before every text, every BLOB after). Where
    that is all a condition needs, no ``typeof()`` is evaluated for each of a million
    rows.
    """
    if isinstance(condition, dict):
        parts = [_operator(op, operand, params) for op, operand in condition.items()]
        return "(" + " AND ".join(parts) + ")"
    if isinstance(condition, str):
        return _string(condition, params)
    if isinstance(condition, list):
        texts = [e for e in condition if isinstance(e, str)]
        numbers = [e for e in condition if is_number(e) and _number(e)]
        parts = []
        # A text equals only a text, a number only a number (see _native's note).
        values = texts + numbers
        params.extend(values)
        return f"(v IN ({', '.join('?' * len(values))}))" if values else "0"
    if isinstance(condition, bool) or condition is None:
        return "0"  # true, false and null are BLOBs
    if _number(condition):
        params.append(condition)
        return "(v = ?)"
    return "0"  # NaN equals nothing


def _string(pattern: str, params: list[Any]) -> str:
    if pattern == "":
        return "(v = '')"
    if _REGEX_SPECIAL.search(pattern):
        params.append(pattern)
        text = f"({_TEXT} AND dl_regex(?, v))"
    else:
        # A pattern without special characters matches the strings it starts: those
        # from it (included) up to it with its last character's successor (excluded),
        # as SQLite compares texts by their UTF-8 bytes, in code point order.
        following = ord(pattern[-1]) + 1
        if following <= 0x10FFFF and not 0xD800 <= following <= 0xDFFF:
            params.extend((pattern, pattern[:-1] + chr(following)))
            text = "(v >= ? AND v < ?)"
        else:
            params.extend((len(pattern), pattern))
            text = f"({_TEXT} AND substr(v, 1, ?) = ?)"
    try:
        number = json.loads(pattern)
    except ValueError:
        number = None
    if is_number(number):
        # A number matches a string that is its JSON text ("16" matches 16).
        params.append(pattern)
        text = f"({text} OR ({_NUMERIC} AND dl_json(v) = ?))"
    return text


def _operator(op: str, operand: Any, params: list[Any]) -> str:
    if op == "$exists":
        return "1" if operand else "0"
    if op == "$ne":
        return f"(NOT {_native(operand, params)})"
    if op in _SQL_ORDER:
        if isinstance(operand, str):
            params.append(operand)
            return f"({_TEXT} AND v {_SQL_ORDER[op]} ?)"
        if _number(operand):
            params.append(operand)
            return f"({_NUMERIC} AND v {_SQL_ORDER[op]} ?)"
        return "0"
    raise _Fallback  # an unknown operator: match() raises its QueryError


def _scalar_sql(condition: Any, info: KeyInfo, params: list[Any]) -> str:
    """SQL over ``v`` of the key's scalar table: the value matches ``condition``."""
    text = json.dumps(condition)
    native, native_params = "0", list[Any]()
    if info.kinds & (INT | FLOAT | TEXT):
        try:
            native = _native(condition, native_params)
        except _Fallback:
            native, native_params = "dl_match(v, ?)", [text]
    blob_parts, blob_params = list[str](), list[Any]()
    if info.kinds & CONST:
        taken = [sql for value, sql in _BLOB_CONSTANTS.items() if _matches(value, condition)]
        if taken:
            blob_parts.append(f"v IN ({', '.join(taken)})")
    if info.kinds & BLOB:
        blob_parts.append(f"(v NOT IN ({', '.join(_BLOB_CONSTANTS.values())}) "
                          "AND dl_match(v, ?))")
        blob_params.append(text)
    blob = "(" + " OR ".join(blob_parts) + ")" if blob_parts else "0"
    if not info.kinds & (CONST | BLOB):
        params.extend(native_params)
        return native
    if not info.kinds & (INT | FLOAT | TEXT):
        params.extend(blob_params)
        return blob
    # The parameters go in the order their placeholders appear.
    params.extend(blob_params)
    params.extend(native_params)
    return f"(CASE WHEN typeof(v) = 'blob' THEN {blob} ELSE {native} END)"


def key_sql(
    key: str, condition: Any, info: KeyInfo | None, params: list[Any]
) -> str | tuple[str, str, list[Any]]:
    """SQL over ``seq`` of the ``experiments`` table: the experiment's ``key`` matches
    ``condition`` (``info`` is the key's catalogue entry, None when no record has it).
    When only a scalar value can match, ``(table, condition on v, its parameters)``
    instead, which :func:`where_sql` nests with the others of its kind."""
    takes_missing = match({}, {key: condition})
    alternatives = []
    scalar: tuple[str, str, list[Any]] | None = None
    if info is not None and info.has_scalars():
        own: list[Any] = []
        where = _scalar_sql(condition, info, own)
        if where != "0":
            scalar = (info.scalars, where, own)
            alternatives.append(f"seq IN (SELECT seq FROM {info.scalars} WHERE {where})")
            params.extend(own)
    if info is not None and info.has_series() and _matches([], condition):
        # A list or dict matches whatever its content (see the module's docstring).
        alternatives.append(f"seq IN (SELECT seq FROM {info.series})")
    if takes_missing:
        absent = ["1"]
        if info is not None and info.has_scalars():
            absent.append(f"seq NOT IN (SELECT seq FROM {info.scalars})")
        if info is not None and info.has_series():
            absent.append(f"seq NOT IN (SELECT seq FROM {info.series})")
        alternatives.append("(" + " AND ".join(absent) + ")")
    if scalar is not None and len(alternatives) == 1:
        del params[len(params) - len(scalar[2]):]
        return scalar
    return "(" + " OR ".join(alternatives) + ")" if alternatives else "0"


def where_sql(
    query: Mapping[str, Any], keys: Mapping[str, KeyInfo]
) -> tuple[str, list[Any]]:
    """A ``WHERE`` expression over ``experiments.seq`` selecting the experiments that
    match ``query``, and its parameters; ``keys`` is the store's key catalogue.

    The keys a scalar must match for are nested, ``seq IN (SELECT seq FROM v_a WHERE
    ... AND seq IN (SELECT seq FROM v_b WHERE ...))``: SQLite scans one key's table
    and looks the others up by ``seq``, rather than scanning each whole.
    """
    for key, condition in query.items():
        _check(condition, key)  # an invalid query is an error, not an empty selection
    params: list[Any] = []
    parts: list[str] = []
    nested: list[tuple[str, str, list[Any]]] = []
    for key, condition in query.items():
        part = key_sql(key, condition, keys.get(key), params)
        if isinstance(part, tuple):
            nested.append(part)
        else:
            parts.append(part)
    inner, inner_params = "", list[Any]()
    for table, where, own in reversed(nested):
        inner = f"SELECT seq FROM {table} WHERE {where}" + (
            f" AND seq IN ({inner})" if inner else "")
        inner_params = own + inner_params
    if inner:
        parts.insert(0, f"seq IN ({inner})")
        params[:0] = inner_params
    return (" AND ".join(parts) if parts else "1"), params
