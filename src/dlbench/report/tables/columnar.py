"""The exploration and scaling reports, computed a column at a time: the one
implementation of :func:`~dlbench.report.tables.reports.build_table_report` and of
``dlbench report --type exploration|weak-scaling|strong-scaling``.

The records are read as arrays from a store (:mod:`dlbench.results.store.arrays`):
a run's store as it is, any other input (logs, exported files, several sources)
first written into a store in memory by the store's own writer. Only the keys the
report uses are read, and of those only the ones that vary; grouping and means are
done with NumPy (:mod:`dlbench.report.tables.columnar_groups`), so a million records
take seconds, not the tens of seconds and gigabytes of a dict per record.

Records are grouped as :func:`~dlbench.report.aggregate.identity` tells values apart
(``1`` and ``1.0`` are one value, ``True`` another), a row or column is labelled
with the values of its first record, and a record lacking a parameter the layout
needs (``exp.num_nodes`` in DLBS logs, ``exp.num_replicas``, ``exp.effective_batch``)
gets what :func:`~dlbench.report.tables.grid.normalised` fills in.

Example::

    report = table_report(["runs/sweep"], {}, "--where", "exploration", "results.time")
    print("\n".join(render_report(report, "text")))
"""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dlbench.errors import ResultsError
from dlbench.report.aggregate import (
    ENVIRONMENT_KEYS,
    ENVIRONMENT_WITHIN,
    MAX_NAMED,
    SERIES_USED,
    Measured,
    as_number,
    identity,
    identity_parameters,
    record_name,
    skipped_warnings,
    table_report_keys,
)
from dlbench.report.cells import Report, Table
from dlbench.report.tables.columnar_groups import (
    count_distinct,
    distinct,
    first_appearance,
    group_means,
    ordered_counts,
    stable_order,
)
from dlbench.report.tables.grid import TIME, ColKey, Grid, RowKey, normalised
from dlbench.report.tables.reports import (
    SEPARATE_TABLES,
    TABLE_KINDS,
    _TableKind,
    report_title,
    summary_lines,
    unstable_text,
)
from dlbench.results.io import load_selected
from dlbench.results.log.parser import ParseWarning
from dlbench.results.store import STORE_FILENAME
from dlbench.results.store.arrays import KeyCodes, StoreArrays

#: What :func:`~dlbench.report.tables.grid.normalised` fills in where a record lacks it.
_FILLED = ("exp.num_nodes", "exp.num_replicas", "exp.effective_batch")

#: What :func:`~dlbench.report.tables.grid.effective_batch` reads of a record (and so
#: :func:`~dlbench.report.tables.grid.normalised`, to fill in :data:`_FILLED`).
_EFFECTIVE = ("exp.effective_batch", "exp.num_replicas", "exp.num_local_replicas",
              "exp.num_nodes", "exp.gpus", "exp.replica_batch")

#: What :func:`~dlbench.report.tables.reports.unstable_text` reads of the records it names.
_NAMING = ("exp.id", "exp.log_file", "exp.model", "exp.replica_batch",
           "results.unstable_reasons")

_ABSENT: Any = object()


@dataclass
class _Column:
    """One key over the usable records: ``codes`` group them (by
    :func:`~dlbench.report.aggregate.identity`, ``values`` holding a value of each),
    ``raw`` indexes ``raw_values``, each record's own value, which labels show."""

    codes: np.ndarray
    values: list[Any]
    present: np.ndarray
    raw: np.ndarray
    raw_values: list[Any]

    @classmethod
    def of(cls, raw: np.ndarray, raw_values: list[Any], present: np.ndarray) -> _Column:
        """The column whose records hold ``raw_values[raw[i]]`` (where ``present``)."""
        merged: dict[Hashable, int] = {}
        values: list[Any] = []
        mapping = []
        for value in raw_values:
            code = merged.setdefault(identity(value), len(merged))
            if code == len(values):
                values.append(value)
            mapping.append(code)
        return cls(np.array(mapping, dtype=np.int64)[raw], values, present, raw, raw_values)

    def shown(self, index: int) -> Any:
        """The value of record ``index`` (None when absent)."""
        return self.raw_values[int(self.raw[index])]


