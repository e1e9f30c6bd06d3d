"""The HTML report's "Serving curves" section: a chart per group of curves, drawn as SVG
by the one SVG writer (:mod:`dlbench.report.charts.svg`), the knee of each curve, and
the curves' tables.

The chart is the one :mod:`dlbench.report.serving.chart` draws with matplotlib for a
PNG, from the same :func:`~dlbench.report.serving.chart.serving_axes`: latency at the
percentile of the rules against achieved throughput, a line per curve through its
offered loads in order, hollow points for runs that are not valid, a star at the knee,
the bound dashed, the knee limit of a curve without a bound dotted in its colour, and
a log y axis where the latencies span more than
:data:`~dlbench.report.serving.chart.LOG_RATIO` times.

Example::

    report = build_serving_report(records)
    html = serving_section_html(report, records)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dlbench.report.cells import Report
from dlbench.report.charts.axes import log_tick_values, nice_step, tick_values
from dlbench.report.charts.svg import (
    DASHED,
    DOTTED,
    PALETTE,
    LegendEntry,
    Scale,
    frame,
    hline,
    legend,
    marker,
    polyline,
    svg_document,
    x_grid,
    x_title,
    y_grid,
    y_title,
)
from dlbench.report.serving.chart import (
    BOUND_COLOUR,
    chart_caption,
    chart_groups,
    curve_points,
    serving_axes,
)
from dlbench.report.serving.curves import (
    KNEE_FACTOR,
    ServingCurve,
    server_records,
    serving_curves,
)
from dlbench.report.serving.report import ServingReport, curve_notes, curve_table

_WIDTH, _PLOT_HEIGHT = 700.0, 300.0  # as the PNG: 7 inches at 100 dpi
_LEFT, _RIGHT, _TOP = 84.0, 16.0, 12.0
_GREY = "#7f7f7f"


def serving_chart_svg(curves: Sequence[ServingCurve],
                      problems: list[str] | None = None) -> str:
    """The curves (of one group) as an SVG chart (see the module's doc); a point drawn
    outside its axes is appended to ``problems``."""
    layout = serving_axes(curves)
    right, bottom = _WIDTH - _RIGHT, _TOP + _PLOT_HEIGHT
    x = Scale(*layout.xlim, _LEFT, right)
    y = Scale(*layout.ylim, bottom, _TOP, log=layout.log)
    low, high = layout.ylim
    y_ticks = (log_tick_values(low, high) if layout.log
               else tick_values(low, high, nice_step(high - low)))
    parts = [*y_grid(y, y_ticks, left=_LEFT, right=right),
             *x_grid(x, tick_values(*layout.xlim, nice_step(x.high - x.low)), top=_TOP,
                     bottom=bottom),
             frame(_LEFT, _TOP, right, bottom),
             y_title(y, 16, layout.ylabel), x_title(x, bottom + 36, layout.xlabel)]
    for number, bound in enumerate(layout.bounds):
        parts.append(hline(y(bound), _LEFT, right, BOUND_COLOUR, dash=DASHED,
                           css_class=f"bound bound-{number}"))
    for number, limit in layout.limits:
        parts.append(hline(y(limit), _LEFT, right, PALETTE[number % len(PALETTE)],
                           dash=DOTTED, css_class=f"limit limit-{number}"))
    entries = []
    for number, (curve, label) in enumerate(zip(curves, layout.labels, strict=True)):
        colour = PALETTE[number % len(PALETTE)]
        points = curve_points(curve)
        pixels = [(x(px), y(py)) for _, px, py in points]
        parts.append(f'<g class="curve curve-{number}">')
        if len(pixels) > 1:
            parts.append(polyline(pixels, colour))
        for (i, achieved, latency), (px, py) in zip(points, pixels, strict=True):
            point = curve.points[i]
            hollow = point.valid is False
            tip = (f"{label}: offered {point.offered:,.6g} {curve.x_unit}, achieved "
                   f"{achieved:,.6g} {curve.x_unit}, latency {latency:,.6g} {curve.y_unit}"
                   + (" (not valid)" if hollow else ""))
            knee = i == curve.knee
            parts.append(marker(px, py, colour, shape="star" if knee else "circle",
                                hollow=hollow, tooltip=("knee: " if knee else "") + tip,
                                css_class="knee" if knee else "point",
                                data=[("x", repr(achieved)), ("y", repr(latency))]))
            if problems is not None and not (x.contains(px) and y.contains(py)):
                problems.append(f"point ({achieved:g}, {latency:g}) lies on or past the "
                                f"edge of the axes {layout.ylabel!r}")
        parts.append("</g>")
        entries.append(LegendEntry(label, colour))
    for words, symbol, colour in ((layout.knee_text, "star", _GREY),
                                  (layout.hollow_text, "hollow", _GREY),
                                  (layout.bound_text, "dash", BOUND_COLOUR),
                                  (layout.limit_text, "dot", _GREY)):
        if words:
            entries.append(LegendEntry(words, colour, symbol))
    drawn, height = legend(entries, left=_LEFT, top=bottom + 52, width=right - _LEFT)
    parts += drawn
    return svg_document(_WIDTH, bottom + 52 + height + 8, parts, css_class="serving-chart",
                        font=True, label=f"{layout.ylabel} against {layout.xlabel}, "
                                         f"{len(curves)} curve(s)")


def serving_section_html(report: Report, records: Sequence[Mapping[str, Any]]) -> str:
    """The HTML report's "Serving curves" section: a chart per group of curves, the
    knee of each, and (unless ``report`` is the serving report, whose tables the page
    already shows) a table per curve, which holds the chart's points. ``""`` when no
    record is an ok server run."""
    if isinstance(report, ServingReport):
        curves, tables_shown = report.curves, True
    else:
        usable, _ = server_records(records)
        curves, tables_shown = serving_curves(usable), False
    if not curves:
        return ""
    # Imported here: the page imports this module, and owns its tables.
    from dlbench.report.html import page
    from dlbench.report.html.markup import escape, list_items

    parts = ['<section id="serving"><h2>Serving curves</h2>',
             "<p>Latency at the percentile of the rules against achieved throughput, a line "
             "per curve through its offered loads in order: dashed, the bound; dotted, the "
             f"limit of a curve without one ({KNEE_FACTOR:g}x its latency at the lowest "
             "load); the star, the knee; hollow, runs that are not valid."
             + (" A table per curve is under Tables." if tables_shown else "") + "</p>"]
    for members in chart_groups(curves):
        problems: list[str] = []
        svg = serving_chart_svg(members, problems)
        notes = [f"{curve.label}: {note}" for curve in members
                 for note in curve_notes(curve) if note.startswith("knee")]
        items = list_items([*notes, *problems])
        parts.append(f'<figure class="chart serving"><figcaption>'
                     f"{escape(chart_caption(members))}</figcaption>\n{svg}\n"
                     f'<ul class="notes">{items}</ul></figure>')
        if not tables_shown:
            parts += [page._table_html(curve_table(curve)) for curve in members]
    parts.append("</section>")
    return "\n".join(parts)
