"""The declared result keys: look a key up, check it is declared, show the table.

Every ``results.*``, ``sys.*`` and ``hw.*`` key dlbench writes is declared once in
:mod:`dlbench.results.keys.table`, with its type, unit, meaning, format and
aggregation. The log writer checks each such key it writes (:func:`check_key`):
with ``DLBENCH_STRICT_KEYS=1`` in the environment (the test suite sets it) an
undeclared key raises :class:`UndeclaredKeyError`; otherwise it is written anyway
with one warning per key on stderr, so that a new key never fails a user's run.

Example::

    >>> lookup("results.use.gpu0_util_percent_max").name
    'results.use.<series>_max'
    >>> format_value("results.time", 12.3456)
    '12.35'
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from dlbench.config.user_regex import compile_user_regex
from dlbench.errors import MetricError
from dlbench.results.keys.table import PLACEHOLDERS, RESULT_KEYS, ResultKey
from dlbench.results.text_table import aligned_lines
from dlbench.results.values import is_number

__all__ = [
    "KEY_PREFIXES", "PLACEHOLDERS", "RESULT_KEYS", "STRICT_ENV", "ResultKey",
    "UndeclaredKeyError", "better", "check_key", "conforms", "describe_keys",
    "format_value", "higher_is_better", "is_declared", "lookup", "render_markdown",
    "type_is_known",
]

#: The key prefixes that must be declared; ``exp.*`` and framework parameters are
#: declared as parameters (``config/registry.py``).
KEY_PREFIXES = ("results.", "sys.", "hw.")

#: Environment variable that makes writing an undeclared key an error.
STRICT_ENV = "DLBENCH_STRICT_KEYS"

_PLACEHOLDER_RE = re.compile(r"<([a-z]+)>")

#: Undeclared keys already warned about in this process.
_warned: set[str] = set()


class UndeclaredKeyError(ValueError):
    """A ``results.*``, ``sys.*`` or ``hw.*`` key missing from the key table: a bug in
    dlbench (declare the key), never a user's error."""


def _pattern(name: str) -> re.Pattern[str]:
    """The regular expression of a declared name: placeholders by their
    :data:`PLACEHOLDERS` expression, everything else literally."""
    parts: list[str] = []
    last = 0
    for match in _PLACEHOLDER_RE.finditer(name):
        parts.append(re.escape(name[last:match.start()]))
        parts.append(f"(?:{PLACEHOLDERS[match.group(1)][0]})")
        last = match.end()
    parts.append(re.escape(name[last:]))
    return re.compile("".join(parts))


@functools.cache
def _index() -> tuple[dict[str, ResultKey], tuple[tuple[re.Pattern[str], ResultKey], ...]]:
    exact = {k.name: k for k in RESULT_KEYS if "<" not in k.name}
    families = tuple((_pattern(k.name), k) for k in RESULT_KEYS if "<" in k.name)
    return exact, families


def lookup(name: str) -> ResultKey | None:
    """The declaration of ``name`` (its own, or its family's), or ``None``."""
    exact, families = _index()
    found = exact.get(name)
    if found is not None:
        return found
    for pattern, key in families:
        if pattern.fullmatch(name):
            return key
    return None


def better(name: str) -> str:
    """Which way ``name`` improves, as its key declares it: ``higher``, ``lower``, or
    empty for a key that declares neither (or is not declared)."""
    key = lookup(name)
    return key.better if key is not None else ""


def higher_is_better(name: str, given: bool | None = None, *, where: str = "--metric") -> bool:
    """Whether a larger value of ``name`` is an improvement: ``given`` where the user
    said so (a baseline's ``higher_is_better``, ``--better``), else the key's declared
    direction (:attr:`ResultKey.better`). A key that declares none, and an undeclared
    one, raise :class:`~dlbench.errors.MetricError` naming ``where`` it came from:
    there is no safe guess for which way a count or a setting should move.

    Example::

        >>> higher_is_better("results.mfu"), higher_is_better("results.latency_p99")
        (True, False)
    """
    if given is not None:
        return given
    direction = better(name)
    if direction:
        return direction == "higher"
    what = "is not a declared result key" if lookup(name) is None else "declares no direction"
    raise MetricError(
        f"{where} {name}: {what}, so neither higher nor lower is known to be better; "
        "choose a key that declares one (dlbench help --results) or say which way is "
        "better (--better higher|lower, or higher_is_better in a baseline file)")


def is_declared(name: str) -> bool:
    """Whether ``name`` is declared, or needs no declaration (not ``results.*``,
    ``sys.*`` or ``hw.*``)."""
    return not name.startswith(KEY_PREFIXES) or lookup(name) is not None


