"""The shape every report produces before it is formatted: titled tables of cells.

A report builds :class:`Table` objects from records with unrounded values; the text,
markdown, csv, json and HTML formatters only round when they print.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    """One table of a report.

    ``rows`` hold raw cell values: numbers unrounded, ``None`` for a missing cell
    (printed ``-``). ``group`` names what the table is separated by (framework,
    device, ...), so that values of different groups are never averaged together.
    ``notes`` are lines printed under the table (formulas, rows without a baseline).
    """

    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    group: dict[str, Any] = field(default_factory=dict)
    #: ``str.format`` pattern of floats; None: at their precision
    #: (:func:`dlbench.results.text_table.format_number`).
    floatfmt: str | None = None


@dataclass
class Report:
    """A whole report: its tables, and warnings about the input (records skipped,
    environments that differ) to show with it."""

    title: str
    tables: list[Table] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
