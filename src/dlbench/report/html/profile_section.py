"""The HTML report's section on where the time and memory go.

For records with ``results.profile.top_ops`` (``exp.profile=torch``): a table per
experiment of its operators by self time per step, with their share of the step and
their calls per step (:mod:`dlbench.report.operators`). For records with
``results.memory.*``: one horizontal stacked bar chart per model, a bar per
experiment (:mod:`dlbench.report.html.memory_chart`), and the same figures as a table.

Every value from a record is HTML-escaped, as in :mod:`dlbench.report.html.page`: operator
names, labels, paths and notes are user input as far as the page is concerned.

Example::

    section = profile_section_html(records, labels)   # "" when nothing was profiled
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dlbench.report.html.markup import escape
from dlbench.report.html.memory_chart import PARTS, PEAK, bytes_text, has_memory, memory_chart_svg
from dlbench.report.operators import OperatorStep, record_operators, time_basis, window_batches
from dlbench.results.values import is_number as _is_number

#: With this many profiled experiments or fewer, their operator tables start open.
OPEN_TABLES = 4

_NOTE = "results.memory.note"



def _num_td(value: float | None, text: str) -> str:
    """A right-aligned cell carrying its raw value for the page's sorting script."""
    if value is None or not math.isfinite(value):
        return '<td class="missing">-</td>'
    return f'<td class="num" data-sort="{escape(repr(float(value)))}">{escape(text)}</td>'


def ms_text(value: float) -> str:
    """``85.12``, ``0.119``: milliseconds with enough digits to tell small ones apart.

    >>> ms_text(85.1194), ms_text(0.11925), ms_text(1234.5)
    ('85.12', '0.119', '1,234.50')
    """
    return f"{value:,.2f}" if value >= 1 else f"{value:.3g}"


def operator_rows(ops: Sequence[OperatorStep]) -> list[tuple[str, float, float | None, float]]:
    """The table's rows, largest self time first: (operator, self ms, share, calls)."""
    return [(op.name, op.self_ms, op.share, op.calls) for op in ops]


def _operators_caption(record: Mapping[str, Any], ops: Sequence[OperatorStep]) -> str:
    basis = time_basis(record)
    what = "device (kernel) self time" if basis == "device" else "host self time"
    text = f"{len(ops)} operator(s) by {what}"
    shares = [op.share for op in ops]
    if ops and all(s is not None for s in shares):
        text += f"; listed: {sum(s or 0.0 for s in shares):.1%} of the step"
    util = record.get("results.profile.utilization")
    if _is_number(util) and math.isfinite(util):
        text += f"; busy: {util:.1%} (results.profile.utilization)"
    return text


def operator_table_html(
    index: int, record: Mapping[str, Any], label: str, *, open_: bool = False
) -> str:
    """One experiment's operators as a collapsible sortable table; ``""`` without any."""
    ops = record_operators(record)
    if not ops:
        return ""
    per = "step" if window_batches(record) else "window"
    head = "".join(
        f'<th scope="col" class="{cls}" title="click to sort">{escape(name)}</th>'
        for name, cls in (("operator", "text"), (f"self ms / {per}", "num"),
                          (f"share of {per}", "num"), (f"calls / {per}", "num")))
    body = "\n".join(
        f"<tr><td><code>{escape(name)}</code></td>{_num_td(ms, ms_text(ms))}"
        f"{_num_td(share, '-' if share is None else f'{share:.1%}')}"
        f"{_num_td(calls, f'{calls:,.4g}')}</tr>"
        for name, ms, share, calls in operator_rows(ops))
    notes = []
    batches = window_batches(record)
    notes.append(f"profiled over {batches} batch(es) after the timed ones; times per step"
                 if batches else "the record does not say how many batches the window had: "
                 "times are for the whole window")
    trace = record.get("results.profile.trace")
    if isinstance(trace, str) and trace:
        notes.append(f"trace: {trace}")
    items = "".join(f"<li>{escape(n)}</li>" for n in notes)
    return (
        f'<details class="operators"{" open" if open_ else ""}><summary>{escape(label)}: '
        f"{escape(_operators_caption(record, ops))}</summary>\n"
        f'<table class="sortable"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n'
        f'</tbody></table>\n<ul class="notes">{items}</ul>\n'
        f'<p><a href="#exp-{index}">All parameters of this experiment</a></p>\n</details>'
    )


def _memory_table_html(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    heads = ["experiment", *(name for name, _, _ in PARTS), "sum", "peak (allocator)"]
    head = "".join(f'<th scope="col" class="{"text" if i == 0 else "num"}" '
                   f'title="click to sort">{escape(h)}</th>' for i, h in enumerate(heads))
    lines = []
    for label, record in rows:
        values = [record.get(key) for _, key, _ in PARTS]
        numbers = [float(v) for v in values if _is_number(v)]
        cells = [*values, sum(numbers) if numbers else None, record.get(PEAK)]
        tds = "".join(_num_td(float(v), bytes_text(float(v))) if _is_number(v)
                      else '<td class="missing">-</td>' for v in cells)
        lines.append(f"<tr><td>{escape(label)}</td>{tds}</tr>")
    body = "\n".join(lines)
    return (f'<details><summary>The figures (bytes)</summary>\n<table class="sortable"><thead>'
            f"<tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></details>")


def _memory_html(records: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
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
        items = "".join(f"<li>{escape(f'{note} ({count} experiment(s))')}</li>"
                        for note, count in notes.items())
        figures.append(f'<ul class="notes">{items}</ul>')
    return "\n".join(figures)


def profile_section_html(records: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
    """The page's "Operators and memory" section, or ``""`` when no record has an
    operator breakdown or a memory figure. ``labels[i]`` names ``records[i]`` (the
    page's experiment labels); links point at the page's ``#exp-<i>`` blocks."""
    profiled = [i for i, r in enumerate(records) if record_operators(r)]
    memory = _memory_html(records, labels)
    if not profiled and not memory:
        return ""
    parts = ['<section id="profiles"><h2>Operators and memory</h2>']
    if memory:
        parts += ["<h3>Memory breakdown</h3>", memory]
    if profiled:
        parts.append(f"<h3>Operators by self time ({len(profiled)} profiled experiment(s))</h3>")
        open_ = len(profiled) <= OPEN_TABLES
        parts += [operator_table_html(i, records[i], labels[i], open_=open_) for i in profiled]
    parts.append("</section>")
    return "\n".join(parts)
