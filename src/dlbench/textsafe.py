"""Text from users and workers made safe to show on a terminal.

A parameter value, a path, a framework's error message or a worker's output can hold
control characters and escape sequences (``ESC [ 2 J`` clears the screen, ``ESC ] 0 ;``
retitles the window, a right-to-left override reorders what follows). Every place
that prints such text passes it through :func:`safe_text`, which shows each of them
as a visible escape instead, so the terminal draws exactly what the text contains.

Text that leaves dlbench as bytes (a file, standard output) follows one rule for
what its encoding cannot hold: a lone surrogate (``"\\ud800"``, from a JSON file's
``"\\ud800"`` or bytes decoded with ``surrogateescape``) in UTF-8, any non-ASCII
character on an ASCII terminal, is written as its JSON escape ``\\uXXXX`` (a pair of
them beyond U+FFFF). In JSON text that escape is the character itself, so it reads
back the same; in CSV, markdown, text and HTML it shows the character visibly.
:func:`escape_surrogates` applies the rule to text; :data:`UNICODE_ESCAPE` is the
same rule as a codec error handler, for ``str.encode`` and text streams.

Example::

    >>> safe_text("resnet50\\x1b[2J")
    'resnet50\\\\x1b[2J'
    >>> escape_surrogates("a\\ud800b")
    'a\\\\ud800b'
"""

from __future__ import annotations

import codecs
import re
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


#: The codec error handler of the rule in the module's description: each character the
#: encoding cannot hold is written as ``\\uXXXX`` (``text.encode("utf-8", UNICODE_ESCAPE)``,
#: ``stream.reconfigure(errors=UNICODE_ESCAPE)``).
UNICODE_ESCAPE = "dlbench.unicode_escape"

_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_escape(char: str) -> str:
    code = ord(char)
    if code > 0xFFFF:  # JSON escapes only 16-bit units: a character beyond is a pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _unicode_escape(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    unencodable = error.object[error.start:error.end]
    return "".join(map(_json_escape, unencodable)), error.end


codecs.register_error(UNICODE_ESCAPE, _unicode_escape)


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (U+D800 to U+DFFF, which UTF-8 cannot encode)
    written as its six-character escape ``\\udXXX``; any other text is unchanged.

    Inside a JSON string the escape is valid JSON that reads back as the same
    surrogate; elsewhere it shows the character visibly. (A high surrogate followed by
    a low one reads back from JSON as the one character the pair encodes.)
    """
    if text.isascii() or not _SURROGATE.search(text):  # isascii is one flag in CPython
        return text
    return _SURROGATE.sub(lambda found: _json_escape(found.group()), text)


def encode_utf8(text: str) -> bytes:
    """``text`` as UTF-8 bytes, each lone surrogate written as :func:`escape_surrogates`
    writes it: the bytes of every text file dlbench writes."""
    return text.encode("utf-8", UNICODE_ESCAPE)
