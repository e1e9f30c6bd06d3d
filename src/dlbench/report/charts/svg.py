"""The one writer of hand-drawn SVG: the ``<svg>`` element of every chart dlbench draws
without matplotlib (the memory breakdown of the HTML report, the time series of the
history page), its scales, its axes with their ticks and titles, and its text, all
HTML-escaped (:func:`~dlbench.report.html.markup.escape`).

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dlbench.report.charts.axes import tick_text
from dlbench.report.html.markup import escape

XMLNS = "http://www.w3.org/2000/svg"

#: Text attributes of a chart that sets its own font rather than the page's classes.
FONT = 'font-family="system-ui,sans-serif" font-size="12" fill="#1f2328"'


@dataclass(frozen=True)
class Scale:
    """A linear map from data values (``low`` to ``high``) to pixels (``start`` to
    ``end``; ``end`` below ``start`` for a y axis, whose pixels grow downwards)."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        """The pixel of ``value``; the middle of the range when ``low == high``."""
        if self.high == self.low:
            return (self.start + self.end) / 2
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)


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
    return "\n".join([f"<svg {' '.join(attributes)}>", *parts, "</svg>"])


def text(x: float, y: float, content: str, *, anchor: str = "", css_class: str = "",
         transform: str = "") -> str:
    """A ``<text>`` at (``x``, ``y``), ``content`` escaped; ``anchor`` is its
    ``text-anchor`` (``middle``, ``end``)."""
    css = f' class="{escape(css_class)}"' if css_class else ""
    turn = f' transform="{transform}"' if transform else ""
    at = f' text-anchor="{anchor}"' if anchor else ""
    return f'<text{css} x="{x:.2f}" y="{y:.2f}"{turn}{at}>{escape(content)}</text>'


def x_grid(scale: Scale, ticks: Sequence[float], *, top: float, bottom: float,
           colour: str = "#d0d7de") -> list[str]:
    """A vertical grid line from ``top`` to ``bottom`` at each tick of an x axis, its
    number (:func:`~dlbench.report.charts.axes.tick_text`) under it."""
    parts = []
    for value in ticks:
        x = scale(value)
        parts.append(f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{top:.2f}" y2="{bottom:.2f}" '
                     f'stroke="{colour}"/>' + text(x, bottom + 16, tick_text(value),
                                                   anchor="middle"))
    return parts


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
