"""The text of a value: where its ``$(...)$`` computed parts and ``${...}`` references are.

Both scans are linear in the text and bounded in nesting, whatever the text: a
value is cut once into computed parts and the text between them, and each piece is
parsed once into literal text and (possibly nested) references.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeAlias

#: Deepest nesting of references in references: ``${${${a}}}`` is 3 deep.
MAX_REFERENCE_NESTING = 16


@dataclass(frozen=True)
class Ref:
    """A parsed ``${...}``; its name may itself hold references."""

    parts: list[Part]


Part: TypeAlias = "str | Ref"


def split_expressions(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is_expression, piece): ``$(...)$`` bodies and the text between.

    Each ``$(`` ends at the first ``)$`` after it, as in DLBS; a ``$(`` with no
    ``)$`` after it is plain text (and so is everything after it).

    >>> split_expressions("a$(1 + 2)$b$(c")
    [(False, 'a'), (True, '1 + 2'), (False, 'b$(c')]
    """
    pieces: list[tuple[bool, str]] = []
    pos = 0
    while True:
        start = text.find("$(", pos)
        end = -1 if start < 0 else text.find(")$", start + 2)
        if end < 0:
            break
        if start > pos:
            pieces.append((False, text[pos:start]))
        pieces.append((True, text[start + 2:end]))
        pos = end + 2
    if pos < len(text) or not pieces:
        pieces.append((False, text[pos:]))
    return pieces


def parse_refs(text: str) -> list[Part]:
    """``text`` as literal pieces and references; ValueError if malformed.

    >>> parse_refs("x${a}${${b}c}")
    ['x', Ref(parts=['a']), Ref(parts=[Ref(parts=['b']), 'c'])]
    """
    parts, _ = _parse(text, 0, 0)
    return parts


def _parse(text: str, start: int, depth: int) -> tuple[list[Part], int]:
    """Parse from ``start``; at ``depth`` > 0 (inside a reference) stop at its ``}``."""
    if depth > MAX_REFERENCE_NESTING:
        raise ValueError(f"references nested more than {MAX_REFERENCE_NESTING} deep")
    parts: list[Part] = []
    pos = start
    while True:
        ref = text.find("${", pos)
        close = text.find("}", pos) if depth else -1
        if depth and close >= 0 and (ref < 0 or close < ref):
            if close > pos:
                parts.append(text[pos:close])
            return parts, close + 1
        if ref < 0:
            if depth:
                raise ValueError("unterminated reference: '${' without '}'")
            if pos < len(text):
                parts.append(text[pos:])
            return parts, len(text)
        if ref > pos:
            parts.append(text[pos:ref])
        inner, pos = _parse(text, ref + 2, depth + 1)
        if not inner:
            raise ValueError("empty reference ${}")
        parts.append(Ref(inner))


def as_text(value: Any) -> str:
    """How a value reads inside a longer string: str as is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def as_expression_text(value: Any) -> str:
    """How a value reads inside ``$(...)$``, as DLBS substituted it before evaluating:
    a string as is (quote it in the expression to use it as a string), a number or
    bool as Python writes it (``8``, ``0.5``, ``True``), a list as its items
    separated by spaces, a mapping as JSON.

    >>> [as_expression_text(v) for v in ("0,1", 8, True, None, [1, "a"], {"k": 1})]
    ['0,1', '8', 'True', 'None', '1 a', '{"k": 1}']
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)
