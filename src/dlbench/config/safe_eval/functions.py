"""The few library functions a ``$(...)$`` computed value may call, each bounded.

DLBS configurations format strings (``'{}'.format(x)``, ``'%s' % x``), rewrite GPU
lists with ``re.sub`` and take paths apart with ``os.path``. The safe evaluator
allows these, but never hands a user's text to Python's own machinery where that
text could reach an attribute (``'{0.__class__}'``), ask for a huge padding
(``'%999999999s'``) or backtrack for ever (``re.sub('(a+)+$', ...)``): format
strings are parsed here and each field formatted on its own, with bounded widths;
``re.sub`` accepts patterns without repetition or groups only, which match in time
linear in the string.
"""

from __future__ import annotations

import os.path
import re
import string
from collections.abc import Callable, Mapping
from typing import Any

from dlbench.errors import ConfigError, UnsafeExpressionError

#: Largest width or precision of a formatted field.
MAX_FIELD_WIDTH = 999

#: ``os.path`` functions by the dotted name an expression calls them with.
PATH_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "os.path.basename": os.path.basename,
    "os.path.dirname": os.path.dirname,
    "os.path.splitext": os.path.splitext,
    "os.path.abspath": os.path.abspath,
    "os.path.join": os.path.join,
}

#: A ``str.format`` spec: fill/align, sign, ``#``, ``0``, width, grouping, precision, type.
_FORMAT_SPEC = re.compile(
    r"(?:.?[<>=^])?[+\- ]?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d+))?[bcdeEfFgGnosxX%]?"
)
#: A ``%`` conversion: no ``(key)`` and no ``*`` widths.
_PERCENT = re.compile(
    r"%(?P<flags>[-+ #0]*)(?P<width>\d*)(?:\.(?P<precision>\d*))?(?P<type>[diouxXeEfFgGcrsa%])"
)
#: What makes a regular expression backtrack: repetition, groups, backreferences.
_BACKTRACKING = re.compile(r"[*+?{}()]|\\\d")


def _check_width(width: str | None, precision: str | None, what: str) -> None:
    for number in (width, precision):
        if number and int(number) > MAX_FIELD_WIDTH:
            raise UnsafeExpressionError(
                f"{what} wider than {MAX_FIELD_WIDTH} characters is not allowed")


def _append(out: list[str], piece: str, total: int, limit: int) -> int:
    total += len(piece)
    if total > limit:
        raise UnsafeExpressionError(f"a result longer than {limit} elements")
    out.append(piece)
    return total


def _text_of(value: Any, limit: int, size: Callable[[Any], int]) -> Any:
    """``value`` as ``format`` sees it; containers only when short enough to print."""
    if isinstance(value, (list, tuple, dict)) and size(value) > limit:
        raise UnsafeExpressionError(f"a result longer than {limit} elements")
    return value


def str_format(template: str, args: list[Any], limit: int,
               size: Callable[[Any], int]) -> str:
    """``template.format(*args)`` for positional fields (``{}``, ``{0}``) without
    attribute or index access, with widths up to MAX_FIELD_WIDTH."""
    out: list[str] = []
    total, auto = 0, 0
    for literal, field, spec, conversion in string.Formatter().parse(template):
        total = _append(out, literal, total, limit)
        if field is None:
            continue
        if field == "":
            index, auto = auto, auto + 1
        elif field.isdigit():
            index = int(field)
        else:
            raise UnsafeExpressionError(
                f"format field {{{field}}} is not allowed: use {{}} or {{0}}, {{1}}, ...")
        match = _FORMAT_SPEC.fullmatch(spec or "")
        if match is None:
            raise UnsafeExpressionError(f"format spec {spec!r} is not allowed")
        _check_width(match["width"], match["precision"], "a format field")
        if conversion not in (None, "s", "r"):
            raise ConfigError(f"unknown conversion !{conversion} in a format string")
        if index >= len(args):
            raise ConfigError(f"format field {{{field}}} has no argument")
        value = _text_of(args[index], limit, size)
        if conversion == "s":
            value = str(value)
        elif conversion == "r":
            value = repr(value)
        total = _append(out, format(value, spec or ""), total, limit)
    return "".join(out)


