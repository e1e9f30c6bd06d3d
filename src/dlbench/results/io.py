"""Records in and out: run directories, stores and exported files.

Sources (:func:`load_records`): a run directory (its ``results.sqlite``, or, when it
has none, the logs beneath it), a ``.sqlite``/``.db`` store, one ``.log`` or
``.log.gz`` log, and the files :func:`write_records` writes: ``.json``
(``{"data": [...]}`` or a bare list), ``.json.gz``, ``.jsonl``, ``.csv`` and
``.parquet`` (:func:`dlbench.results.parquet.parquet_records`, with pyarrow).

CSV has no types, so a cell is written so that it reads back as what it was: a
non-string value as its JSON text, a string raw unless it would itself read back as
JSON (``"0"``, ``"true"``, ``""``, ``"[1]"``), in which case it is JSON-quoted. On
load a cell that parses as JSON is decoded, anything else is a string, and an empty
cell is a key the record does not have.

Writing (:func:`write_records` and friends) lives in :mod:`dlbench.results.export`
and is re-exported here.

Example::

    records = load_records(["runs/sweep1", "old/results.json.gz"])
    write_records(records, "all.csv")
"""

from __future__ import annotations

import csv
import gzip
import importlib
import io
import zlib
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import psutil

from dlbench.errors import ResultsError
from dlbench.results.export import (
    WRITE_FORMATS,
    _suffix,
    dump_records,
    dumps_records,
    write_atomically,
    write_records,
)
from dlbench.results.jsontext import loads_json
from dlbench.results.log.parser import ParseWarning, parse_logs
from dlbench.results.parquet import parquet_records
from dlbench.results.query import distinct_values, filter_records, no_match_error
from dlbench.results.store import STORE_FILENAME, Store
from dlbench.results.store.columns import series_wanted
from dlbench.results.store.read import Survey
from dlbench.results.text_table import choose_columns, swept, table_columns

__all__ = ["WRITE_FORMATS", "dump_records", "dumps_records", "load_dataframe", "load_records",
           "load_selected", "load_table", "write_atomically", "write_records"]

if TYPE_CHECKING:
    import pandas

_SOURCE_KINDS = (
    "a run directory, a .sqlite or .db store, a .log or .log.gz log, "
    "or a .json, .json.gz, .jsonl, .csv or .parquet file"
)


# ---------------------------------------------------------------- loading

#: The most bytes a records file (.json, .json.gz decompressed, .jsonl, .csv, a
#: Parquet file's columns) may hold. A million records of a real run (benchmarks/
#: results_scale.py's: a run of 500 timed batches with its monitor's series) export to
#: 10.8 GB as .json or .jsonl, 7.2 GB as .csv, 1.3 GB as .json.gz (11 GB decompressed):
#: the limit leaves half as much again above that, and stops a gzip bomb or a
#: device that never ends. A smaller machine gets a smaller limit
#: (:func:`records_input_limit`).
MAX_RECORDS_INPUT_BYTES = 16 * 1024**3
#: A records file's text is held whole, then parsed into records that take several
#: times its size: past this share of the memory available, a read would exhaust it.
_MEMORY_SHARE = 4

