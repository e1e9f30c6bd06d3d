"""The HTML report's "Serving curves" section: a chart per group of curves, the knee of
each curve, and the curves' tables.

Each chart is the one :mod:`dlbench.report.serving.chart` draws with matplotlib for a
PNG (:func:`~dlbench.report.serving.chart.draw_serving_chart`), inlined as SVG:
latency at the percentile of the rules against achieved throughput, a line per curve
through its offered loads in order, hollow points for runs that are not valid, a star
at the knee, the bound dashed, the knee limit of a curve without a bound dotted in its
colour, and a log y axis where the latencies span more than
:data:`~dlbench.report.serving.chart.LOG_RATIO` times. The template
(``report.html.j2``) marks it up.

Example::

    report = build_serving_report(records)
    section = serving_section(report, records)   # None without server runs
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.report.cells import Report
from dlbench.report.charts.checks import chart_problems
from dlbench.report.charts.figure import inline_svg
from dlbench.report.html.markup import TableView, table_view
from dlbench.report.serving.chart import chart_caption, chart_groups, draw_serving_chart
from dlbench.report.serving.curves import (
    KNEE_FACTOR,
    ServingCurve,
    server_records,
    serving_curves,
)
from dlbench.report.serving.report import ServingReport, curve_notes, curve_table
from dlbench.textsafe import safe_text


@dataclass
class ServingChart:
    """One chart of the section: its caption, SVG, notes (each curve's knee, and what
    the drawing found wrong) and the tables of its curves shown under it."""

    caption: str
    svg: str
    notes: list[str]
    tables: list[TableView] = field(default_factory=list)


@dataclass
class ServingSection:
    """The page's "Serving curves" section: its charts, whether the curves' tables are
    already under Tables, and the knee's factor its introduction names."""

    figures: list[ServingChart]
    tables_shown: bool
    knee_factor: str = f"{KNEE_FACTOR:g}"


def serving_chart(curves: Sequence[ServingCurve], ids: str) -> tuple[str, list[str]]:
    """The curves (of one group) as the page's SVG (its ids starting with ``ids``), and what
    :func:`~dlbench.report.charts.checks.chart_problems` found wrong with the drawing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drawn = draw_serving_chart(curves)
        problems = chart_problems(drawn, layout=False)  # laid out as it will be saved
        svg = inline_svg(drawn.figure, ids=ids)
    return svg, problems + list(dict.fromkeys(safe_text(str(w.message)) for w in caught))


def serving_section(report: Report,
                    records: Sequence[Mapping[str, Any]]) -> ServingSection | None:
    """The HTML report's "Serving curves" section: a chart per group of curves, the
    knee of each, and (unless ``report`` is the serving report, whose tables the page
    already shows) a table per curve, which holds the chart's points. None when no
    record is an ok server run."""
    if isinstance(report, ServingReport):
        curves, tables_shown = report.curves, True
    else:
        usable, _ = server_records(records)
        curves, tables_shown = serving_curves(usable), False
    if not curves:
        return None
    figures = []
    for number, members in enumerate(chart_groups(curves)):
        svg, problems = serving_chart(members, f"serving-{number}-")
        notes = [f"{curve.label}: {note}" for curve in members
                 for note in curve_notes(curve) if note.startswith("knee")]
        tables = [] if tables_shown else [table_view(curve_table(c)) for c in members]
        figures.append(ServingChart(chart_caption(members), svg, [*notes, *problems], tables))
    return ServingSection(figures, tables_shown)
