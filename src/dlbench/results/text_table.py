"""Records as text tables: aligned plain text, GitHub markdown, or CSV lines.

Formatters return lines; only the command line prints them.

Numbers are shown at their precision (:func:`format_number`): two decimals from 1 up
(``41.67``, as DLBS's tables), four significant digits below (``0.0034``, not
``0.00``). An experiment of a simulated framework (``fake``) shows its model as
``fake(resnet50)`` (:func:`label_value`): no such model ran.

Example::

    columns = choose_columns(records, ["exp.model", "results.time", "results.throughput"])
    print("\\n".join(format_table(records, columns)))
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
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

#: Significant digits of a number below 1 (from 1 up, :data:`DECIMALS` decimals).
SIGNIFICANT = 4
#: Decimals of a number of 1 or more: times in ms and throughputs read as in DLBS.
DECIMALS = 2

def is_simulated(framework: Any) -> bool:
    """Whether ``framework``'s declaration says its step is simulated (runs no model)."""
    info = FRAMEWORKS.get(framework) if isinstance(framework, str) else None
    return info is not None and info.simulated


def format_number(value: float, floatfmt: str | None = None) -> str:
    """``value`` as text: by ``floatfmt`` (a ``str.format`` pattern) when given, else at
    its precision: ``{:.2f}`` when its magnitude is 0 or at least 1 (``41.67``,
    ``7.00``), :data:`SIGNIFICANT` significant digits below (``0.0034``, ``0.04871``,
    ``1.235e-07``), so that a small value never prints as ``0.00``."""
    if floatfmt is not None:
        return floatfmt.format(value)
    if not math.isfinite(value) or value == 0 or abs(value) >= 1:
        return f"{value:.{DECIMALS}f}"
    text = f"{value:.{SIGNIFICANT}g}"
    # 0.99996 rounds up to 1: from there on it is a number of 1 or more.
    return f"{value:.{DECIMALS}f}" if abs(float(text)) >= 1 else text


def label_value(row: Mapping[str, Any], column: str) -> Any:
    """The value of ``column`` as a label shows it: ``exp.model`` of a simulated
    framework as ``fake(resnet50)``; any other value as it is."""
    value = row.get(column)
    framework = row.get("exp.framework")
    if column == "exp.model" and value is not None and is_simulated(framework):
        return f"{framework}({value})"
    return value


def experiment_label(row: Mapping[str, Any], keys: Sequence[str]) -> str:
    """One experiment in a line: ``key=value`` for each of ``keys`` (the parameters
    that tell a sweep's experiments apart), else its model. A simulated experiment
    says so even when its model is not among ``keys``:
    ``fake(resnet50) exp.replica_batch=8``."""
    parts = [f"{key}={_label_text(label_value(row, key))}" for key in keys]
    model = label_value(row, "exp.model")
    if not parts or (is_simulated(row.get("exp.framework"))
                     and "exp.model" not in keys):
        parts.insert(0, _label_text(model))
    return " ".join(parts)


def _recorded(row: Mapping[str, Any], column: str) -> Any:
    return row.get(column)


def _label_text(value: Any) -> str:
    # A parameter's value as given (fake.step_ms=2.0), not rounded as a measurement.
    return "-" if value is None else str(value)


def _format_cell(value: Any, floatfmt: str | None, truncate: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_number(value, floatfmt)
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
    floatfmt: str | None = None,
) -> list[str]:
    """Format ``rows`` (records) as table lines for ``columns``, headed by ``headers``.

    ``fmt`` is ``text`` (left-aligned text columns, right-aligned numeric columns, a
    dashed rule under the header), ``markdown`` (a GitHub pipe table) or ``csv``.
    A missing value (absent or null) is ``-`` (an empty cell in CSV); floats use
    ``floatfmt``, by default their precision (:func:`format_number`); lists and dicts
    are compact JSON, cut to 40 characters with ``…`` except in CSV. In text and
    markdown, a simulated experiment's model reads ``fake(resnet50)``
    (:func:`label_value`), and control characters and escape sequences in a cell are
    shown escaped (:func:`~dlbench.textsafe.safe_text`); CSV keeps the data as it is.
    ``ValueError`` for an unknown ``fmt`` or mismatched ``headers``.
    """
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"unknown table format {fmt!r}; accepted: {', '.join(TABLE_FORMATS)}")
    header_row = list(columns if headers is None else headers)
    if len(header_row) != len(columns):
        raise ValueError(f"{len(header_row)} headers for {len(columns)} columns")
    missing = "" if fmt == "csv" else MISSING
    # CSV is data for programs: the model id as recorded.
    shown = _recorded if fmt == "csv" else label_value
    cells = [
        [
            missing
            if row.get(column) is None
            else _format_cell(shown(row, column), floatfmt, truncate=fmt != "csv")
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
