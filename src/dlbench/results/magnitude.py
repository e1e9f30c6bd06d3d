"""Figures for people in the unit their magnitude calls for: ``4.812 GFLOP/s``, not
``0.005 TFLOP/s``; ``512.0 µs``, not ``0.512 ms``.

One rule for every printed rate and duration: the largest SI prefix that leaves at
least 1 before the decimal point, and four significant digits (``1.234``,
``12.34``, ``123.4``, ``1234`` only past the largest prefix). Stored values keep
their declared units (``results.tflops`` stays TFLOP/s); only text changes.

Example::

    >>> flops_text(0.004812e12)
    '4.812 GFLOP/s'
    >>> bandwidth_text(2.5e12)
    '2.500 TB/s'
    >>> duration_text(0.512)
    '512.0 µs'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["bandwidth_text", "duration_text", "flops_text", "scaled_text"]

#: Prefixes of a rate, largest first.
_RATE_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))
#: Units of a duration in milliseconds, largest first.
_DURATIONS_MS = (("s", 1e3), ("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6))
#: Significant digits of a figure.
SIGNIFICANT = 4


def _digits(value: float) -> str:
    """``value`` (at least 1 and below 1000, or past the scale) at :data:`SIGNIFICANT`
    significant digits, never in exponent notation."""
    whole = len(str(int(abs(value)))) if abs(value) >= 1 else 1
    return f"{value:.{max(0, SIGNIFICANT - whole)}f}"


def scaled_text(value: float, scales: Sequence[tuple[str, float]]) -> tuple[str, str]:
    """``value`` divided by the first of ``scales`` (name, size; largest first) it
    reaches, as text, and that scale's name; the smallest scale below all of them, and
    the text of ``value`` itself when it is 0 or not finite."""
    if value == 0 or not math.isfinite(value):
        return (f"{value:g}" if not math.isfinite(value) else "0",
                scales[-1][0] if value == 0 else scales[0][0])
    index = next((i for i, (_, size) in enumerate(scales) if abs(value) >= size),
                 len(scales) - 1)
    # 999.96 at four digits is 1000.0: the next scale up reads it better.
    if index > 0 and abs(float(_digits(value / scales[index][1]))) >= 1000:
        index -= 1
    name, size = scales[index]
    return _digits(value / size), name


def flops_text(flops_per_second: float) -> str:
    """A rate of floating-point operations: ``4.812 GFLOP/s``."""
    number, prefix = scaled_text(flops_per_second, _RATE_PREFIXES)
    return f"{number} {prefix}FLOP/s"


def bandwidth_text(bytes_per_second: float) -> str:
    """A rate of bytes (decimal prefixes, as datasheets quote them): ``2.500 TB/s``."""
    number, prefix = scaled_text(bytes_per_second, _RATE_PREFIXES)
    return f"{number} {prefix}B/s"


def duration_text(milliseconds: float) -> str:
    """A duration given in milliseconds: ``1.500 s``, ``20.50 ms``, ``512.0 µs``."""
    number, unit = scaled_text(milliseconds, _DURATIONS_MS)
    return f"{number} {unit}"
