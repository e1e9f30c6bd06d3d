"""The HTML report's "Serving curves" section: a chart per group of curves, the knee of
each curve, and the curves' tables.

Each chart is the one :mod:`dlbench.report.serving.chart` draws with matplotlib for a
PNG (:func:`~dlbench.report.serving.chart.draw_serving_chart`), inlined as SVG:
latency at the percentile of the rules against achieved throughput, a line per curve
through its offered loads in order, hollow points for runs that are not valid, a star
at the knee, the bound dashed, the knee limit of a curve without a bound dotted in its
colour, and a log y axis where the latencies span more than
:data:`~dlbench.report.serving.chart.LOG_RATIO` times. Token curves (generate-phase
runs, endpoints among them) follow, three charts per group and loop
(:mod:`dlbench.report.serving.tokens.chart`). The template (``report.html.j2``) marks
it up.

Example::

    report = build_serving_report(records)
    section = serving_section(report, records)   # None without server or generate runs
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from dlbench.report.cells import Report
from dlbench.report.charts.checks import chart_problems
from dlbench.report.charts.figure import DrawnChart, inline_svg
from dlbench.report.html.markup import TableView, table_view
from dlbench.report.serving.chart import chart_caption, chart_groups, draw_serving_chart
from dlbench.report.serving.curves import (
    KNEE_FACTOR,
    ServingCurve,
    server_records,
    serving_curves,
)
from dlbench.report.serving.report import ServingReport, curve_notes, curve_table
from dlbench.report.serving.tokens.chart import (
    chart_kinds,
    draw_token_chart,
    token_chart_caption,
    token_chart_groups,
)
from dlbench.report.serving.tokens.curves import (
    KNEE_ATTAINMENT,
    TokenCurve,
    token_curves,
    token_records,
)
from dlbench.report.serving.tokens.tables import curve_token_table, token_notes
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
    already under Tables, the knee's factor its introduction names, and which curves
    it introduces: latency curves of server runs, token curves of generate runs."""

    figures: list[ServingChart]
    tables_shown: bool
    knee_factor: str = f"{KNEE_FACTOR:g}"
    latency: bool = True
    tokens: bool = False
    knee_attainment: str = f"{KNEE_ATTAINMENT:.0%}"


def _checked_svg(draw: Callable[[], DrawnChart], ids: str) -> tuple[str, list[str]]:
    """The chart ``draw`` makes as the page's SVG (its ids starting with ``ids``), and
    what :func:`~dlbench.report.charts.checks.chart_problems` found wrong with it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drawn = draw()
        problems = chart_problems(drawn, layout=False)  # laid out as it will be saved
        svg = inline_svg(drawn.figure, ids=ids)
    return svg, problems + list(dict.fromkeys(safe_text(str(w.message)) for w in caught))


def serving_chart(curves: Sequence[ServingCurve], ids: str) -> tuple[str, list[str]]:
    """The curves (of one group) as the page's SVG (its ids starting with ``ids``), and what
    :func:`~dlbench.report.charts.checks.chart_problems` found wrong with the drawing."""
    return _checked_svg(lambda: draw_serving_chart(curves), ids)


def token_figures(curves: Sequence[TokenCurve], tables_shown: bool) -> list[ServingChart]:
    """The token curves' charts (:mod:`~dlbench.report.serving.tokens.chart`): per group
    and loop, output tokens/s against TTFT p99 and TPOT p99, and goodput against the
    load; the knees (and a search's peak) under the first, and (unless
    ``tables_shown``) the curves' tables under the last."""
    figures = []
    for number, members in enumerate(token_chart_groups(curves)):
        kinds = chart_kinds(members)
        for kind in kinds:
            svg, problems = _checked_svg(partial(draw_token_chart, members, kind),
                                         f"serving-tokens-{number}-{kind}-")
            # A search's peak is stated with its knee.
            notes = [f"{curve.label}: {note}" for curve in members
                     for note in token_notes(curve) if note.startswith(("peak", "knee"))]
            last = kind == kinds[-1] and not tables_shown
            tables = [table_view(curve_token_table(c)) for c in members] if last else []
            figures.append(ServingChart(token_chart_caption(members, kind), svg,
                                        [*(notes if kind == kinds[0] else []), *problems],
                                        tables))
    return figures


def serving_section(report: Report,
                    records: Sequence[Mapping[str, Any]]) -> ServingSection | None:
    """The HTML report's "Serving curves" section: a chart per group of latency curves
    and the knee of each, then the token curves' charts (:func:`token_figures`), and
    (unless ``report`` is the serving report, whose tables the page already shows) a
    table per curve, which holds the chart's points. None when no record is an ok
    server run or generate-phase run with a point."""
    if isinstance(report, ServingReport):
        curves, tokens, tables_shown = report.curves, report.token_curves, True
    else:
        usable, _ = server_records(records)
        generated, _ = token_records(records)
        curves, tokens, tables_shown = serving_curves(usable), token_curves(generated), False
    if not curves and not tokens:
        return None
    figures = []
    for number, members in enumerate(chart_groups(curves)):
        svg, problems = serving_chart(members, f"serving-{number}-")
        notes = [f"{curve.label}: {note}" for curve in members
                 for note in curve_notes(curve) if note.startswith("knee")]
        tables = [] if tables_shown else [table_view(curve_table(c)) for c in members]
        figures.append(ServingChart(chart_caption(members), svg, [*notes, *problems], tables))
    figures += token_figures(tokens, tables_shown)
    return ServingSection(figures, tables_shown, latency=bool(curves), tokens=bool(tokens))