def percent_format(template: str, right: Any, limit: int,
                   size: Callable[[Any], int]) -> str:
    """``template % right`` for positional conversions (``%s``, ``%d``, ``%5.2f``, ...)."""
    if isinstance(right, dict):
        raise UnsafeExpressionError("string formatting with a mapping is not allowed")
    args = list(right) if isinstance(right, tuple) else [right]
    out: list[str] = []
    total, pos, used = 0, 0, 0
    for match in _PERCENT.finditer(template):
        literal = template[pos:match.start()]
        if "%" in literal:
            raise ConfigError(f"unsupported format character in {literal!r}")
        total = _append(out, literal, total, limit)
        pos = match.end()
        if match["type"] == "%":
            total = _append(out, "%", total, limit)
            continue
        _check_width(match["width"], match["precision"], "a % conversion")
        if used >= len(args):
            raise ConfigError("not enough arguments for the format string")
        value = _text_of(args[used], limit, size)
        used += 1
        total = _append(out, (match.group(0)) % (value,), total, limit)
    rest = template[pos:]
    if "%" in rest:
        raise ConfigError(f"unsupported format character in {rest!r}")
    total = _append(out, rest, total, limit)
    if used < len(args):
        raise ConfigError("not all arguments converted during string formatting")
    return "".join(out)


def regex_sub(args: list[Any], limit: int) -> str:
    """``re.sub(pattern, repl, string[, count])`` with a literal replacement and a
    pattern that cannot backtrack (character classes, alternatives, escapes)."""
    if not 3 <= len(args) <= 4 or not all(isinstance(a, str) for a in args[:3]):
        raise ConfigError("re.sub takes a pattern, a replacement and a string")
    pattern, repl, text = args[0], args[1], args[2]
    count = args[3] if len(args) == 4 else 0
    if not isinstance(count, int) or isinstance(count, bool):
        raise ConfigError("the count of re.sub must be an int")
    if _BACKTRACKING.search(pattern):
        raise UnsafeExpressionError(
            f"re.sub pattern {pattern!r} is not allowed: use character classes and "
            f"alternatives, without repetition or groups")
    if "\\" in repl:
        raise UnsafeExpressionError("a backslash in the replacement of re.sub is not allowed")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"invalid regular expression {pattern!r}: {exc}") from None
    matches = sum(1 for _ in compiled.finditer(text))
    if count > 0:
        matches = min(matches, count)
    if len(text) + matches * len(repl) > limit:
        raise UnsafeExpressionError(f"a result longer than {limit} elements")
    return str(compiled.sub(repl, text, count))


def path_function(name: str, args: list[Any], limit: int) -> Any:
    """One of PATH_FUNCTIONS, on strings only."""
    if not args or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{name} takes strings")
    if sum(map(len, args)) + len(os.getcwd()) + len(args) > limit:
        raise UnsafeExpressionError(f"a result longer than {limit} elements")
    return PATH_FUNCTIONS[name](*args)


def value_size(value: Any, limit: int, known: Mapping[int, int] | None = None) -> int:
    """The size of ``value`` as if written out: characters of strings, digits of
    integers, 1 for other scalars and for each list or dict, the sum over their items.

    A part shared several times counts each time, so the size bounds the cost of
    printing, comparing or copying the value. Counting stops past ``limit`` (the
    result is then some number over it), so it costs at most ``limit`` steps.
    ``known`` maps the id of a list or dict already measured (and kept alive by the
    caller) to its size, which is then added without counting it again.

    >>> value_size(["ab", [1, 2]], 100)
    7
    """
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if known is not None and id(item) in known:
            total += known[id(item)]
            continue
        total += 1
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, int):
            total += item.bit_length() // 4
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return total
