"""A :class:`~dlbench.report.cells.Report` as lines of text, markdown, csv or json.

Formatters return lines; only the command line prints them. Numbers are rounded
here and nowhere else.

- ``text``: the title, the summary, warnings, then each table aligned in columns
  with its notes under it. A cell that is the mean of several runs
  (:class:`~dlbench.report.aggregate.Measured`, n > 1) reads ``152.31 ±2.1%``: the
  mean, then the sample sd as a percentage of the mean. A missing cell is ``-``.
- ``markdown``: the same as GitHub pipe tables.
- ``csv``: long ("tidy") form, one line per cell that has a value:
  ``table, <group keys>, <row labels>, column, value, sd, n``, full precision;
  ``sd`` and ``n`` are filled for means of runs. Summary, notes and warnings are not
  in the csv (the command line prints warnings on stderr).
- ``json``: one object ``{title, summary, warnings, tables: [{title, group,
  columns, label_columns, rows, notes}]}``; a mean of runs is ``{"mean", "sd",
  "n"}``, other cells are plain values, missing ones ``null``.

Every format writes a lone surrogate as its ``\\udXXX`` escape
(:mod:`dlbench.textsafe`): the lines always encode as UTF-8.

Example::

    lines = render_report(report, "markdown")
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from dlbench.formats import REPORT_FORMATS
from dlbench.report.aggregate import Measured
from dlbench.report.cells import Report, Table
from dlbench.results.text_table import (
    MISSING,
    aligned_lines,
    csv_line,
    format_number,
    one_line,
)
from dlbench.results.values import is_number as _is_number
from dlbench.textsafe import escape_surrogates

#: The formats a report renders to as lines (html is a page: ``dlbench.report.html.page``).
RENDER_FORMATS = REPORT_FORMATS



def label_columns(table: Table) -> int:
    """How many leading columns of ``table`` name its rows.

    A :class:`~dlbench.report.aggregate.LabeledTable` says; for any other table it
    is the leading columns whose every cell is a string.
    """
    declared = getattr(table, "label_columns", None)
    if isinstance(declared, int):
        return declared
    count = 0
    for index in range(len(table.columns)):
        if table.rows and all(isinstance(row[index], str) for row in table.rows):
            count += 1
        else:
            break
    return count


def format_value(value: Any, floatfmt: str | None = None) -> str:
    """One cell as text, without its spread: ``-`` when missing, floats by
    ``floatfmt`` or at their precision (``0.0034``, never ``0.00``), lists and dicts as
    compact JSON."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_number(float(value), floatfmt)
    if isinstance(value, (int, str)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def spread(value: Any) -> str:
    """`` ±2.1%`` for a mean of several runs with a spread, else the empty string."""
    if isinstance(value, Measured) and value.n > 1 and value.sd_percent is not None:
        return f" ±{value.sd_percent:.1f}%"
    return ""


def _cell_texts(table: Table) -> list[list[str]]:
    """Every cell as text, with the spreads of a column padded to one width so that
    means line up with means and spreads with spreads."""
    texts = [[one_line(format_value(v, table.floatfmt)) for v in row] for row in table.rows]
    for col in range(len(table.columns)):
        spreads = [spread(row[col]) for row in table.rows]
        width = max((len(s) for s in spreads), default=0)
        if width:
            for line, suffix in zip(texts, spreads, strict=True):
                line[col] += suffix.ljust(width)
    return texts


def _right_aligned(table: Table) -> list[bool]:
    labels = label_columns(table)
    return [
        index >= labels or all(row[index] is None or _is_number(row[index]) for row in table.rows)
        for index in range(len(table.columns))
    ]


def _aligned(table: Table, markdown: bool) -> list[str]:
    return aligned_lines([one_line(str(h)) for h in table.columns], _cell_texts(table),
                         _right_aligned(table), markdown)


def render_text(report: Report) -> list[str]:
    """The report as aligned plain text."""
    title = one_line(report.title)
    lines = [title, "=" * len(title)]
    lines += map(one_line, report.summary)
    if report.warnings:
        lines.append("")
        lines += [f"warning: {one_line(w)}" for w in report.warnings]
    for table in report.tables:
        lines += ["", one_line(table.title), *_aligned(table, markdown=False)]
        lines += [f"note: {one_line(n)}" for n in table.notes]
    return lines


def render_markdown(report: Report) -> list[str]:
    """The report as GitHub markdown: a heading, paragraphs, pipe tables."""
    lines = [f"### {one_line(report.title)}"]
    if report.summary:
        lines += ["", *(one_line(s) + "  " if i < len(report.summary) - 1 else one_line(s)
                        for i, s in enumerate(report.summary))]
    for warning in report.warnings:
        lines += ["", f"> **Warning:** {one_line(warning)}"]
    for table in report.tables:
        # Escaped: the '*' of a formula in a title would otherwise end the bold.
        title = one_line(table.title).replace("*", "\\*")
        lines += ["", f"**{title}**", "", *_aligned(table, markdown=True)]
        if table.notes:
            lines += ["", *(f"- {one_line(n)}" for n in table.notes)]
    return lines


def _csv_number(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, float):
        return repr(float(value))  # full precision: csv is read by programs
    if isinstance(value, (bool, list, dict)):
        return json.dumps(value)
    return str(value)


def render_csv(report: Report) -> list[str]:
    """The report's cells in long form (see the module docstring)."""
    group_keys: dict[str, None] = {}
    label_keys: dict[str, None] = {}
    for table in report.tables:
        group_keys.update(dict.fromkeys(table.group))
        label_keys.update(dict.fromkeys(table.columns[: label_columns(table)]))
    lines: list[list[Any]] = [["table", *group_keys, *label_keys, "column", "value", "sd", "n"]]
    for table in report.tables:
        count = label_columns(table)
        group = [_csv_number(table.group.get(k)) for k in group_keys]
        for row in table.rows:
            labels = dict(zip(table.columns[:count], row[:count], strict=True))
            named = [_csv_number(labels.get(k)) for k in label_keys]
            for column, value in zip(table.columns[count:], row[count:], strict=True):
                if value is None:
                    continue
                sd, n = (value.sd, value.n) if isinstance(value, Measured) else (None, None)
                lines.append([table.title, *group, *named, column, value, sd, n])
    return csv_lines(lines)


def csv_lines(rows: Sequence[Sequence[Any]]) -> list[str]:
    """``rows`` (the header first) as CSV lines: floats at full precision, lists and
    dicts as JSON, missing values empty."""
    return [csv_line(map(_csv_number, row)) for row in rows]


def _json_cell(value: Any) -> Any:
    if isinstance(value, Measured):
        return {"mean": _json_cell(float(value)), "sd": _json_cell(value.sd), "n": value.n}
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    return value


def render_json(report: Report) -> list[str]:
    """The report as one indented JSON object (see the module docstring)."""
    document = {
        "title": report.title,
        "summary": report.summary,
        "warnings": report.warnings,
        "tables": [
            {
                "title": table.title,
                "group": table.group,
                "columns": table.columns,
                "label_columns": label_columns(table),
                "rows": [[_json_cell(v) for v in row] for row in table.rows],
                "notes": table.notes,
            }
            for table in report.tables
        ],
    }
    # A lone surrogate as its \udXXX escape: valid JSON that reads back as it.
    return escape_surrogates(json.dumps(document, indent=2, ensure_ascii=False)).splitlines()


def render_report(report: Report, fmt: str) -> list[str]:
    """``report`` as lines in ``fmt`` (``text``, ``markdown``, ``csv``, ``json``).

    ``ValueError`` for any other format (html is written by
    ``dlbench.report.html.page``).
    """
    renderers = {
        "text": render_text,
        "markdown": render_markdown,
        "csv": render_csv,
        "json": render_json,
    }
    if fmt not in renderers:
        raise ValueError(f"unknown report format {fmt!r}; accepted: {', '.join(RENDER_FORMATS)}")
    return renderers[fmt](report)
