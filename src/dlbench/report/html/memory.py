"""The HTML report's memory breakdown: a horizontal stacked bar chart per model, drawn
by matplotlib and inlined as SVG, and the same figures as a table.

One bar per experiment, stacked from ``results.memory.*``: weights, gradients,
optimizer state, activations; the device allocator's peak, where the record has one,
is a black mark on the same row. Every bar of a chart shares one axis, in bytes, KiB,
MiB or GiB (whichever keeps the largest value at 1 or more), so that the experiments
of a sweep compare at a glance. The template (``report.html.j2``) escapes every text.

Example::

    figure = draw_memory_chart([("toy training exp.replica_batch=16", record)])
    section = memory_section(records, labels)   # every chart with its table; None without
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlbench.report.charts.axes import axis_label, nice_step, tick_values
from dlbench.report.charts.figure import inline_svg
from dlbench.report.html.markup import MISSING_CELL, Cell, number_cell
from dlbench.results.values import is_number as _is_number

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The stacked parts, bottom first: (shown name, record key, colour).
PARTS = (
    ("weights", "results.memory.weights_bytes", "#4e79a7"),
    ("gradients", "results.memory.gradients_bytes", "#f28e2b"),
    ("optimizer state", "results.memory.optimizer_bytes", "#59a14f"),
    ("activations", "results.memory.activations_bytes", "#e15759"),
)
PEAK = "results.memory.peak_bytes"
PEAK_COLOUR = "#1f2328"
UNITS = (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0), ("B", 1.0))

_WIDTH_IN = 7.0
_ROW_IN = 0.32  # height of a bar's row
_FRAME_IN = 1.3  # the legend and the x axis
_BAR = 0.6  # of a row
_MAX_LABEL = 56
_ROOM = 1.22  # the x axis past the largest bar: room for the totals written after it


def _bytes(value: Any) -> float | None:
    return float(value) if _is_number(value) and math.isfinite(value) and value >= 0 else None


def has_memory(record: Mapping[str, Any]) -> bool:
    """Whether the record has at least one memory figure to draw (above 0 bytes)."""
    values = [_bytes(record.get(key)) for _, key, _ in PARTS] + [_bytes(record.get(PEAK))]
    return any(v for v in values)


def unit_for(largest: float) -> tuple[str, float]:
    """The unit that shows ``largest`` bytes as a number of at least 1 (bytes below 1 KiB).

    >>> unit_for(38440.0), unit_for(5 * 1024**3)
    (('KiB', 1024.0), ('GiB', 1073741824.0))
    """
    return next(((n, s) for n, s in UNITS if largest >= s), UNITS[-1])


def bytes_text(value: float) -> str:
    """``38,440 B (37.54 KiB)``: exact bytes, then in the unit that suits them."""
    name, size = unit_for(value)
    exact = f"{value:,.0f} B"
    return exact if size == 1.0 else f"{exact} ({value / size:,.2f} {name})"


def _short(label: str) -> str:
    return label if len(label) <= _MAX_LABEL else label[: _MAX_LABEL - 1] + "…"


def draw_memory_chart(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> Figure | None:
    """A stacked bar per ``(label, record)`` that has memory figures, top to bottom;
    None when none has.

    Each part is a bar segment (gid ``memory-<row>-<part>``) whose width is its bytes
    in the axis's unit; the peak is a black mark (gid ``memory-peak-<row>``); each
    bar's total is written after it, or after the peak where that lies further right.
    """
    drawn = [(label, record) for label, record in rows if has_memory(record)]
    if not drawn:
        return None
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    totals = [sum(_bytes(r.get(key)) or 0.0 for _, key, _ in PARTS) for _, r in drawn]
    peaks = [_bytes(r.get(PEAK)) for _, r in drawn]
    largest = max([*totals, *(p for p in peaks if p is not None)])
    unit, size = unit_for(largest)
    step = nice_step(largest / size)
    domain = math.ceil(largest / size / step) * step  # the axis's last tick, in the unit

    figure = Figure(figsize=(_WIDTH_IN, _FRAME_IN + _ROW_IN * len(drawn)), dpi=100,
                    layout="constrained")
    axes = figure.subplots()
    rows_at = list(range(len(drawn)))
    for row, (_, record) in enumerate(drawn):
        left = 0.0
        for name, key, colour in PARTS:
            part = _bytes(record.get(key))
            if not part:
                continue
            (bar,) = axes.barh([row], [part / size], left=left, height=_BAR, color=colour)
            bar.set_gid(f"memory-{row}-{name.replace(' ', '-')}")
            left += part / size
        peak = peaks[row]
        if peak is not None:
            axes.plot([peak / size], [row], linestyle="none", marker="|", markersize=16,
                      markeredgewidth=3, color=PEAK_COLOUR, gid=f"memory-peak-{row}")
        if totals[row]:
            after = max(left, peak / size if peak is not None else left)
            axes.text(after + domain * 0.01, row, f"{totals[row] / size:,.4g} {unit}",
                      va="center", fontsize=9, gid=f"memory-total-{row}")
    axes.set_yticks(rows_at, [_short(label) for label, _ in drawn])
    axes.set_ylim(len(drawn) - 0.5, -0.5)  # the first experiment at the top
    axes.set_xticks(tick_values(0.0, domain, step))
    axes.set_xlim(0.0, domain * _ROOM)
    axes.set_xlabel(axis_label("memory", unit))
    axes.grid(True, axis="x", alpha=0.3)
    axes.set_axisbelow(True)
    handles: list[Any] = [Patch(color=colour, label=name) for name, _, colour in PARTS]
    if any(p is not None for p in peaks):
        handles.append(Line2D([], [], linestyle="none", marker="|", markersize=12,
                              markeredgewidth=3, color=PEAK_COLOUR, label="peak (allocator)"))
    figure.legend(handles=handles, loc="outside upper center", ncols=len(handles),
                  frameon=False, fontsize=9)
    return figure


#: A record's note on its memory figures (what could not be measured).
_NOTE = "results.memory.note"

#: The columns of a memory chart's table: (name, ``text`` or ``num``).
COLUMNS = [("experiment", "text"), *((name, "num") for name, _, _ in PARTS), ("sum", "num"),
           ("peak (allocator)", "num")]


def memory_rows(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Cell]]:
    """The cells of a memory chart's table: a row per experiment, its parts, their sum
    and the peak, each in exact bytes and the unit that suits them."""
    out = []
    for label, record in rows:
        values = [record.get(key) for _, key, _ in PARTS]
        numbers = [float(v) for v in values if _is_number(v)]
        cells = [*values, sum(numbers) if numbers else None, record.get(PEAK)]
        out.append([Cell(label), *(number_cell(float(v), bytes_text(float(v)))
                                   if _is_number(v) else MISSING_CELL for v in cells)])
    return out


@dataclass
class MemoryChart:
    """One memory chart of the page: its number (for its id), caption, SVG and table."""

    number: int
    caption: str
    svg: str
    rows: list[list[Cell]]
    columns = COLUMNS


@dataclass
class MemorySection:
    """The memory charts of the page, and the records' notes on what was not measured."""

    figures: list[MemoryChart]
    notes: list[str]


