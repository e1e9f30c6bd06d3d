"""The layout shared by the exploration and scaling reports: records arranged in a grid
of rows and columns, the tables made from it, and the batch-time arithmetic.

:mod:`dlbench.report.tables.reports` decides, per report type, what the rows and columns are
and which tables a grid gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from dlbench.config.modelinfo import GENERIC_UNIT
from dlbench.report.aggregate import LabeledTable, Measured, as_number, value_order
from dlbench.report.cells import Table

TIME = "results.time"

# Per-batch times in ms (results.stats.summarize_times); not time_std, time_cv or
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
LAYOUT = ("exp.gpus", "exp.num_local_replicas", "exp.num_nodes")

#: A scaling report's columns: the replica count, then what tells two layouts of one
#: count apart. GPUs "0,1" and "0,5" are two measurements (one PCIe switch, or across
#: the CPU: a multi-GPU study's PIX against PHB), so each GPU set is a column.
SCALING_AXIS = ("exp.num_replicas", "exp.num_nodes", "exp.gpus")

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
class Grid:
    """The records of one group arranged in rows and columns."""

    labels: list[str]
    rows: dict[RowKey, list[Any]] = field(default_factory=dict)
    columns: dict[ColKey, str] = field(default_factory=dict)
    cells: dict[tuple[RowKey, ColKey], list[dict[str, Any]]] = field(default_factory=dict)
    # What the records say their throughput counts (results.throughput_unit), where
    # they all say one thing; the throughput tables' titles name it.
    throughput_unit: str = GENERIC_UNIT

    def sorted_rows(self) -> list[tuple[RowKey, list[Any]]]:
        return sorted(self.rows.items(), key=lambda kv: [value_order(v) for v in kv[1]])

    def sorted_columns(self) -> list[ColKey]:
        return sorted(self.columns, key=lambda key: [value_order(v) for v in key])


def normalised(record: dict[str, Any]) -> dict[str, Any]:
    # Records exported by other tools may lack the derived parameters; fill them in
    # so that every row and column has a value to be keyed by.
    filled = dict(record)
    filled.setdefault("exp.num_nodes", 1)
    filled.setdefault("exp.num_replicas", replicas(record))
    filled.setdefault("exp.effective_batch", effective_batch(record))
    return filled


def model_rows(records: list[dict[str, Any]]) -> list[str]:
    """The first row keys: the model, then the framework where several ran."""
    frameworks = {r.get("exp.framework") for r in records}
    return ["exp.model", "exp.framework"] if len(frameworks) > 1 else ["exp.model"]


def grid_table(
    title: str, grid: Grid, value: Callable[[RowKey, ColKey], Any], group: dict[str, Any]
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


def row_name(grid: Grid, row: RowKey) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(grid.labels, grid.rows[row], strict=True))


def throughput_of(
    grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None]
) -> Callable[[RowKey, ColKey], float | None]:
    """Samples per second of a cell from its mean batch time and effective batch."""

    def samples(row: RowKey, column: ColKey) -> float | None:
        members = grid.cells.get((row, column))
        batches = {effective_batch(r) for r in members} if members else set()
        return batches.pop() if len(batches) == 1 else None

    def throughput(row: RowKey, column: ColKey) -> float | None:
        t, batch = mean(row, column), samples(row, column)
        return None if t is None or batch is None or t.mean == 0 else batch * 1000.0 / t

    return throughput


def with_time_note(table: LabeledTable, target: str) -> LabeledTable:
    if target == TIME:
        return table
    which = "median" if target == "results.time_p50" else target.removeprefix("results.time_")
    table.notes.append(
        f"t is {target}, the {which} batch time of each run (averaged over the runs of a "
        "configuration); speedup and efficiency derive from it")
    return table


def gpu_set(column: ColKey) -> set[str]:
    """The GPUs of a scaling column (its ``exp.gpus``, DLBS syntax: ``0:1,2:3`` is GPUs
    0 to 3); empty on the CPU or where the records did not say."""
    gpus = column[2] if len(column) > 2 else None
    return set(gpus.replace(":", ",").split(",")) - {""} if isinstance(gpus, str) else set()


def scaling_baseline(
    grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None], row: RowKey, column: ColKey
) -> ColKey | None:
    """The 1-replica column that ``row``'s speedup and efficiency at ``column`` are
    relative to: of the 1-replica columns with a result in the row, the first on one
    of ``column``'s own GPUs, else the first; None when the row has none.

    With one 1-replica column (the usual sweep) that is the one; with several (GPU 0
    and GPU 4 each measured alone), GPUs "4,5" scale from GPU 4, not from GPU 0.
    """
    singles = [c for c in grid.sorted_columns() if c[0] == 1 and mean(row, c) is not None]
    own = [c for c in singles if gpu_set(c) & gpu_set(column)]
    chosen = own or singles
    return chosen[0] if chosen else None


def several_gpu_sets(grid: Grid) -> bool:
    """Whether some replica count and node count of ``grid`` ran on several GPU sets."""
    layouts = [column[:2] for column in grid.columns]
    return len(set(layouts)) < len(layouts)


#: The note of a scaling table whose columns include several GPU sets of one count.
GPU_SETS_NOTE = (
    "one replica count on several GPU sets (exp.gpus) is a column each, never averaged; "
    "speedup and efficiency are relative to the 1-replica result on one of the column's "
    "own GPUs where there is one, else to the first 1-replica result")


def rate_scaling_tables(
    grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None], group: dict[str, Any],
    target: str,
) -> list[Table]:
    """Throughput, speedup and efficiency of a scaling report whose target is a
    throughput: speedup = throughput_N / throughput_1, efficiency = 100 * speedup / N."""

    def speedup(row: RowKey, column: ColKey) -> float | None:
        baseline = scaling_baseline(grid, mean, row, column)
        base = None if baseline is None else mean(row, baseline)
        now = mean(row, column)
        return None if base is None or now is None or base.mean == 0 else now / base

    def efficiency(row: RowKey, column: ColKey) -> float | None:
        ratio, count = speedup(row, column), column[0]
        if ratio is None or not isinstance(count, (int, float)) or count == 0:
            return None
        return 100.0 * ratio / count

    value_table = grid_table(target, grid, mean, group)
    if all(c[0] == 1 for c in grid.columns):
        value_table.notes.append(
            "every record has 1 replica: there is nothing to scale yet, speedup is 1 and "
            "efficiency 100% by definition")
    speedup_table = grid_table("Speedup = throughput_N / throughput_1", grid, speedup, group)
    efficiency_table = grid_table("Efficiency, % = 100 * speedup / N", grid, efficiency, group)
    add_scaling_notes(grid, mean, speedup_table, efficiency_table)
    return [value_table, speedup_table, efficiency_table]


def add_scaling_notes(grid: Grid, mean: Callable[[RowKey, ColKey], Measured | None],
                      *tables: Table) -> None:
    """The notes every speedup and efficiency table of ``grid`` carries: that several
    GPU sets of one count are columns of their own, and which rows have no 1-replica
    result to scale from."""
    notes = [GPU_SETS_NOTE] if several_gpu_sets(grid) else []
    notes += [f"no 1-replica result for {row_name(grid, row)}: no speedup or efficiency"
              for row in grid.rows
              if not any(c[0] == 1 and mean(row, c) is not None for c in grid.columns)]
    for table in tables:
        table.notes.extend(notes)
