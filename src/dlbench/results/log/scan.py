"""The bytes of one log → its record and the warnings about it.

The line grammar is DLBS's (:data:`dlbench.results.log.file.LINE_RE`); this module
applies it to whatever a file holds, which may be a log cut short by a killed
writer, a framework's binary output, a disk block of NUL bytes or a line that
cannot be decoded. The rule is that a damaged value is never read as a whole one:

- the last line, when it has no line end, was being written: it is dropped, with a
  warning when it looks like a key line; a line a later writer marked as cut
  (:data:`~dlbench.results.log.file.CUT_MARK`) is skipped with a warning;
- a key line that is not valid UTF-8, whose value is not JSON (or nests deeper than
  :data:`MAX_DEPTH`, or holds a lone surrogate such as ``"\\ud800"``), or that is
  longer than :data:`MAX_LINE_BYTES`, is skipped with a warning, an earlier value of
  its key being kept;
- a record without its worker's closing ``exp.status`` (a non-empty string) gets
  ``exp.status`` :data:`INCOMPLETE` and a warning: the run was killed or is still
  running, and its figures may be partial.

Nothing here raises for what a file holds: a stream that cannot be read to its end
(a damaged ``.gz``) keeps the lines read before, with a warning.

Example::

    record, warnings = scan_bytes(b'__exp.model__="alexnet"\\n__results.time__=15', "x.log")
    # record: {"exp.model": "alexnet", "exp.status": "incomplete", ...}
    # warnings: x.log:2: last line has no line end ... dropped; x.log: no closing exp.status ...
"""

from __future__ import annotations

import io
import itertools
import json
import json.scanner
import operator
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from dlbench.results.jsontext import nests_deeper
from dlbench.results.log.file import CUT_MARK, LINE_RE
from dlbench.results.log.rawjson import NUMBER_LIST, RawJSON

#: Longest line decoded, in bytes; a longer one is skipped with a warning. A day's
#: ``results.time_data`` at 1,000 batches a second is about 2 MB; this bound keeps a
#: file of garbage without line ends from being held in memory whole.
MAX_LINE_BYTES = 64 * 2**20

#: Deepest nesting of lists and objects accepted in a value. dlbench writes at most
#: three levels; a deeper value is damage, and would strain every later consumer.
MAX_DEPTH = 64

#: Line warnings kept per file; the rest are counted in one last warning.
MAX_WARNINGS = 20

#: ``exp.status`` of a record whose log ends before its worker's closing status.
INCOMPLETE = "incomplete"
INCOMPLETE_MSG = "the log ends before the worker's closing exp.status (killed, or still running)"

