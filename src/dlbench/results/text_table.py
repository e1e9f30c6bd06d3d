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
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.results.values import is_number as _is_number
from dlbench.textsafe import escape_surrogates, safe_text

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


def one_line(text: str) -> str:
    """``text`` fit for one cell of a table printed on a terminal: newlines become
    spaces, other control characters visible escapes (:func:`~dlbench.textsafe.safe_text`)."""
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
    labelled = fmt != "csv"
    # A column at a time: one pass per column over values of, usually, one type.
    formatted = [_column_cells(rows, column, labelled, missing, floatfmt) for column in columns]
    by_column = [cells for cells, _ in formatted]
    numeric = [right for _, right in formatted]
    if fmt == "csv":
        return [csv_line(line) for line in [header_row, *_lines(by_column, len(rows))]]

    header_row = [one_line(h) for h in header_row]
    by_column = [cells if "".join(cells).isprintable() else list(map(one_line, cells))
                 for cells in by_column]
    return aligned_columns(header_row, by_column, numeric, markdown=fmt == "markdown",
                           count=len(rows))


def aligned_lines(
    headers: Sequence[str], cells: Sequence[Sequence[str]], right: Sequence[bool],
    markdown: bool, *, mark_right: bool = True, free_last: bool = False,
) -> list[str]:
    """A table of cells already formatted as text, one sequence per row: see
    :func:`aligned_columns`, which takes them one sequence per column."""
    by_column = [list(column) for column in zip(*cells, strict=True)] if cells else [
        [] for _ in headers]
    return aligned_columns(headers, by_column, right, markdown=markdown, count=len(cells),
                           mark_right=mark_right, free_last=free_last)


def aligned_columns(
    headers: Sequence[str], by_column: Sequence[Sequence[str]], right: Sequence[bool], *,
    markdown: bool = False, count: int = 0, mark_right: bool = True, free_last: bool = False,
) -> list[str]:
    """The one layout of every aligned table dlbench prints: cells already formatted
    as text (one sequence per column, ``count`` rows) padded to their column's width,
    left-aligned or (``right``) right-aligned, under the header and a dashed rule, two
    spaces between columns and no trailing blanks; or (``markdown``) a GitHub pipe
    table with ``|`` in cells escaped, at least three dashes per column and a ``:`` at
    the right end of the rule of a ``right``-aligned column (unless not
    ``mark_right``). In text, a ``free_last`` column is free text (a description): its rule is
    as long as its header only.

    >>> aligned_columns(["model", "ms"], [["a", "bcd"], ["1.5", "12.25"]], [False, True],
    ...                 count=2)
    ['model     ms', '-----  -----', 'a        1.5', 'bcd    12.25']
    """
    headers = list(headers)
    if markdown:
        headers = [h.replace("|", "\\|") for h in headers]
        by_column = [[cell.replace("|", "\\|") for cell in cells] if "|" in "".join(cells)
                     else cells for cells in by_column]
    # A markdown rule needs at least three dashes.
    minimum = 3 if markdown else 0
    widths = [max([minimum, len(header), *map(len, cells)]) for header, cells in zip(
        headers, by_column, strict=True)]

    def aligned(line: Sequence[str]) -> list[str]:
        return [
            cell.rjust(width) if r else cell.ljust(width)
            for cell, width, r in zip(line, widths, right, strict=True)
        ]

    padded = [[cell.rjust(width) for cell in cells] if r else
              [cell.ljust(width) for cell in cells]
              for cells, width, r in zip(by_column, widths, right, strict=True)]
    body = _lines(padded, count)
    if markdown:
        # The ':' at the right end of the rule marks a right-aligned column.
        rule = [
            ("-" * (w - 1) + ":") if r and mark_right else "-" * w
            for w, r in zip(widths, right, strict=True)
        ]
        return ["| " + " | ".join(line) + " |" for line in [aligned(headers), rule, *body]]
    rule = ["-" * width for width in widths]
    if free_last and headers:
        rule[-1] = "-" * len(headers[-1])
    return ["  ".join(line).rstrip() for line in [aligned(headers), rule, *body]]


def _lines(by_column: list[list[str]], count: int) -> list[Sequence[str]]:
    """Columns of cells as rows of cells (``count`` empty rows when no column)."""
    if not by_column:
        return [()] * count
    return list(zip(*by_column, strict=True))


