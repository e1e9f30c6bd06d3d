"""The one writer of SVG for the HTML pages: the ``<svg>`` element of every chart of the
HTML report (throughput, serving curves, memory breakdown) and of the history page,
its scales (linear or log), its axes with their ticks and titles, its lines, markers,
error bars and legend, and its text, all HTML-escaped
(:func:`~dlbench.report.html.markup.escape`). PNG and PDF files are matplotlib's
(:mod:`dlbench.report.charts.charts`); the two read the same series, limits, labels
and colours.

Tick steps and values, their text and an axis's label with its unit come from
:mod:`dlbench.report.charts.axes`, which the matplotlib charts use too.

Example::

    x = Scale(0.0, 40.0, 60.0, 560.0)
    parts = [*x_grid(x, tick_values(0.0, 40.0, nice_step(40.0)), top=10, bottom=100),
             x_title(x, 130.0, axis_label("memory", "MiB"))]
    svg = svg_document(620, 150, parts, label="memory of 2 experiments")
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dlbench.report.charts.axes import tick_text
from dlbench.report.html.markup import escape

XMLNS = "http://www.w3.org/2000/svg"

#: Text attributes of a chart that sets its own font rather than the page's classes.
FONT = 'font-family="system-ui,sans-serif" font-size="12" fill="#1f2328"'

#: Average width of a character of :data:`FONT`, for laying out labels and legends.
CHAR_WIDTH = 6.6

#: matplotlib's default colour cycle (``C0`` to ``C9``): a series has the same colour in
#: the PNG of ``dlbench plot`` and on the page.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")

#: Dash patterns: as matplotlib's ``--`` and ``:``.
DASHED, DOTTED = "5 3", "1.5 3"

#: Line height of a legend entry, pixels.
_LEGEND_LINE = 16.0


@dataclass(frozen=True)
class Scale:
    """A linear map from data values (``low`` to ``high``) to pixels (``start`` to
    ``end``; ``end`` below ``start`` for a y axis, whose pixels grow downwards)."""

    low: float
    high: float
    start: float
    end: float
    #: Logarithmic: equal ratios take equal distances (``low`` and ``high`` above 0).
    log: bool = False

    def __call__(self, value: float) -> float:
        """The pixel of ``value``; the middle of the range when ``low == high``."""
        if self.high == self.low:
            return (self.start + self.end) / 2
        if self.log:
            low, high, value = math.log10(self.low), math.log10(self.high), math.log10(value)
        else:
            low, high = self.low, self.high
        return self.start + (value - low) / (high - low) * (self.end - self.start)

    def contains(self, pixel: float, margin: float = 0.0) -> bool:
        """Whether ``pixel`` lies inside the scale's pixels, ``margin`` pixels from each end."""
        lo, hi = sorted((self.start, self.end))
        return lo + margin - 0.5 <= pixel <= hi - margin + 0.5


@dataclass(frozen=True)
class LegendEntry:
    """One entry of a legend: its ``label``, and the symbol drawn before it in
    ``colour``: ``line`` (a line through a dot), ``dash``, ``dot`` (a dotted line),
    ``solid`` (a plain line), ``marker``, ``hollow`` (an open circle), ``star`` or
    ``clip`` (the arrowhead of an error bar cut at the edge)."""

    label: str
    colour: str
    symbol: str = "line"


def svg_document(width: float, height: float, parts: Iterable[str], *, label: str = "",
                 css_class: str = "", font: bool = False) -> str:
    """A chart's ``<svg>`` element, ``width`` by ``height`` pixels, holding ``parts``
    (SVG markup, one a line): an image (``role="img"``) named ``label`` for assistive
    technology, of ``css_class`` when given, with :data:`FONT` when ``font``.
    ``ValueError`` for a size that is not a finite number above 0 (a bug of the chart)."""
    if not all(math.isfinite(side) and side > 0 for side in (width, height)):
        raise ValueError(f"SVG size {width!r} x {height!r}: expected finite numbers above 0")
    attributes = [f'xmlns="{XMLNS}"']
    if css_class:
        attributes.append(f'class="{escape(css_class)}"')
    attributes += ['role="img"', f'width="{width:.0f}"', f'height="{height:.0f}"',
                   f'viewBox="0 0 {width:.0f} {height:.0f}"']
    if label:
        attributes.append(f'aria-label="{escape(label)}"')
    if font:
        attributes.append(FONT)
    # The <title> names the chart to a screen reader, as the tooltip of the whole image.
    title = [f"<title>{escape(label)}</title>"] if label else []
    return "\n".join([f"<svg {' '.join(attributes)}>", *title, *parts, "</svg>"])