# JSON's whitespace plus the \r of CRLF line ends and the \v \f str.strip would take.
_BLANK = " \t\r\n\x0b\x0c"
_CUT = CUT_MARK.strip()
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]", re.ASCII)
_SHOWN_NAME = 80
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class ParseWarning:
    """Something in a log that could not be read; ``line`` is 1-based, 0 for the file."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        if self.line <= 0:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"


class _Skip(Exception):
    """A key line whose value cannot be used; the message says why."""


def _shown(name: str) -> str:
    """A key name fit for a one-line message: escaped, and cut when very long."""
    text = name if name.isprintable() else repr(name)[1:-1]
    return text if len(text) <= _SHOWN_NAME else text[:_SHOWN_NAME] + "..."


def _decode_value(name: str, raw_value: str) -> Any:
    """The JSON value of one key line, or ``_Skip`` saying why it cannot be used."""
    text = raw_value.strip(_BLANK)
    if not raw_value:
        # DLBS's grammar needs at least one character after "=": it ignores the line.
        raise _Skip(f"no value after {_shown(name)}=")
    if not text:
        return None  # DLBS reads a value of only whitespace as null
    if text.endswith(_CUT):
        raise _Skip(f"value of {_shown(name)} was cut short when its writer stopped")
    try:
        value = json.loads(text)
    except RecursionError:
        raise _Skip(f"value of {_shown(name)} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise _Skip(f"value of {_shown(name)} is not valid JSON ({exc})") from None
    if (text.count("[") + text.count("{") > MAX_DEPTH) and nests_deeper(value, MAX_DEPTH):
        raise _Skip(f"value of {_shown(name)} nests deeper than {MAX_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # Python reads "\ud800" into a str that no file, terminal or store accepts.
            raise _Skip(f"value of {_shown(name)} holds a lone UTF-16 surrogate") from None
    return value


def _check_name(name: str) -> None:
    if not name:
        raise _Skip("empty key name")
    if _CONTROL.search(name):
        raise _Skip(f"key name {_shown(name)} holds control characters")


def _lines(stream: IO[bytes]) -> Iterator[tuple[bytes, bool, bool]]:
    """``(line, ended, too_long)`` for each line; a too-long line comes as its start."""
    while True:
        chunk = stream.readline(MAX_LINE_BYTES + 1)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            yield chunk[:-1], True, False
        elif len(chunk) <= MAX_LINE_BYTES:
            yield chunk, False, False  # end of file in the middle of a line
            return
        else:
            ended = False
            while not ended:  # drop the rest of the line, a bounded piece at a time
                rest = stream.readline(2**20)
                if not rest:
                    break
                ended = rest.endswith(b"\n")
            yield chunk[:256], ended, True
            if not ended:
                return


class _Scan:
    """The state of reading one file: the record so far and what went wrong."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.record: dict[str, Any] = {}
        self.line_warnings: list[ParseWarning] = []
        self.file_warnings: list[ParseWarning] = []
        self.lines = 0
        self.key_lines = 0
        self.first_nul = 0
        self.read_error = False

    def warn(self, line: int, message: str) -> None:
        self.line_warnings.append(ParseWarning(self.path, line, message))

    def skipped(self, line: int, name: str, why: str) -> None:
        kept = " (an earlier value is kept)" if name in self.record else ""
        self.warn(line, f"{why}; key skipped{kept}")

    def line(self, number: int, raw: bytes, ended: bool, too_long: bool) -> None:
        self.lines = number
        if not self.first_nul and b"\x00" in raw and raw.lstrip(b" \t")[:1] in (b"_", b"\x00"):
            # A block of NULs (a crash's lost disk block) or one in a key line; a NUL in
            # the framework's own text is its business.
            self.first_nul = number
        try:
            text, valid = raw.decode("utf-8"), True
        except UnicodeDecodeError:
            text, valid = raw.decode("utf-8", errors="replace"), False
        found = LINE_RE.match(text)
        if too_long:
            if found is not None or text.lstrip(" \t").startswith("_"):
                self.warn(number, f"line longer than {MAX_LINE_BYTES} bytes; skipped")
            return
        if not ended:
            # The writer stopped mid-line: even a value that parses may be cut ("15" of
            # "159.78"). Free text without its end is ignored like all free text.
            if text.lstrip(" \t").startswith("_"):
                self.warn(number, "last line has no line end (cut while being written); dropped")
            return
        if found is None:
            return
        self.key_lines += 1
        name = found.group("name").strip(_BLANK)
        try:
            _check_name(name)
            if not valid:
                raise _Skip(f"line of {_shown(name)} is not valid UTF-8")
            value = _decode_value(name, found.group("value"))
        except _Skip as why:
            self.skipped(number, name, str(why))
            return
        self.record[name] = value

    def finish(self) -> tuple[dict[str, Any], list[ParseWarning]]:
        warnings = self.line_warnings[:MAX_WARNINGS]
        if len(self.line_warnings) > MAX_WARNINGS:
            more = len(self.line_warnings) - MAX_WARNINGS
            warnings.append(ParseWarning(self.path, 0, f"{more} more warning(s) not shown"))
        warnings.extend(self.file_warnings)
        if self.first_nul:
            warnings.append(ParseWarning(
                self.path, self.first_nul, "NUL bytes in the file: part of it may be lost"))
        if self.lines == 0:
            warnings.append(ParseWarning(self.path, 0, "empty file; no record"))
        elif self.key_lines == 0 and not self.read_error:
            warnings.append(
                ParseWarning(self.path, 0, "no __name__=value lines: not a dlbench log"))
        elif self.record:
            status = self.record.get("exp.status")
            if not (isinstance(status, str) and status):
                self.record["exp.status"] = INCOMPLETE
                self.record["exp.status_msg"] = INCOMPLETE_MSG
                warnings.append(ParseWarning(
                    self.path, 0, f"no closing exp.status: record marked {INCOMPLETE} "
                                  "(the run was killed, or is still running)"))
        return self.record, warnings


