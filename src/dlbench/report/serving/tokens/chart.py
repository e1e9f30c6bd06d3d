"""The token curves (:mod:`dlbench.report.serving.tokens.curves`) as charts drawn with
matplotlib: a PNG, SVG or PDF file, and the HTML report's charts
(:mod:`dlbench.report.serving.section` inlines the same figures).

Three charts per group of curves and loop (open loop by requests/s offered, closed
loop by requests in flight, never mixed):

- ``ttft``: output tokens/s (y) against TTFT p99 (x, ms), the serving engines'
  throughput-latency trade-off: up and to the left is better;
- ``tpot``: output tokens/s against TPOT p99;
- ``goodput``: goodput tokens/s (y) against the load (x), with the output tokens/s of
  all requests dashed in the curve's colour: the gap is what the SLOs turned away.
  Drawn only where a point has goodput.

A line per curve through its points in order of load, each point labelled with its
load (``2/s`` offered, ``8`` in flight). A point that is not valid (``results.valid``
false) is hollow; one whose client fell behind (``results.client_kept_up`` false) is
crossed out, so that it is never read as the server's figure; the knee is a star; an
SLO is a dashed vertical line. Latencies spanning more than
:data:`~dlbench.report.serving.chart.LOG_RATIO` times are drawn on a log axis.

A load search's curve (:mod:`dlbench.report.serving.tokens.search`) is drawn the same
way, through its probes; its star is the search's answer, and on the ``goodput`` chart
its peak is a dotted vertical line in its colour, the peak's 95 % interval shaded
around it. A search bisects, so its last probes crowd around its answer: of probes
within :data:`CROWDED` of a labelled load only the first is labelled (the answer is
labelled first), the table listing them all.

Example::

    report = build_serving_report(records)
    for members in token_chart_groups(report.token_curves):
        for kind in chart_kinds(members):
            Path(f"{kind}.png").write_bytes(render_token_chart(members, kind, "png"))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlbench.report.charts.axes import axis_label, tick_text
from dlbench.report.charts.charts import DrawnChart, Panel, save_chart
from dlbench.report.charts.series import ChartSeries, value_text
from dlbench.report.serving.chart import BOUND_COLOUR, LOG_RATIO, axis_limits, legend_under
from dlbench.report.serving.curves import KNEE_FACTOR
from dlbench.report.serving.tokens.curves import (
    GOODPUT,
    OPEN,
    SLOS,
    THROUGHPUT,
    TPOT_P99,
    TTFT_P99,
    TokenCurve,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["CHART_KINDS", "chart_kinds", "draw_token_chart", "render_token_chart",
           "token_chart_caption", "token_chart_groups"]


@dataclass(frozen=True)
class _Kind:
    """One chart: the figure on x (None: the load), on y, and its words."""

    x_key: str | None
    y_key: str
    x_name: str
    y_name: str


#: The charts, by name.
CHART_KINDS = {
    "ttft": _Kind(TTFT_P99, THROUGHPUT, "TTFT p99", "output"),
    "tpot": _Kind(TPOT_P99, THROUGHPUT, "TPOT p99", "output"),
    "goodput": _Kind(None, GOODPUT, "load", "goodput"),
}
#: Taller than the latency chart: its legend has a line per mark.
_WIDTH_IN, _HEIGHT_IN = 7.0, 5.6
#: A search's probe whose load is within this fraction of a labelled one's is not
#: labelled: the labels would overlap.
CROWDED = 0.1
BEHIND_COLOUR = "#cf222e"


def token_chart_groups(curves: Sequence[TokenCurve]) -> list[list[TokenCurve]]:
    """The curves by group (device, phase, precision) and loop: the charts of each."""
    groups: dict[tuple[str, str], list[TokenCurve]] = {}
    for curve in curves:
        groups.setdefault((value_text(curve.group), curve.loop), []).append(curve)
    return list(groups.values())


def _xy(curve: TokenCurve, kind: _Kind) -> list[tuple[int, float, float]]:
    """(index, x, y) of each point of ``curve`` that has both."""
    out = []
    for index, point in enumerate(curve.points):
        x = point.load if kind.x_key is None else point.figures.get(kind.x_key)
        y = point.figures.get(kind.y_key)
        if x is not None and y is not None:
            out.append((index, float(x), float(y)))
    return out


def chart_kinds(curves: Sequence[TokenCurve]) -> list[str]:
    """The charts the curves (of one group and loop) have points for, in order."""
    return [name for name, kind in CHART_KINDS.items()
            if any(_xy(curve, kind) for curve in curves)]


def _load_label(curve: TokenCurve, load: float) -> str:
    if curve.loop == OPEN:  # a search's rate is computed: three digits are enough to read
        return f"{load:.3g}/s" if curve.search is not None else f"{load:g}/s"
    return f"{load:g}"


def _labelled(curve: TokenCurve) -> set[int]:
    """The points of ``curve`` whose load is written beside them: every one of a
    sweep's; of a search's, its answer and then each probe more than :data:`CROWDED`
    away from the loads labelled before it."""
    if curve.search is None:
        return set(range(len(curve.points)))
    order = [*([curve.knee] if curve.knee is not None else []),
             *(i for i in range(len(curve.points)) if i != curve.knee)]
    chosen: list[int] = []
    for index in order:
        load = curve.points[index].load
        if all(abs(load - curve.points[other].load) > CROWDED * curve.points[other].load
               for other in chosen):
            chosen.append(index)
    return set(chosen)


def _peak_span(curve: TokenCurve) -> list[float]:
    """A search's peak and its interval's ends, on the load axis; empty for a sweep."""
    search = curve.search
    if search is None or search.peak is None:
        return []
    half = search.ci95 or 0.0
    return [search.peak - half, search.peak, search.peak + half]


def _slo_lines(curves: Sequence[TokenCurve], kind: _Kind) -> tuple[list[float], str]:
    """The SLO values that bound the figure on x, and the legend's words for them."""
    named = next(((name, short) for name, key, short in SLOS if key == kind.x_key), None)
    if named is None:
        return [], ""
    name, short = named
    values = list(dict.fromkeys(c.slos[name] for c in curves if name in c.slos))
    text = (f"SLO: {short} <= {', '.join(f'{v:g}' for v in values)} ms ({name})"
            if values else "")
    return values, text


