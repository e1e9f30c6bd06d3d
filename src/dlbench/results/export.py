"""Records out: ``.json``, ``.json.gz``, ``.jsonl``, ``.csv`` and ``.parquet`` files,
written whole or never (a temporary file beside the destination, renamed into place),
and :func:`open_output`, through which every file dlbench writes is written: a regular
file replaced whole, a device or a FIFO written in place and never replaced
(:func:`~dlbench.results.outputs.writes_in_place` decides which).

CSV has no types, so a cell is written so that it reads back as what it was: a
non-string value as its JSON text, a string raw unless it would itself read back as
JSON (``"0"``, ``"true"``, ``""``, ``"[1]"``) or holds a lone surrogate, in which case
it is JSON-quoted. Text is UTF-8, a lone surrogate written as its ``\\uXXXX`` escape
(:mod:`dlbench.textsafe`): in JSON that reads back as the same string.

The JSON formats are written as the records come, so that records parsed from many
logs (:func:`dlbench.results.log.parser.iter_logs`) go to a file without ever being held
together; a CSV or a Parquet file needs every column before its first row, so it
holds them (Parquet: :mod:`dlbench.results.parquet`).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import json
import os
import secrets
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from dlbench.errors import ResultsError
from dlbench.results.log.parser import ParseWarning, iter_logs_as, stream_logs
from dlbench.results.log.rawjson import RawJSON
from dlbench.results.outputs import resolved_path, writes_in_place
from dlbench.results.parquet import parquet_bytes
from dlbench.results.text_table import csv_line
from dlbench.textsafe import encode_utf8, escape_surrogates

WRITE_FORMATS = (".json", ".json.gz", ".jsonl", ".csv", ".parquet")

#: The formats that need every record before the first is written.
_HELD_FORMATS = (".csv", ".parquet")


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for double in (".json.gz", ".log.gz"):
        if name.endswith(double):
            return double
    return path.suffix.lower()


def _encode_cell(value: Any) -> str:
    if isinstance(value, str):
        if value == "":
            # An empty cell means "no such key"; exp.gpus "" (CPU) must survive.
            return '""'
        try:
            json.loads(value)
        except ValueError:
            if escape_surrogates(value) is value:
                return value
            # A lone surrogate is written escaped: as JSON, the escape reads back as it.
        # It would read back as a number, bool, null, list... so quote it.
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def _csv_text(records: Sequence[Mapping[str, Any]]) -> str:
    columns: dict[str, None] = {}
    for record in records:
        columns.update(dict.fromkeys(record))
    if not columns:
        return ""
    lines = [csv_line(columns), *(
        csv_line(_encode_cell(record[c]) if c in record else "" for c in columns)
        for record in records)]
    return "\n".join(lines) + "\n"


def dumps_records(records: Sequence[Mapping[str, Any]]) -> str:
    """``{"data": [...]}`` JSON text, one record per line, ending with a newline."""
    out = io.StringIO()
    dump_records(records, out)
    return out.getvalue()


class TextSink(Protocol):
    """Where records are dumped: anything with ``write(str)`` (a text file, stdout)."""

    def write(self, text: str, /) -> object:
        """Append ``text``."""


def record_json(record: Mapping[str, Any]) -> str:
    """A record as one line of JSON, as every JSON format here writes it (a lone
    surrogate as its ``\\udXXX`` escape, which reads back as the same string)."""
    return escape_surrogates(json.dumps(dict(record), ensure_ascii=False))


def dump_records(records: Iterable[Mapping[str, Any]], out: TextSink) -> int:
    """Write :func:`dumps_records`'s text to ``out`` as the records come; their count."""
    return _dump_json(map(record_json, records), out)


def _dump_json(texts: Iterable[str], out: TextSink) -> int:
    count = 0
    for text in texts:
        out.write(',\n' if count else '{"data": [\n')
        out.write(text)
        count += 1
    out.write("\n]}\n" if count else '{"data": []}\n')
    return count


def _dump_jsonl(texts: Iterable[str], out: TextSink) -> int:
    count = 0
    for text in texts:
        out.write(text + "\n")
        count += 1
    return count


# gzip.compress(data, mtime=0) is zlib's own gzip stream from Python 3.11 on; zlib
# writes that stream the same whether it is given the data at once or in pieces.
def _zlib_is_gzip() -> bool:
    try:
        zlib_gzip = zlib.compress(b"{}", 9, 31)  # type: ignore[call-arg]  # wbits: 3.11
    except TypeError:  # Python 3.10
        return False
    return bool(gzip.compress(b"{}", mtime=0) == zlib_gzip)