def scan_stream(stream: IO[bytes], path: str) -> tuple[dict[str, Any], list[ParseWarning]]:
    """Read a log from a binary stream; ``path`` names it in warnings. Never raises
    for the stream's content, nor for a compressed stream that ends early."""
    scan = _Scan(path)
    number = 0
    try:
        for number, (raw, ended, too_long) in enumerate(_lines(stream), start=1):
            scan.line(number, raw, ended, too_long)
    except (OSError, EOFError, zlib.error) as exc:
        # A .gz cut short or damaged: what came before is as good as any killed log.
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        scan.file_warnings.append(ParseWarning(
            path, number + 1, f"cannot read further ({reason}); lines before kept"))
        scan.read_error = True
        scan.lines = max(scan.lines, 1)
    return scan.finish()


#: ``LINE_RE`` applied to every line of a text at once: ``.`` stops at a line end,
#: so each match is one line's match, and its value runs to the end of its line.
_LINE_RE_ALL = re.compile("^" + LINE_RE.pattern, re.MULTILINE)
# json.loads's own C scanner, without the Python around it (typeshed lacks its type).
_SCAN_ONCE: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.JSONDecoder())  # type: ignore[arg-type]
# Control characters but the line ends and tabs of ordinary text (checked per name).
_RARE_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# The same characters as bytes (UTF-8 never uses these bytes inside a longer
# character), each translated to NUL: one C pass over a log finds them, where the
# regular expression steps through it a character at a time.
_RARE_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_RARE_TO_NUL = bytes.maketrans(_RARE_BYTES, bytes(len(_RARE_BYTES)))
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)

#: Lists shorter than this are decoded even with ``raw_lists``: keeping one as text
#: saves less than what writing it out costs.
_RAW_MIN_CHARS = 64


def _decode_whole(
    pairs: list[tuple[str, str]], raw_lists: bool
) -> dict[str, Any] | None:
    """The record of a plain log's key lines (see :func:`_scan_clean`) when every name
    is a plain name and every value plainly whole JSON, decoded with no Python code
    per line; None when any is not (then each line is looked at on its own)."""
    raw_names, raw_values = zip(*pairs, strict=True)
    names = list(map(str.strip, raw_names, itertools.repeat(_BLANK)))
    texts = list(map(str.strip, raw_values, itertools.repeat(_BLANK)))
    joined = "\n".join(names)
    if not all(names) or not all(texts) or "\t" in joined or "\r" in joined:
        return None
    kept: list[int] = []
    if raw_lists:
        kept = [i for i, text in enumerate(texts)
                if len(text) >= _RAW_MIN_CHARS and text[0] == "[" and NUMBER_LIST.fullmatch(text)]
        scanned_texts = list(texts)
        for i in kept:
            scanned_texts[i] = "0"  # a stand-in, cheap to scan
    else:
        scanned_texts = texts
    try:
        scanned = list(map(_SCAN_ONCE, scanned_texts, itertools.repeat(0)))
    except (StopIteration, ValueError, RecursionError):
        return None
    # Whole JSON: the scanner stopped at the end of the text (it has no outer blanks).
    if list(map(_SECOND, scanned)) != list(map(len, scanned_texts)):
        return None
    values = list(map(_FIRST, scanned))
    for i in kept:
        values[i] = RawJSON(texts[i])
    # Later lines win, at the position of the first, as assigning them one by one does.
    return dict(zip(names, values, strict=True))