def check_key(name: str, environ: Mapping[str, str] | None = None) -> None:
    """Check that a key about to be written is declared.

    An undeclared ``results.*``, ``sys.*`` or ``hw.*`` key raises
    :class:`UndeclaredKeyError` when ``DLBENCH_STRICT_KEYS`` is ``1`` in ``environ``
    (default ``os.environ``); otherwise it prints one warning per key and process
    and returns, so the key is still written.
    """
    if is_declared(name):
        return
    env = os.environ if environ is None else environ
    message = (f"result key {name!r} is not declared in dlbench.results.keys.table "
               f"(see `dlbench help --results`)")
    if env.get(STRICT_ENV) == "1":
        raise UndeclaredKeyError(message)
    if name not in _warned:
        _warned.add(name)
        print(f"dlbench: warning: {message}; written anyway", file=sys.stderr)


#: The element types a declaration's ``type`` is built from (``list[...]`` nests).
_SCALAR_TYPES: dict[str, Callable[[Any], bool]] = {
    "float": is_number,
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "dict": lambda v: isinstance(v, dict),
    "object": lambda v: True,
}


def type_is_known(type_name: str) -> bool:
    """Whether ``type_name`` is one a declaration may use: a scalar type of
    :data:`_SCALAR_TYPES` or ``list[T]`` of one."""
    while type_name.startswith("list[") and type_name.endswith("]"):
        type_name = type_name[5:-1]
    return type_name in _SCALAR_TYPES


def _conforms(type_name: str, value: Any) -> bool:
    if value is None:  # a figure that could not be computed
        return True
    if type_name.startswith("list[") and type_name.endswith("]"):
        return isinstance(value, list) and all(_conforms(type_name[5:-1], v) for v in value)
    return _SCALAR_TYPES[type_name](value)


def conforms(name: str, value: Any) -> bool:
    """Whether ``value`` has the declared type of ``name`` (``null`` always does, and
    so does anything under a name that is not declared)."""
    key = lookup(name)
    return key is None or _conforms(key.type, value)


def format_value(name: str, value: Any) -> str:
    """``value`` as text, by its key's declared format: numbers by ``fmt``, ``-`` for
    ``None``, anything else (and undeclared keys) by ``str``."""
    if value is None:
        return "-"
    key = lookup(name)
    if key is None or not key.fmt or not is_number(value):
        return str(value)
    if key.fmt == "d":
        return format(round(value), "d")
    return format(value, key.fmt)


def _row(key: ResultKey) -> list[str]:
    return [key.name, key.type, key.unit, key.better, key.description]


def describe_keys(pattern: str | None = None, flag: str = "--results") -> list[str]:
    """The table as text lines (name, type, unit, better, meaning), keys matching the
    regular expression ``pattern`` (searched, not anchored; a user's, so run by RE2:
    :func:`~dlbench.config.user_regex.compile_user_regex`) only, then what each
    placeholder used stands for. A pattern RE2 cannot run raises ConfigError naming
    ``flag``."""
    regex = (compile_user_regex(pattern, f"{flag} {pattern!r} is not a regular expression")
             if pattern else None)
    keys = [k for k in RESULT_KEYS if regex is None or regex.finds(k.name)]
    if not keys:
        return []
    # The meaning is free text: its rule spans the header only.
    lines = aligned_lines(["name", "type", "unit", "better", "meaning"],
                          [_row(k) for k in keys], [False] * 5, markdown=False, free_last=True)
    used = _placeholders_of(keys)
    if used:
        lines.append("")
        lines += [f"<{p}>: {PLACEHOLDERS[p][1]}" for p in used]
    return lines


def _placeholders_of(keys: Iterable[ResultKey]) -> list[str]:
    return list(dict.fromkeys(m for k in keys for m in _PLACEHOLDER_RE.findall(k.name)))


def _markdown_text(text: str) -> str:
    # A bare <i> would be read as an HTML tag, a bare | as a cell border.
    return text.replace("|", "\\|").replace("<", "\\<")


def render_markdown(prefixes: Sequence[str] = KEY_PREFIXES) -> str:
    """The keys whose names start with one of ``prefixes`` as a Markdown table (name,
    type, unit, which way is better, meaning, aggregation), followed by what each
    placeholder stands for:
    the tables of ``docs/results.md`` are this text."""
    keys = [k for k in RESULT_KEYS if k.name.startswith(tuple(prefixes))]
    lines = ["| key | type | unit | better | meaning | combined by |",
             "| --- | --- | --- | --- | --- | --- |"]
    for key in keys:
        meaning = _markdown_text(key.description)
        combined = key.aggregate + (f" (exp.repeat: {key.repeats})" if key.repeats else "")
        lines.append(f"| `{key.name}` | {key.type} | {key.unit} | {key.better} | {meaning} "
                     f"| {combined} |")
    used = _placeholders_of(keys)
    if used:
        lines.append("")
        lines += [f"- `<{p}>`: {_markdown_text(PLACEHOLDERS[p][1])}" for p in used]
    return "\n".join(lines) + "\n"