def _draw_curve(axes: Axes, curve: TokenCurve, kind: _Kind, number: int) -> ChartSeries:
    """A curve's line, points, load labels, marks and knee; the series it drew."""
    colour = f"C{number % 10}"
    points = _xy(curve, kind)
    xs, ys = [x for _, x, _ in points], [y for _, _, y in points]
    if kind.x_key is None:  # the goodput chart: all requests' output tokens/s, dashed
        output = [(p.load, float(t)) for p in curve.points
                  if (t := p.figures.get(THROUGHPUT)) is not None]
        if output:
            axes.plot(*zip(*output, strict=True), linestyle="--", linewidth=1.0,
                      color=colour, alpha=0.7, gid=f"tokens-output-{number}")
        span = _peak_span(curve)
        if span:  # a search's peak, its interval shaded
            if span[2] > span[0]:
                # Full height, x in data (a collection, not a patch: it is no bar).
                axes.fill_betweenx([0.0, 1.0], span[0], span[2], color=colour, alpha=0.12,
                                   linewidth=0, transform=axes.get_xaxis_transform(),
                                   gid=f"tokens-peak-interval-{number}")
            axes.axvline(span[1], color=colour, linestyle=":", linewidth=1.5,
                         gid=f"tokens-peak-{number}")
    axes.plot(xs, ys, linestyle="-", color=colour, gid=f"tokens-curve-{number}")
    valid = [(x, y) for i, x, y in points if curve.points[i].valid is not False]
    invalid = [(x, y) for i, x, y in points if curve.points[i].valid is False]
    if valid:
        axes.plot(*zip(*valid, strict=True), linestyle="none", marker="o", color=colour,
                  gid=f"tokens-valid-{number}")
    if invalid:
        axes.plot(*zip(*invalid, strict=True), linestyle="none", marker="o",
                  markerfacecolor="white", markeredgecolor=colour,
                  gid=f"tokens-invalid-{number}")
    behind = [(x, y) for i, x, y in points if curve.points[i].kept_up is False]
    if behind:
        axes.plot(*zip(*behind, strict=True), linestyle="none", marker="x", markersize=11,
                  markeredgewidth=2.0, color=BEHIND_COLOUR, zorder=6,
                  gid=f"tokens-behind-{number}")
    knee = next(((x, y) for i, x, y in points if i == curve.knee), None)
    if knee is not None:
        hollow = curve.points[curve.knee or 0].valid is False
        axes.plot([knee[0]], [knee[1]], linestyle="none", marker="*", markersize=15,
                  color=colour, markerfacecolor="white" if hollow else colour,
                  markeredgecolor="black", zorder=5, gid=f"tokens-knee-{number}")
    labelled = _labelled(curve)
    for index, x, y in points:
        if index not in labelled:
            continue
        axes.annotate(_load_label(curve, curve.points[index].load), (x, y),
                      xytext=(7, 3), textcoords="offset points", fontsize=8, color=colour)
    return ChartSeries(curve.label, xs, ys, None, unit=curve.units.get(kind.y_key, ""))