def _scan_clean(
    text: str, path: str, raw_lists: bool = False, controls: bool | None = None
) -> tuple[dict[str, Any], list[ParseWarning]]:
    """:func:`scan_stream` of a log that is valid UTF-8 and holds no NUL byte and no
    line longer than :data:`MAX_LINE_BYTES`: one regular expression finds every key
    line at once, and a value that is plainly whole JSON (the usual case) is decoded
    by the C scanner ``json.loads`` runs, without its Python wrapping. Anything else
    goes through the same checks as :meth:`_Scan.line`, with the same warnings.
    With ``raw_lists``, a list of numbers written as ``json.dumps`` writes it is kept
    as its text (:class:`RawJSON`), checked by one regular expression. ``controls``:
    whether the text may hold a control character other than tab and line ends (None:
    look)."""
    scan = _Scan(path)
    cut = text.rfind("\n") + 1  # what follows the last line end was being written
    body, tail = text[:cut], text[cut:]
    scan.lines = body.count("\n") + (1 if tail else 0)
    pairs = _LINE_RE_ALL.findall(body)
    scan.key_lines = len(pairs)
    # Conditions under which _decode_value's rarer checks cannot fire for any value,
    # and _check_name's control characters cannot be in any name.
    if controls is None:
        controls = _RARE_CONTROL.search(body) is not None
    plain = (not controls and _CUT not in body
             and not ("\\u" in body and _SURROGATE_ESCAPE.search(body))
             and body.count("[") + body.count("{") <= MAX_DEPTH)
    record = scan.record
    if plain and pairs:
        whole = _decode_whole(pairs, raw_lists)
        if whole is not None:
            record.update(whole)
            pairs = []  # every value was whole JSON: nothing left to check line by line
    starts: list[int] = []
    for index, (raw_name, raw_value) in enumerate(pairs):
        name = raw_name.strip(_BLANK)
        value_text = raw_value.strip(_BLANK)
        if plain and name and value_text and "\t" not in name and "\r" not in name:
            try:
                value, end = _SCAN_ONCE(value_text, 0)
            except (StopIteration, ValueError, RecursionError):
                pass
            else:
                if end == len(value_text):  # whole JSON (the text has no outer blanks)
                    record[name] = value
                    continue
        try:
            _check_name(name)
            record[name] = _decode_value(name, raw_value)
        except _Skip as why:
            if not starts:  # where each key line starts, for the line numbers of warnings
                starts = [found.start() for found in _LINE_RE_ALL.finditer(body)]
            scan.skipped(body.count("\n", 0, starts[index]) + 1, name, str(why))
    if tail and tail.lstrip(" \t").startswith("_"):
        scan.warn(scan.lines, "last line has no line end (cut while being written); dropped")
    return scan.finish()


def scan_bytes(
    data: bytes, path: str = "<bytes>", *, raw_lists: bool = False
) -> tuple[dict[str, Any], list[ParseWarning]]:
    """Read a log held in memory (see :func:`scan_stream`); the same record and
    warnings, several times faster for the usual log (valid UTF-8, no NUL bytes).
    ``raw_lists``: lists of numbers may come as :class:`RawJSON` (see there)."""
    if len(data) <= MAX_LINE_BYTES and b"\x00" not in data:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            # A control character anywhere in the file (the tail too) is as good as
            # one in the body: either way the lines are checked one by one.
            controls = b"\x00" in data.translate(_RARE_TO_NUL)
            return _scan_clean(text, path, raw_lists, controls)
    return scan_stream(io.BytesIO(data), path)
