"""A query (:mod:`dlbench.results.query`) as SQL over the columns of the records.

The SQL keeps every row that may match; :func:`dlbench.results.query.match` then
decides on the records built from those rows (:mod:`dlbench.results.store.read`), so
the SQL needs to be exact only in what it leaves out. It is exact where SQL compares
as Python does: in an INTEGER, REAL or TEXT column, equality and membership of
strings and numbers (SQLite compares an integer and a real by value, as Python
does), ordering, a literal prefix (``"resnet"``); a regular expression runs in
Python through a function registered on the connection (:func:`register`). A BOOLEAN
column is tested against the booleans the condition takes; a JSON column (lists,
dicts), a value the column does not hold exactly (kept in ``exact``) and any
condition SQL cannot say are all left for ``match`` to decide. A condition holding a
lone surrogate (``"\\ud800"``) is one: SQLite's TEXT is UTF-8, which cannot bind it,
and the values that could equal it are all in ``exact``.

``tests/unit/test_results_store_query.py`` checks that the store and a list of
records select the same records, for values of every kind.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Collection, Mapping
from typing import Any

from dlbench.results.query import _check, _compile, match
from dlbench.results.store.columns import BOOLEAN, INTEGER, REAL, TEXT, Key
from dlbench.results.values import is_number

_REGEX_SPECIAL = re.compile(r"[.^$*+?{}\[\]\\|()\x00]")
_SQL_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_INT64 = (-(2**63), 2**63 - 1)
_ANY = "__key__"


class _Fallback(Exception):
    """A condition SQL cannot say exactly: ``match`` decides it."""


def _matches(value: Any, condition: Any) -> bool:
    return match({_ANY: value}, {_ANY: condition})


# SQLite may call a function before the typeof() test beside it: each checks for itself.
def _dl_regex(pattern: str, value: Any) -> int:
    return int(isinstance(value, str) and _compile(pattern).matches(value))


def _dl_json(value: Any) -> str | None:
    return json.dumps(value) if is_number(value) else None


def register(db: sqlite3.Connection) -> None:
    """Register the Python functions that compiled queries call on ``db``."""
    db.create_function("dl_regex", 2, _dl_regex, deterministic=True)
    db.create_function("dl_json", 1, _dl_json, deterministic=True)


def _number(value: Any) -> bool:
    """A number SQL can bind and compare exactly (NaN compares false to everything)."""
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        raise _Fallback
    return is_number(value) and value == value


def _utf8(condition: Any) -> bool:
    """Whether every string in ``condition`` (operands and list elements included) is
    UTF-8, which SQLite can bind: a lone surrogate is not."""
    if isinstance(condition, str):
        try:
            condition.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(condition, dict):
        return all(_utf8(item) for item in condition.values())
    if isinstance(condition, list):
        return all(_utf8(item) for item in condition)
    return True


class _SqlColumn:
    """SQL over one typed column ``v`` (an INTEGER, REAL or TEXT value, not NULL)."""

    def __init__(self, v: str, params: list[Any]) -> None:
        self.v = v
        self.params = params
        self.numeric = f"typeof({v}) IN ('integer', 'real')"
        self.text = f"typeof({v}) = 'text'"

    def native(self, condition: Any) -> str:
        """True exactly when the column's value matches ``condition``.

        A column of declared type and a bound parameter: SQLite converts neither, so
        ``v = ?`` holds only between two numbers of equal value or two equal texts,
        and a text bound ranges over texts only (every number sorts before them).
        """
        v = self.v
        if not _utf8(condition):
            raise _Fallback
        if isinstance(condition, dict):
            return "(" + " AND ".join(self.operator(op, operand)
                                      for op, operand in condition.items()) + ")"
        if isinstance(condition, str):
            return self.string(condition)
        if isinstance(condition, list):
            values: list[Any] = [e for e in condition if isinstance(e, str)]
            values += [e for e in condition if is_number(e) and _number(e)]
            self.params.extend(values)
            return f"({v} IN ({', '.join('?' * len(values))}))" if values else "0"
        if isinstance(condition, bool) or condition is None:
            return "0"  # never an INTEGER, REAL or TEXT value in Python's eyes
        if _number(condition):
            self.params.append(condition)
            return f"({v} = ?)"
        return "0"  # NaN equals nothing

    def string(self, pattern: str) -> str:
        """A string condition: a regular expression that must match at the start."""
        v = self.v
        if pattern == "":
            return f"({v} = '')"
        if _REGEX_SPECIAL.search(pattern):
            self.params.append(pattern)
            sql = f"({self.text} AND dl_regex(?, {v}))"
        else:
            # A pattern without special characters matches the strings it starts: from
            # it (included) up to it with its last character's successor (excluded),
            # as SQLite compares texts by their UTF-8 bytes, in code point order.
            following = ord(pattern[-1]) + 1
            if following <= 0x10FFFF and not 0xD800 <= following <= 0xDFFF:
                self.params.extend((pattern, pattern[:-1] + chr(following)))
                sql = f"({v} >= ? AND {v} < ?)"
            else:
                self.params.extend((len(pattern), pattern))
                sql = f"({self.text} AND substr({v}, 1, ?) = ?)"
        try:
            number = json.loads(pattern)
        except ValueError:
            number = None
        if is_number(number):
            # A number matches a string that is its JSON text ("16" matches 16).
            self.params.append(pattern)
            sql = f"({sql} OR ({self.numeric} AND dl_json({v}) = ?))"
        return sql

    def operator(self, op: str, operand: Any) -> str:
        """One operator of a condition."""
        v = self.v
        if op == "$exists":
            return "1" if operand else "0"
        if op == "$ne":
            return f"(NOT {self.native(operand)})"
        if op in _SQL_ORDER:
            if isinstance(operand, str):
                self.params.append(operand)
                return f"({self.text} AND {v} {_SQL_ORDER[op]} ?)"
            if _number(operand):
                self.params.append(operand)
                return f"({self.numeric} AND {v} {_SQL_ORDER[op]} ?)"
            return "0"
        raise _Fallback  # an unknown operator: match() raises its QueryError


def key_sql(key: str, condition: Any, info: Key | None, params: list[Any],
            in_exact: bool = True) -> str:
    """SQL over a record's row (:data:`~dlbench.results.store.columns.JOINED`), for a
    WHERE (it may be NULL where it is not true): true for
    every row whose ``key`` may match ``condition`` (``info`` is the key's catalogue
    entry, None when no record has it; ``in_exact``: whether some of its values may be
    in ``exact``, each of which is left for ``match`` to decide)."""
    absent = match({}, {key: condition}) or _matches(None, condition)
    if info is None:
        return "1" if absent else "0"
    if not info.column:
        return "1"  # its values are all in exact
    column = info.ref
    own: list[Any] = []
    if info.type in (INTEGER, REAL, TEXT):
        try:
            native = _SqlColumn(column, own).native(condition)
        except _Fallback:
            native, own = "1", []
    elif info.type == BOOLEAN:
        taken = [str(int(flag)) for flag in (True, False) if _matches(flag, condition)]
        native = f"{column} IN ({', '.join(taken)})" if taken else "0"
    else:
        native = "1"  # lists and dicts: match decides
    if native == "1" and absent:
        return "1"
    params.extend(own)
    if not absent and not in_exact:
        # NULL makes the condition NULL or false, never true, which a WHERE takes as
        # false: the condition alone, whose terms SQLite can answer from an index
        # (``"exp.model" >= ? AND "exp.model" < ?``), a CASE around them it cannot.
        return native
    sql = f"CASE WHEN {column} IS NULL THEN {int(absent)} ELSE {native} END"
    if not in_exact:
        return f"({sql})"
    return f"({sql} OR r.seq IN (SELECT seq FROM exact WHERE key = {info.id}))"


def where_sql(query: Mapping[str, Any], keys: Mapping[str, Key],
              exact: Collection[int] | None = None) -> tuple[str, list[Any]]:
    """A ``WHERE`` expression keeping every row that may match ``query``, and its
    parameters; ``keys`` is the store's key catalogue. An invalid query raises its
    QueryError here, not an empty selection. ``exact``: the ids of the keys with
    values in ``exact``, when known (a row of a key without is not looked up there)."""
    for key, condition in query.items():
        _check(condition, key)
    params: list[Any] = []
    parts = [key_sql(key, condition, keys.get(key), params,
                     exact is None or (key in keys and keys[key].id in exact))
             for key, condition in query.items()]
    parts = [part for part in parts if part != "1"]
    return (" AND ".join(parts) if parts else "1"), params
