"""Records in and out: run directories, stores and exported files.

Sources (:func:`load_records`): a run directory (its ``results.sqlite``, or, when it
has none, the logs beneath it), a ``.sqlite``/``.db`` store, one ``.log`` or
``.log.gz`` log, and the files :func:`write_records` writes: ``.json``
(``{"data": [...]}`` or a bare list), ``.json.gz``, ``.jsonl`` and ``.csv``.

CSV has no types, so a cell is written so that it reads back as what it was: a
non-string value as its JSON text, a string raw unless it would itself read back as
JSON (``"0"``, ``"true"``, ``""``, ``"[1]"``), in which case it is JSON-quoted. On
load a cell that parses as JSON is decoded, anything else is a string, and an empty
cell is a key the record does not have.

Example::

    records = load_records(["runs/sweep1", "old/results.json.gz"])
    write_records(records, "all.csv")
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlbench.errors import ResultsError
from dlbench.results.parser import ParseWarning, parse_logs
from dlbench.results.store import STORE_FILENAME, Store

if TYPE_CHECKING:
    import pandas

_SOURCE_KINDS = (
    "a run directory, a .sqlite or .db store, a .log or .log.gz log, "
    "or a .json, .json.gz, .jsonl or .csv file"
)
WRITE_FORMATS = (".json", ".json.gz", ".jsonl", ".csv")


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for double in (".json.gz", ".log.gz"):
        if name.endswith(double):
            return double
    return path.suffix.lower()


# ---------------------------------------------------------------- loading


def _as_records(data: Any, path: Path) -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise ResultsError(f'{path}: expected {{"data": [records]}} or a list of records')
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            kind = type(record).__name__
            raise ResultsError(f"{path}: record {index} is a {kind}, not an object")
    return data


def _load_json_text(text: str, path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc})") from exc
    return _as_records(data, path)


def _load_jsonl(text: str, path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    # Split on "\n" only, as writers of JSON lines do; str.splitlines would break
    # records whose strings hold U+2028 and friends.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise ResultsError(f"{path}:{number}: not valid JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise ResultsError(f"{path}:{number}: a record must be a JSON object")
        records.append(record)
    return records


def _decode_cell(cell: str) -> Any:
    try:
        return json.loads(cell)
    except ValueError:
        return cell


def _load_csv(text: str, path: Path) -> list[dict[str, Any]]:
    # The csv module's default 128 KiB field limit guards against runaway quoting,
    # but results.time_data of a long run is legitimately larger.
    previous_limit = csv.field_size_limit(2**31 - 1)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            return []
        return [
            {
                name: _decode_cell(cell)
                for name, cell in zip(header, row, strict=False)
                if cell != ""
            }
            for row in reader
            if row
        ]
    except csv.Error as exc:
        raise ResultsError(f"{path}: not valid CSV ({exc})") from exc
    finally:
        csv.field_size_limit(previous_limit)


def _read_text(path: Path, compressed: bool = False) -> str:
    try:
        data = path.read_bytes()
        if compressed:
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from exc


def _load_directory(path: Path, parse_warnings: list[ParseWarning] | None) -> list[dict[str, Any]]:
    if (path / STORE_FILENAME).is_file():
        with Store.in_directory(path, create=False) as store:
            return store.records()
    records, warnings = parse_logs([path], recursive=True)
    if not records and not warnings:
        warnings.append(
            ParseWarning(str(path), 0, f"no {STORE_FILENAME} and no *.log or *.log.gz files"))
    if parse_warnings is not None:
        parse_warnings.extend(warnings)
    return records


def _load_source(path: Path, parse_warnings: list[ParseWarning] | None) -> list[dict[str, Any]]:
    if not path.exists():
        raise ResultsError(f"results source {path} does not exist; a source is {_SOURCE_KINDS}")
    if path.is_dir():
        return _load_directory(path, parse_warnings)
    kind = _suffix(path)
    if kind in (".sqlite", ".db"):
        with Store(path, create=False) as store:
            return store.records()
    if kind in (".log", ".log.gz"):
        records, warnings = parse_logs([path])
        if parse_warnings is not None:
            parse_warnings.extend(warnings)
        return records
    if kind == ".json":
        return _load_json_text(_read_text(path), path)
    if kind == ".json.gz":
        return _load_json_text(_read_text(path, compressed=True), path)
    if kind == ".jsonl":
        return _load_jsonl(_read_text(path), path)
    if kind == ".csv":
        return _load_csv(_read_text(path), path)
    raise ResultsError(f"results source {path}: unknown kind of file; a source is {_SOURCE_KINDS}")


def load_records(
    sources: Sequence[str | Path], *, parse_warnings: list[ParseWarning] | None = None
) -> list[dict[str, Any]]:
    """Load and concatenate, in order, the records of every source.

    A source is a run directory (its store, else its logs, recursively), a
    ``.sqlite``/``.db`` store, a ``.log``/``.log.gz`` log, or a ``.json``,
    ``.json.gz``, ``.jsonl`` or ``.csv`` export. A missing path or unknown kind
    raises ``ResultsError``. Warnings from parsing logs are appended to
    ``parse_warnings`` when given, dropped otherwise.
    """
    if isinstance(sources, (str, Path)):
        raise TypeError("load_records takes a sequence of sources, not one path")
    records: list[dict[str, Any]] = []
    for source in sources:
        records.extend(_load_source(Path(source), parse_warnings))
    return records


# ---------------------------------------------------------------- writing


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
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow(_encode_cell(record[c]) if c in record else "" for c in columns)
    return out.getvalue()


def dumps_records(records: Sequence[Mapping[str, Any]]) -> str:
    """``{"data": [...]}`` JSON text, one record per line, ending with a newline."""
    if not records:
        return '{"data": []}\n'
    lines = ",\n".join(json.dumps(dict(record), ensure_ascii=False) for record in records)
    return '{"data": [\n' + lines + "\n]}\n"


def _jsonl_text(records: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(dict(record), ensure_ascii=False) + "\n" for record in records)


def write_atomically(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it renamed into
    place, so that a reader never sees half a file; ResultsError if it cannot."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # os.open with 0o666 lets the umask decide the mode, as for any new file
        # (tempfile would leave the file readable by its owner only).
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_records(records: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """Write records to ``path`` in the format its extension names.

    ``.json`` (``{"data": [...]}``, one record per line), ``.json.gz``, ``.jsonl``
    or ``.csv`` (columns: every key, in first-seen order). The file is written
    beside its destination and renamed into place, so it is never half-written.
    Any other extension raises ``ResultsError``.
    """
    path = Path(path)
    kind = _suffix(path)
    if kind == ".json":
        data = dumps_records(records).encode("utf-8")
    elif kind == ".json.gz":
        # mtime=0: the same records always give the same bytes.
        data = gzip.compress(dumps_records(records).encode("utf-8"), mtime=0)
    elif kind == ".jsonl":
        data = _jsonl_text(records).encode("utf-8")
    elif kind == ".csv":
        data = _csv_text(records).encode("utf-8")
    else:
        raise ResultsError(
            f"cannot write {path}: unknown extension; accepted: {' '.join(WRITE_FORMATS)}"
        )
    write_atomically(path, data)


def load_dataframe(
    sources: Sequence[str | Path], *, parse_warnings: list[ParseWarning] | None = None
) -> pandas.DataFrame:
    """The records of ``sources`` as a DataFrame: one row per record, dotted-name columns."""
    # pandas costs a noticeable import time; only callers that want a frame pay it.
    import pandas

    frame: pandas.DataFrame = pandas.DataFrame(load_records(sources, parse_warnings=parse_warnings))
    return frame
