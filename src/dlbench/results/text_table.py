"""Records as text tables: aligned plain text, GitHub markdown, or CSV lines.

Formatters return lines; only the command line prints them.

Example::

    columns = choose_columns(records, ["exp.model", "results.time", "results.throughput"])
    print("\\n".join(format_table(records, columns)))
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dlbench.results.values import is_number as _is_number
from dlbench.textsafe import safe_text

TABLE_FORMATS = ("text", "markdown", "csv")

#: Shown where a record has no value for a column (text and markdown).
MISSING = "-"

#: Lists and dicts are shown as compact JSON cut to this many characters.
MAX_JSON_WIDTH = 40

#: ``exp.*`` parameters that differ between any two experiments by nature, so
#: showing them says nothing about the sweep.
_NOT_SWEPT = frozenset({"exp.id", "exp.log_file", "exp.status_msg"})


def _format_cell(value: Any, floatfmt: str, truncate: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return floatfmt.format(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if truncate and len(text) > MAX_JSON_WIDTH:
        text = text[: MAX_JSON_WIDTH - 1] + "…"
    return text


def _one_line(text: str) -> str:
    # A newline inside a cell would break an aligned or pipe table apart; any other
    # control character or escape sequence is shown escaped, never sent to the terminal.
    return safe_text(text.replace("\r", " ").replace("\n", " "))


def format_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    headers: Sequence[str] | None = None,
    fmt: str = "text",
    floatfmt: str = "{:.2f}",
) -> list[str]:
    """Format ``rows`` (records) as table lines for ``columns``, headed by ``headers``.

    ``fmt`` is ``text`` (left-aligned text columns, right-aligned numeric columns, a
    dashed rule under the header), ``markdown`` (a GitHub pipe table) or ``csv``.
    A missing value (absent or null) is ``-`` (an empty cell in CSV); floats use
    ``floatfmt``; lists and dicts are compact JSON, cut to 40 characters with ``…``
    except in CSV. In text and markdown, control characters and escape sequences in a
    cell are shown escaped (:func:`~dlbench.textsafe.safe_text`); CSV keeps the data
    as it is. ``ValueError`` for an unknown ``fmt`` or mismatched ``headers``.
    """
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"unknown table format {fmt!r}; accepted: {', '.join(TABLE_FORMATS)}")
    header_row = list(columns if headers is None else headers)
    if len(header_row) != len(columns):
        raise ValueError(f"{len(header_row)} headers for {len(columns)} columns")
    missing = "" if fmt == "csv" else MISSING
    cells = [
        [
            missing
            if row.get(column) is None
            else _format_cell(row[column], floatfmt, truncate=fmt != "csv")
            for column in columns
        ]
        for row in rows
    ]
    if fmt == "csv":
        return [_csv_line(line) for line in [header_row, *cells]]

    numeric = [
        any(row.get(c) is not None for row in rows)
        and all(row.get(c) is None or _is_number(row.get(c)) for row in rows)
        for c in columns
    ]
    header_row = [_one_line(h) for h in header_row]
    cells = [[_one_line(cell) for cell in line] for line in cells]
    if fmt == "markdown":
        header_row = [h.replace("|", "\\|") for h in header_row]
        cells = [[cell.replace("|", "\\|") for cell in line] for line in cells]
    widths = [
        max([len(header_row[i])] + [len(line[i]) for line in cells]) for i in range(len(columns))
    ]
    if fmt == "markdown":
        # A markdown rule needs at least three dashes.
        widths = [max(width, 3) for width in widths]

    def aligned(line: Sequence[str]) -> list[str]:
        return [
            cell.rjust(width) if right else cell.ljust(width)
            for cell, width, right in zip(line, widths, numeric, strict=True)
        ]

    if fmt == "markdown":
        # The ':' at the right end of the rule marks a right-aligned column.
        rule = [
            ("-" * (w - 1) + ":") if right else "-" * w
            for w, right in zip(widths, numeric, strict=True)
        ]
        return ["| " + " | ".join(line) + " |" for line in [aligned(header_row), rule]] + [
            "| " + " | ".join(aligned(line)) + " |" for line in cells
        ]

    rule = ["-" * width for width in widths]
    return ["  ".join(line).rstrip() for line in [aligned(header_row), rule, *map(aligned, cells)]]


def _csv_line(values: Iterable[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(values)
    return out.getvalue()


def choose_columns(records: Sequence[Mapping[str, Any]], preferred: Sequence[str]) -> list[str]:
    """Columns for a sweep's table: ``preferred`` ones some record has, then varying ``exp.*``.

    An ``exp.*`` parameter varies when two records hold different values for it (a
    record without it counts as a value of its own); ``exp.id``, ``exp.log_file``
    and ``exp.status_msg`` always vary and are left out. Varying parameters come in
    the order they are first seen.
    """
    columns = [c for c in preferred if any(c in record for record in records)]
    chosen = set(columns)
    seen: dict[str, None] = {}
    for record in records:
        seen.update(dict.fromkeys(k for k in record if k.startswith("exp.")))
    for key in seen:
        if key in chosen or key in _NOT_SWEPT:
            continue
        values = {
            json.dumps(record[key], sort_keys=True) if key in record else None for record in records
        }
        if len(values) > 1:
            columns.append(key)
    return columns
