"""Records as a Parquet file, for pandas, Polars, DuckDB, Spark and the like.

A column per key (in first-seen order, or the ones asked for), typed as its values
allow, the way the store types its columns (:mod:`dlbench.results.store.columns`):
booleans, 64-bit integers, floats (integers among floats become floats), strings;
lists and dicts, and a key whose values mix kinds, as JSON text. A record without a
key has null there. Written with pyarrow, which is an extra (``dlbench[parquet]``):
without it, one line says so.

Example::

    data = parquet_bytes(records, "--output runs.parquet")
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from dlbench.errors import ResultsError
from dlbench.results.store.columns import dumps

#: The extra that brings the Parquet writer.
EXTRA = "pip install 'dlbench[parquet]'"

_INT64 = (-(2**63), 2**63 - 1)


def _column(values: list[Any]) -> tuple[str, list[Any]]:
    """``(arrow type name, values)`` of one column (None where a record lacks it)."""
    held = [v for v in values if v is not None]
    types = set(map(type, held))
    if types == {bool}:
        return "bool", values
    if types == {int} and all(_INT64[0] <= v <= _INT64[1] for v in held):
        return "int64", values
    if types and types <= {int, float} and all(
            type(v) is float or _INT64[0] <= v <= _INT64[1] for v in held):
        return "float64", [None if v is None else float(v) for v in values]
    if types == {str}:
        return "string", values
    return "string", [None if v is None else dumps(v) for v in values]


def parquet_bytes(
    records: Sequence[Mapping[str, Any]], what: str, columns: Sequence[str] | None = None
) -> bytes:
    """The Parquet file of ``records`` (only ``columns`` when given, in that order);
    ResultsError naming ``what`` (the file or flag asked for) when pyarrow is missing."""
    try:
        pa = importlib.import_module("pyarrow")
        pq = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise ResultsError(f"{what}: writing Parquet needs pyarrow: {EXTRA}") from None
    if columns is None:
        names: dict[str, None] = {}
        for record in records:
            names.update(dict.fromkeys(record))
        columns = list(names)
    arrays = {}
    for name in columns:
        arrow_type, values = _column([record.get(name) for record in records])
        arrays[name] = pa.array(values, type=getattr(pa, arrow_type)())
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(arrays) if arrays else pa.table({}), sink)
    return bytes(sink.getvalue().to_pybytes())