class _Usable:
    """The keys of the usable records (``positions`` among the selected ones), read
    from the store once each, and only when the shapes and the catalogue leave their
    values in doubt."""

    def __init__(self, arrays: StoreArrays, positions: np.ndarray) -> None:
        self.arrays = arrays
        self.positions = positions
        self.shapes = distinct(arrays.shape_index[positions])
        self._codes: dict[str, _Column] = {}
        self._present: dict[str, np.ndarray] = {}
        self._filled: set[str] = set()

    def __len__(self) -> int:
        return int(self.positions.size)

    def get(self, key: str) -> _Column:
        """``key``'s codes, values and presence over the usable records."""
        if key not in self._codes:
            whole: KeyCodes = self.arrays.codes(key)
            self._codes[key] = _Column.of(
                whole.codes[self.positions], whole.values, whole.present[self.positions])
        return self._codes[key]

    def present(self, key: str) -> np.ndarray:
        """Which usable records have ``key``, without reading its values."""
        if key in self._codes:
            return self._codes[key].present
        if key not in self._present:
            self._present[key] = self.arrays.present(key)[self.positions]
        return self._present[key]

    def fill(self) -> None:
        """Give every record the :data:`_FILLED` keys it lacks, as
        :func:`~dlbench.report.tables.grid.normalised` does: computed once per distinct
        combination of what that reads, not once per record."""
        missing = [key for key in _FILLED if not self.present(key).all()]
        if not missing:
            return
        lacking = np.flatnonzero(~np.logical_and.reduce([self.present(k) for k in missing]))
        read = [self.get(key) for key in _EFFECTIVE]
        every = lacking.size == len(self)  # DLBS logs: every record lacks exp.num_nodes
        # Only what varies tells the combinations apart: a column of one value, or a
        # key every record has (or none has), is left out of the grouping.
        varying: list[np.ndarray] = []
        for column in read:
            if column.raw.size and column.raw.min() != column.raw.max():
                varying.append(column.raw if every else column.raw[lacking])
            if column.present.any() and not column.present.all():
                present = column.present if every else column.present[lacking]
                varying.append(present.astype(np.int64))
        combos, firsts = first_appearance(varying, int(lacking.size))
        filled = []
        for first in firsts.tolist():
            row = int(lacking[first])
            filled.append(normalised({key: column.shown(row) for key, column
                                      in zip(_EFFECTIVE, read, strict=True)
                                      if column.present[row]}))
        for key in missing:
            column = self.get(key)
            raw = column.raw.copy()
            absent = ~column.present[lacking]
            raw[lacking[absent]] = len(column.raw_values) + combos[absent]
            self._codes[key] = _Column.of(
                raw, [*column.raw_values, *(f[key] for f in filled)],
                np.ones(len(self), dtype=bool))
            self._filled.add(key)

    def one_value(self, key: str, shapes: np.ndarray | None = None) -> bool:
        """True when the records of ``shapes`` (all usable ones when None) hold one
        value of ``key`` (absent counting as None) by their shapes and the catalogue
        alone; False when only its values can tell."""
        if key in self._filled:
            return False
        held = self.arrays.shape_has(key)[self.shapes if shapes is None else shapes]
        if not held.any():
            return True
        info = self.arrays.info(key)
        return info is not None and info.single_value() and bool(
            held.all() or self.arrays.first_value(key) is None)

    def varies(
        self, key: str, members: np.ndarray | None = None, shapes: np.ndarray | None = None
    ) -> bool:
        """Whether ``key`` takes more than one value (absent counting as None) among
        the usable records (at ``members``, of ``shapes``, when given)."""
        if self.one_value(key, shapes):
            return False
        codes = self.get(key).codes
        return count_distinct(codes if members is None else codes[members]) > 1


