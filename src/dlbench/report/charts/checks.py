"""What makes a drawn chart misleading, checked on the figure itself.

:func:`chart_problems` lays a :class:`~dlbench.report.charts.figure.DrawnChart` out with
matplotlib's renderer and returns one line per problem found:

- a y axis whose label does not name the unit of its series (or a panel whose series
  are in different units);
- a point (marker, bar top, error bar) on or past the edge of its axes (an error bar
  cut at the edge, with its arrowhead, is drawn inside: see
  :mod:`~dlbench.report.charts.errorbars`);
- a legend that does not lie inside the figure;
- categorical x values joined by a line.

An empty list means none was found. :func:`~dlbench.report.charts.charts.render_chart` runs
it on every chart it writes; the tests run it on every chart of the documentation.

Example::

    drawn = draw_chart(series, ylabel="results.throughput")
    assert chart_problems(drawn) == []
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.transforms import Bbox

    from dlbench.report.charts.figure import DrawnChart, Panel

#: Pixels of slack in every comparison: antialiasing and rounding, nothing more.
_TOLERANCE = 0.5


def _ylabel_problems(panel: Panel) -> list[str]:
    label = panel.axes.get_ylabel()
    units = {s.unit for s in panel.series}
    if len(units) > 1:
        return [f"y axis {label!r} holds series in different units: {', '.join(sorted(units))}"]
    if panel.unit and panel.unit not in label:
        return [f"y axis {label!r} does not name its series' unit {panel.unit!r}"]
    return []


def _outside(x: float, y: float, box: Bbox, margin: float) -> str:
    """Which edge of ``box`` the display point is on or past, with ``margin`` pixels
    of room needed; empty when it is inside."""
    edges = (("left", x - margin < box.x0 - _TOLERANCE),
             ("right", x + margin > box.x1 + _TOLERANCE),
             ("bottom", y - margin < box.y0 - _TOLERANCE),
             ("top", y + margin > box.y1 + _TOLERANCE))
    return ", ".join(edge for edge, past in edges if past)


def _points_outside(data: Any, transform: Any, box: Bbox,
                    margin: float) -> Iterator[tuple[float, float, str]]:
    """``(x, y, edge)`` for each data point of ``data`` that ``transform`` places on or
    past an edge of ``box`` (see :func:`_outside`)."""
    for (x, y), (px, py) in zip(data, transform.transform(data), strict=True):
        edge = _outside(px, py, box, margin)
        if edge:
            yield x, y, edge


#: Marks drawn on purpose at or near an edge: an error bar's caps (its ends are checked
#: as error bars, :func:`_clipped_error_bars`, with no room needed) and the arrowheads
#: of a bar cut at the edge.
_EDGE_MARKS = ("error-cap", "clip-mark")


def _clipped_markers(axes: Axes, box: Bbox, dpi: float) -> list[str]:
    problems = []
    for line in axes.get_lines():
        marker = line.get_marker()
        if marker in (None, "", "None", "none", " ") or line.get_gid() in _EDGE_MARKS:
            continue
        radius = float(line.get_markersize()) * dpi / 72.0 / 2.0
        data = np.asarray(line.get_xydata(), dtype=float)
        problems += [f"point ({x:g}, {y:g}) lies on or past the {edge} edge of the axes "
                     f"{axes.get_ylabel()!r}"
                     for x, y, edge in _points_outside(data, line.get_transform(), box, radius)]
    return problems


def _clipped_bars(axes: Axes, box: Bbox) -> list[str]:
    problems = []
    for patch in axes.patches:
        height = float(patch.get_height())  # type: ignore[attr-defined]
        extent = patch.get_window_extent()
        # A bar stands on the axis (its base may be the y limit 0), but its far end must
        # be strictly inside, and so must its sides.
        past = [edge for edge, out in (
            ("left", extent.x0 < box.x0 - _TOLERANCE),
            ("right", extent.x1 > box.x1 + _TOLERANCE),
            ("top", height > 0 and extent.y1 >= box.y1 - _TOLERANCE),
            ("bottom", height < 0 and extent.y0 <= box.y0 + _TOLERANCE),
        ) if out]
        if past:
            problems.append(f"a bar of height {height:g} reaches the {', '.join(past)} edge "
                            f"of the axes {axes.get_ylabel()!r}")
    return problems


def _clipped_error_bars(axes: Axes, box: Bbox) -> list[str]:
    problems = []
    for collection in axes.collections:
        segments: Any = getattr(collection, "get_segments", lambda: [])()
        transform = collection.get_transform()
        for segment in segments:
            problems += [f"an error bar end ({x:g}, {y:g}) lies past the {edge} edge of the "
                         f"axes {axes.get_ylabel()!r}"
                         for x, y, edge in _points_outside(segment, transform, box, 0)]
    return problems


def _joined_categories(axes: Axes) -> list[str]:
    problems = []
    for line in axes.get_lines():
        joined = line.get_linestyle() not in ("None", "none", "", " ")
        if joined and len(np.asarray(line.get_xdata())) > 1:
            problems.append(f"a line joins categorical x values in the axes "
                            f"{axes.get_ylabel()!r}")
    return problems


def chart_problems(drawn: DrawnChart, *, layout: bool = True) -> list[str]:
    """One line per way ``drawn`` could mislead (see the module's doc); empty when none.

    ``layout=False`` skips laying the figure out again, for a figure unchanged since
    :func:`~dlbench.report.charts.charts.draw_chart` returned it.
    """
    figure = drawn.figure
    if layout:
        figure.draw_without_rendering()
    problems: list[str] = []
    for panel in drawn.panels:
        axes = panel.axes
        box = axes.get_window_extent()
        problems += _ylabel_problems(panel)
        problems += _clipped_markers(axes, box, figure.dpi)
        problems += _clipped_bars(axes, box)
        problems += _clipped_error_bars(axes, box)
        if drawn.categorical:
            problems += _joined_categories(axes)
    legends = [*figure.legends, *(p.axes.get_legend() for p in drawn.panels)]
    for legend in (legend for legend in legends if legend is not None):
        extent, frame = legend.get_window_extent(), figure.bbox
        past = [edge for edge, out in (
            ("left", extent.x0 < frame.x0 - _TOLERANCE),
            ("right", extent.x1 > frame.x1 + _TOLERANCE),
            ("bottom", extent.y0 < frame.y0 - _TOLERANCE),
            ("top", extent.y1 > frame.y1 + _TOLERANCE),
        ) if out]
        if past:
            problems.append(f"the legend runs past the {', '.join(past)} edge of the image")
    return problems
