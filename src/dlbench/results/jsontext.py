"""JSON text from users and files, parsed with a bound on its nesting.

``json.loads`` recurses once per level: a value nested a thousand deep (``[[[[...``)
raises RecursionError, a traceback, and one a few hundred deep parses but breaks the
recursive code that reads it later (queries, encoders, the store). Every JSON text a
user hands dlbench (a ``--where`` or ``--series`` query, a ``.json``/``.jsonl``
results file, a baseline, a history's JSON columns) is parsed by :func:`loads_json`,
which refuses more than :data:`MAX_DEPTH` levels in one line naming where the text
came from.

Example::

    query = loads_json(text, "--where", QueryError)
"""

from __future__ import annotations

import json
from typing import Any

from dlbench.errors import DlbenchError, ResultsError

#: The deepest nesting of lists and objects accepted in a JSON text (a results file's
#: ``{"data": [record]}`` takes three levels; a record's values need a few more).
MAX_DEPTH = 100


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether lists and dicts in ``value`` nest more than ``limit`` levels deep."""
    if not isinstance(value, (list, dict)):
        return False
    # Iterative: a recursive walk would itself fail on the values it must refuse.
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (list, dict)))
    return False


def loads_json(
    text: str, where: str, error: type[DlbenchError] = ResultsError, *,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """``json.loads(text)``, refusing values nested more than ``max_depth`` deep with
    ``error`` (one line: ``"<where>: values nest more than N deep"``). A text that is
    not JSON raises ``json.JSONDecodeError`` as ``json.loads`` does, for the caller to
    word."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise error(f"{where}: values nest more than {max_depth} deep") from None
    # Counting brackets runs in C and rules out almost every text without a walk.
    if (text.count("[") + text.count("{") > max_depth
            and nests_deeper(value, max_depth)):
        raise error(f"{where}: values nest more than {max_depth} deep")
    return value
