"""The exploration and scaling reports of a store, computed a column at a time.

:func:`~dlbench.report.tables.reports.build_table_report` takes records as dicts; over a
million records, building those dicts and walking them costs tens of seconds and
gigabytes. This builds the same report (the same tables, notes, warnings and summary,
to the last bit of every mean) from the store's key tables read as arrays
(:mod:`dlbench.results.store.arrays`): only the keys the report uses, and of those
only the ones that vary are read at all; grouping and means are done with NumPy
(:mod:`dlbench.report.tables.columnar_groups`).

Where the arrays do not cover the input (a source that is not a store, a key
holding lists, values SQL cannot tell apart as Python does, records lacking a
parameter the report would fill in), :func:`store_table_report` returns None and the
caller builds the report from records, so the output never depends on the path taken.

Example::

    report = store_table_report(["runs/sweep"], {}, "exploration", "results.time")
    if report is None:
        report = build_table_report(load_records(["runs/sweep"]), "exploration")
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dlbench.errors import ResultsError
from dlbench.report.aggregate import (
    ENVIRONMENT_KEYS,
    ENVIRONMENT_WITHIN,
    MAX_NAMED,
    Measured,
    as_number,
    identity,
    identity_parameters,
    skipped_warnings,
)
from dlbench.report.cells import Report, Table
from dlbench.report.tables.columnar_groups import (
    count_distinct,
    first_appearance,
    group_means,
    ordered_counts,
    stable_order,
)
from dlbench.report.tables.grid import TIME, ColKey, Grid, RowKey
from dlbench.report.tables.reports import (
    SEPARATE_TABLES,
    TABLE_KINDS,
    _TableKind,
    summary_lines,
    unstable_text,
)
from dlbench.results.store import STORE_FILENAME
from dlbench.results.store.arrays import KeyCodes, NotColumnar, StoreArrays

#: What :func:`~dlbench.report.tables.grid.normalised` would fill in; a record lacking one
#: is left to the record path.
_FILLED = ("exp.num_nodes", "exp.num_replicas", "exp.effective_batch")

#: What :func:`~dlbench.report.tables.grid.effective_batch` reads of a record.
_EFFECTIVE = ("exp.effective_batch", "exp.num_replicas", "exp.num_local_replicas",
              "exp.num_nodes", "exp.gpus", "exp.replica_batch")

#: What :func:`~dlbench.report.tables.reports.unstable_warning` reads of the records it names.
_NAMING = ("exp.id", "exp.log_file", "exp.model", "exp.replica_batch",
           "results.unstable_reasons")

_ABSENT: Any = object()


class _Usable:
    """The keys of the usable records (``positions`` among the selected ones), read
    from the store once each, and only when the shapes and the catalogue leave their
    values in doubt."""

    def __init__(self, arrays: StoreArrays, positions: np.ndarray) -> None:
        self.arrays = arrays
        self.positions = positions
        self.shapes = np.unique(arrays.shape_index[positions])
        self._codes: dict[str, KeyCodes] = {}
        self._present: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return int(self.positions.size)

    def get(self, key: str) -> KeyCodes:
        """``key``'s codes, values and presence over the usable records."""
        if key not in self._codes:
            whole = self.arrays.codes(key)
            self._codes[key] = KeyCodes(
                whole.codes[self.positions], whole.values, whole.present[self.positions])
        return self._codes[key]

    def present(self, key: str) -> np.ndarray:
        """Which usable records have ``key``, without reading its values."""
        if key in self._codes:
            return self._codes[key].present
        if key not in self._present:
            self._present[key] = self.arrays.present(key)[self.positions]
        return self._present[key]

    def one_value(self, key: str, shapes: np.ndarray | None = None) -> bool:
        """True when the records of ``shapes`` (all usable ones when None) hold one
        value of ``key`` (absent counting as None) by their shapes and the catalogue
        alone; False when only its values can tell."""
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
    if usable.size == 0:
        raise NotColumnar("no usable record: the record path says why")
    named = arrays.ids(no_value[:MAX_NAMED])
    return usable, values[usable], skipped_warnings(not_ok, int(no_value.size), named, target)


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
        found, counts = ordered_counts(held, codes)
        listed = ", ".join(f"{column.values[code]} ({count})"
                           for code, count in zip(found.tolist(), counts.tolist(), strict=True))
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
        self.shapes = np.unique(data.arrays.shape_index[data.positions[members]])
        self._codes: dict[str, np.ndarray] = {}

    def codes(self, key: str) -> np.ndarray:
        if key not in self._codes:
            self._codes[key] = self.data.get(key).codes[self.members]
        return self._codes[key]

    def value(self, key: str, index: int) -> Any:
        """The value of ``key`` of the group's record ``index`` (None when absent)."""
        return self.data.get(key).values[int(self.codes(key)[index])]

    def varies(self, key: str) -> bool:
        return self.data.varies(key, self.members, self.shapes)

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
    present = group.data.arrays.shape_keys(group.shapes)
    base, axis, candidates = kind.layout_of(
        base, lambda exclude: identity_parameters(present, exclude))
    grid = Grid(group.row_keys(base, axis, candidates))
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
    numeric = all(as_number(batch.values[c]) is not None for c in np.unique(batch.codes))
    read = _EFFECTIVE[:1] if numeric else _EFFECTIVE
    grid.cells = {cell: [] for cell in cells}
    _, combos = first_appearance([cell_ids, *(group.codes(k) for k in read)], size)
    for index in combos.tolist():
        stand_in = {k: group.value(k, index) for k in read
                    if group.data.present(k)[group.members[index]]}
        grid.cells[cells[cell_ids[index]]].append(stand_in)
    return kind.tables_of(grid, means, names, target)


