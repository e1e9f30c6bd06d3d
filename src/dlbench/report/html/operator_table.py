"""The HTML report's operator table: for a record with ``results.profile.top_ops``
(``exp.profile=torch``), its operators by self time per step, with their share of the
step and their calls per step (:mod:`dlbench.report.operators` computes them), as a
collapsible sortable table. The page's "Operators and memory" section
(:func:`dlbench.report.html.page.profiles_section`) holds one per profiled
experiment, beside the memory breakdown (:mod:`dlbench.report.html.memory`).

The template (``report.html.j2``) escapes every value: operator names, labels, paths
and notes are user input as far as the page is concerned.

Example::

    table = operator_table(0, record, "toy training")   # None when not profiled
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.report.html.markup import Cell, number_cell
from dlbench.report.operators import OperatorStep, record_operators, time_basis, window_batches
from dlbench.results.values import is_number as _is_number

#: With this many profiled experiments or fewer, their operator tables start open.
OPEN_TABLES = 4



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


@dataclass
class OperatorTable:
    """One experiment's operators as the page shows them: a collapsible sortable table,
    open or not, with its summary line, columns, rows and notes, linking to the
    experiment's block ``#exp-<index>``."""

    index: int
    label: str
    caption: str
    open: bool
    columns: list[tuple[str, str]]
    rows: list[list[Cell]]
    notes: list[str]


def operator_table(
    index: int, record: Mapping[str, Any], label: str, *, open_: bool = False
) -> OperatorTable | None:
    """One experiment's operators as a collapsible sortable table; None without any."""
    ops = record_operators(record)
    if not ops:
        return None
    per = "step" if window_batches(record) else "window"
    columns = [("operator", "text"), (f"self ms / {per}", "num"),
               (f"share of {per}", "num"), (f"calls / {per}", "num")]
    rows = [[Cell(name, code=True), number_cell(ms, ms_text(ms)),
             number_cell(share, "-" if share is None else f"{share:.1%}"),
             number_cell(calls, f"{calls:,.4g}")]
            for name, ms, share, calls in operator_rows(ops)]
    notes = []
    batches = window_batches(record)
    notes.append(f"profiled over {batches} batch(es) after the timed ones; times per step"
                 if batches else "the record does not say how many batches the window had: "
                 "times are for the whole window")
    trace = record.get("results.profile.trace")
    if isinstance(trace, str) and trace:
        notes.append(f"trace: {trace}")
    return OperatorTable(index, label, _operators_caption(record, ops), open_, columns, rows,
                         notes)
