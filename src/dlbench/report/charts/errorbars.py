"""Error bars as every chart draws them: which a point has, the y limits that hold the
points (and the bars, within reason), and each bar clipped at those limits with a
mark where it leaves them. :mod:`dlbench.report.charts.charts` draws what
:func:`error_bars` returns inside :func:`y_limits` on the one matplotlib figure that a
PNG, a PDF and the HTML report (:mod:`dlbench.report.html.charts`) all carry, so they
show the same bars, clipped at the same places.

Why bars are clipped rather than the axis stretched: one run's interval can be wider
than its mean (``results.ci95_rel`` above 1 on a busy machine). An axis stretched to
hold it squashes every other point into a sliver; an interval left out makes the
least reliable point look the most precise. So the axis grows for an error bar by at
most :data:`BAR_ROOM` of the points' span, and a bar that goes further is drawn to
the edge with a mark (an arrowhead) there, named in the legend by
:data:`CLIP_LABEL`. The axis of values that are all at or above 0 never goes below
0 for an error bar either: a spread of ±1 sd may reach below 0, a throughput cannot.

Example::

    low, high = y_limits(series, "line")
    for bar in error_bars(series[0], (low, high)):
        print(bar.index, bar.low, bar.high, bar.clipped_low, bar.clipped_high)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dlbench.errors import ChartError
from dlbench.report.charts.series import ChartSeries

#: What the error bars are, as the legend says it.
SD_LABEL = "error bar: ±1 sd of the runs at a point"
CI_LABEL = "error bar (dashed): 95% CI of a single run"
CLIP_LABEL = "arrowhead: error bar continues past the axis"

#: How far an error bar may stretch the axis past the points, as a share of the points'
#: span (linear) or of their decades (log, at least one decade counted): the points
#: keep at least four fifths of the chart's height.
BAR_ROOM = 0.25

_PAD = 0.08  # of an axis' span, either side of the data
_EDGE = 0.04  # of the y span: room under a line chart's marker near 0


@dataclass(frozen=True)
class ErrorBar:
    """One error bar of a series: at point ``index``, from ``low`` to ``high`` (data
    units, inside the y limits it was clipped to), ``clipped_low``/``clipped_high``
    where it went past them, ``dashed`` for a single run's 95 % CI (solid: ±1 sd)."""

    index: int
    low: float
    high: float
    clipped_low: bool
    clipped_high: bool
    dashed: bool

    @property
    def clipped(self) -> bool:
        """Whether either end was cut at the axis."""
        return self.clipped_low or self.clipped_high


def _unclipped(s: ChartSeries) -> list[tuple[int, float, float, bool]]:
    """``(index, low, high, dashed)`` of every bar of ``s``: ±1 sd where the spread is
    above 0 (a zero-length bar would still draw caps), a 95 % CI where there is one."""
    bars: list[tuple[int, float, float, bool]] = []
    for i, value in enumerate(s.y):
        if s.err is not None and s.err[i] > 0:
            bars.append((i, value - s.err[i], value + s.err[i], False))
        interval = s.ci[i] if s.ci is not None else None
        if interval is not None:
            bars.append((i, value - interval[0], value + interval[1], True))
    return bars


def error_bars(s: ChartSeries, limits: tuple[float, float]) -> list[ErrorBar]:
    """The error bars of ``s`` clipped to the y ``limits`` (low, high): a solid ±1 sd
    bar where a point's spread is above 0, a dashed bar for a single run's 95 % CI."""
    low_limit, high_limit = limits
    return [ErrorBar(i, max(low, low_limit), min(high, high_limit), low < low_limit,
                     high > high_limit, dashed)
            for i, low, high, dashed in _unclipped(s)]


def error_kinds(series: ChartSeries, limits: tuple[float, float] | None = None) -> list[str]:
    """The kinds of error bar ``series`` has (:data:`SD_LABEL`, :data:`CI_LABEL`), as
    the legend names them, and :data:`CLIP_LABEL` when one is clipped at ``limits``."""
    kinds = [kind for kind, has in ((SD_LABEL, series.err is not None),
                                    (CI_LABEL, series.ci is not None)) if has]
    if limits is not None and any(bar.clipped for bar in error_bars(series, limits)):
        kinds.append(CLIP_LABEL)
    return kinds


def legend_kinds(kinds: Sequence[str]) -> list[str]:
    """``kinds`` in the order the legend lists them, each once."""
    return [k for k in (SD_LABEL, CI_LABEL, CLIP_LABEL) if k in kinds]


def _ranges(series: Sequence[ChartSeries]) -> tuple[float, float, float, float]:
    """The lowest and highest point, and the lowest and highest error bar end."""
    points = [value for s in series for value in s.y] or [0.0]
    ends = [end for s in series for _, low, high, _ in _unclipped(s) for end in (low, high)]
    return min(points), max(points), min(ends, default=min(points)), max(ends,
                                                                         default=max(points))


def _log_limits(series: Sequence[ChartSeries]) -> tuple[float, float]:
    for s in series:
        for x, value in zip(s.x, s.y, strict=True):
            if not value > 0:
                raise ChartError(f"--log-y: series {s.label!r} is {value:g} at {x}; a log "
                                 "axis shows values above 0 only (drop --log-y)")
    low, high, bar_low, bar_high = _ranges(series)
    decades = max(math.log10(high / low), 1.0)
    room = 10.0 ** (BAR_ROOM * decades)
    if bar_low > 0:
        low = min(low, max(bar_low, low / room))
    high = max(high, min(bar_high, high * room))
    pad = 10.0 ** (_PAD * math.log10(high / low) if high > low else 0.1)
    return low / pad, high * pad


def y_limits(series: Sequence[ChartSeries], chart: str, *, log: bool = False
             ) -> tuple[float, float]:
    """The y limits of a panel: every point inside with a margin, error bars as far
    as :data:`BAR_ROOM` allows (the rest is clipped, see the module's doc).

    On a linear axis, values all at or above 0 start at 0 so that heights read as
    proportions, unless a line chart's marker would then sit on the axis (it then
    starts a little below 0); bars grow from 0. On a ``log`` axis (values above 0
    only, else ``ChartError`` naming ``--log-y``) the margins are ratios.

    >>> s = ChartSeries("a", [1, 2], [10.0, 20.0], None, ci=[None, (12.0, 40.0)])
    >>> y_limits([s], "line")  # the CI's top, 60, is past 20 + 0.25 * 20: clipped
    (0.0, 27.0)
    """
    if log:
        return _log_limits(series)
    low, high, bar_low, bar_high = _ranges(series)
    if chart == "bar":  # bars grow from 0
        low, high = min(low, 0.0), max(high, 0.0)
    start = 0.0 if low >= 0 else low
    span = (high - start) or abs(high) or 1.0
    top = max(high, min(bar_high, high + BAR_ROOM * span))
    floor = 0.0 if low >= 0 else low - BAR_ROOM * span
    bottom = min(low, max(bar_low, floor))
    span = (top - min(bottom, start)) or abs(top) or 1.0
    pad = _PAD * span
    if chart == "bar":
        return (bottom - pad if bottom < 0 else 0.0), (top + pad if top > 0 else 0.0)
    if bottom < 0:
        return bottom - pad, top + pad
    # Lowered only as far as a marker at 0 needs: a throughput axis reads best from 0.
    return (0.0 if bottom >= _EDGE * span else -_EDGE * span), top + pad