_ZLIB_GZIP = _zlib_is_gzip()


class _Sink:
    """UTF-8 bytes to a binary file, in pieces of about a megabyte, through zlib's
    gzip compression when ``gz``."""

    def __init__(self, raw: IO[bytes], gz: bool) -> None:
        self._raw = raw
        self._parts: list[bytes] = []
        self._size = 0
        self._zlib = zlib.compressobj(9, zlib.DEFLATED, 31) if gz else None

    def write(self, text: str) -> None:
        data = encode_utf8(text)
        self._parts.append(data)
        self._size += len(data)
        if self._size >= 2**20:
            self._drain()

    def _drain(self) -> None:
        data = b"".join(self._parts)
        self._parts, self._size = [], 0
        self._raw.write(self._zlib.compress(data) if self._zlib else data)

    def close(self) -> None:
        self._drain()
        if self._zlib:
            self._raw.write(self._zlib.flush())


@contextlib.contextmanager
def open_output(path: str | Path, flag: str = "--output") -> Iterator[IO[bytes]]:
    """A binary file to write the output ``path`` through, the one way dlbench writes a
    file a user names (and its own). A regular file, or a path where nothing is yet,
    becomes what was written when the block ends without an exception: written to a
    temporary file beside it (symbolic links followed) and renamed into place, never
    half-written, and on any exception (Ctrl-C too) the temporary file is removed and
    the old file stays. A character device, a FIFO or a socket is opened and written in
    place, never replaced or removed. ``ResultsError`` naming ``flag`` for a directory,
    a block device or a loop of symbolic links, and when the file cannot be written
    (a full disk, a FIFO whose reader left)."""
    shown = Path(path)
    in_place = writes_in_place(shown, flag)
    # A file is replaced where its links lead; a device is opened by the name given,
    # which the kernel follows (/dev/stdout leads to a pipe no path names).
    target = shown.expanduser() if in_place else resolved_path(shown, flag)
    try:
        if in_place:
            with _in_place(target, flag, shown) as out:
                yield out
        else:
            with _replaced(target) as out:
                yield out
    except OSError as exc:
        if not _about_output(exc, target):
            raise  # reading what is written (a log, a store) failed: its own message
        raise ResultsError(f"cannot write {shown}: {exc.strerror or exc}") from exc


def _about_output(error: OSError, target: Path) -> bool:
    """Whether ``error`` is about writing ``target``: one without a file name (a write
    or a flush), or about the target, its temporary file or a folder above it."""
    if error.filename is None:
        return True
    about = Path(os.fsdecode(error.filename))
    return (about == target or about in target.parents or (
        about.parent == target.parent and about.name.startswith(_temp_prefix(target))))


def _temp_prefix(target: Path) -> str:
    return f".{target.name}."


@contextlib.contextmanager
def _in_place(target: Path, flag: str, shown: Path) -> Iterator[IO[bytes]]:
    # Opening a FIFO waits, as any writer does, for a reader. No O_CREAT, no O_TRUNC:
    # what is there is used, never made.
    fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "wb") as out:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            # Replaced by a regular file since it was looked at: writing over it in
            # place would leave the old file's end behind.
            raise ResultsError(f"{flag} {shown}: changed while being opened; run again")
        yield out


