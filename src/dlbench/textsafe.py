"""Text from users and workers made safe to show on a terminal.

A parameter value, a path, a framework's error message or a worker's output can hold
control characters and escape sequences (``ESC [ 2 J`` clears the screen, ``ESC ] 0 ;``
retitles the window, a right-to-left override reorders what follows). Every place
that prints such text passes it through :func:`safe_text`, which shows each of them
as a visible escape instead, so the terminal draws exactly what the text contains.

Example::

    >>> safe_text("resnet50\\x1b[2J")
    'resnet50\\\\x1b[2J'
"""

from __future__ import annotations

import unicodedata

#: Unicode categories a terminal acts on instead of drawing: controls (C0, DEL, C1),
#: format characters (bidirectional overrides, zero-width joiners), surrogates and
#: line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """``text`` with every character a terminal would act on (controls, escape
    sequences, bidirectional overrides, line separators) written as a visible
    ``\\xNN``/``\\uNNNN`` escape (``\\n``, ``\\r``, ``\\t`` for the common three).

    The result is always one line. Printable text, non-ASCII letters included, is
    unchanged; a backslash already in ``text`` is kept as it is.
    """
    if text.isprintable():  # the common case, checked in C
        return text
    return "".join(
        _escape(char) if unicodedata.category(char) in _UNSAFE_CATEGORIES else char
        for char in text
    )
