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
are also split by every other parameter that would otherwise be averaged over (the
rule of :func:`dlbench.report.aggregate.row_keys`), and tables by device, phase and
precision. This module says what the rows, columns and tables are; the records are
grouped and averaged in one place, a column at a time
(:mod:`dlbench.report.tables.columnar`), whatever they come from.

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

from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from dlbench.config.modelinfo import GENERIC_UNIT
from dlbench.report.aggregate import (
    SEPARATE_BY,
    Measured,
    record_name,
)
from dlbench.report.cells import Report, Table
from dlbench.report.registry import ReportOptions, ReportType
from dlbench.report.tables.grid import (
    LAYOUT,
    SCALING_AXIS,
    TIME,
    ColKey,
    Grid,
    RowKey,
    add_scaling_notes,
    effective_batch,
    grid_table,
    is_rate_variable,
    is_time_variable,
    rate_scaling_tables,
    replicas,
    scaling_baseline,
    throughput_of,
    time_title,
    with_time_note,
)
from dlbench.results.keys.lookup import lookup

__all__ = ["REPORT_TYPES", "SEPARATE_TABLES", "TABLE_KINDS", "TIME", "Exploration",
           "StrongScaling", "WeakScaling", "build_table_report", "effective_batch",
           "is_rate_variable", "is_time_variable", "replicas", "report_title", "summary_lines",
           "time_title", "unstable_text"]

#: What splits a report into groups of tables. Not the framework: comparing frameworks
#: on one model is what DLBS was for, so they share a table, a row each.
SEPARATE_TABLES = tuple(key for key in SEPARATE_BY if key != "exp.framework")


class _TableKind(ReportType):
    """An exploration or scaling report: how records are laid out in rows and columns,
    and which tables a group of records gives."""

    name: ClassVar[str]
    title: ClassVar[str]
    #: What the rows and the columns are, for the report's summary.
    rows_text: ClassVar[str]
    columns_text: ClassVar[str]

    def build(self, records: Sequence[dict[str, Any]], options: ReportOptions) -> Report:
        """The report of ``records`` (see :func:`build_table_report`)."""
        return build_table_report(records, self.name, options.target)

    @abstractmethod
    def layout_of(
        self, base: list[str], candidates: Callable[[list[str]], list[str]]
    ) -> tuple[list[str], list[str], list[str]]:
        """The row keys, the column keys, and the parameters that may further split a
        row when they differ within a cell: from the first row keys (the model, and
        the framework where several ran) and a function giving the identity
        parameters the records have, less those it is given."""

    @abstractmethod
    def column_label(self, column: ColKey, columns: Sequence[ColKey]) -> str:
        """The header of ``column`` among ``columns``."""

    @abstractmethod
    def time_tables(
        self, grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None],
        group: dict[str, Any], target: str,
    ) -> list[Table]:
        """The tables of a time target (time, throughput, ...)."""

    def value_tables(
        self, grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None],
        group: dict[str, Any], target: str,
    ) -> list[Table]:
        """The tables of a target that is not a time: one table of its values."""
        return [grid_table(target, grid, mean, group)]

    def tables_of(
        self, grid: Grid, means: dict[tuple[RowKey, ColKey], Measured], group: dict[str, Any],
        target: str,
    ) -> list[Table]:
        """The tables of a grid whose cells' means of ``target`` are ``means``."""

        def mean(row: RowKey, column: ColKey) -> Measured | None:
            return means.get((row, column))

        if is_time_variable(target):
            return self.time_tables(grid, mean, group, target)
        return self.value_tables(grid, mean, group, target)


class Exploration(_TableKind):
    """Rows are models, columns replica batch sizes."""

    name = "exploration"
    title = "Exploration"
    rows_text, columns_text = "exp.model", "exp.replica_batch"

    def layout_of(
        self, base: list[str], candidates: Callable[[list[str]], list[str]]
    ) -> tuple[list[str], list[str], list[str]]:
        """Model rows, batch-size columns."""
        axis = ["exp.replica_batch"]
        # num_replicas is derived, yet two replica counts at one batch size are two
        # measurements (and two effective batches): split rather than average them.
        return base, axis, ["exp.num_replicas", *candidates([*SEPARATE_BY, *base, *axis])]

    def column_label(self, column: ColKey, columns: Sequence[ColKey]) -> str:
        """The batch size."""
        return str(column[0])

    def time_tables(
        self, grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None],
        group: dict[str, Any], target: str,
    ) -> list[Table]:
        """Batch time and throughput."""
        formula = f"Throughput, {grid.throughput_unit} = effective batch * 1000 / t"
        return [grid_table(time_title(target), grid, mean, group),
                with_time_note(grid_table(formula, grid, throughput_of(grid, mean), group), target)]


