"""Charts of a result against a parameter: DLBS's ``series_builder``, with matplotlib.

:func:`build_series` (from :mod:`dlbench.report.charts.series`) turns records into series;
:func:`draw_chart` lays them out on a matplotlib figure and :func:`render_chart`
returns the bytes of a PNG, SVG or PDF file of it; the HTML report inlines the same
figure as SVG (:func:`~dlbench.report.charts.figure.inline_svg`). Rendering never touches pyplot, so
it works headless and leaves no global figure state behind.

What a chart may not do, and how it is kept from it:

- a y axis is labelled with the unit its records state (``tokens/s``), never an
  assumed one; series in different units get a panel each, one unit per y axis;
- every point, bar and error bar lies inside the axes, with a margin;
- the legend sits under the axes, inside the image: labels are wrapped and columns
  dropped until it fits;
- categorical x values (models, frameworks) are slots, never joined by a line;
- error bars say what they are: ±1 sd of the runs at a point (solid), or a single
  run's 95 % CI (dashed) where the record has one; none is left out, and one that
  leaves the axes is cut at the edge with an arrowhead there
  (:mod:`dlbench.report.charts.errorbars`).

:func:`dlbench.report.charts.checks.chart_problems` checks the drawn figure for each
of these; :func:`render_chart` reports what it finds.

Example::

    series = build_series(records, "exp.replica_batch", "results.throughput",
                          queries=[{"exp.model": "resnet18"}, {"exp.model": "alexnet"}])
    Path("chart.png").write_bytes(render_chart(series, title="Throughput"))
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dlbench.report.charts.axes import axis_label
from dlbench.report.charts.errorbars import (
    CI_LABEL,
    CLIP_LABEL,
    SD_LABEL,
    error_bars,
    error_kinds,
    legend_kinds,
    y_limits,
)
from dlbench.report.charts.figure import (
    CHART_FORMATS,
    PNG_KEY,
    DrawnChart,
    Panel,
    save_chart,
)
from dlbench.report.charts.series import (
    AGGREGATIONS,
    ChartError,
    ChartSeries,
    build_series,
    count_points,
    key_text,
    value_text,
)
from dlbench.results.values import is_number as _is_number
from dlbench.textsafe import safe_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

__all__ = ["AGGREGATIONS", "CHART_FORMATS", "CHART_TYPES", "CI_LABEL", "CLIP_LABEL",
           "PNG_KEY", "SD_LABEL", "ChartError", "ChartSeries", "DrawnChart", "Panel",
           "axis_label", "build_series", "count_points", "draw_chart", "error_kinds",
           "render_chart", "save_chart", "y_limits"]

CHART_TYPES = ("line", "bar")

_WIDTH_IN = 7.0
_PANEL_IN = 2.8  # height of one panel
_FRAME_IN = 1.4  # title, x axis and legend
_PAD = 0.08  # of an axis' span, either side of the data
_WRAP = (44, 28)  # legend label widths, in characters, tried in turn


def x_categories(series: Sequence[ChartSeries]) -> list[Any]:
    """Every x of every series once: sorted when all are numbers, else first seen.
    Categorical (evenly spaced slots) unless all are numbers."""
    seen: dict[str, Any] = {}
    for s in series:
        for value in s.x:
            seen.setdefault(key_text(value), value)
    values = list(seen.values())
    if all(_is_number(v) for v in values):
        values.sort(key=float)
    return values


def unit_panels(series: Sequence[ChartSeries]) -> list[tuple[str, list[ChartSeries]]]:
    """The series by unit, units in the order first seen."""
    panels: dict[str, list[ChartSeries]] = {}
    for s in series:
        panels.setdefault(s.unit, []).append(s)
    return list(panels.items())


def x_limits(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = _PAD * (high - low) if high > low else max(abs(low) * 0.5, 0.5)
    return low - pad, high + pad


def _error_bars(axes: Axes, positions: list[float], s: ChartSeries, colour: Any,
                limits: tuple[float, float]) -> list[str]:
    """Draw ``s``'s error bars clipped to the y ``limits``, a cap at each end inside
    them and an arrowhead (gid ``clip-mark``) at each end cut there; the kinds drawn."""
    bars = error_bars(s, limits)
    for dashed in (False, True):
        chosen = [bar for bar in bars if bar.dashed == dashed]
        if not chosen:
            continue
        # Drawn as an errorbar (what the checks and readers of the figure look for) with
        # its own caps: matplotlib would cap a clipped end too.
        container = axes.errorbar(
            [positions[b.index] for b in chosen], [s.y[b.index] for b in chosen],
            yerr=[[s.y[b.index] - b.low for b in chosen], [b.high - s.y[b.index] for b in chosen]],
            fmt="none", ecolor=colour, capsize=0)
        if dashed:
            for collection in container.lines[2]:
                collection.set_linestyle("--")
        caps = [(positions[b.index], end) for b in chosen
                for end, cut in ((b.low, b.clipped_low), (b.high, b.clipped_high)) if not cut]
        if caps:
            axes.plot(*zip(*caps, strict=True), linestyle="none", marker="_", markersize=6,
                      color=colour, gid="error-cap")
        for end, cut, shape in (("low", "clipped_low", "v"), ("high", "clipped_high", "^")):
            marks = [(positions[b.index], getattr(b, end)) for b in chosen if getattr(b, cut)]
            if marks:
                axes.plot(*zip(*marks, strict=True), linestyle="none", marker=shape,
                          markersize=7, color=colour, gid="clip-mark", clip_on=False)
    return error_kinds(s, limits)


def _draw_panel(axes: Axes, panel: list[ChartSeries], first: int, chart: str,
                categorical: bool, slot: dict[str, int],
                limits: tuple[float, float]) -> tuple[list[Any], list[str]]:
    """Draw one panel's series (colours from the ``first``-th of the cycle on) inside the
    y ``limits``; their legend handles and the kinds of error bar drawn."""
    handles: list[Any] = []  # lines and bar containers
    kinds: list[str] = []
    count = len(panel)
    for number, s in enumerate(panel):
        colour = f"C{(first + number) % 10}"
        positions = [float(slot[key_text(v)]) if categorical else float(v) for v in s.x]
        if chart == "bar":
            width = 0.8 / count
            positions = [p + (number - (count - 1) / 2) * width for p in positions]
            # From the axis's foot: 0, or on a log axis (which has no 0) its lower limit.
            base = max(limits[0], 0.0)
            handles.append(axes.bar(positions, [value - base for value in s.y], bottom=base,
                                    width=width, color=colour, label=s.label))
            bar_colour: Any = "black"
        else:
            if categorical:  # dodge, so that series at one slot do not hide each other
                positions = [p + (number - (count - 1) / 2) * (0.5 / count) for p in positions]
            (line,) = axes.plot(positions, s.y, marker="o", color=colour, label=s.label,
                                linestyle="none" if categorical else "-")
            handles.append(line)
            bar_colour = colour
        kinds += [k for k in _error_bars(axes, positions, s, bar_colour, limits)
                  if k not in kinds]
    return handles, kinds


def series_in_legend(series: Sequence[ChartSeries], ylabel: str | None) -> bool:
    """Whether the legend names the series: not for a single series labelled like the
    y axis, which says nothing a legend would add."""
    return len(series) > 1 or bool(series and series[0].label != ylabel)


def _legend_entries(series: Sequence[ChartSeries], handles: list[Any], kinds: list[str],
                    ylabel: str | None) -> tuple[list[Any], list[str]]:
    from matplotlib.lines import Line2D

    entries: list[tuple[Any, str]] = []
    if series_in_legend(series, ylabel):
        entries += list(zip(handles, [s.label for s in series], strict=True))
    for kind in legend_kinds(kinds):
        if kind == CLIP_LABEL:
            entries.append((Line2D([], [], color="black", linestyle="none", marker="^"), kind))
        else:
            entries.append((Line2D([], [], color="black",
                                   linestyle="--" if kind == CI_LABEL else "-"), kind))
    return [h for h, _ in entries], [label for _, label in entries]


def _fit_legend(figure: Figure, handles: list[Any], labels: list[str]) -> Legend | None:
    """A legend under the axes that fits the figure's width: labels wrapped, then fewer
    columns, then narrower labels. The figure grows taller when the legend needs it,
    rather than squash the axes."""
    if not handles:
        return None
    attempts = [(width, ncols) for width in _WRAP
                for ncols in range(min(len(handles), 3), 0, -1)]
    for number, (width, ncols) in enumerate(attempts):
        wrapped = [textwrap.fill(label, width, break_on_hyphens=False) for label in labels]
        legend = figure.legend(handles, wrapped, loc="outside lower center", ncols=ncols,
                               frameon=False)
        figure.draw_without_rendering()
        box = legend.get_window_extent()
        fits = box.x0 >= figure.bbox.x0 and box.x1 <= figure.bbox.x1
        if fits or number == len(attempts) - 1:  # else the narrowest: chart_problems says so
            break
        legend.remove()
    if box.height > 0.25 * figure.bbox.height:
        grow = (box.height - 0.2 * figure.bbox.height) / figure.dpi
        figure.set_size_inches(_WIDTH_IN, figure.get_size_inches()[1] + grow)
        figure.draw_without_rendering()
    return legend


def draw_chart(
    series: Sequence[ChartSeries],
    *,
    chart: str = "line",
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    log_y: bool = False,
) -> DrawnChart:
    """Lay ``series`` out as a ``line`` or grouped ``bar`` chart on a new figure.

    Numeric x values of a line chart are placed on a numeric axis with a tick at each
    (up to 16); other x values, and every bar chart, get one evenly spaced slot per
    value, and a line chart draws them as unconnected points. There is one panel (y
    axis) per unit of the series, labelled :func:`axis_label` of ``ylabel`` and the
    unit, on a log scale with ``log_y`` (values above 0 only). Error bars show where a
    point's ``err`` is above 0 (±1 sd, solid) or it has a ``ci`` (95 %, dashed), clipped
    with an arrowhead where they leave the axes
    (:mod:`~dlbench.report.charts.errorbars`); the legend, under the axes, says which.
    """
    if chart not in CHART_TYPES:
        raise ChartError(f"unknown chart type {chart!r}; accepted: {', '.join(CHART_TYPES)}")
    # matplotlib costs a noticeable import time; only drawing pays it. A Figure built
    # without pyplot uses no GUI backend, so this works on a headless node.
    from matplotlib.figure import Figure

    grouped = unit_panels(series) or [("", [])]
    figure = Figure(figsize=(_WIDTH_IN, _FRAME_IN + _PANEL_IN * len(grouped)), dpi=100,
                    layout="constrained")
    all_axes = figure.subplots(len(grouped), 1, sharex=True, squeeze=False)[:, 0]
    categories = x_categories(series)
    categorical = chart == "bar" or not all(_is_number(v) for v in categories)
    slot = {key_text(value): index for index, value in enumerate(categories)}
    panels: list[Panel] = []
    handles: list[Any] = []  # lines and bar containers
    kinds: list[str] = []
    for axes, (unit, members) in zip(all_axes, grouped, strict=True):
        limits = y_limits(members, chart, log=log_y) if members else (0.0, 1.0)
        if log_y:
            axes.set_yscale("log")
        drawn, drawn_kinds = _draw_panel(axes, members, len(handles), chart, categorical, slot,
                                         limits)
        handles += drawn
        kinds += [k for k in drawn_kinds if k not in kinds]
        if members:
            axes.set_ylim(*limits)
        axes.set_axisbelow(True)  # grid lines behind bars, not across them
        axes.grid(True, axis="y" if chart == "bar" else "both", alpha=0.3)
        axes.set_ylabel(axis_label(ylabel, unit))
        panels.append(Panel(axes, unit, members))
    bottom = all_axes[-1]
    if categorical:
        bottom.set_xticks([float(i) for i in range(len(categories))])
        bottom.set_xticklabels([value_text(v) for v in categories])
        # Half a slot either side, so the first and last points are not on the frame.
        bottom.set_xlim(-0.5, len(categories) - 0.5)
    elif categories:
        if len(categories) <= 16:
            bottom.set_xticks([float(v) for v in categories])
            bottom.set_xticklabels([value_text(v) for v in categories])
        bottom.set_xlim(*x_limits([float(v) for v in categories]))
    if xlabel:
        bottom.set_xlabel(xlabel)
    if title:
        (figure.suptitle(title) if len(panels) > 1 else all_axes[0].set_title(title))
    entries, labels = _legend_entries(series, handles, kinds, ylabel)
    legend = _fit_legend(figure, entries, labels)
    if legend is None:  # laid out as it will be saved: positions are final
        figure.draw_without_rendering()
    drawn_chart = DrawnChart(figure, panels, categorical, chart, legend)
    drawn_chart.labels = {
        "title": title or "", "xlabel": xlabel or "",
        "ylabels": [p.axes.get_ylabel() for p in panels],
        "units": [p.unit for p in panels],
        "legend": [t.get_text() for t in legend.get_texts()] if legend is not None else [],
    }
    return drawn_chart


def render_chart(
    series: Sequence[ChartSeries],
    *,
    chart: str = "line",
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    fmt: str = "png",
    problems: list[str] | None = None,
    log_y: bool = False,
) -> bytes:
    """Draw ``series`` (see :func:`draw_chart`) and return the bytes of a ``fmt`` file
    (png, svg or pdf). What :func:`~dlbench.report.charts.checks.chart_problems` finds
    wrong with the drawing (a clipped point, a legend past the edge) is appended to
    ``problems`` when given."""
    if fmt not in CHART_FORMATS:
        raise ChartError(f"unknown chart format {fmt!r}; accepted: {', '.join(CHART_FORMATS)}")
    # Imported here: numpy, which the checks use, is paid for only when drawing.
    from dlbench.report.charts.checks import chart_problems

    # matplotlib warns of a glyph its font lacks quoting the character itself (an
    # escape sequence of a label would reach the terminal): its warnings are caught and
    # passed on as problems, once each, or re-issued escaped.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drawn = draw_chart(series, chart=chart, title=title, xlabel=xlabel, ylabel=ylabel,
                           log_y=log_y)
        found = chart_problems(drawn, layout=False)  # draw_chart has just laid it out
        data = save_chart(drawn, fmt, found)
    said = list(dict.fromkeys(safe_text(str(w.message)) for w in caught))
    if problems is not None:
        problems.extend([*found, *said])
    else:
        for message in said:
            warnings.warn(message, UserWarning, stacklevel=2)
    return data