def _axis_names(curves: Sequence[TokenCurve], kind: _Kind) -> tuple[str, str, str, str]:
    """The x and y labels, and their units."""
    first = curves[0]
    y_unit = _unit(curves, kind.y_key)
    if kind.x_key is None:
        x_unit = "requests/s" if first.loop == OPEN else "requests"
        what = "offered load" if first.loop == OPEN else "concurrency"
        xlabel = axis_label(f"{what}, {first.load_name}", x_unit)
    else:
        x_unit = _unit(curves, kind.x_key)
        xlabel = axis_label(f"{kind.x_name}, {kind.x_key}", x_unit)
    # The y key is in the caption (token_chart_caption): the label stays short to fit.
    return xlabel, axis_label(kind.y_name, y_unit), x_unit, y_unit


def _unit(curves: Sequence[TokenCurve], key: str) -> str:
    """The unit of ``key`` in the first curve that knows it."""
    return next((unit for c in curves if (unit := c.units.get(key, ""))), "")


def _marks(curves: Sequence[TokenCurve], kind: _Kind) -> list[tuple[Any, str]]:
    """The legend's entries for the marks the chart has."""
    from matplotlib.lines import Line2D

    entries: list[tuple[Any, str]] = []
    has = [(i, p) for c in curves for i, p in enumerate(c.points)]
    if any(c.knee is not None for c in curves):
        swept = [c for c in curves if c.search is None]
        rule = ("meeting the SLOs" if all(c.slos for c in swept) else
                f"meeting the SLOs, or without, within {KNEE_FACTOR:g}x the lowest load's "
                "p99" if any(c.slos for c in swept) else
                f"within {KNEE_FACTOR:g}x the lowest load's TTFT and TPOT p99")
        text = (f"knee: the highest output tokens/s {rule}" if len(swept) == len(curves) else
                "knee: a search's answer (results.search_load)" if not swept else
                f"knee: the highest output tokens/s {rule}; a search's: its answer "
                "(results.search_load)")
        entries.append((Line2D([], [], linestyle="none", marker="*", markersize=12,
                               color="grey", markeredgecolor="black"), text))
    if any(p.valid is False for _, p in has):
        entries.append((Line2D([], [], linestyle="none", marker="o", color="grey",
                               markerfacecolor="white"), "hollow: not valid (results.valid)"))
    if any(p.kept_up is False for _, p in has):
        entries.append((Line2D([], [], linestyle="none", marker="x", markeredgewidth=2.0,
                               color=BEHIND_COLOUR),
                        "crossed: the client fell behind (results.client_kept_up false)"))
    if kind.x_key is None:
        entries.append((Line2D([], [], color="grey", linestyle="--"),
                        f"dashed: output tokens/s of all requests ({THROUGHPUT})"))
        spans = [span for c in curves if (span := _peak_span(c))]
        if spans:
            shaded = any(span[2] > span[0] for span in spans)
            entries.append((Line2D([], [], color="grey", linestyle=":", linewidth=1.5),
                            "dotted: a search's peak (results.peak_load)"
                            + (", shaded: its 95 % interval" if shaded else "")))
    return entries