def text(x: float, y: float, content: str, *, anchor: str = "", css_class: str = "",
         transform: str = "") -> str:
    """A ``<text>`` at (``x``, ``y``), ``content`` escaped; ``anchor`` is its
    ``text-anchor`` (``middle``, ``end``)."""
    css = f' class="{escape(css_class)}"' if css_class else ""
    turn = f' transform="{transform}"' if transform else ""
    at = f' text-anchor="{anchor}"' if anchor else ""
    return f'<text{css} x="{x:.2f}" y="{y:.2f}"{turn}{at}>{escape(content)}</text>'


def x_grid(scale: Scale, ticks: Sequence[float], *, top: float, bottom: float,
           colour: str = "#d0d7de", labels: Sequence[str] | None = None) -> list[str]:
    """A vertical grid line from ``top`` to ``bottom`` at each tick of an x axis, its
    number (:func:`~dlbench.report.charts.axes.tick_text`), or its entry of ``labels``
    (the names of categorical slots), under it."""
    parts = []
    for number, value in enumerate(ticks):
        x = scale(value)
        shown = tick_text(value) if labels is None else labels[number]
        parts.append(f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{top:.2f}" y2="{bottom:.2f}" '
                     f'stroke="{colour}"/>' + text(x, bottom + 16, shown, anchor="middle"))
    return parts


def y_grid(scale: Scale, ticks: Sequence[float], *, left: float, right: float,
           colour: str = "#d0d7de") -> list[str]:
    """A horizontal grid line from ``left`` to ``right`` at each tick of a y axis, its
    number left of the axis."""
    parts = []
    for value in ticks:
        y = scale(value)
        parts.append(f'<line x1="{left:.2f}" x2="{right:.2f}" y1="{y:.2f}" y2="{y:.2f}" '
                     f'stroke="{colour}"/>' + text(left - 6, y + 4, tick_text(value),
                                                   anchor="end"))
    return parts


def frame(left: float, top: float, right: float, bottom: float) -> str:
    """The outline of a plot area."""
    return (f'<rect x="{left:.2f}" y="{top:.2f}" width="{right - left:.2f}" '
            f'height="{bottom - top:.2f}" fill="none" stroke="#8c959f"/>')


def _stroke(colour: str, dash: str, width: float) -> str:
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return f'stroke="{escape(colour)}" stroke-width="{width:g}"{dashes}'


def polyline(points: Sequence[tuple[float, float]], colour: str, *, dash: str = "",
             width: float = 1.5, css_class: str = "") -> str:
    """A line through ``points`` (pixels), in order."""
    css = f' class="{escape(css_class)}"' if css_class else ""
    joined = " ".join(f"{x:.2f},{y:.2f}" for x, y in points)
    return f'<polyline{css} points="{joined}" fill="none" {_stroke(colour, dash, width)}/>'


def hline(y: float, left: float, right: float, colour: str, *, dash: str = "",
          css_class: str = "") -> str:
    """A horizontal line at pixel ``y`` across the plot (a bound, a limit)."""
    return polyline([(left, y), (right, y)], colour, dash=dash, width=1.2, css_class=css_class)


def error_bar(x: float, low: float, high: float, colour: str, *, dash: str = "",
              clipped_low: bool = False, clipped_high: bool = False) -> str:
    """A vertical error bar at pixel ``x`` from pixel ``low`` to ``high``: a cap at
    each end, or, at an end cut at the edge of the axes (``clipped_low``,
    ``clipped_high``), an arrowhead pointing on (a ``<path class="clip-mark">``)."""
    stroke = _stroke(colour, dash, 1.0)
    caps = "".join(f"M{x - 3:.2f},{end:.2f}H{x + 3:.2f}"
                   for end, cut in ((low, clipped_low), (high, clipped_high)) if not cut)
    bar = (f'<path class="err" d="M{x:.2f},{low:.2f}V{high:.2f}{caps}" fill="none" '
           f"{stroke}/>")
    # Pixels grow downwards: the bar's low end points down (+), its high end up (-).
    marks = [clip_mark(x, end, 1.0 if end == low else -1.0, colour)
             for end, cut in ((low, clipped_low), (high, clipped_high)) if cut]
    return bar + "".join(marks)


