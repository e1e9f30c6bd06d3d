"""The one way dlbench writes HTML: Jinja2 templates (``dlbench/report/templates/``) with
autoescape on, rendered by :func:`render_page`, and the plain values they show.

Python decides what a page says (texts, numbers, which cells are missing); a template
decides how it is marked up, and Jinja2 escapes every value it inserts, so a record's
text (a model name, an error message) can never open a tag. The only values inserted
as they are, marked ``|safe`` in the templates, are the charts' SVG, which matplotlib
writes with its text escaped (:func:`dlbench.report.charts.figure.inline_svg`).

Every page extends ``page.html.j2``: the document, its head (charset, viewport, the
generator with dlbench's version, the title, no favicon request), the one stylesheet
(``style.css``) and the page's script. A lone surrogate anywhere in the page is
written as its visible ``\\udXXX`` escape (:mod:`dlbench.textsafe`), so the page
always encodes as UTF-8.

Example::

    page = render_page("report.html.j2", title="Exploration", tables=[table_view(t)])
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dlbench
from dlbench.report.aggregate import Measured
from dlbench.report.cells import Table
from dlbench.report.render import format_value, spread
from dlbench.results.text_table import MISSING, format_number
from dlbench.results.values import is_number as _is_number
from dlbench.textsafe import escape_surrogates

if TYPE_CHECKING:
    from jinja2 import Environment

#: The folder of the page templates, their stylesheet and scripts (package data).
TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

#: The one stylesheet of every page: the report (tables, notes, failures, details,
#: charts) and the history (its filter box and alert).
STYLESHEET = (TEMPLATES / "style.css").read_text(encoding="utf-8")


@cache
def environment() -> Environment:
    """The one Jinja2 environment of every page: templates from :data:`TEMPLATES`,
    every inserted value HTML-escaped, and a missing variable an error (a bug of the
    page, never an empty text)."""
    # Imported here: only writing a page pays for it.
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True,
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=True)


def render_page(template: str, **context: Any) -> str:
    """The page ``template`` (a page that extends ``page.html.j2``, whose ``title``
    is in ``context``) rendered with ``context`` and dlbench's version, lone
    surrogates written as visible escapes."""
    page = environment().get_template(template).render(version=dlbench.__version__,
                                                       **context)
    return escape_surrogates(page)


@dataclass(frozen=True)
class Cell:
    """One table cell as a page shows it: its ``text``; for a number, its raw value
    as ``sort`` (for the page's sorting script, so that ``1,000.00`` or a format never
    decides the order) and an optional tooltip; ``missing`` for a ``-`` cell; ``code``
    for a name shown in a monospace font (an operator)."""

    text: str = ""
    sort: str | None = None
    title: str = ""
    missing: bool = False
    code: bool = False


MISSING_CELL = Cell(MISSING, missing=True)


def number_cell(value: float | None, text: str, title: str = "") -> Cell:
    """A right-aligned cell showing ``text`` and sorting by ``value``, with an
    optional tooltip; a missing or non-finite value is a ``-`` cell."""
    if value is None or not math.isfinite(value):
        return MISSING_CELL
    return Cell(text, repr(float(value)), title)


def plain_value(value: Any) -> str:
    """A record's value as a page shows it: ``true``/``false``, text as it is, lists
    and dicts as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def cell(value: Any, floatfmt: str | None = None) -> Cell:
    """One report cell, worded as in the text report (``152.31 ±2.1%``, ``-``);
    numbers right-aligned and carrying their raw value for sorting."""
    text = format_value(value, floatfmt)
    if not _is_number(value):
        return Cell(text) if value is not None else MISSING_CELL
    if text == MISSING:  # NaN or infinity: no measurement
        return MISSING_CELL
    tip = ""
    if isinstance(value, Measured):
        sd = "-" if value.sd is None else format_number(value.sd, floatfmt)
        tip = f"mean of {value.n} run(s), sample sd {sd}"
    return number_cell(float(value), text + spread(value), tip)


@dataclass
class TableView:
    """A sortable table as a page shows it: its heading, what it is separated by, its
    columns (name, ``num`` or ``text``), its rows of cells and its notes."""

    title: str
    columns: list[tuple[str, str]]
    rows: list[list[Cell]]
    group: str = ""
    notes: list[str] = field(default_factory=list)


def table_view(table: Table) -> TableView:
    """``table`` as a page shows it: a column is numeric (right-aligned) when any of its
    cells is a number."""
    numeric = [any(_is_number(row[i]) for row in table.rows if i < len(row))
               for i in range(len(table.columns))]
    group = ", ".join(f"{k}={plain_value(v)}" for k, v in table.group.items())
    return TableView(
        table.title,
        [(c, "num" if is_num else "text") for c, is_num in zip(table.columns, numeric,
                                                               strict=True)],
        [[cell(v, table.floatfmt) for v in row] for row in table.rows],
        group, list(table.notes))
