"""Grouping and aggregation: which records a report may use, which may be averaged
together, and what their mean and spread are.

The rule every report follows: records are averaged only when every parameter that
defines the measurement is the same. Tables are split by :data:`SEPARATE_BY`, and
any other identity parameter that differs inside a cell becomes part of the row key
(:func:`row_keys`). ``user.*`` labels never do, so that ``-V 'user.run=[1,2,3]'``
repeats of one configuration are averaged, which is what they are for.

Example::

    records = select_records(load_records(["runs/a", "runs/b"]), {}, "--query", "runs")
    usable, warnings = usable_records(records, "results.time")
    for group, members in split_groups(usable):
        ...
    summarize([10.0, 12.0, 14.0])  # Measured(mean=12.0, sd=2.0, n=3)
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dlbench.config.identity import identity_parameters as configuration_parameters
from dlbench.errors import ResultsError
from dlbench.report.cells import Table
from dlbench.results.stats import mean, sample_std

Record = Mapping[str, Any]
_R = TypeVar("_R", bound=Mapping[str, Any])

#: Parameters whose values are never averaged together: each combination that occurs
#: gets tables of its own.
SEPARATE_BY = ("exp.framework", "exp.device_type", "hw.device_name", "exp.phase", "exp.dtype")

#: Keys that describe where records were measured; a report warns when they differ.
ENVIRONMENT_KEYS = (
    "sys.hostname",
    "hw.cpu_model",
    "hw.device_name",
    "sys.framework_version",
    "sys.dlbench_version",
    "sys.python",
    "sys.os",
    "hw.cpu_count",
    "hw.cpu_governor",
    "hw.gpu_driver",
)

# Some environment keys differ by nature between frameworks or device types (the
# "fake" framework's version is "fake"); they are compared within those only.
_ENVIRONMENT_WITHIN = {
    "sys.framework_version": "exp.framework",
    "hw.device_name": "exp.device_type",
}

#: The environment keys compared only within each value of another key.
ENVIRONMENT_WITHIN: Mapping[str, str] = _ENVIRONMENT_WITHIN

#: The list values the exploration and scaling reports read (their warning about
#: unstable results); they need no other series, so their records can be loaded with
#: ``load_records(..., series=SERIES_USED)`` and leave ``results.time_data`` unread.
SERIES_USED = ("results.unstable_reasons",)

#: How many records a warning names before it says "and N more".
MAX_NAMED = 5


class Measured(float):
    """The mean of several measurements of one configuration, with their spread.

    It *is* the mean (a ``float``), so any formatter or arithmetic treats it as one
    number; a formatter that knows about it can also show ``sd`` (sample standard
    deviation, ``None`` when ``n`` is 1) and ``n`` (how many measurements).
    """

    __slots__ = ("n", "sd")
    sd: float | None
    n: int

    def __new__(cls, mean: float, sd: float | None, n: int) -> Measured:
        """A mean with its sample standard deviation and count."""
        obj = super().__new__(cls, mean)
        obj.sd = sd
        obj.n = n
        return obj

    @property
    def mean(self) -> float:
        """The mean as a plain float."""
        return float(self)

    @property
    def sd_percent(self) -> float | None:
        """``100 * sd / mean``; ``None`` when there is no sd or the mean is 0."""
        if self.sd is None or float(self) == 0.0:
            return None
        return 100.0 * self.sd / abs(float(self))

    def __repr__(self) -> str:
        return f"Measured(mean={float(self)!r}, sd={self.sd!r}, n={self.n})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Measured, (float(self), self.sd, self.n))


@dataclass
class LabeledTable(Table):
    """A :class:`Table` whose first ``label_columns`` columns name the row (model,
    batch, ...) and whose other columns hold values; csv and json use it to tell
    labels from values."""

    label_columns: int = 1


def table_report_keys(target: str) -> list[str]:
    """Every key the exploration and scaling reports read of a record whose measured
    value is ``target``: records loaded with only these keys (and the series in
    :data:`SERIES_USED`) give the same report as whole records, from a fraction of the
    store (``load_records(..., keys=table_report_keys(t), series=SERIES_USED)``)."""
    fixed = [
        "exp.status", "exp.id", "exp.log_file", target, "exp.model", "exp.framework",
        "exp.replica_batch", "exp.effective_batch", "exp.num_replicas",
        "exp.num_local_replicas", "exp.num_nodes", "exp.gpus", "results.stable",
        *SERIES_USED, *SEPARATE_BY, *ENVIRONMENT_KEYS, *_ENVIRONMENT_WITHIN.values(),
    ]
    # identity_candidates: which measurement-defining parameters a record has.
    return list(dict.fromkeys([*fixed, *configuration_parameters()]))


def summarize(values: Sequence[float]) -> Measured:
    """Mean, sample standard deviation (n - 1 in the denominator) and count, by
    :mod:`dlbench.results.stats`.

    ``summarize([10, 12, 14])`` is mean 12, sd 2, n 3. ``ValueError`` when empty.
    """
    if not values:
        raise ValueError("summarize needs at least one value")
    n = len(values)
    return Measured(mean(values), sample_std(values) if n > 1 else None, n)


def trim_extremes(values: Sequence[float]) -> list[float]:
    """Drop the smallest and the largest value when there are at least four.

    Mila's scorecard rule: one outlier run (a cold cache, a noisy neighbour) should
    not move the result, and with fewer than four runs too little would remain.
    """
    ordered = sorted(values)
    return ordered[1:-1] if len(ordered) >= 4 else ordered


def as_number(value: Any) -> float | None:
    """A finite int or float as a float; anything else (bool, str, NaN) is None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def record_name(record: Record, index: int) -> str:
    """How a warning names a record: its exp.id, else its log file, else its position."""
    for key in ("exp.id", "exp.log_file"):
        if record.get(key):
            return str(record[key])
    return f"record #{index + 1}"