_NONE = type(None)


def _is_str(value: Any) -> bool:
    return type(value) is str


def _column_cells(
    rows: Sequence[Mapping[str, Any]], column: str, labelled: bool, missing: str,
    floatfmt: str | None,
) -> tuple[list[str], bool]:
    """The cells of one column (see :func:`format_table`), and whether it is numeric:
    some value, and every value a number or missing."""
    values = [row.get(column) for row in rows]
    types = set(map(type, values))
    # int and float (not bool) are numbers; only other types need a look at each value.
    numeric = bool(types - {_NONE}) and (types <= {int, float, _NONE} or all(
        v is None or _is_number(v) for v in values))
    if labelled and column == "exp.model":
        frameworks = [row.get("exp.framework") for row in rows]
        simulated = {f for f in set(filter(_is_str, frameworks)) if is_simulated(f)}
        if simulated:
            values = [f"{framework}({value})" if value is not None and type(framework) is str
                      and framework in simulated else value
                      for value, framework in zip(values, frameworks, strict=True)]
            types = set(map(type, values))
    # The usual columns hold one type: their cells are made without the general case.
    if types <= {str, _NONE}:
        return [missing if v is None else v for v in values], numeric
    if types <= {float, _NONE}:
        return [missing if v is None else format_number(v, floatfmt) for v in values], numeric
    if types <= {int, _NONE}:
        return [missing if v is None else str(v) for v in values], numeric
    return [missing if v is None else _format_cell(v, floatfmt, truncate=labelled)
            for v in values], numeric


def csv_line(values: Iterable[Any]) -> str:
    """One CSV row as text without its line end, as every CSV dlbench writes quotes it
    (the ``csv`` module's default dialect): a record of ``dlbench query``, a cell of
    a report, a row of an export or a baseline. A field holding a comma, a quote, a
    carriage return or a newline is quoted, so the row reads back as one; a lone
    surrogate is written as its ``\\udXXX`` escape (:mod:`dlbench.textsafe`)."""
    out = io.StringIO()
    # The csv module quotes a field holding a character of the line terminator (and
    # Python before 3.13 only those): with "\r\n", a value holding either a carriage
    # return or a newline is quoted. The rows themselves end with "\n".
    csv.writer(out, lineterminator="\r\n").writerow(values)
    return escape_surrogates(out.getvalue()[:-2])


def swept(key: str) -> bool:
    """Whether ``key`` is a parameter a sweep's table may show when it varies: an
    ``exp.*`` key other than those that differ between any two experiments by nature
    (``exp.id``, ``exp.log_file``, ``exp.status_msg``)."""
    return key.startswith("exp.") and key not in _NOT_SWEPT


def table_columns(
    preferred: Sequence[str], keys: Sequence[str], varying: Collection[str]
) -> list[str]:
    """:func:`choose_columns` from what the records hold: ``keys``, every key some
    record has in the order first seen, and ``varying``, the :func:`swept` keys whose
    values differ between two records (a store finds both without building records:
    :meth:`~dlbench.results.store.Store.survey_records`)."""
    have = set(keys)
    columns = [c for c in preferred if c in have]
    chosen = set(columns)
    return columns + [key for key in keys if key not in chosen and swept(key) and key in varying]


def choose_columns(records: Sequence[Mapping[str, Any]], preferred: Sequence[str]) -> list[str]:
    """Columns for a sweep's table: ``preferred`` ones some record has, then varying ``exp.*``.

    An ``exp.*`` parameter varies when two records hold different values for it (a
    record without it counts as a value of its own); ``exp.id``, ``exp.log_file``
    and ``exp.status_msg`` always vary and are left out. Varying parameters come in
    the order they are first seen.
    """
    seen: dict[str, None] = {}
    for record in records:
        seen.update(dict.fromkeys(record))
    chosen = set(preferred)
    varying = set()
    for key in seen:
        if key in chosen or not swept(key):
            continue
        values = {
            json.dumps(record[key], sort_keys=True) if key in record else None for record in records
        }
        if len(values) > 1:
            varying.add(key)
    return table_columns(preferred, list(seen), varying)
