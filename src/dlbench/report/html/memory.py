"""The HTML report's memory breakdown: a horizontal stacked bar chart in SVG per model,
and the same figures as a table.

One bar per experiment, stacked from ``results.memory.*``: weights, gradients,
optimizer state, activations; the device allocator's peak, where the record has one,
is a black mark on the same row. Every bar of a chart shares one axis, labelled in
bytes, KiB, MiB or GiB (whichever keeps the largest value at 1 or more), so that the
experiments of a sweep compare at a glance.

Drawn, as every chart of the HTML pages, by the one SVG writer
(:mod:`dlbench.report.charts.svg`): the chart draws the same on every machine, and a
test can read each segment's bytes and width back from the SVG. Every text is
HTML-escaped.

Example::

    svg = memory_chart_svg([("toy training exp.replica_batch=16", record)])
    html = memory_html(records, labels)   # every chart with its table; "" without any
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dlbench.report.charts.axes import axis_label, nice_step, tick_values
from dlbench.report.charts.svg import CHAR_WIDTH, Scale, svg_document, text, x_grid, x_title
from dlbench.report.html.markup import escape, list_items, number_cell
from dlbench.results.values import is_number as _is_number

#: The stacked parts, bottom first: (shown name, record key, colour).
PARTS = (
    ("weights", "results.memory.weights_bytes", "#4e79a7"),
    ("gradients", "results.memory.gradients_bytes", "#f28e2b"),
    ("optimizer state", "results.memory.optimizer_bytes", "#59a14f"),
    ("activations", "results.memory.activations_bytes", "#e15759"),
)
PEAK = "results.memory.peak_bytes"
UNITS = (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0), ("B", 1.0))

_PLOT_WIDTH = 520.0
_ROW = 24.0
_BAR = 14.0
_TOP = 30.0  # the legend
_MAX_LABEL = 56



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


def _legend(x0: float, peak: bool) -> list[str]:
    items = [(name, colour) for name, _, colour in PARTS]
    parts, x = [], x0
    for name, colour in items:
        parts.append(f'<rect x="{x:.1f}" y="8" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{x + 16:.1f}" y="18">{escape(name)}</text>')
        x += 16 + len(name) * CHAR_WIDTH + 14
    if peak:
        parts.append(f'<line x1="{x + 6:.1f}" x2="{x + 6:.1f}" y1="6" y2="22" stroke="#1f2328" '
                     f'stroke-width="3"/><text x="{x + 14:.1f}" y="18">peak (allocator)</text>')
    return parts


def memory_chart_svg(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """A stacked bar per ``(label, record)`` that has memory figures; ``""`` when none has.

    Each segment is a ``<rect class="seg">`` carrying ``data-part`` and ``data-bytes``,
    its width proportional to the bytes on the shared axis; the peak is a
    ``<g class="peak">`` with ``data-bytes``; each has a tooltip with the exact bytes.
    """
    drawn = [(label, record) for label, record in rows if has_memory(record)]
    if not drawn:
        return ""
    totals = [sum(_bytes(r.get(key)) or 0.0 for _, key, _ in PARTS) for _, r in drawn]
    peaks = [_bytes(r.get(PEAK)) for _, r in drawn]
    largest = max([*totals, *(p for p in peaks if p is not None)])
    unit, size = unit_for(largest)
    step = nice_step(largest / size)
    domain = math.ceil(largest / size / step) * step * size  # bytes at the axis's end
    left = min(max(len(_short(label)) for label, _ in drawn), _MAX_LABEL) * CHAR_WIDTH + 12
    right = 130.0  # room for the totals written after the longest bar
    width = left + _PLOT_WIDTH + right
    axis_y = _TOP + _ROW * len(drawn) + 4
    height = axis_y + 44

    # The scale in bytes; the ticks and their numbers in the unit.
    x_of = Scale(0.0, domain, left, left + _PLOT_WIDTH)
    in_unit = Scale(0.0, domain / size, left, left + _PLOT_WIDTH)
    out = [
        f"<title>{escape(f'memory breakdown of {len(drawn)} experiment(s), in {unit}')}</title>",
        *_legend(left, any(p is not None for p in peaks)),
        *x_grid(in_unit, tick_values(0.0, domain / size, step), top=_TOP - 4, bottom=axis_y),
        x_title(in_unit, axis_y + 36, axis_label("memory", unit)),
    ]
    for row, ((label, record), total, peak) in enumerate(zip(drawn, totals, peaks, strict=True)):
        y = _TOP + row * _ROW + (_ROW - _BAR) / 2
        out.append(f'<g class="row"><title>{escape(label)}</title>'
                   f'{text(left - 8, y + _BAR - 3, _short(label), anchor="end")}</g>')
        x = left
        for name, key, colour in PARTS:
            part = _bytes(record.get(key))
            if not part:
                continue
            w = part / domain * _PLOT_WIDTH
            out.append(
                f'<rect class="seg" data-part="{escape(name)}" data-bytes="{part:.0f}" '
                f'x="{x:.4f}" y="{y:.1f}" width="{w:.4f}" height="{_BAR:.1f}" fill="{colour}">'
                f"<title>{escape(f'{label}: {name} {bytes_text(part)}')}</title></rect>")
            x += w
        if total:
            # After the bar, and after the peak's mark where that lies further right.
            text_x = max(x, x_of(peak) if peak is not None else x) + 6
            out.append(text(text_x, y + _BAR - 3, f"{total / size:,.4g} {unit}",
                            css_class="total"))
        if peak is not None:
            px = x_of(peak)
            out.append(
                f'<g class="peak" data-bytes="{peak:.0f}"><title>'
                f"{escape(f'{label}: allocator peak {bytes_text(peak)}')}</title>"
                f'<line x1="{px:.4f}" x2="{px:.4f}" y1="{y - 3:.1f}" y2="{y + _BAR + 3:.1f}" '
                f'stroke="#1f2328" stroke-width="3"/></g>')
    return svg_document(width, height, out, css_class="memory-chart", font=True)


#: A record's note on its memory figures (what could not be measured).
_NOTE = "results.memory.note"


def _memory_table_html(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    heads = ["experiment", *(name for name, _, _ in PARTS), "sum", "peak (allocator)"]
    head = "".join(f'<th scope="col" class="{"text" if i == 0 else "num"}" '
                   f'title="click to sort">{escape(h)}</th>' for i, h in enumerate(heads))
    lines = []
    for label, record in rows:
        values = [record.get(key) for _, key, _ in PARTS]
        numbers = [float(v) for v in values if _is_number(v)]
        cells = [*values, sum(numbers) if numbers else None, record.get(PEAK)]
        tds = "".join(number_cell(float(v), bytes_text(float(v))) if _is_number(v)
                      else '<td class="missing">-</td>' for v in cells)
        lines.append(f"<tr><td>{escape(label)}</td>{tds}</tr>")
    body = "\n".join(lines)
    return (f'<details><summary>The figures (bytes)</summary>\n<table class="sortable"><thead>'
            f"<tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></details>")


def memory_html(records: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
    """The memory charts (one per framework and model, a bar per experiment), each with
    its figures' table, then the records' memory notes; ``""`` when no record has a
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
        # The SVG has no ids: no chart of the page can clash with another's.
        figures.append(
            f'<figure class="chart" id="memory-chart-{number}">'
            f"<figcaption>{escape(caption)}</figcaption>\n{memory_chart_svg(rows)}\n"
            f"{_memory_table_html(rows)}</figure>")
    notes: dict[str, int] = {}
    for record in records:
        note = record.get(_NOTE)
        if isinstance(note, str) and note:
            notes[note] = notes.get(note, 0) + 1
    if notes:
        items = list_items(f"{note} ({count} experiment(s))" for note, count in notes.items())
        figures.append(f'<ul class="notes">{items}</ul>')
    return "\n".join(figures)