def memory_section(records: Sequence[Mapping[str, Any]],
                   labels: Sequence[str]) -> MemorySection | None:
    """The memory charts (one per framework and model, a bar per experiment), each with
    its figures' table, then the records' memory notes; None when no record has a
    memory figure. ``labels[i]`` names ``records[i]``."""
    groups: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
    for record, label in zip(records, labels, strict=True):
        if has_memory(record):
            key = (str(record.get("exp.framework", "?")), str(record.get("exp.model", "?")))
            groups.setdefault(key, []).append((label, record))
    figures = []
    for number, ((framework, model), rows) in enumerate(groups.items()):
        caption = (f"{model} ({framework}): memory by part, one bar per experiment; "
                   "weights, gradients, optimizer state, activations saved for backward")
        figure = draw_memory_chart(rows)
        svg = inline_svg(figure, ids=f"memory-{number}-") if figure is not None else ""
        figures.append(MemoryChart(number, caption, svg, memory_rows(rows)))
    notes: dict[str, int] = {}
    for record in records:
        note = record.get(_NOTE)
        if isinstance(note, str) and note:
            notes[note] = notes.get(note, 0) + 1
    if not figures and not notes:
        return None
    return MemorySection(figures, [f"{note} ({count} experiment(s))"
                                   for note, count in notes.items()])