@contextlib.contextmanager
def _replaced(target: Path) -> Iterator[IO[bytes]]:
    temp = target.with_name(f"{_temp_prefix(target)}{os.getpid()}.{secrets.token_hex(4)}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    # os.open with 0o666 lets the umask decide the mode, as for any new file
    # (tempfile would leave the file readable by its owner only).
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:  # Ctrl-C and a closed generator too: nothing is left behind
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def write_atomically(path: str | Path, data: bytes | str) -> None:
    """Write ``data`` (bytes, or text written as UTF-8 by :mod:`dlbench.textsafe`'s
    rule) to ``path`` through :func:`open_output`: a regular file replaced whole, so
    that a reader never sees half a file, a device or a FIFO written in place;
    ResultsError if it cannot."""
    with open_output(path) as out:
        out.write(encode_utf8(data) if isinstance(data, str) else data)


def write_records(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write records to ``path`` in the format its extension names; their count.

    ``.json`` (``{"data": [...]}``, one record per line), ``.json.gz``, ``.jsonl``,
    ``.csv`` or ``.parquet`` (columns: every key, in first-seen order), through
    :func:`open_output`: a file is written beside its destination and renamed into
    place, so it is never half-written; a device or a FIFO is written in place.
    The JSON formats are written as ``records`` yields them (CSV and Parquet hold them all).
    Any other extension raises ``ResultsError``, before a record is asked for.
    """
    path = Path(path)
    kind = _suffix(path)
    if kind not in WRITE_FORMATS:
        raise ResultsError(
            f"cannot write {path}: unknown extension; accepted: {' '.join(WRITE_FORMATS)}"
        )
    if kind in _HELD_FORMATS or (kind == ".json.gz" and not _ZLIB_GZIP):
        held = list(records)
        if kind == ".csv":
            data = encode_utf8(_csv_text(held))
        elif kind == ".parquet":
            data = parquet_bytes(held, str(path))
        else:  # mtime=0: the same records always give the same bytes
            data = gzip.compress(encode_utf8(dumps_records(held)), mtime=0)
        write_atomically(path, data)
        return len(held)
    return _write_texts(map(record_json, records), path, kind)


def _write_texts(texts: Iterable[str], path: Path, kind: str) -> int:
    with open_output(path) as raw:
        sink = _Sink(raw, gz=kind == ".json.gz")
        count = (_dump_jsonl if kind == ".jsonl" else _dump_json)(texts, sink)
        sink.close()
    return count


_PLACEHOLDER = "\x00raw"
_WRITTEN = '"\\u0000raw"'  # how json writes the placeholder (it escapes NUL)


def _log_json(record: dict[str, Any]) -> str | None:
    """:func:`record_json` of a record read with ``raw_lists``: each list kept as its
    JSON text (:class:`~dlbench.results.log.scan.RawJSON`, what ``json.dumps`` would
    write for it) goes into the text as it is, in place of a placeholder."""
    if not record:
        return None
    raw = [key for key, value in record.items() if type(value) is RawJSON]
    if not raw:
        return record_json(record)
    marked = dict(record)
    for key in raw:
        marked[key] = _PLACEHOLDER
    parts = record_json(marked).split(_WRITTEN)
    # A key or string of the record's own could read the same: then decode instead.
    if len(parts) == len(raw) + 1:
        # The placeholders are written in the record's order, the order of ``raw``.
        texts = [record[key].text for key in raw]
        return "".join(itertools.chain.from_iterable(zip(parts, [*texts, ""], strict=True)))
    return record_json({key: value.value() if type(value) is RawJSON else value
                        for key, value in record.items()})


def write_logs(
    paths: Sequence[str | Path],
    output: str | Path | None,
    *,
    recursive: bool = False,
    on_warning: Callable[[ParseWarning], object],
    out: TextSink | None = None,
    jobs: int | None = None,
) -> int:
    """``dlbench parse``: the records of the logs at ``paths`` (as
    :func:`~dlbench.results.log.parser.parse_logs` reads them) written to ``output`` as
    :func:`write_records` writes them, or, when None, to ``out`` (default stdout) as
    ``print(dumps_records(records))`` would; their count. Each warning goes to
    ``on_warning`` as soon as it is known. The records are never held together (but
    for a CSV): the worker processes that read the logs also encode them as JSON.
    """
    kind = _suffix(Path(output)) if output is not None else ".json"
    if output is not None and (kind in _HELD_FORMATS or kind not in WRITE_FORMATS
                               or (kind == ".json.gz" and not _ZLIB_GZIP)):
        return write_records(stream_logs(paths, recursive, on_warning=on_warning, jobs=jobs),
                             output)

    def texts() -> Iterator[str]:
        listing: list[ParseWarning] = []
        parsed = iter_logs_as(_log_json, paths, recursive, jobs=jobs, warnings=listing,
                              raw_lists=True)
        for warning in listing:
            on_warning(warning)
        for text, warnings in parsed:
            for warning in warnings:
                on_warning(warning)
            if text is not None:
                yield text

    if output is not None:
        return _write_texts(texts(), Path(output), kind)
    sink = sys.stdout if out is None else out
    count = _dump_json(texts(), sink)
    sink.write("\n")  # print() ends dumps_records's text with a second newline
    return count