def skipped_warnings(
    not_ok: Mapping[str, int], no_value: int, named: Sequence[str], target: str
) -> list[str]:
    """The warnings of :func:`usable_records`: how many records were skipped for each
    ``exp.status`` that is not ok (``not_ok``), and how many (``no_value``) for having
    no number in ``target``, of which the first ones are ``named``."""
    warnings: list[str] = []
    if not_ok:
        reasons = ", ".join(f"{count} {status}" for status, count in sorted(not_ok.items()))
        warnings.append(
            f"{sum(not_ok.values())} record(s) skipped: exp.status is not ok ({reasons})"
        )
    if no_value:
        more = no_value - len(named[:MAX_NAMED])
        shown = ", ".join(named[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "")
        warnings.append(f"{no_value} record(s) skipped: no numeric {target}: {shown}")
    return warnings


def usable_records(
    records: Sequence[dict[str, Any]], target: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """The records a report uses (``exp.status`` ok, a finite number in ``target``)
    and warnings saying how many were left out and why.

    ``ResultsError`` when none is left, naming why.
    """
    usable: list[dict[str, Any]] = []
    not_ok: dict[str, int] = {}
    no_value: list[str] = []
    for index, record in enumerate(records):
        status = record.get("exp.status")
        if status != "ok":
            reason = str(status) if status else "missing"
            not_ok[reason] = not_ok.get(reason, 0) + 1
        elif as_number(record.get(target)) is None:
            no_value.append(record_name(record, index))
        else:
            usable.append(record)
    warnings = skipped_warnings(not_ok, len(no_value), no_value[:MAX_NAMED], target)
    if not usable:
        raise ResultsError(
            f"none of the {len(records)} selected record(s) has exp.status ok and a numeric "
            f"{target}: " + "; ".join(warnings)
        )
    return usable, warnings


_PLAIN = frozenset((str, int, float, type(None)))


def _identity(value: Any) -> Hashable:
    if type(value) in _PLAIN:  # the usual case, decided by one set lookup
        plain: Hashable = value
        return plain
    # Values may be lists or dicts (unhashable); their JSON text identifies them.
    if isinstance(value, (str, int, float, bool)) or value is None:
        return (type(value).__name__, value) if isinstance(value, bool) else value
    return json.dumps(value, sort_keys=True)


def identity(value: Any) -> Hashable:
    """What tells ``value`` apart when records are grouped: the value itself when it
    is hashable, ``True`` apart from ``1``, lists and dicts by their JSON text."""
    return _identity(value)


def key_of(record: Record, keys: Sequence[str]) -> tuple[Hashable, ...]:
    """A hashable key of ``record``'s values for ``keys`` (absent is None)."""
    return tuple(map(_identity, map(record.get, keys)))


def _one_value(records: Sequence[Record], key: str) -> bool:
    """Whether ``key`` has one identity in all ``records`` (absent counting as None),
    told at C speed where it can be; False may be wrong, True never is."""
    get = operator.methodcaller("get", key)
    try:
        distinct = set(map(get, records))
    except TypeError:  # a list or dict: unhashable
        return False
    if len(distinct) != 1:
        return False
    (value,) = distinct
    if value != value:
        return False  # NaN: unequal to itself, which the callers' own tests see
    if value is None or type(value) is str:
        return True  # only None equals None, only strings equal a string
    # A set takes True for 1 and 1.0, which _identity tells apart: look closer.
    values = list(map(get, records))
    return set(map(type, values)) <= _PLAIN or len({_identity(v) for v in values}) == 1


def split_groups(
    records: Sequence[_R], keys: Sequence[str] = SEPARATE_BY
) -> list[tuple[dict[str, Any], list[_R]]]:
    """Split records by the ``keys`` whose value differs between them.

    Each group comes with the values of those varying keys (empty when nothing
    varies: one group), in order of first appearance.
    """
    varying = [k for k in keys if not _one_value(records, k)
               and len({_identity(r.get(k)) for r in records}) > 1]
    groups: dict[tuple[Hashable, ...], tuple[dict[str, Any], list[_R]]] = {}
    for record in records:
        key = key_of(record, varying)
        if key not in groups:
            groups[key] = ({k: record.get(k) for k in varying}, [])
        groups[key][1].append(record)
    return list(groups.values())


def identity_candidates(records: Iterable[Record], exclude: Iterable[str]) -> list[str]:
    """Registry parameters that define the measurement, are not derived, are not
    ``user.*`` and are not in ``exclude``, present in some record; registry order."""
    present: set[str] = set()
    for record in records:
        present.update(record)
    return identity_parameters(present, exclude)


def identity_parameters(present: Iterable[str], exclude: Iterable[str]) -> list[str]:
    """Registry parameters that define the measurement, are not derived, are not
    ``user.*`` and are not in ``exclude``, among the keys ``present``; registry order
    (:func:`dlbench.config.identity.identity_parameters`)."""
    return configuration_parameters(present, exclude=set(exclude))


def row_keys(
    records: Sequence[Record], base: Sequence[str], axis: Sequence[str], candidates: Sequence[str]
) -> list[str]:
    """``base`` plus each candidate that would otherwise be averaged over.

    A candidate joins the row key when some cell (records equal in the row key so far
    and in ``axis``) holds more than one of its values. A parameter that moves with
    the column (``fake.step_ms`` set per batch size by an extension) stays out, so
    each row still spans the columns.
    """
    keys = list(base)
    cells: list[tuple[Hashable, ...]] | None = None
    for candidate in candidates:
        if _one_value(records, candidate):
            continue  # one value everywhere cannot differ within a cell
        if cells is None:  # computed again only when the row key grows
            cells = [key_of(record, [*keys, *axis]) for record in records]
        seen: dict[tuple[Hashable, ...], Hashable] = {}
        for cell, record in zip(cells, records, strict=True):
            value = _identity(record.get(candidate))
            if seen.setdefault(cell, value) != value:
                keys.append(candidate)
                cells = None
                break
    return keys


def environment_warning(records: Sequence[Record]) -> str | None:
    """A warning naming the environment keys whose values differ, or None.

    ``sys.framework_version`` is compared within each framework and
    ``hw.device_name`` within each device type, where a difference means another
    machine or build rather than another kind of measurement.
    """
    parts: list[str] = []
    for key in ENVIRONMENT_KEYS:
        within = _ENVIRONMENT_WITHIN.get(key)
        counts: dict[Hashable, tuple[Any, int]] = {}
        differs = False
        if _one_value(records, key):
            continue  # the same everywhere (or absent everywhere): nothing to warn about
        for _, members in split_groups(records, [within] if within else []):
            values = {_identity(r.get(key)) for r in members if key in r}
            differs = differs or len(values) > 1
            for record in members:
                if key in record:
                    ident = _identity(record[key])
                    value, count = counts.get(ident, (record[key], 0))
                    counts[ident] = (value, count + 1)
        if differs:
            listed = ", ".join(f"{value} ({count})" for value, count in counts.values())
            parts.append(f"{key}: {listed}")
    if not parts:
        return None
    return "records come from different environments: " + "; ".join(parts)


def value_order(value: Any) -> tuple[int, Any]:
    """A sort key that orders numbers numerically, then strings, then anything else
    (by JSON text), so that rows and columns come out in a stable, natural order."""
    number = as_number(value)
    if number is not None:
        return (0, number)
    if isinstance(value, str):
        return (1, value)
    return (2, json.dumps(value, sort_keys=True))
