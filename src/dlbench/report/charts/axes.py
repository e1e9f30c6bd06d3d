"""What every chart's axes share, all drawn by matplotlib (files and pages): the axis
label with its unit, round tick steps and values, and the text of a tick.

Example::

    step = nice_step(37.5)                       # 10.0
    [tick_text(v) for v in tick_values(0, 40, step)]  # ['0', '10', '20', '30', '40']
    axis_label("results.time", "ms")             # 'results.time (ms)'
    log_tick_values(8.0, 170.0)                  # [10.0, 100.0]: a log axis's ticks
"""

from __future__ import annotations

import math


def axis_label(name: str | None, unit: str) -> str:
    """``name (unit)``; the name alone when there is no unit, or when it already says
    the unit; the unit alone when there is no name."""
    if not unit:
        return name or ""
    if not name:
        return unit
    return name if unit in name else f"{name} ({unit})"


def nice_step(span: float, ticks: int = 5) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) for about ``ticks``
    intervals over ``span``.

    >>> nice_step(37.5), nice_step(1000.0), nice_step(0.2)
    (10.0, 200.0, 0.05)
    """
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)


def tick_values(low: float, high: float, step: float) -> list[float]:
    """The multiples of ``step`` from ``low`` to ``high``, both included where they
    are multiples (within a millionth of a step, so that rounding drops none).

    >>> tick_values(0.0, 40.0, 10.0), tick_values(95.5, 104.5, 2.5)
    ([0.0, 10.0, 20.0, 30.0, 40.0], [97.5, 100.0, 102.5])
    """
    first = math.ceil(low / step - 1e-6)
    last = math.floor(high / step + 1e-6)
    # Multiplied, not summed: a sum would carry 0.1 + 0.2 = 0.30000000000000004 along.
    return [i * step for i in range(first, last + 1)]


def log_tick_values(low: float, high: float) -> list[float]:
    """The ticks of a log axis from ``low`` to ``high`` (both above 0): the powers of ten
    in the range, or, where fewer than two lie in it, 1, 2 and 5 times them.

    >>> log_tick_values(8.0, 170.0), log_tick_values(3.0, 40.0)
    ([10.0, 100.0], [5.0, 10.0, 20.0])
    """
    if not (0 < low <= high and math.isfinite(high)):
        return []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for multiples in ((1.0,), (1.0, 2.0, 5.0)):
        # Rounded to ten significant digits: 10.0 ** -1 * 2 is 0.2, not 0.20000000000000001.
        ticks = [float(f"{m * 10.0 ** e:.10g}") for e in range(first, last + 1)
                 for m in multiples]
        ticks = [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]
        if len(ticks) >= 2:
            break
    return ticks


def tick_text(value: float) -> str:
    """A tick's number: thousands separated, at most ten significant digits, no
    trailing zeros (``1,000``, ``2.5``, ``0.05``, ``1e-07``)."""
    return f"{value:,.10g}"
