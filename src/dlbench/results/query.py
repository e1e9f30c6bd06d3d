"""DLBS-style JSON queries over records: ``{"exp.model": "resnet", "exp.replica_batch": [16, 32]}``.

Every key of a query must match, and a record lacking a key does not match it
(DLBS's ``strict`` policy, the one its reports use; ``{"$exists": false}`` selects
records without a key). The value decides how, as in DLBS's ``DictUtils.match``:

- ``""`` matches only the empty string (``{"exp.gpus": ""}``: CPU runs);
- any other string is a regular expression anchored at the start (``re.match``),
  in RE2's syntax and run in linear time (:mod:`dlbench.config.user_regex`),
  tested against string values, so ``"resnet"`` matches ``resnet18`` and
  ``resnet50`` but ``"net"`` matches neither, and ``"0"`` matches ``"0,1"``
  (write ``"0$"`` for one GPU); a number or bool record value matches a string
  only when its JSON text is exactly that string (``"16"`` matches 16, not 16.0),
  where DLBS would stop with a TypeError;
- a list is membership: the record value must equal one of its elements, which are
  strings, numbers, bools or null, compared as values, not patterns
  (``{"exp.gpus": ["0"]}`` matches ``"0"``, not ``"0,1"``; ``[16]`` matches 16 and
  16.0, not ``"16"``);
- a number, bool or null matches an equal value: ``1`` matches ``1.0``, but
  ``true`` never matches ``1`` (DLBS, comparing with Python's ``==``, would);
- an object holds operators, a dlbench extension: ``$ne`` (not what the operand
  would match), ``$gt``/``$gte``/``$lt``/``$lte`` (numbers against numbers, strings
  against strings; anything else does not match), ``$exists`` (bool); all must hold.

Example::

    query = parse_query('{"exp.model": "resnet", "results.time": {"$lt": 50}}', "--where")
    fast = filter_records(records, query)
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from dlbench.config.spec import TOO_MANY_DIGITS
from dlbench.config.user_regex import UserRegex, compile_user_regex
from dlbench.errors import QueryError, ResultsError
from dlbench.results.jsontext import loads_json
from dlbench.results.values import is_number as _is_number

_R = TypeVar("_R", bound=Mapping[str, Any])

_ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}
OPERATORS = ("$ne", *_ORDERING, "$exists")

_MISSING = object()


def _compile(pattern: str) -> UserRegex:
    # compile_user_regex keeps the compiled patterns: no cache of our own.
    return compile_user_regex(pattern, f"query: invalid regular expression {pattern!r}",
                              error=QueryError)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def _equal(value: Any, wanted: Any) -> bool:
    """Whether a record value is the list element ``wanted``: strings by text,
    numbers by value (16 is 16.0), bools and null by identity; types never mix."""
    if isinstance(wanted, str):
        return isinstance(value, str) and value == wanted
    if isinstance(wanted, bool) or wanted is None:
        return value is wanted
    return _is_number(value) and bool(value == wanted)


def _check(condition: Any, key: str) -> None:
    """Raise QueryError for a condition that can never be evaluated."""
    if isinstance(condition, str):
        _compile(condition)
    elif isinstance(condition, list):
        for element in condition:
            if not _is_scalar(element):
                raise QueryError(
                    f"query: {key}: a list holds the values to match (strings, numbers, "
                    f"true, false, null), got {json.dumps(element)}"
                )
    elif isinstance(condition, dict):
        if not condition:
            raise QueryError(
                f"query: {key}: empty operator object; accepted: {', '.join(OPERATORS)}"
            )
        for op, operand in condition.items():
            if op == "$ne":
                _check(operand, key)
            elif op in _ORDERING:
                if not (_is_number(operand) or isinstance(operand, str)):
                    raise QueryError(
                        f"query: {key}: {op} needs a number or a string, got {json.dumps(operand)}"
                    )
            elif op == "$exists":
                if not isinstance(operand, bool):
                    raise QueryError(f"query: {key}: $exists needs true or false")
            else:
                raise QueryError(
                    f"query: {key}: unknown operator {op!r}; accepted: {', '.join(OPERATORS)}"
                )
    elif not (condition is None or isinstance(condition, (bool, int, float))):
        raise QueryError(f"query: {key}: cannot match against {condition!r}")


def parse_query(text: str, source: str) -> dict[str, Any]:
    """Parse and check a JSON query; ``source`` (e.g. ``"--where"``) names it in errors.

    Malformed JSON, a value that is not an object, an invalid regular expression or
    an unknown operator raises ``QueryError``.
    """
    try:
        query = loads_json(text, source, QueryError)
    except json.JSONDecodeError as exc:
        raise QueryError(
            f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            'expected an object such as {"exp.model": "resnet50"}'
        ) from exc
    except ValueError:  # Python's limit on the digits of an integer it converts
        raise QueryError(f"{source}: {TOO_MANY_DIGITS}") from None
    if not isinstance(query, dict):
        raise QueryError(
            f'{source}: expected a JSON object such as {{"exp.model": "resnet50"}}, '
            f"got {type(query).__name__}"
        )
    try:
        for key, condition in query.items():
            _check(condition, key)
    except QueryError as exc:
        raise QueryError(f"{source}: {exc}") from exc
    return query


def _ordered(op: str, value: Any, operand: Any) -> bool:
    comparable = (_is_number(value) and _is_number(operand)) or (
        isinstance(value, str) and isinstance(operand, str)
    )
    return comparable and _ORDERING[op](value, operand)


def _match_value(value: Any, condition: Any, key: str) -> bool:
    """Whether a present record value satisfies one query condition."""
    if isinstance(condition, str):
        if isinstance(value, str):
            # An empty pattern would match every string; DLBS has "" mean "".
            return value == "" if condition == "" else (
                _compile(condition).matches(value))
        if _is_number(value) or isinstance(value, bool):
            return json.dumps(value) == condition
        return False
    if isinstance(condition, list):
        if not all(_is_scalar(element) for element in condition):
            _check(condition, key)  # raises, naming the element
        return any(_equal(value, element) for element in condition)
    if isinstance(condition, dict):
        return _match_operators(value, condition, key)
    if isinstance(condition, bool) or condition is None:
        return value is condition
    if _is_number(condition):
        return _is_number(value) and bool(value == condition)
    raise QueryError(f"query: {key}: cannot match against {condition!r}")


def _match_operators(value: Any, condition: Mapping[str, Any], key: str) -> bool:
    if not condition:
        raise QueryError(f"query: {key}: empty operator object; accepted: {', '.join(OPERATORS)}")
    for op, operand in condition.items():
        if op == "$exists":
            if not isinstance(operand, bool):
                raise QueryError(f"query: {key}: $exists needs true or false")
            holds = (value is not _MISSING) == operand
        elif value is _MISSING:
            holds = False
        elif op == "$ne":
            holds = not _match_value(value, operand, key)
        elif op in _ORDERING:
            holds = _ordered(op, value, operand)
        else:
            raise QueryError(
                f"query: {key}: unknown operator {op!r}; accepted: {', '.join(OPERATORS)}"
            )
        if not holds:
            return False
    return True


def match(record: Mapping[str, Any], query: Mapping[str, Any]) -> bool:
    """Whether ``record`` satisfies every key of ``query`` (see the module docstring)."""
    for key, condition in query.items():
        value = record.get(key, _MISSING)
        if isinstance(condition, dict):
            # Operators decide for themselves about a missing key ($exists).
            if not _match_operators(value, condition, key):
                return False
        elif value is _MISSING or not _match_value(value, condition, key):
            return False
    return True


def filter_records(records: Iterable[_R], query: Mapping[str, Any]) -> list[_R]:
    """The records that match ``query``, in their order."""
    return [record for record in records if match(record, query)]


def _identity(value: Any) -> str:
    # Values may be lists or dicts (unhashable); their JSON text identifies them.
    return json.dumps(value, sort_keys=True)


def distinct_values(
    records: Iterable[Mapping[str, Any]], keys: Sequence[str]
) -> dict[str, list[Any]]:
    """For each key, the distinct values it takes in ``records`` (sorted when comparable).

    Meant for "the query matched nothing; values that exist: exp.model: alexnet,
    resnet18". A key no record has maps to an empty list.
    """
    found: dict[str, dict[str, Any]] = {key: {} for key in keys}
    for record in records:
        for key in keys:
            if key in record:
                found[key].setdefault(_identity(record[key]), record[key])
    result: dict[str, list[Any]] = {}
    for key, by_identity in found.items():
        values = list(by_identity.values())
        if all(isinstance(v, str) for v in values) or all(_is_number(v) for v in values):
            values.sort()
        result[key] = values
    return result


def select_records(
    records: Sequence[dict[str, Any]], query: Mapping[str, Any], flag: str, source: str
) -> list[dict[str, Any]]:
    """The records matching ``query``, which came from option ``flag``; ``source``
    names the inputs in errors.

    ``ResultsError`` when there are no records at all, or when the query matches none,
    in which case the message shows the values the queried keys do take.
    """
    if not records:
        raise ResultsError(f"{source} holds no records")
    selected = filter_records(records, query)
    if not selected:
        raise no_match_error(query, flag, source, records, distinct_values(records, list(query)))
    return selected


def no_match_error(
    query: Mapping[str, Any], flag: str, source: str, records: Sequence[Mapping[str, Any]],
    existing: Mapping[str, Sequence[Any]],
) -> ResultsError:
    """The error of a query that matched none of ``records``, with the values its keys
    do take (``existing``, from :func:`distinct_values`)."""
    hints = "; ".join(
        f"{key}: {', '.join(map(str, values)) or '(absent everywhere)'}"
        for key, values in existing.items()
    )
    return ResultsError(
        f"{flag} {json.dumps(query)} matches none of the {len(records)} record(s) of "
        f"{source}; values that exist: {hints}"
    )