def _names(arrays: StoreArrays, positions: np.ndarray) -> list[str]:
    """How warnings name the selected records at ``positions``
    (:func:`~dlbench.report.aggregate.record_name`)."""
    if arrays.stored_ids:
        return arrays.ids(positions)  # a store's exp.id: every record has one
    return [record_name({key: arrays.value(key, position) for key in ("exp.id", "exp.log_file")},
                        position) for position in positions.tolist()]


def _usable(arrays: StoreArrays, target: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """:func:`~dlbench.report.aggregate.usable_records` over arrays: the positions of
    the usable records, their values of ``target``, and the warnings."""
    has_status = arrays.present("exp.status")
    is_ok = has_status.copy()
    others, statuses = arrays.other_than("exp.status", "ok")
    is_ok[others] = False
    not_ok: dict[str, int] = {}
    missing = int(has_status.size - has_status.sum())
    for reason in [*(str(s) if s else "missing" for s in statuses), *["missing"] * missing]:
        not_ok[reason] = not_ok.get(reason, 0) + 1
    values, numeric = arrays.numbers(target)
    no_value = np.flatnonzero(is_ok & ~numeric)
    usable = np.flatnonzero(is_ok & numeric)
    named = _names(arrays, no_value[:MAX_NAMED])
    warnings = skipped_warnings(not_ok, int(no_value.size), named, target)
    if usable.size == 0:
        raise ResultsError(
            f"none of the {len(arrays)} selected record(s) has exp.status ok and a numeric "
            f"{target}: " + "; ".join(warnings))
    return usable, values[usable], warnings


def _environment_warning(data: _Usable) -> str | None:
    """:func:`~dlbench.report.aggregate.environment_warning` over arrays."""
    parts: list[str] = []
    for key in ENVIRONMENT_KEYS:
        if not data.varies(key):
            continue
        column = data.get(key)
        within = ENVIRONMENT_WITHIN.get(key)
        groups = np.zeros(len(data), dtype=np.int64)
        if within is not None and data.varies(within):
            groups, _ = first_appearance([data.get(within).codes], len(data))
        held, codes = groups[column.present], column.codes[column.present]
        pairs = first_appearance([held, codes], int(held.size))[1].size
        if pairs <= count_distinct(held):
            continue  # one value within each group
        _, counts, firsts = ordered_counts(held, codes)
        shown = column.raw[column.present][firsts]
        listed = ", ".join(f"{column.raw_values[raw]} ({count})"
                           for raw, count in zip(shown.tolist(), counts.tolist(), strict=True))
        parts.append(f"{key}: {listed}")
    if not parts:
        return None
    return "records come from different environments: " + "; ".join(parts)


def _unstable_warning(data: _Usable) -> str | None:
    """:func:`~dlbench.report.tables.reports.unstable_warning` over arrays."""
    if data.one_value("results.stable") and data.arrays.first_value("results.stable") is not False:
        return None  # True everywhere, or absent
    stable = data.get("results.stable")
    false = [code for code, value in enumerate(stable.values) if value is False]
    unstable = np.flatnonzero(np.isin(stable.codes, false))
    if unstable.size == 0:
        return None
    named = []
    for position in data.positions[unstable[:MAX_NAMED]].tolist():
        record = {key: data.arrays.value(key, position, _ABSENT) for key in _NAMING}
        named.append({k: v for k, v in record.items() if v is not _ABSENT})
    return unstable_text(named, int(unstable.size), len(data))


class _Group:
    """One group of tables: the usable records at ``members``."""

    def __init__(self, data: _Usable, members: np.ndarray) -> None:
        self.data = data
        self.members = members
        self.shapes = distinct(data.arrays.shape_index[data.positions[members]])
        self._codes: dict[str, np.ndarray] = {}

    def codes(self, key: str) -> np.ndarray:
        if key not in self._codes:
            self._codes[key] = self.data.get(key).codes[self.members]
        return self._codes[key]

    def value(self, key: str, index: int) -> Any:
        """The value of ``key`` of the group's record ``index`` (None when absent)."""
        return self.data.get(key).shown(int(self.members[index]))

    def varies(self, key: str) -> bool:
        return self.data.varies(key, self.members, self.shapes)

    def values_of(self, key: str) -> list[Any]:
        """The distinct values of ``key`` among the group's records that have it."""
        column = self.data.get(key)
        held = column.codes[self.members][column.present[self.members]]
        return [column.values[code] for code in distinct(held).tolist()]

    def row_keys(self, base: list[str], axis: list[str], candidates: list[str]) -> list[str]:
        """:func:`~dlbench.report.aggregate.row_keys` over arrays."""
        keys = list(base)
        cells: tuple[np.ndarray, int] | None = None
        size = int(self.members.size)
        for candidate in candidates:
            if not self.varies(candidate):
                continue
            if cells is None:
                ids, firsts = first_appearance([self.codes(k) for k in [*keys, *axis]], size)
                cells = (ids, int(firsts.size))
            pairs = first_appearance([cells[0], self.codes(candidate)], size)[1].size
            if pairs > cells[1]:
                keys.append(candidate)
                cells = None
        return keys

    def keys_of(self, keys: list[str], firsts: np.ndarray) -> list[tuple[Any, ...]]:
        """The raw values of ``keys`` of the records at ``firsts``."""
        return [tuple(self.value(k, int(i)) for k in keys) for i in firsts.tolist()]


def _group_tables(
    kind: _TableKind, group: _Group, names: dict[str, Any], values: np.ndarray, target: str
) -> list[Table]:
    """:meth:`~dlbench.report.tables.reports._TableKind.group_tables` over arrays."""
    size = int(group.members.size)
    base = ["exp.model", "exp.framework"] if group.varies("exp.framework") else ["exp.model"]
    # Every record has the filled keys, as normalised() gives them.
    present = group.data.arrays.shape_keys(group.shapes) | set(_FILLED)
    base, axis, candidates = kind.layout_of(
        base, lambda exclude: identity_parameters(present, exclude))
    grid = Grid(group.row_keys(base, axis, candidates))
    units = group.values_of("results.throughput_unit")
    if len(units) == 1 and isinstance(units[0], str):
        grid.throughput_unit = units[0]
    row_ids, row_firsts = first_appearance([group.codes(k) for k in grid.labels], size)
    col_ids, col_firsts = first_appearance([group.codes(k) for k in axis], size)
    rows: list[RowKey] = []
    for labels in group.keys_of(grid.labels, row_firsts):
        rows.append(tuple(map(identity, labels)))
        grid.rows[rows[-1]] = list(labels)
    columns: list[ColKey] = [tuple(map(identity, c)) for c in group.keys_of(axis, col_firsts)]
    for column in columns:
        grid.columns[column] = ""
    for column in columns:
        grid.columns[column] = kind.column_label(column, columns)
    cell_ids, cell_firsts = first_appearance([row_ids, col_ids], size)
    cells = [(rows[row_ids[i]], columns[col_ids[i]]) for i in cell_firsts.tolist()]
    means: dict[tuple[RowKey, ColKey], Measured] = dict(
        zip(cells, group_means(cell_ids, len(cells), values[group.members]), strict=True))
    # The throughput of a cell needs the set of its effective batches: one stand-in
    # record per distinct combination of what effective_batch() reads.
    batch = group.data.get("exp.effective_batch")
    numeric = all(as_number(batch.values[c]) is not None for c in distinct(batch.codes))
    read = _EFFECTIVE[:1] if numeric else _EFFECTIVE
    grid.cells = {cell: [] for cell in cells}
    _, combos = first_appearance([cell_ids, *(group.codes(k) for k in read)], size)
    for index in combos.tolist():
        stand_in = {k: group.value(k, index) for k in read
                    if group.data.present(k)[group.members[index]]}
        grid.cells[cells[cell_ids[index]]].append(stand_in)
    return kind.tables_of(grid, means, names, target)


def columnar_table_report(arrays: StoreArrays, report_type: str, target: str = TIME) -> Report:
    """The ``report_type`` report of the records ``arrays`` selects (see
    :func:`~dlbench.report.tables.reports.build_table_report`). ``ResultsError`` when
    none is usable; ``ValueError`` for an unknown ``report_type``."""
    if report_type not in TABLE_KINDS:
        raise ValueError(f"unknown report type {report_type!r}; accepted: {tuple(TABLE_KINDS)}")
    kind = TABLE_KINDS[report_type]
    # Which of the keys the report may read hold one value everywhere (the store
    # knows, or one scan), and the values of those that vary (one scan); the ids and
    # log files, which differ everywhere, are read only for the few records a warning
    # names, and exp.status only where the experiments table says it is not ok; the
    # measured value is read in the scan of the varying keys.
    arrays.survey(table_report_keys(target),
                  unread=("exp.id", "exp.log_file", "exp.status", target), numbers=(target,))
    positions, values, warnings = _usable(arrays, target)
    data = _Usable(arrays, positions)
    data.fill()
    report = Report(title=report_title(kind.title, target), warnings=warnings)
    for warning in (_environment_warning(data), _unstable_warning(data)):
        if warning:
            report.warnings.append(warning)
    size = len(data)
    varying = [k for k in SEPARATE_TABLES if data.varies(k)]
    group_ids, firsts = first_appearance([data.get(k).codes for k in varying], size)
    order = stable_order(group_ids, int(firsts.size))
    bounds = np.concatenate([[0], np.cumsum(np.bincount(group_ids))]).tolist()
    for number, first in enumerate(firsts.tolist()):
        group = _Group(data, order[bounds[number]:bounds[number + 1]])
        names = {k: data.get(k).shown(first) for k in varying}
        report.tables.extend(_group_tables(kind, group, names, values, target))
    frameworks = data.varies("exp.framework")
    report.summary = summary_lines(kind, size, int(firsts.size), frameworks)
    return report


def records_table_report(
    records: Sequence[Mapping[str, Any]], report_type: str, target: str = TIME
) -> Report:
    """The ``report_type`` report of ``records``, written to a store in memory first
    (:meth:`~dlbench.results.store.arrays.StoreArrays.of_records`)."""
    if report_type not in TABLE_KINDS:  # before any record is written
        raise ValueError(f"unknown report type {report_type!r}; accepted: {tuple(TABLE_KINDS)}")
    with StoreArrays.of_records(records) as arrays:
        return columnar_table_report(arrays, report_type, target)


def store_path(sources: Sequence[str | Path]) -> Path | None:
    """The store file of ``sources`` when they are one store (a run directory with a
    store, or a ``.sqlite``/``.db`` file), else None."""
    if len(sources) != 1:
        return None
    path = Path(sources[0])
    if path.is_dir():
        path = path / STORE_FILENAME
    elif not path.name.lower().endswith((".sqlite", ".db")):
        return None
    return path if path.is_file() else None


def table_report(
    sources: Sequence[str | Path], where: Mapping[str, Any], flag: str, report_type: str,
    target: str = TIME, parse_warnings: list[ParseWarning] | None = None,
) -> Report:
    """The ``report_type`` report of the records of ``sources`` that ``where`` (a
    parsed query, from option ``flag``) selects. One store is read where it is, the
    query run in SQL; other sources are loaded (only the keys the report reads) and
    written to a store in memory. Errors as
    :func:`~dlbench.results.io.load_selected`'s when nothing is selected; warnings from
    parsing logs go to ``parse_warnings``."""
    if report_type not in TABLE_KINDS:
        raise ValueError(f"unknown report type {report_type!r}; accepted: {tuple(TABLE_KINDS)}")
    path = store_path(sources)
    if path is not None:
        try:
            with StoreArrays(path, where) as arrays:
                if len(arrays):
                    return columnar_table_report(arrays, report_type, target)
        except sqlite3.DatabaseError as exc:  # a page read after opening is damaged
            raise ResultsError(f"cannot read results store {path}: {exc}") from None
        # Nothing selected: load_selected says what the query could have matched.
    records = load_selected(
        sources, where, flag, f"--input {' '.join(map(str, sources))}",
        parse_warnings=parse_warnings, keys=table_report_keys(target), series=SERIES_USED)
    return records_table_report(records, report_type, target)