#: Bytes read at a time: the most a read holds beyond what the file has given.
_READ_CHUNK = 1 << 20


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
        data = loads_json(text, str(path))
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
            record = loads_json(line, f"{path}:{number}")
        except ValueError as exc:
            raise ResultsError(f"{path}:{number}: not valid JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise ResultsError(f"{path}:{number}: a record must be a JSON object")
        records.append(record)
    return records


def _decode_cell(cell: str, path: Path) -> Any:
    try:
        return loads_json(cell, f"{path}: a cell")
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
                name: _decode_cell(cell, path)
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


def records_input_limit() -> int:
    """The most bytes a records file may hold here: :data:`MAX_RECORDS_INPUT_BYTES`, or
    a quarter of the memory available now where that is less."""
    available = int(psutil.virtual_memory().available)
    return min(MAX_RECORDS_INPUT_BYTES, max(available // _MEMORY_SHARE, 1 << 20))


def _read_text(path: Path, compressed: bool = False, json_text: bool = False) -> str:
    """The text of a records file (``compressed``: gzip), read in chunks, at most
    :func:`records_input_limit` of it once decompressed; ``json_text``: JSON, in
    which a NUL byte cannot stand, so that a file of zeros stops at its first chunk."""
    try:
        with gzip.open(path, "rb") if compressed else path.open("rb") as stream:
            data = _read_bounded(stream, path, records_input_limit(), compressed, json_text)
        return data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise ResultsError(f"cannot read {path}: {exc}") from exc


def _read_bounded(stream: IO[bytes] | gzip.GzipFile, path: Path, limit: int, compressed: bool,
                  json_text: bool) -> bytes:
    """Every byte of ``stream`` up to ``limit``; ResultsError past it (never reading
    more than ``limit`` + 1) or, for ``json_text``, at a NUL byte."""
    chunks: list[bytes] = []
    total = 0
    while chunk := stream.read(min(_READ_CHUNK, limit + 1 - total)):
        nul = chunk.find(b"\0") if json_text else -1
        if nul >= 0:
            raise ResultsError(f"{path}: not valid JSON (a NUL byte at byte {total + nul:,})")
        total += len(chunk)
        if total > limit:
            decompressed = " decompressed" if compressed else ""
            raise ResultsError(
                f"{path}: more than {limit:,} bytes{decompressed}; accepted: records files "
                f"of at most {limit:,} bytes here (the smaller of 16 GiB and a quarter of the "
                f"memory available; a million records of a run take about 11 GB as .json)")
        chunks.append(chunk)
    return b"".join(chunks)


def _check_parquet_size(path: Path) -> None:
    """Refuse a Parquet file whose columns take more than records_input_limit() once
    decompressed (as its metadata says), before any is read; without pyarrow, leave
    the refusal to the reader."""
    limit = records_input_limit()
    try:
        parquet = importlib.import_module("pyarrow.parquet")
    except ImportError:
        return
    try:
        metadata = parquet.read_metadata(path)
    except Exception:  # not Parquet (pyarrow's errors are many): the reader says so
        return
    size = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    if size > limit:
        raise ResultsError(
            f"{path}: {size:,} bytes of columns decompressed; accepted: records files of "
            f"at most {limit:,} bytes")


class _Wanted:
    """Which records and which of their keys a load returns (see :func:`load_records`)."""

    def __init__(
        self, where: Mapping[str, Any] | None, keys: Collection[str] | None,
        series: bool | Collection[str],
    ) -> None:
        self.where = where or None
        self.keys = None if keys is None else frozenset(keys)
        self.series = series if isinstance(series, bool) else frozenset(series)

    def from_store(self, store: Store) -> list[dict[str, Any]]:
        """The wanted records of a store: selected and projected in SQL."""
        return store.records(where=self.where, keys=self.keys, series=self.series)

    def __call__(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The wanted records of records loaded whole (logs and exported files)."""
        if self.where:
            records = filter_records(records, self.where)
        if self.keys is None and self.series is True:
            return records
        return [{k: v for k, v in record.items() if self._keeps(k, v)} for record in records]

    def _keeps(self, key: str, value: Any) -> bool:
        if self.keys is not None and key not in self.keys:
            return False
        return not isinstance(value, (list, dict)) or series_wanted(key, self.series)


_EVERYTHING = _Wanted(None, None, True)


def _load_directory(
    path: Path, parse_warnings: list[ParseWarning] | None, wanted: _Wanted
) -> list[dict[str, Any]]:
    if (path / STORE_FILENAME).is_file():
        with Store.in_directory(path, create=False) as store:
            return wanted.from_store(store)
    records, warnings = parse_logs([path], recursive=True)
    if not records and not warnings:
        warnings.append(
            ParseWarning(str(path), 0, f"no {STORE_FILENAME} and no *.log or *.log.gz files"))
    if parse_warnings is not None:
        parse_warnings.extend(warnings)
    return wanted(records)


def _load_source(
    path: Path, parse_warnings: list[ParseWarning] | None, wanted: _Wanted = _EVERYTHING
) -> list[dict[str, Any]]:
    if not path.exists():
        raise ResultsError(f"results source {path} does not exist; a source is {_SOURCE_KINDS}")
    if path.is_dir():
        return _load_directory(path, parse_warnings, wanted)
    kind = _suffix(path)
    if kind in (".sqlite", ".db"):
        with Store(path, create=False) as store:
            return wanted.from_store(store)
    if kind in (".log", ".log.gz"):
        records, warnings = parse_logs([path])
        if parse_warnings is not None:
            parse_warnings.extend(warnings)
        return wanted(records)
    if kind == ".json":
        return wanted(_load_json_text(_read_text(path, json_text=True), path))
    if kind == ".json.gz":
        return wanted(_load_json_text(_read_text(path, compressed=True, json_text=True), path))
    if kind == ".jsonl":
        return wanted(_load_jsonl(_read_text(path, json_text=True), path))
    if kind == ".csv":
        return wanted(_load_csv(_read_text(path), path))
    if kind == ".parquet":
        _check_parquet_size(path)
        return wanted(parquet_records(path))
    raise ResultsError(f"results source {path}: unknown kind of file; a source is {_SOURCE_KINDS}")


def load_records(
    sources: Sequence[str | Path],
    *,
    parse_warnings: list[ParseWarning] | None = None,
    where: Mapping[str, Any] | None = None,
    keys: Collection[str] | None = None,
    series: bool | Collection[str] = True,
) -> list[dict[str, Any]]:
    """Load and concatenate, in order, the records of every source.

    A source is a run directory (its store, else its logs, recursively), a
    ``.sqlite``/``.db`` store, a ``.log``/``.log.gz`` log, or a ``.json``,
    ``.json.gz``, ``.jsonl``, ``.csv`` or ``.parquet`` export. A missing path or unknown kind
    raises ``ResultsError``. Warnings from parsing logs are appended to
    ``parse_warnings`` when given, dropped otherwise.

    ``where`` (a parsed query) keeps only the matching records; ``keys`` only those
    keys of each record (all when None); ``series`` which list and dict values
    (``results.time_data``, monitor series): all (True), none (False) or those named
    (``"exp.*"`` names every key starting ``exp.``).
    A store does all three in SQL and reads nothing else, so a caller that needs
    scalars should say so: ``series=False`` or the few series it reads.
    """
    if isinstance(sources, (str, Path)):
        raise TypeError("load_records takes a sequence of sources, not one path")
    wanted = _Wanted(where, keys, series)
    records: list[dict[str, Any]] = []
    for source in sources:
        records.extend(_load_source(Path(source), parse_warnings, wanted))
    return records


def load_selected(
    sources: Sequence[str | Path],
    query: Mapping[str, Any],
    flag: str,
    source: str,
    *,
    parse_warnings: list[ParseWarning] | None = None,
    keys: Collection[str] | None = None,
    series: bool | Collection[str] = True,
) -> list[dict[str, Any]]:
    """The records of ``sources`` that match ``query``, which came from option ``flag``;
    ``source`` names the inputs in errors. :func:`load_records` with ``where=query``,
    and the errors of :func:`~dlbench.results.query.select_records`: ``ResultsError``
    when the sources hold no records, or when none matches (naming the values the
    queried keys do take, which only then are read).
    """
    selected = load_records(
        sources, parse_warnings=parse_warnings, where=query, keys=keys, series=series)
    if selected:
        return selected
    # Nothing matched: read the queried keys of every record, to say what exists.
    everything = load_records(sources, keys=list(query))
    if not everything:
        raise ResultsError(f"{source} holds no records")
    raise no_match_error(query, flag, source, everything,
                         distinct_values(everything, list(query)))


def _store_path(source: str | Path) -> Path | None:
    """The store a source is, when it is one (a run directory's or a file)."""
    path = Path(source)
    if path.is_dir():
        return path / STORE_FILENAME if (path / STORE_FILENAME).is_file() else None
    return path if path.is_file() and _suffix(path) in (".sqlite", ".db") else None


def load_table(
    sources: Sequence[str | Path],
    query: Mapping[str, Any],
    flag: str,
    source: str,
    *,
    preferred: Sequence[str],
    columns: Sequence[str] | None = None,
    parse_warnings: list[ParseWarning] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """What a table of the records of ``sources`` matching ``query`` shows: those
    records, with only the keys it needs, and its columns: ``columns`` when given,
    else :func:`~dlbench.results.text_table.choose_columns`'s (``preferred``, then the
    parameters that vary). Errors as :func:`load_selected`'s. A table shows a simulated
    experiment's model with its framework, so ``exp.framework`` comes too.

    From one store, the columns are chosen in SQL (which keys the selected records
    have, which vary) and only their values are read: a query selecting thousands of
    a million records reads a few columns of them, never a whole record.
    """
    store = _store_path(sources[0]) if columns is None and len(sources) == 1 else None
    if store is not None:
        chosen: list[str] = []

        def choose(survey: Survey) -> list[str]:
            chosen.extend(table_columns(preferred, survey.keys, survey.varying))
            return [*chosen, "exp.framework"]

        with Store(store, create=False) as opened:
            _, records = opened.survey_records(where=query, surveyed=swept, choose=choose)
        if records:
            return records, chosen
        # Nothing matched: load_selected says what exists.
    if columns is not None:
        keys = [*columns, "exp.framework"]
        return load_selected(sources, query, flag, source, parse_warnings=parse_warnings,
                             keys=keys), list(columns)
    selected = load_selected(sources, query, flag, source, parse_warnings=parse_warnings)
    return selected, choose_columns(selected, preferred)


def load_dataframe(
    sources: Sequence[str | Path],
    *,
    parse_warnings: list[ParseWarning] | None = None,
    where: Mapping[str, Any] | None = None,
    keys: Collection[str] | None = None,
    series: bool | Collection[str] = True,
) -> pandas.DataFrame:
    """The records of ``sources`` as a DataFrame: one row per record, dotted-name
    columns; ``where``, ``keys`` and ``series`` as for :func:`load_records`."""
    # pandas costs a noticeable import time; only callers that want a frame pay it.
    import pandas

    frame: pandas.DataFrame = pandas.DataFrame(load_records(
        sources, parse_warnings=parse_warnings, where=where, keys=keys, series=series))
    return frame
