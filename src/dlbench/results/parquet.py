"""Records as a Parquet file, for pandas, Polars, DuckDB, Spark and the like, and back.

A column per key (in first-seen order, or the ones asked for), typed as its values
allow, the way the store types its columns (:mod:`dlbench.results.store.columns`):
booleans, 64-bit integers, floats (integers among floats become floats), strings;
lists and dicts, and a key whose values mix kinds, as JSON text. A record without a
key has null there. Written with pyarrow, which is an extra (``dlbench[parquet]``):
without it, one line says so.

So that such a file reads back as the records it was written from
(:func:`parquet_records`), the schema's metadata says, under ``dlbench``, what its
columns do not: which string columns hold JSON text, which floats were integers, and
which nulls are a ``null`` the record holds rather than a key it lacks. A Parquet file
written by anything else reads as its columns' values, a null as a missing key.

Example::

    data = parquet_bytes(records, "--output runs.parquet")
    records = parquet_records(Path("runs.parquet"))
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

from dlbench.errors import ResultsError
from dlbench.results.jsontext import loads_json
from dlbench.results.store.columns import dumps
from dlbench.textsafe import escape_surrogates

#: The extra that brings the Parquet writer.
EXTRA = "pip install 'dlbench[parquet]'"

_INT64 = (-(2**63), 2**63 - 1)


def _column(values: list[Any]) -> tuple[str, list[Any]]:
    """``(arrow type name, values)`` of one column (None where a record lacks it)."""
    held = [v for v in values if v is not None]
    types = set(map(type, held))
    if types == {bool}:
        return "bool_", values  # pyarrow's name: ``bool`` is Python's
    if types == {int} and all(_INT64[0] <= v <= _INT64[1] for v in held):
        return "int64", values
    if types and types <= {int, float} and all(
            type(v) is float or _INT64[0] <= v <= _INT64[1] for v in held):
        return "float64", [None if v is None else float(v) for v in values]
    if types == {str}:
        # Parquet strings are UTF-8: a lone surrogate is kept as its visible escape.
        return "string", [None if v is None else escape_surrogates(v) for v in values]
    # JSON text: the escape of a lone surrogate reads back as it.
    return "string", [None if v is None else escape_surrogates(dumps(v)) for v in values]


def _pyarrow(what: str, doing: str) -> tuple[ModuleType, ModuleType]:
    try:
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise ResultsError(f"{what}: {doing} Parquet needs pyarrow: {EXTRA}") from None


def _notes(records: Sequence[Mapping[str, Any]], name: str, arrow_type: str,
           notes: dict[str, Any], column: str) -> None:
    """Add to ``notes`` what the column ``column`` (the key ``name``) cannot say of its
    values."""
    held = {type(record[name]) for record in records if record.get(name) is not None}
    if arrow_type == "string" and held and held != {str}:  # _column wrote JSON text
        notes.setdefault("json", []).append(column)
    if arrow_type == "float64":
        ints = [i for i, record in enumerate(records) if type(record.get(name)) is int]
        if ints:
            notes.setdefault("ints", {})[column] = ints
    nulls = [i for i, record in enumerate(records) if name in record and record[name] is None]
    if nulls:
        notes.setdefault("nulls", {})[column] = nulls


def parquet_bytes(
    records: Sequence[Mapping[str, Any]], what: str, columns: Sequence[str] | None = None
) -> bytes:
    """The Parquet file of ``records`` (only ``columns`` when given, in that order);
    ResultsError naming ``what`` (the file or flag asked for) when pyarrow is missing."""
    pa, pq = _pyarrow(what, "writing")
    if columns is None:
        names: dict[str, None] = {}
        for record in records:
            names.update(dict.fromkeys(record))
        columns = list(names)
    arrays = {}
    notes: dict[str, Any] = {}
    for name in columns:
        arrow_type, values = _column([record.get(name) for record in records])
        arrays[escape_surrogates(name)] = pa.array(values, type=getattr(pa, arrow_type)())
        _notes(records, name, arrow_type, notes, escape_surrogates(name))
    table = pa.table(arrays) if arrays else pa.table({})
    metadata = {_METADATA_KEY: json.dumps({"version": 1, **notes}, separators=(",", ":"))}
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(metadata), sink)
    return bytes(sink.getvalue().to_pybytes())


#: The schema metadata key of what :func:`parquet_bytes` notes about its columns.
_METADATA_KEY = "dlbench"


def _plain(value: Any) -> Any:
    """A value pyarrow read as what a record holds (JSON's kinds)."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # A map column reads as (key, value) pairs.
        return [_plain(v) for v in value]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _well_formed(notes: Any) -> bool:
    """Whether ``notes`` is what :func:`parquet_bytes` writes under ``dlbench``."""
    def rows(found: Any) -> bool:
        return isinstance(found, dict) and all(
            isinstance(v, list) and all(type(i) is int for i in v) for v in found.values())

    return (isinstance(notes, dict) and isinstance(notes.get("json", []), list)
            and all(isinstance(n, str) for n in notes.get("json", []))
            and rows(notes.get("ints", {})) and rows(notes.get("nulls", {})))


def parquet_records(path: Path) -> list[dict[str, Any]]:
    """The records of the Parquet file ``path``, as :func:`parquet_bytes` wrote them
    (see the module's description). ResultsError naming the file when pyarrow is
    missing or the file is not Parquet."""
    _, pq = _pyarrow(str(path), "reading")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow's errors are many (ArrowInvalid, OSError...)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ResultsError(f"results source {path}: not a readable Parquet file ({first})"
                           ) from None
    raw = (table.schema.metadata or {}).get(_METADATA_KEY.encode())
    notes: dict[str, Any] = {}
    if raw is not None:
        try:
            found = loads_json(raw.decode("utf-8"), f"results source {path}: its metadata")
        except (UnicodeDecodeError, ValueError):
            found = None
        if not _well_formed(found):
            raise ResultsError(f"results source {path}: its dlbench metadata is not what "
                               "dlbench writes; write the file again with dlbench query")
        notes = found
    as_json = set(notes.get("json", []))
    ints: dict[str, list[int]] = notes.get("ints", {})
    nulls: dict[str, list[int]] = notes.get("nulls", {})
    _missing = object()
    columns: dict[str, list[Any]] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        values: list[Any] = [_missing if v is None else _plain(v) for v in column.to_pylist()]
        if name in as_json:
            values = [loads_json(v, f"results source {path}: column {name}")
                      if type(v) is str else v for v in values]
        for index in ints.get(name, []):
            if 0 <= index < len(values) and type(values[index]) is float \
                    and values[index].is_integer():
                values[index] = int(values[index])
        for index in nulls.get(name, []):
            if 0 <= index < len(values):
                values[index] = None
        columns[name] = values
    # Each record's keys in the file's column order (first seen when written).
    return [{name: values[index] for name, values in columns.items()
             if values[index] is not _missing} for index in range(table.num_rows)]
