"""Exploration, weak-scaling and strong-scaling reports, in DLBS's manner.

- exploration: rows are models, columns are replica batch sizes; batch time and
  throughput = effective batch * 1000 / t.
- weak scaling (the replica batch B is fixed, the effective batch grows with the
  replicas N): rows are model x B, columns are N; batch time, throughput
  = N * B * 1000 / tN, speedup = throughput_N / throughput_1, efficiency
  = 100 * t1 / tN.
- strong scaling (the effective batch E is fixed): rows are model x E; throughput
  = E * 1000 / tN, speedup, efficiency = 100 * t1 / (N * tN).

Every derived figure is computed from unrounded means; only formatters round. Rows
are also split by every other parameter that would otherwise be averaged over (see
:func:`dlbench.report.aggregate.row_keys`), and tables by framework, device,
phase and precision.

The time may be any per-batch time statistic (:func:`is_time_variable`):
``results.time`` (the mean), ``results.time_p50`` (the median), another percentile,
``results.time_min`` or ``_max``; throughput, speedup and efficiency are then
derived from it by the same formulas, so ``results.time_p50`` gives the median-based
scaling of a study that reports speedup from median throughput. With a throughput
target (:func:`is_rate_variable`) the scaling reports give speedup =
throughput_N / throughput_1 and efficiency = 100 * speedup / N, which is what the
time formulas above amount to. Any other target is one table of that value per group.

Example::

    report = build_table_report(load_records(["runs/sweep"]), "weak-scaling")
    print("\\n".join(render_report(report, "text")))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.report.aggregate import (
    MAX_NAMED,
    SEPARATE_BY,
    LabeledTable,
    Measured,
    as_number,
    environment_warning,
    identity_candidates,
    key_of,
    record_name,
    row_keys,
    split_groups,
    summarize,
    usable_records,
    value_order,
)
from dlbench.report.model import Report, Table

TIME = "results.time"
REPORT_TYPES = ("exploration", "weak-scaling", "strong-scaling")

# Per-batch times in ms (measure.stats.summarize_times); not time_std, time_cv or
# time_data, which are a spread, a ratio and a list.
_TIME_VARIABLE = re.compile(r"results\.time(_min|_max|_p\d+)?")
_RATE_VARIABLES = ("results.throughput",)


def is_time_variable(name: str) -> bool:
    """Whether ``name`` is a batch time in ms a throughput can be derived from:
    ``results.time``, ``results.time_p50`` (or another percentile), ``_min``, ``_max``."""
    return _TIME_VARIABLE.fullmatch(name) is not None


def is_rate_variable(name: str) -> bool:
    """Whether ``name`` is a throughput, items per second (``results.throughput``)."""
    return name in _RATE_VARIABLES


def time_title(name: str) -> str:
    """The title of a table of the time statistic ``name``: ``Batch time, ms`` for the
    mean, ``Median batch time, ms (results.time_p50)`` for the median, and so on."""
    suffix = name.removeprefix("results.time")
    if not suffix:
        return "Batch time, ms"
    if suffix == "_p50":
        what = "Median batch time"
    elif suffix in ("_min", "_max"):
        what = f"{'Minimum' if suffix == '_min' else 'Maximum'} batch time"
    else:
        what = f"{suffix[1:]} batch time"
    return f"{what}, ms ({name})"

# Parameters that move with the number of replicas; a scaling row spans them.
# GPUs "0,1" and "2,3" are therefore one configuration (two replicas on one node).
_LAYOUT = ("exp.gpus", "exp.num_local_replicas", "exp.num_nodes")

RowKey = tuple[Hashable, ...]
ColKey = tuple[Hashable, ...]


def replicas(record: dict[str, Any]) -> int | None:
    """``exp.num_replicas``, or what the layout parameters say it is."""
    for value in (
        record.get("exp.num_replicas"),
        _product(record.get("exp.num_local_replicas"), record.get("exp.num_nodes", 1)),
    ):
        number = as_number(value)
        if number is not None:
            return int(number)
    gpus = record.get("exp.gpus")
    if isinstance(gpus, str):
        return len(gpus.split(",")) if gpus else 1
    return None


def effective_batch(record: dict[str, Any]) -> float | None:
    """``exp.effective_batch``, or replicas times ``exp.replica_batch``."""
    number = as_number(record.get("exp.effective_batch"))
    if number is not None:
        return number
    count = replicas(record)
    batch = as_number(record.get("exp.replica_batch"))
    return None if count is None or batch is None else count * batch


def _product(a: Any, b: Any) -> float | None:
    x, y = as_number(a), as_number(b)
    return None if x is None or y is None else x * y


@dataclass
class _Grid:
    """The records of one group arranged in rows and columns."""

    labels: list[str]
    rows: dict[RowKey, list[Any]] = field(default_factory=dict)
    columns: dict[ColKey, str] = field(default_factory=dict)
    cells: dict[tuple[RowKey, ColKey], list[dict[str, Any]]] = field(default_factory=dict)

    def sorted_rows(self) -> list[tuple[RowKey, list[Any]]]:
        return sorted(self.rows.items(), key=lambda kv: [value_order(v) for v in kv[1]])

    def sorted_columns(self) -> list[ColKey]:
        return sorted(self.columns, key=lambda key: [value_order(v) for v in key])


def _normalised(record: dict[str, Any]) -> dict[str, Any]:
    # Records exported by other tools may lack the derived parameters; fill them in
    # so that every row and column has a value to be keyed by.
    filled = dict(record)
    filled.setdefault("exp.num_nodes", 1)
    filled.setdefault("exp.num_replicas", replicas(record))
    filled.setdefault("exp.effective_batch", effective_batch(record))
    return filled


#: What splits a report into groups of tables. Not the framework: comparing frameworks
#: on one model is what DLBS was for, so they share a table, a row each.
_SEPARATE_TABLES = tuple(key for key in SEPARATE_BY if key != "exp.framework")


def _model_rows(records: list[dict[str, Any]]) -> list[str]:
    """The first row keys: the model, then the framework where several ran."""
    frameworks = {r.get("exp.framework") for r in records}
    return ["exp.model", "exp.framework"] if len(frameworks) > 1 else ["exp.model"]


def _build_grid(records: list[dict[str, Any]], kind: str) -> _Grid:
    if kind == "exploration":
        base, axis = _model_rows(records), ["exp.replica_batch"]
        # num_replicas is derived, yet two replica counts at one batch size are two
        # measurements (and two effective batches): split rather than average them.
        candidates = [
            "exp.num_replicas", *identity_candidates(records, [*SEPARATE_BY, *base, *axis])]
    else:
        batch = "exp.replica_batch" if kind == "weak-scaling" else "exp.effective_batch"
        base, axis = [*_model_rows(records), batch], ["exp.num_replicas", "exp.num_nodes"]
        candidates = identity_candidates(records, [*SEPARATE_BY, *base, *_LAYOUT])
    grid = _Grid(row_keys(records, base, axis, candidates))
    for record in records:
        row, column = key_of(record, grid.labels), key_of(record, axis)
        grid.rows.setdefault(row, [record.get(k) for k in grid.labels])
        grid.columns.setdefault(column, "")
        grid.cells.setdefault((row, column), []).append(record)
    for column in grid.columns:
        if kind == "exploration":
            grid.columns[column] = str(column[0])
        else:
            # Two replicas on one node and one on each of two nodes are different
            # measurements: they get a column each, told apart by their node count.
            same_count = [c for c in grid.columns if c[0] == column[0]]
            nodes = f" ({column[1]} node{'s' if column[1] != 1 else ''})"
            grid.columns[column] = str(column[0]) + (nodes if len(same_count) > 1 else "")
    return grid


def _table(
    title: str, grid: _Grid, value: Callable[[RowKey, ColKey], Any], group: dict[str, Any]
) -> LabeledTable:
    columns = grid.sorted_columns()
    suffix = ", ".join(f"{k}={v}" for k, v in group.items())
    return LabeledTable(
        title=f"{title} [{suffix}]" if suffix else title,
        columns=[*grid.labels, *(grid.columns[c] for c in columns)],
        rows=[[*labels, *(value(row, c) for c in columns)] for row, labels in grid.sorted_rows()],
        group=dict(group),
        label_columns=len(grid.labels),
    )


def _row_name(grid: _Grid, row: RowKey) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(grid.labels, grid.rows[row], strict=True))


def _group_tables(
    kind: str, group: dict[str, Any], records: list[dict[str, Any]], target: str
) -> list[Table]:
    grid = _build_grid(records, kind)
    means: dict[tuple[RowKey, ColKey], Measured] = {
        cell: summarize([float(r[target]) for r in members])
        for cell, members in grid.cells.items()
    }

    def mean(row: RowKey, column: ColKey) -> Measured | None:
        return means.get((row, column))

    if is_rate_variable(target) and kind != "exploration":
        return _rate_scaling_tables(grid, mean, group, target)
    if not is_time_variable(target):
        return [_table(target, grid, mean, group)]
    time_table = _table(time_title(target), grid, mean, group)

    def samples(row: RowKey, column: ColKey) -> float | None:
        members = grid.cells.get((row, column))
        batches = {effective_batch(r) for r in members} if members else set()
        return batches.pop() if len(batches) == 1 else None

    def throughput(row: RowKey, column: ColKey) -> float | None:
        t, batch = mean(row, column), samples(row, column)
        return None if t is None or batch is None or t.mean == 0 else batch * 1000.0 / t

    if kind == "exploration":
        formula = "Throughput, samples/s = effective batch * 1000 / t"
        return [time_table, _with_time_note(_table(formula, grid, throughput, group), target)]

    baseline = next((c for c in grid.sorted_columns() if c[0] == 1), None)
    if all(c[0] == 1 for c in grid.columns):
        time_table.notes.append(
            "every record has 1 replica: there is nothing to scale yet, speedup is 1 and "
            "efficiency 100% by definition")

    def speedup(row: RowKey, column: ColKey) -> float | None:
        base = None if baseline is None else throughput(row, baseline)
        now = throughput(row, column)
        return None if base is None or now is None or base == 0 else now / base

    def efficiency(row: RowKey, column: ColKey) -> float | None:
        t1 = None if baseline is None else mean(row, baseline)
        t_n, count = mean(row, column), column[0]
        if t1 is None or t_n is None or t_n.mean == 0 or not isinstance(count, (int, float)):
            return None
        # Weak scaling: each replica keeps its batch, so ideal time stays t1.
        # Strong scaling: the work is split N ways, so ideal time is t1 / N.
        return 100.0 * t1 / t_n if kind == "weak-scaling" else 100.0 * t1 / (count * t_n)

    if kind == "weak-scaling":
        thr_title = "Throughput, samples/s = N * B * 1000 / tN"
        eff_title = "Efficiency, % = 100 * t1 / tN"
    else:
        thr_title = "Throughput, samples/s = B * 1000 / tN"
        eff_title = "Efficiency, % = 100 * t1 / (N * tN)"
    speedup_table = _table("Speedup = throughput_N / throughput_1", grid, speedup, group)
    efficiency_table = _table(eff_title, grid, efficiency, group)
    for row in grid.rows:
        if baseline is None or (row, baseline) not in means:
            note = f"no 1-replica result for {_row_name(grid, row)}: no speedup or efficiency"
            speedup_table.notes.append(note)
            efficiency_table.notes.append(note)
    return [time_table, _with_time_note(_table(thr_title, grid, throughput, group), target),
            speedup_table, efficiency_table]


def _with_time_note(table: LabeledTable, target: str) -> LabeledTable:
    if target == TIME:
        return table
    which = "median" if target == "results.time_p50" else target.removeprefix("results.time_")
    table.notes.append(
        f"t is {target}, the {which} batch time of each run (averaged over the runs of a "
        "configuration); speedup and efficiency derive from it")
    return table


def _rate_scaling_tables(
    grid: _Grid, mean: Callable[[RowKey, ColKey], Measured | None], group: dict[str, Any],
    target: str,
) -> list[Table]:
    """Throughput, speedup and efficiency of a scaling report whose target is a
    throughput: speedup = throughput_N / throughput_1, efficiency = 100 * speedup / N."""
    baseline = next((c for c in grid.sorted_columns() if c[0] == 1), None)

    def speedup(row: RowKey, column: ColKey) -> float | None:
        base = None if baseline is None else mean(row, baseline)
        now = mean(row, column)
        return None if base is None or now is None or base.mean == 0 else now / base

    def efficiency(row: RowKey, column: ColKey) -> float | None:
        ratio, count = speedup(row, column), column[0]
        if ratio is None or not isinstance(count, (int, float)) or count == 0:
            return None
        return 100.0 * ratio / count

    value_table = _table(target, grid, mean, group)
    if all(c[0] == 1 for c in grid.columns):
        value_table.notes.append(
            "every record has 1 replica: there is nothing to scale yet, speedup is 1 and "
            "efficiency 100% by definition")
    speedup_table = _table("Speedup = throughput_N / throughput_1", grid, speedup, group)
    efficiency_table = _table("Efficiency, % = 100 * speedup / N", grid, efficiency, group)
    for row in grid.rows:
        if baseline is None or mean(row, baseline) is None:
            note = f"no 1-replica result for {_row_name(grid, row)}: no speedup or efficiency"
            speedup_table.notes.append(note)
            efficiency_table.notes.append(note)
    return [value_table, speedup_table, efficiency_table]


def unstable_warning(records: Sequence[dict[str, Any]]) -> str | None:
    """A warning naming the results the worker judged unstable, with its reasons
    (``results.stable``, ``results.unstable_reasons``), or None."""
    unstable = [r for r in records if r.get("results.stable") is False]
    if not unstable:
        return None
    named = []
    for index, record in enumerate(unstable[:MAX_NAMED]):
        reasons = record.get("results.unstable_reasons") or ["no reason recorded"]
        label = f"{record.get('exp.model', '?')} batch {record.get('exp.replica_batch', '?')}"
        named.append(f"{label} ({record_name(record, index)}): {'; '.join(map(str, reasons))}")
    more = len(unstable) - len(named)
    return (f"{len(unstable)} of {len(records)} result(s) unstable: " + " | ".join(named)
            + (f" | and {more} more" if more > 0 else ""))


_TITLES = {
    "exploration": "Exploration",
    "weak-scaling": "Weak scaling",
    "strong-scaling": "Strong scaling",
}
_AXES = {
    "exploration": ("exp.model", "exp.replica_batch"),
    "weak-scaling": ("exp.model and exp.replica_batch (B)", "exp.num_replicas (N)"),
    "strong-scaling": ("exp.model and exp.effective_batch (B)", "exp.num_replicas (N)"),
}


def build_table_report(
    records: Sequence[dict[str, Any]], report_type: str, target: str = TIME
) -> Report:
    """An exploration, weak-scaling or strong-scaling report of ``records``.

    Only records with ``exp.status`` ok and a number in ``target`` are used (the
    others are counted in a warning); ``ResultsError`` when none is left.
    ``ValueError`` for an unknown ``report_type``.
    """
    if report_type not in REPORT_TYPES:
        raise ValueError(f"unknown report type {report_type!r}; accepted: {REPORT_TYPES}")
    usable, warnings = usable_records(records, target)
    usable = [_normalised(r) for r in usable]
    differs = environment_warning(usable)
    report = Report(title=f"{_TITLES[report_type]}: {target}", warnings=warnings)
    if differs:
        report.warnings.append(differs)
    unstable = unstable_warning(usable)
    if unstable:
        report.warnings.append(unstable)
    groups = split_groups(usable, _SEPARATE_TABLES)
    for group, members in groups:
        report.tables.extend(_group_tables(report_type, group, members, target))
    rows, columns = _AXES[report_type]
    if len(_model_rows(usable)) > 1:
        rows = rows.replace("exp.model", "exp.model, exp.framework", 1)
    report.summary = [
        f"{len(usable)} record(s) in {len(groups)} group(s) of tables.",
        f"Rows: {rows}, plus any other parameter that differs within a cell. "
        f"Columns: {columns}.",
        "A cell is the mean over the runs of one configuration; '±x%' is their sample sd "
        "as a percentage of the mean (shown when n > 1).",
    ]
    return report
