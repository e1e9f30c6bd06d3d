"""Regular expressions written by users, run in time linear in the text they read.

A user's pattern reaches dlbench in a ``--where`` query, an extension's condition
(``-E``, a spec file) and ``dlbench help --params/--text/--results``. Python's ``re``
backtracks: ``(a+)+b`` against thirty-five ``a`` never finishes. Every such pattern is
compiled here, by RE2 (the ``google-re2`` package), whose matching time is linear in
the length of the text whatever the pattern; dlbench's own literal patterns stay with
``re``. RE2's syntax is Python's without backreferences (``\\1``) and lookaround
(``(?=...)``, ``(?<=...)``); a pattern that uses them is refused in one line.

RE2 reads UTF-8, which cannot hold a lone UTF-16 surrogate (``"\\ud800"``, which JSON
text can carry): on both sides, pattern and text, each lone surrogate is read as
U+FFFD, the replacement character. Groups are still cut from the text itself, so what
a group captures keeps its surrogates.

Example::

    regex = compile_user_regex("res(net)(?P<depth>\\\\d+)", "--where: exp.model")
    found = regex.match("resnet50")
    assert found is not None and found.groupdict() == {"depth": "50"}
"""

from __future__ import annotations

import functools
import re
from typing import Any

import re2  # type: ignore[import-untyped]

from dlbench.errors import ConfigError, DlbenchError

#: What a refusal says is accepted.
ACCEPTED_SYNTAX = ("accepted: RE2 syntax (github.com/google/re2/wiki/Syntax), which has no "
                   "backreferences such as \\1 and no lookaround such as (?=...)")

_SURROGATE = re.compile("[\ud800-\udfff]")

#: Patterns compiled at once; each compiled program holds at most RE2's default
#: memory budget (8 MiB).
_CACHE_SIZE = 256


class UserMatch:
    """A successful match: the whole match and its groups, cut from the original text."""

    __slots__ = ("_names", "_spans", "_text")

    def __init__(self, text: str, spans: list[tuple[int, int]], names: dict[str, int]) -> None:
        self._text = text
        self._spans = spans
        self._names = names

    def group(self, index: int | str = 0) -> str | None:
        """The text of group ``index`` (0: the whole match; a name: that named group),
        None for a group that took no part in the match."""
        start, end = self._spans[self._names[index] if isinstance(index, str) else index]
        return None if start < 0 else self._text[start:end]

    def groups(self) -> tuple[str | None, ...]:
        """Every group's text, 1 to the last, as :meth:`group` gives it."""
        return tuple(self.group(i) for i in range(1, len(self._spans)))

    def groupdict(self) -> dict[str, str | None]:
        """The named groups' texts, by name."""
        return {name: self.group(index) for name, index in self._names.items()}

    def end(self) -> int:
        """Where the whole match ends in the text."""
        return self._spans[0][1]


class UserRegex:
    """A compiled user pattern: ``match`` anchors at the start, ``search`` looks
    anywhere, ``fullmatch`` needs the whole text, as in Python's ``re``."""

    __slots__ = ("_names", "_regex", "pattern")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._regex = compiled
        self._names: dict[str, int] = dict(compiled.groupindex)

    def _found(self, text: str, found: Any) -> UserMatch | None:
        if found is None:
            return None
        spans = [found.span(i) for i in range(self._regex.groups + 1)]
        return UserMatch(text, spans, self._names)

    def matches(self, text: str) -> bool:
        """Whether the pattern matches at the start of ``text`` (:meth:`match` without
        building the match: a query tests every record)."""
        return self._regex.match(_utf8(text)) is not None

    def finds(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text``."""
        return self._regex.search(_utf8(text)) is not None

    def match(self, text: str) -> UserMatch | None:
        """A match at the start of ``text``, or None."""
        return self._found(text, self._regex.match(_utf8(text)))

    def search(self, text: str) -> UserMatch | None:
        """The first match anywhere in ``text``, or None."""
        return self._found(text, self._regex.search(_utf8(text)))

    def fullmatch(self, text: str) -> UserMatch | None:
        """A match of the whole of ``text``, or None."""
        return self._found(text, self._regex.fullmatch(_utf8(text)))


def _utf8(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD: the same length, so a
    position in one is the same position in the other."""
    if text.isascii():  # the common case, checked in C
        return text
    return _SURROGATE.sub("\ufffd", text)


class _Refused(Exception):
    """RE2 cannot compile a pattern; the argument says why."""


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compile(pattern: str, ignore_case: bool) -> UserRegex:
    options = re2.Options()
    options.log_errors = False  # RE2 would also print the reason on stderr
    options.case_sensitive = not ignore_case
    try:
        compiled = re2.compile(_utf8(pattern), options)
    except re2.error as error:
        reason = error.args[0] if error.args else "cannot be compiled"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "backslashreplace")
        raise _Refused(str(reason)) from None
    return UserRegex(pattern, compiled)


def compile_user_regex(pattern: str, context: str, *, error: type[DlbenchError] = ConfigError,
                       ignore_case: bool = False) -> UserRegex:
    """``pattern``, from a user, compiled to run in linear time.

    A pattern RE2 cannot run raises ``error`` with one line: ``context`` (where the
    pattern came from, e.g. ``"--params '(a' is not a regular expression"``), RE2's
    reason and the syntax accepted. ``ignore_case`` folds case as ``re.IGNORECASE``.

    >>> compile_user_regex("(a+)+b", "--where").match("a" * 35) is None
    True
    """
    try:
        return _compile(pattern, ignore_case)
    except _Refused as refused:
        raise error(f"{context}: {refused}; {ACCEPTED_SYNTAX}") from None