class _Scaling(_TableKind):
    """Rows are model x batch, columns replica counts (and node counts)."""

    batch: ClassVar[str]  # the batch that is held fixed
    throughput_title: ClassVar[str]  # {unit}: Grid.throughput_unit
    efficiency_title: ClassVar[str]
    columns_text = "exp.num_replicas (N)"

    @staticmethod
    @abstractmethod
    def efficiency(t1: float, t_n: float, count: float) -> float:
        """Efficiency, %, from the 1-replica and N-replica batch times."""

    def layout_of(
        self, base: list[str], candidates: Callable[[list[str]], list[str]]
    ) -> tuple[list[str], list[str], list[str]]:
        """Model x batch rows, replica-count columns."""
        base, axis = [*base, self.batch], list(SCALING_AXIS)
        return base, axis, candidates([*SEPARATE_BY, *base, *LAYOUT])

    def column_label(self, column: ColKey, columns: Sequence[ColKey]) -> str:
        """The replica count; the node count where one replica count has several; the
        GPU set where one replica count on one node count has several."""
        # Two replicas on one node and one on each of two nodes are different
        # measurements, and so are GPUs 0,1 and 0,5: they get a column each, told
        # apart by what differs.
        nodes = {c[1] for c in columns if c[0] == column[0]}
        sets = {c[2] for c in columns if c[:2] == column[:2]}
        parts = []
        if len(nodes) > 1:
            parts.append(f"{column[1]} node{'s' if column[1] != 1 else ''}")
        if len(sets) > 1:
            parts.append(f"GPUs {column[2] if column[2] not in (None, '') else '-'}")
        return str(column[0]) + (f" ({', '.join(parts)})" if parts else "")

    def value_tables(
        self, grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None],
        group: dict[str, Any], target: str,
    ) -> list[Table]:
        """A throughput's speedup and efficiency; one table of any other value."""
        if is_rate_variable(target):
            return rate_scaling_tables(grid, mean, group, target)
        return super().value_tables(grid, mean, group, target)

    def time_tables(
        self, grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None],
        group: dict[str, Any], target: str,
    ) -> list[Table]:
        """Batch time, throughput, speedup and efficiency."""
        time_table = grid_table(time_title(target), grid, mean, group)
        throughput = throughput_of(grid, mean)
        if all(c[0] == 1 for c in grid.columns):
            time_table.notes.append(
                "every record has 1 replica: there is nothing to scale yet, speedup is 1 and "
                "efficiency 100% by definition")

        def speedup(row: RowKey, column: ColKey) -> float | None:
            baseline = scaling_baseline(grid, mean, row, column)
            base = None if baseline is None else throughput(row, baseline)
            now = throughput(row, column)
            return None if base is None or now is None or base == 0 else now / base

        def efficiency(row: RowKey, column: ColKey) -> float | None:
            baseline = scaling_baseline(grid, mean, row, column)
            t1 = None if baseline is None else mean(row, baseline)
            t_n, count = mean(row, column), column[0]
            if t1 is None or t_n is None or t_n.mean == 0 or not isinstance(count, (int, float)):
                return None
            return self.efficiency(t1, t_n, count)

        speedup_table = grid_table("Speedup = throughput_N / throughput_1", grid, speedup, group)
        efficiency_table = grid_table(self.efficiency_title, grid, efficiency, group)
        add_scaling_notes(grid, mean, speedup_table, efficiency_table)
        throughput_table = grid_table(
            self.throughput_title.format(unit=grid.throughput_unit), grid, throughput, group)
        return [time_table, with_time_note(throughput_table, target), speedup_table,
                efficiency_table]