def draw_token_chart(curves: Sequence[TokenCurve], kind: str) -> DrawnChart:
    """The ``kind`` chart (:data:`CHART_KINDS`) of the curves of one group and loop,
    laid out as it will be saved."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    chosen = CHART_KINDS[kind]
    xlabel, ylabel, _, y_unit = _axis_names(curves, chosen)
    figure = Figure(figsize=(_WIDTH_IN, _HEIGHT_IN), dpi=100, layout="constrained")
    axes = figure.subplots()
    series = [_draw_curve(axes, curve, chosen, number) for number, curve in enumerate(curves)]
    handles: list[Any] = [Line2D([], [], color=f"C{n % 10}", marker="o")
                          for n in range(len(curves))]
    texts = [curve.label for curve in curves]
    for handle, text in _marks(curves, chosen):
        handles.append(handle)
        texts.append(text)
    slos, slo_text = _slo_lines(curves, chosen)
    for number, slo in enumerate(slos):
        axes.axvline(slo, color=BOUND_COLOUR, linestyle="--", linewidth=1.2,
                     gid=f"tokens-slo-{number}")
    if slo_text:
        handles.append(Line2D([], [], color=BOUND_COLOUR, linestyle="--"))
        texts.append(slo_text)
    xs = [x for s in series for x in s.x] or [0.0]
    ys = [y for s in series for y in s.y] or [1.0]
    if chosen.x_key is None:
        ys += [float(t) for c in curves for p in c.points
               if (t := p.figures.get(THROUGHPUT)) is not None and p.figures.get(GOODPUT)
               is not None]
    # The goodput chart's x is the load: a search's peak and interval are on it.
    peaks = [x for c in curves for x in _peak_span(c)] if chosen.x_key is None else []
    widths = [*xs, *slos, *peaks]
    log = chosen.x_key is not None and min(widths) > 0 and max(widths) > LOG_RATIO * min(widths)
    if log:
        axes.set_xscale("log")
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: tick_text(value)))
    axes.set_xlim(*axis_limits(widths if log else [*widths, 0.0], log))
    axes.set_ylim(*axis_limits([*ys, 0.0], False))
    axes.grid(True, alpha=0.3)
    axes.set_axisbelow(True)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    legend = legend_under(figure, handles, texts)
    drawn = DrawnChart(figure, [Panel(axes, y_unit, series)], categorical=False,
                       chart="line", legend=legend)
    drawn.labels = {"title": "", "xlabel": axes.get_xlabel(), "ylabels": [axes.get_ylabel()],
                    "units": [y_unit],
                    "legend": [t.get_text() for t in legend.get_texts()]}
    return drawn


def render_token_chart(curves: Sequence[TokenCurve], kind: str, fmt: str = "svg",
                       problems: list[str] | None = None) -> bytes:
    """The bytes of a ``fmt`` file (png, svg, pdf) of :func:`draw_token_chart`; what
    :func:`~dlbench.report.charts.checks.chart_problems` finds wrong with it is appended
    to ``problems`` when given."""
    from dlbench.report.charts.checks import chart_problems

    drawn = draw_token_chart(curves, kind)
    found = chart_problems(drawn, layout=False)
    if problems is not None:
        problems.extend(found)
    return save_chart(drawn, fmt, found)


def token_chart_caption(curves: Sequence[TokenCurve], kind: str) -> str:
    """``output tokens/s (results.output_tokens_per_s) vs TTFT p99 in ms, 2 curve(s),
    open loop [exp.dtype=...]``."""
    chosen = CHART_KINDS[kind]
    first = curves[0]
    if chosen.x_key is None:
        against = ("requests/s offered" if first.loop == OPEN else "requests in flight")
        what = f"goodput tokens/s ({GOODPUT}) vs {against}"
    else:
        unit = first.units.get(chosen.x_key) or "ms"
        what = f"output tokens/s ({THROUGHPUT}) vs {chosen.x_name} in {unit}"
    loop = "open loop" if first.loop == OPEN else "closed loop"
    group = ", ".join(f"{k}={value_text(v)}" for k, v in first.group.items())
    return f"{what}, {len(curves)} curve(s), {loop}" + (f" [{group}]" if group else "")
