"""Records out: ``.json``, ``.json.gz``, ``.jsonl``, ``.csv`` and ``.parquet`` files,
written whole or never (a temporary file beside the destination, renamed into place).

CSV has no types, so a cell is written so that it reads back as what it was: a
non-string value as its JSON text, a string raw unless it would itself read back as
JSON (``"0"``, ``"true"``, ``""``, ``"[1]"``), in which case it is JSON-quoted.

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
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from dlbench.errors import ResultsError
from dlbench.results.log.parser import ParseWarning, iter_logs_as, stream_logs
from dlbench.results.log.rawjson import RawJSON
from dlbench.results.parquet import parquet_bytes
from dlbench.results.text_table import csv_line

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
            return value
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
    """A record as one line of JSON, as every JSON format here writes it."""
    return json.dumps(dict(record), ensure_ascii=False)


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
        data = text.encode("utf-8")
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
def _atomic(path: Path) -> Iterator[IO[bytes]]:
    """A binary file that becomes ``path`` when the block ends without an exception;
    ``ResultsError`` when it cannot be written."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # os.open with 0o666 lets the umask decide the mode, as for any new file
        # (tempfile would leave the file readable by its owner only).
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                yield out
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_atomically(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it renamed into
    place, so that a reader never sees half a file; ResultsError if it cannot."""
    with _atomic(Path(path)) as out:
        out.write(data)


def write_records(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write records to ``path`` in the format its extension names; their count.

    ``.json`` (``{"data": [...]}``, one record per line), ``.json.gz``, ``.jsonl``,
    ``.csv`` or ``.parquet`` (columns: every key, in first-seen order). The file is written
    beside its destination and renamed into place, so it is never half-written.
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
            data = _csv_text(held).encode("utf-8")
        elif kind == ".parquet":
            data = parquet_bytes(held, str(path))
        else:  # mtime=0: the same records always give the same bytes
            data = gzip.compress(dumps_records(held).encode("utf-8"), mtime=0)
        write_atomically(path, data)
        return len(held)
    return _write_texts(map(record_json, records), path, kind)


def _write_texts(texts: Iterable[str], path: Path, kind: str) -> int:
    with _atomic(path) as raw:
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