class WeakScaling(_Scaling):
    """The replica batch B is fixed; the effective batch grows with the replicas."""

    name = "weak-scaling"
    title = "Weak scaling"
    rows_text = "exp.model and exp.replica_batch (B)"
    batch = "exp.replica_batch"
    throughput_title = "Throughput, {unit} = N * B * 1000 / tN"
    efficiency_title = "Efficiency, % = 100 * t1 / tN"

    @staticmethod
    def efficiency(t1: float, t_n: float, count: float) -> float:
        """Each replica keeps its batch, so ideal time stays t1."""
        return 100.0 * t1 / t_n


class StrongScaling(_Scaling):
    """The effective batch is fixed; the replicas split it."""

    name = "strong-scaling"
    title = "Strong scaling"
    rows_text = "exp.model and exp.effective_batch (B)"
    batch = "exp.effective_batch"
    throughput_title = "Throughput, {unit} = B * 1000 / tN"
    efficiency_title = "Efficiency, % = 100 * t1 / (N * tN)"

    @staticmethod
    def efficiency(t1: float, t_n: float, count: float) -> float:
        """The work is split N ways, so ideal time is t1 / N."""
        return 100.0 * t1 / (count * t_n)


#: The report types of this module, by name.
TABLE_KINDS: dict[str, _TableKind] = {
    kind.name: kind for kind in (Exploration(), WeakScaling(), StrongScaling())}
REPORT_TYPES = tuple(TABLE_KINDS)


def report_title(kind_title: str, target: str) -> str:
    """The title of a report of ``target`` for people: ``Exploration: Batch time, ms``
    for a time statistic (:func:`time_title`), else the key with its declared unit
    (``Weak scaling: results.tflops, TFLOP/s``), from the key table; a throughput's
    generic ``samples/s`` is left to its tables, which name the models' own unit."""
    if is_time_variable(target):
        return f"{kind_title}: {time_title(target)}"
    declared = lookup(target)
    # A rate's declared unit is the generic one; its tables name the models' own.
    unit = declared.unit if declared is not None and declared.unit != GENERIC_UNIT else ""
    return f"{kind_title}: {target}" + (f", {unit}" if unit else "")


def unstable_text(named: Sequence[Mapping[str, Any]], count: int, total: int) -> str:
    """The warning naming the results the worker judged unstable (``results.stable``
    false), with its reasons (``results.unstable_reasons``): ``count`` of ``total``
    results are, of which ``named`` (the first :data:`MAX_NAMED`) are named."""
    parts = []
    for index, record in enumerate(named):
        reasons = record.get("results.unstable_reasons") or ["no reason recorded"]
        label = f"{record.get('exp.model', '?')} batch {record.get('exp.replica_batch', '?')}"
        parts.append(f"{label} ({record_name(record, index)}): {'; '.join(map(str, reasons))}")
    more = count - len(parts)
    return (f"{count} of {total} result(s) unstable: " + " | ".join(parts)
            + (f" | and {more} more" if more > 0 else ""))


def build_table_report(
    records: Sequence[Mapping[str, Any]], report_type: str, target: str = TIME
) -> Report:
    """An exploration, weak-scaling or strong-scaling report of ``records``.

    Only records with ``exp.status`` ok and a number in ``target`` are used (the
    others are counted in a warning); ``ResultsError`` when none is left.
    ``ValueError`` for an unknown ``report_type``. The records are written to a store
    in memory and reported as a store is
    (:func:`~dlbench.report.tables.columnar.records_table_report`).
    """
    # Imported here: the computation brings NumPy, which listing report types does not need.
    from dlbench.report.tables.columnar import records_table_report

    return records_table_report(records, report_type, target)


def summary_lines(
    kind: _TableKind, records: int, groups: int, frameworks: bool
) -> list[str]:
    """The summary of a report of ``kind`` over ``records`` usable records in
    ``groups`` groups; ``frameworks``: whether several frameworks ran."""
    rows, columns = kind.rows_text, kind.columns_text
    if frameworks:
        rows = rows.replace("exp.model", "exp.model, exp.framework", 1)
    return [
        f"{records} record(s) in {groups} group(s) of tables.",
        f"Rows: {rows}, plus any other parameter that differs within a cell. "
        f"Columns: {columns}.",
        "A cell is the mean over the runs of one configuration; '±x%' is their sample sd "
        "as a percentage of the mean (shown when n > 1).",
    ]
