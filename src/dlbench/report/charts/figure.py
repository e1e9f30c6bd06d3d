"""A chart drawn by matplotlib, and its files: :class:`DrawnChart` (the figure, its
panels and legend, the texts a PNG records), :func:`save_chart` (the bytes of a PNG,
SVG or PDF file) and :func:`inline_svg` (the ``<svg>`` element an HTML page carries).

Every chart of dlbench, in a file or on a page, is a matplotlib figure saved here:
one drawing per chart, one library. The same figure gives the same bytes: no date, no
software version, element ids from a fixed salt.

Example::

    drawn = draw_chart(series, ylabel="results.throughput")
    Path("chart.pdf").write_bytes(save_chart(drawn, "pdf"))
    page_svg = inline_svg(drawn.figure, ids="chart-0-")   # the svg element of a page
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dlbench.errors import ChartError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

    from dlbench.report.charts.series import ChartSeries

CHART_FORMATS = ("png", "svg", "pdf")

#: The PNG text chunk that carries a chart's labels and the problems found in it.
PNG_KEY = "dlbench.chart"

#: A fixed salt makes SVG element ids stable: the same figure, the same bytes.
_SALT = "dlbench"


@dataclass
class Panel:
    """One y axis of a chart: its series, all in one unit."""

    axes: Axes
    unit: str
    series: list[ChartSeries]


@dataclass
class DrawnChart:
    """A chart laid out as it will be saved: the figure, its panels (one per unit, top
    to bottom), whether x is categorical (evenly spaced slots), the chart type, the
    legend (or None) and the texts a PNG records (:func:`save_chart`)."""

    figure: Figure
    panels: list[Panel]
    categorical: bool
    chart: str
    legend: Legend | None = None
    labels: dict[str, Any] = field(default_factory=dict)


def save_chart(drawn: DrawnChart, fmt: str, problems: Sequence[str] = ()) -> bytes:
    """The bytes of a ``fmt`` file of ``drawn``. A PNG carries the chart's labels and
    ``problems`` as JSON in its ``dlbench.chart`` text chunk."""
    if fmt not in CHART_FORMATS:
        raise ChartError(f"unknown chart format {fmt!r}; accepted: {', '.join(CHART_FORMATS)}")
    from matplotlib import rc_context

    described = json.dumps({**drawn.labels, "problems": list(problems)}, sort_keys=True)
    # No creation date in SVG and PDF (each backend names it its own way), no software
    # version in PNG: the same series give the same bytes.
    every: dict[str, dict[str, Any]] = {"png": {"Software": None, PNG_KEY: described},
                                        "svg": {"Date": None}, "pdf": {"CreationDate": None}}
    out = io.BytesIO()
    with rc_context({"svg.hashsalt": _SALT}):
        drawn.figure.savefig(out, format=fmt, metadata=every[fmt])
    return out.getvalue()


def inline_svg(figure: Figure, ids: str) -> str:
    """``figure`` as the ``<svg>`` element of an HTML page: matplotlib's SVG without its
    XML declaration, doctype and metadata, its text as ``<text>`` elements (escaped by
    matplotlib's XML writer, so that a record's text cannot open a tag) in the page's
    sans-serif font where the reader lacks matplotlib's.

    Every id in it starts with ``ids`` (``chart-0-``), and so does every reference to
    one (a marker's ``xlink:href="#..."``, a clip path's ``url(#...)``): each chart
    of a page names its own, and no two charts' ids clash; a group id matplotlib
    gives twice (an artist's gid) is numbered. (The patterns cannot occur in the
    charts' text, which matplotlib writes escaped: ``"`` as ``&quot;``.)

    Text rather than glyph outlines: a page of charts is a fraction of the size
    (``benchmarks/html_pages.py`` measures both), its labels can be searched, selected
    and read out, and no font file is embedded, so the page stays self-contained."""
    from matplotlib import rc_context

    out = io.StringIO()
    with rc_context({"svg.hashsalt": _SALT, "svg.fonttype": "none",
                     "font.family": ["DejaVu Sans", "sans-serif"]}):
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None,
                                                    "Format": None, "Type": None})
    text = out.getvalue()
    text = text[text.index("<svg"):].rstrip() + "\n"
    for pattern in ('id="', 'xlink:href="#', "url(#"):
        text = text.replace(pattern, pattern + ids)
    # A gid given to several artists (every "clip-mark") names several groups: the
    # second and later get a number. Only groups repeat an id (markers and clip paths
    # are named by a hash of what they are), and nothing refers to a group.
    seen: dict[str, int] = {}

    def unique(match: re.Match[str]) -> str:
        name = match.group(1)
        seen[name] = seen.get(name, 0) + 1
        return match.group(0) if seen[name] == 1 else f' id="{name}-{seen[name]}"'

    return re.sub(r' id="([^"]*)"', unique, text)