def clip_mark(x: float, y: float, direction: float, colour: str) -> str:
    """An arrowhead with its tip at pixel (``x``, ``y``), pointing down for a
    ``direction`` of 1 and up for -1: where an error bar leaves the axes."""
    base = y - 6.0 * direction
    return (f'<path class="clip-mark" d="M{x:.2f},{y:.2f}L{x - 4:.2f},{base:.2f}'
            f'H{x + 4:.2f}Z" fill="{escape(colour)}"/>')


def _star(x: float, y: float, radius: float) -> str:
    corners = []
    for k in range(10):
        r = radius if k % 2 == 0 else radius * 0.45
        angle = math.pi / 2 + k * math.pi / 5
        corners.append(f"{x + r * math.cos(angle):.2f},{y - r * math.sin(angle):.2f}")
    return " ".join(corners)


def marker(x: float, y: float, colour: str, *, shape: str = "circle", hollow: bool = False,
           tooltip: str = "", css_class: str = "point", data: Sequence[tuple[str, str]] = ()
           ) -> str:
    """A point at pixels (``x``, ``y``): a ``circle`` (radius 3.5) or a ``star`` (the
    knee, radius 8, edged in black), filled with ``colour`` or white when ``hollow``,
    its ``tooltip`` as a ``<title>`` and ``data`` as ``data-NAME`` attributes."""
    fill = "#ffffff" if hollow else escape(colour)
    attributes = f'class="{escape(css_class)}"' + "".join(
        f' data-{name}="{escape(value)}"' for name, value in data)
    tip = f"<title>{escape(tooltip)}</title>" if tooltip else ""
    if shape == "star":
        return (f'<polygon {attributes} points="{_star(x, y, 8.0)}" fill="{fill}" '
                f'stroke="#000000">{tip}</polygon>')
    return (f'<circle {attributes} cx="{x:.2f}" cy="{y:.2f}" r="3.5" fill="{fill}" '
            f'stroke="{escape(colour)}" stroke-width="1.5">{tip}</circle>')


def _symbol(entry: LegendEntry, x: float, y: float) -> str:
    """The symbol of a legend entry, 24 pixels wide, centred on pixel row ``y``."""
    if entry.symbol == "clip":
        return clip_mark(x + 12, y - 3, -1.0, entry.colour)
    if entry.symbol in ("marker", "hollow", "star"):
        shape = "star" if entry.symbol == "star" else "circle"
        return marker(x + 12, y, entry.colour, shape=shape, hollow=entry.symbol == "hollow",
                      css_class="key")
    dash = {"dash": DASHED, "dot": DOTTED}.get(entry.symbol, "")
    line = polyline([(x, y), (x + 24, y)], entry.colour, dash=dash)
    return line + (marker(x + 12, y, entry.colour, css_class="key")
                   if entry.symbol == "line" else "")


def legend(entries: Sequence[LegendEntry], *, left: float, top: float,
           width: float) -> tuple[list[str], float]:
    """The legend's parts, an entry a row from ``top``, each label wrapped to fit
    ``width`` pixels from ``left`` (so the legend stays inside the image), and the
    height it takes."""
    parts: list[str] = []
    y = top
    columns = max(int((width - 32) / CHAR_WIDTH), 12)
    for entry in entries:
        lines = textwrap.wrap(entry.label, columns, break_on_hyphens=False) or [""]
        parts.append(f'<g class="legend-entry">{_symbol(entry, left, y + _LEGEND_LINE / 2)}')
        for number, line in enumerate(lines):
            parts.append(text(left + 32, y + _LEGEND_LINE * (number + 0.5) + 4, line))
        parts.append("</g>")
        y += _LEGEND_LINE * len(lines) + 2
    return parts, y - top


def y_ticks(scale: Scale, ticks: Sequence[float], *, left: float,
            css_class: str = "label") -> list[str]:
    """The numbers of a y axis at ``left`` (the axis line), right-aligned left of it."""
    return [text(left - 6, scale(value) + 4, tick_text(value), anchor="end", css_class=css_class)
            for value in ticks]


def x_title(scale: Scale, y: float, title: str, *, css_class: str = "axis-title") -> str:
    """An x axis's title (:func:`~dlbench.report.charts.axes.axis_label`), centred
    under it at ``y``."""
    return text((scale.start + scale.end) / 2, y, title, anchor="middle", css_class=css_class)


def y_title(scale: Scale, x: float, title: str, *, css_class: str = "label ylabel") -> str:
    """A y axis's title, turned upright and centred along it, its baseline at ``x``."""
    # Rotated by -90 degrees, the text's x runs up the page: minus the axis's middle.
    return text(-(scale.start + scale.end) / 2, x, title, anchor="middle", css_class=css_class,
                transform="rotate(-90)")