def columnar_table_report(arrays: StoreArrays, report_type: str, target: str = TIME) -> Report:
    """The report :func:`~dlbench.report.tables.reports.build_table_report` gives of the
    records ``arrays`` selects. :class:`NotColumnar` where the arrays do not cover
    them; ``ValueError`` for an unknown ``report_type``."""
    if report_type not in TABLE_KINDS:
        raise ValueError(f"unknown report type {report_type!r}; accepted: {tuple(TABLE_KINDS)}")
    kind = TABLE_KINDS[report_type]
    positions, values, warnings = _usable(arrays, target)
    data = _Usable(arrays, positions)
    for key in _FILLED:
        if not data.present(key).all():
            raise NotColumnar(f"some records lack {key}, which the record path fills in")
    report = Report(title=f"{kind.title}: {target}", warnings=warnings)
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
        names = {k: data.get(k).values[int(data.get(k).codes[first])] for k in varying}
        report.tables.extend(_group_tables(kind, group, names, values, target))
    frameworks = data.varies("exp.framework")
    report.summary = summary_lines(kind, size, int(firsts.size), frameworks)
    return report


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


def store_table_report(
    sources: Sequence[str | Path], where: Mapping[str, Any] | None, report_type: str,
    target: str = TIME,
) -> Report | None:
    """The ``report_type`` report of the records of ``sources`` that match ``where``,
    computed a column at a time; None when the sources are not one store, the type is
    not an exploration or scaling report, nothing is selected, or the arrays do not
    cover the records (then build it from records: the result is the same)."""
    path = store_path(sources)
    if path is None or report_type not in TABLE_KINDS:
        return None
    try:
        with StoreArrays(path, where) as arrays:
            if len(arrays) == 0:
                return None  # the record path says what the query could have matched
            return columnar_table_report(arrays, report_type, target)
    except NotColumnar:
        return None
    except sqlite3.DatabaseError as exc:  # a page read after opening is damaged
        raise ResultsError(f"cannot read results store {path}: {exc}") from None
