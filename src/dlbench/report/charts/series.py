"""The data of a chart: records turned into series of (x, aggregated y) points, each
with its unit and its error bars. DLBS's ``series_builder``, without the drawing
(:mod:`dlbench.report.charts.charts` draws them).

Series are grouped as the tables group rows (:func:`dlbench.report.aggregate.row_keys`):
the model, framework, device, phase and precision always tell series apart when they
vary; any other parameter only when it would otherwise be averaged over at one x. A
parameter that moves with x (``fake.step_ms`` set per batch size) therefore leaves one
series, not one series per point.

Example::

    series = build_series(records, "exp.replica_batch", "results.throughput",
                          queries=[{"exp.model": "resnet18"}, {"exp.model": "alexnet"}])
    series[0].unit  # "images/s": the records' results.throughput_unit
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from dlbench.config.identity import varying_parameters
from dlbench.config.registry import REGISTRY, is_user_param
from dlbench.errors import ChartError as ChartError  # importable here too, where it began
from dlbench.errors import ResultsError
from dlbench.report.aggregate import SEPARATE_BY, key_of, row_keys, usable_records
from dlbench.results.keys.lookup import KEY_PREFIXES, lookup
from dlbench.results.query import match
from dlbench.results.stats import mean, percentile, sample_std
from dlbench.results.values import is_number as _is_number

AGGREGATIONS: dict[str, Callable[[list[float]], float]] = {
    "avg": mean,
    "min": min,
    "max": max,
    "median": lambda values: percentile(values, 50),
}

#: Always separate series when they vary, as they separate tables or rows.
_SEPARATE = ("exp.model", *SEPARATE_BY)

#: Results counted per second in ``results.throughput_unit`` (samples, tokens, steps).
_RATE_KEYS = ("results.throughput", "results.throughput_batch_mean")

#: Results proportional to samples per second: their 95 % CI is that of the mean batch
#: time, carried through (:func:`ci95_bounds`).
_INVERSE_TIME_KEYS = ("results.throughput", "results.tflops")


@dataclass
class ChartSeries:
    """One line (or one colour of bars) of a chart.

    ``x`` holds the x values in order: numbers sorted numerically, anything else in
    the order first seen. ``y[i]`` aggregates the records at ``x[i]``; ``err[i]`` is
    the sample standard deviation of those records' y values (0.0 where there is one
    record), and ``err`` is None when no point has more than one record. ``unit`` is
    the records' unit of y (``tokens/s``; empty for a ratio or a plain number).
    ``ci[i]``, for a point of one record that has one, is its 95 % confidence interval
    as the distances (below, above) from ``y[i]``; ``ci`` is None when no point has
    one. ``n[i]`` counts the records at ``x[i]``.
    """

    label: str
    x: list[Any]
    y: list[float]
    err: list[float] | None
    unit: str = ""
    ci: list[tuple[float, float] | None] | None = None
    n: list[int] | None = None


def key_text(value: Any) -> str:
    """The identity of an x value: 1 and 1.0 are one point (a CSV round trip may turn
    one into the other); lists (unhashable) are identified by their JSON text."""
    if _is_number(value) and float(value).is_integer():
        return json.dumps(float(value))
    return json.dumps(value, sort_keys=True)


def value_text(value: Any) -> str:
    """A value as a label shows it: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def unit_of(record: Mapping[str, Any], key: str) -> str:
    """The unit of ``record[key]``: ``results.throughput_unit`` for a throughput, else
    the unit the key is declared with (``ms``, ``TFLOP/s``); empty for a parameter or a
    pure number."""
    if key in _RATE_KEYS:
        unit = record.get("results.throughput_unit")
        if isinstance(unit, str) and unit:
            return unit
    declared = lookup(key) if key.startswith(KEY_PREFIXES) else None
    return declared.unit if declared is not None else ""


def ci95_bounds(record: Mapping[str, Any], key: str, value: float
                ) -> tuple[float, float] | None:
    """The record's 95 % CI of ``key`` around ``value`` as (low, high), or None where it
    has none: for the mean batch time and what is inversely proportional to it (a
    throughput, TFLOP/s), from the relative half-width of the time's CI
    (``results.ci95_rel``, else ``results.ci95 / results.time``), taken on the log
    scale: ``value · e^(∓rel)``.

    The one rule for every chart and page. On the log scale the interval respects the
    sign of a time or a rate: it never reaches 0, however wide (a busy machine gives
    ``rel`` above 1, where ``value ± rel·value`` would go below 0 and ``c / (t ± h)``
    has no upper end); for a small ``rel`` it is ``value ± rel·value`` to first order.

    >>> ci95_bounds({"results.ci95_rel": 0.1}, "results.throughput", 100.0)
    (90.48374180359595, 110.51709180756477)
    >>> low, high = ci95_bounds({"results.ci95_rel": 1.03}, "results.throughput", 10.0)
    >>> round(low, 3), round(high, 3)  # wider than the mean, and above 0
    (3.57, 28.011)
    """
    if key not in ("results.time", *_INVERSE_TIME_KEYS) or not value > 0:
        return None
    rel = record.get("results.ci95_rel")
    if not _is_number(rel):
        half, time = record.get("results.ci95"), record.get("results.time")
        rel = half / time if _is_number(half) and _is_number(time) and time > 0 else None
    if rel is None or not 0 < rel < math.inf:
        return None
    return value * math.exp(-rel), value * math.exp(rel)


def _interval(record: Mapping[str, Any], key: str, value: float) -> tuple[float, float] | None:
    """:func:`ci95_bounds` as distances below and above ``value``."""
    bounds = ci95_bounds(record, key, value)
    return None if bounds is None else (value - bounds[0], bounds[1] - value)


def _query_label(query: Mapping[str, Any]) -> str:
    return ", ".join(value_text(value) for value in query.values()) or "all"


def check_keys(records: Sequence[Mapping[str, Any]], x: str, y: str) -> None:
    """``ChartError`` naming ``--x`` or ``--y`` when no record has that key: for a name
    dlbench does not know (a typo), with the closest key the records do have.

    ``y`` is only checked when some record ended ok: failed runs write no results,
    and their status is the better message.
    """
    checked = [("--x", x)]
    if any(record.get("exp.status") == "ok" for record in records):
        checked.append(("--y", y))
    for flag, name in checked:
        if any(name in record for record in records):
            continue
        message = f"{flag} {name}: none of the {len(records)} record(s) has this key"
        if REGISTRY.get(name) is not None or lookup(name) is not None:
            raise ChartError(f"{message} (a known name these runs did not write)")
        keys = sorted({key for record in records for key in record})
        close = difflib.get_close_matches(name, keys, n=1, cutoff=0.6)
        hint = (f"did you mean {close[0]}?" if close
                else "no key of theirs is close; 'dlbench query --input ...' shows them")
        raise ChartError(f"{message}; {hint}")


def _usable(
    records: Sequence[Mapping[str, Any]], x: str, y: str, warnings: list[str] | None
) -> list[Mapping[str, Any]]:
    # The same selection, and the same warnings, as the tables of `dlbench report`.
    ok, skipped = usable_records(cast("Sequence[dict[str, Any]]", records), y)
    without_x = [r for r in ok if r.get(x) is None]
    if warnings is not None:
        warnings.extend(skipped)
        if without_x:
            warnings.append(f"{len(without_x)} record(s) without {x} skipped")
    usable: list[Mapping[str, Any]] = [r for r in ok if r.get(x) is not None]
    if not usable:
        raise ResultsError(f"none of the {len(ok)} ok record(s) with a numeric {y} has {x}")
    return usable


def _group_as_tables(
    records: Sequence[Mapping[str, Any]], x: str, y: str
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """One group per series, split as the tables split rows (see the module's doc)."""
    base = [k for k in _SEPARATE
            if k != x and len({key_text(r.get(k)) for r in records}) > 1]
    candidates = [name for name in varying_parameters(records)
                  if name != x and name not in base and not is_user_param(name)]
    names = row_keys(records, base, [x], candidates)
    groups: dict[tuple[Any, ...], tuple[str, list[Mapping[str, Any]]]] = {}
    for record in records:
        label = ", ".join(f"{n}={value_text(record.get(n))}" for n in names) or y
        groups.setdefault(key_of(record, names), (label, []))[1].append(record)
    return list(groups.values())


def _aggregate(
    label: str, records: Sequence[Mapping[str, Any]], x: str, y: str, aggregation: str
) -> ChartSeries:
    units: dict[str, int] = {}
    for record in records:
        unit = unit_of(record, y)
        units[unit] = units.get(unit, 0) + 1
    if len(units) > 1:
        counted = ", ".join(f"{u or 'no unit'} ({n} record(s))" for u, n in units.items())
        raise ChartError(f"series {label!r} mixes units of {y}: {counted}; give each unit "
                         "its own series with --series")
    points: dict[str, tuple[Any, list[Mapping[str, Any]]]] = {}
    for record in records:
        points.setdefault(key_text(record[x]), (record[x], []))[1].append(record)
    ordered = list(points.values())
    if all(_is_number(value) for value, _ in ordered):
        ordered.sort(key=lambda point: float(point[0]))
    reduce = AGGREGATIONS[aggregation]
    ys: list[float] = []
    err: list[float] = []
    ci: list[tuple[float, float] | None] = []
    for _, members in ordered:
        values = [float(r[y]) for r in members]
        ys.append(float(reduce(values)))
        err.append(sample_std(values))
        # One record: its own interval; several: their spread (err) says more.
        ci.append(_interval(members[0], y, ys[-1]) if len(values) == 1 else None)
    return ChartSeries(
        label=label,
        x=[value for value, _ in ordered],
        y=ys,
        err=err if any(e > 0 for e in err) else None,
        unit=next(iter(units)),
        ci=ci if any(c is not None for c in ci) else None,
        n=[len(members) for _, members in ordered],
    )


def _same_x(value: Any, wanted: Any) -> bool:
    if _is_number(value) and _is_number(wanted):
        return bool(float(value) == float(wanted))
    # "--baseline-x 0" parses as the int 0, while exp.gpus "0" is a string.
    return value_text(value) == value_text(wanted)


def _normalise(series: ChartSeries, x: str, baseline_x: Any) -> ChartSeries:
    index = next((i for i, value in enumerate(series.x) if _same_x(value, baseline_x)), None)
    if index is None:
        have = ", ".join(value_text(v) for v in series.x)
        raise ChartError(
            f"--baseline-x {value_text(baseline_x)}: series {series.label!r} has no point at "
            f"{x}={value_text(baseline_x)}; its {x} values: {have}"
        )
    base = series.y[index]
    if base == 0:
        raise ChartError(
            f"--baseline-x {value_text(baseline_x)}: series {series.label!r} is 0 there; "
            "cannot divide by it"
        )
    scale = abs(base)
    return ChartSeries(
        label=series.label,
        x=series.x,
        y=[value / base for value in series.y],
        err=None if series.err is None else [e / scale for e in series.err],
        unit="",  # a ratio of two values in one unit
        ci=None if series.ci is None else [
            None if c is None else (c[0] / scale, c[1] / scale) for c in series.ci],
        n=series.n,
    )


def build_series(
    records: Sequence[Mapping[str, Any]],
    x: str,
    y: str,
    queries: Sequence[Mapping[str, Any]] | None = None,
    aggregation: str = "avg",
    legend: Sequence[str] | None = None,
    baseline_x: Any = None,
    *,
    warnings: list[str] | None = None,
) -> list[ChartSeries]:
    """Series of ``y`` against ``x`` from the records whose ``exp.status`` is ``ok``.

    With ``queries`` (DLBS query syntax, see :mod:`dlbench.results.query`) there is one
    series per query, labelled with the query's values joined (``"mxnet, resnet50"``);
    a query that matches nothing raises ``ResultsError``. Without, series are split as
    the tables split rows (see the module's doc) and labelled ``name=value, ...``.
    ``legend`` replaces the labels and must name every series. Records at the same x
    are combined by ``aggregation`` (avg, min, max, median). ``baseline_x`` divides
    each series by its own y at that x (a speedup chart, with no unit); a series
    without a point there raises ``ChartError``, and so does a series whose records
    state different units of ``y``, or an ``x`` or ``y`` that no record has (naming
    the closest key).

    Records that did not end ok, or lack x or a numeric y, are skipped; one line per
    kind of skip is appended to ``warnings`` when given (worded as ``dlbench report``
    words them).

    >>> rs = [{"exp.status": "ok", "n": n, "t": t} for n, t in [(1, 10.0), (2, 18.0)]]
    >>> build_series(rs, "n", "t", baseline_x=1)[0].y
    [1.0, 1.8]
    """
    if aggregation not in AGGREGATIONS:
        raise ChartError(
            f"unknown aggregation {aggregation!r}; accepted: {', '.join(AGGREGATIONS)}"
        )
    check_keys(records, x, y)
    usable = _usable(records, x, y, warnings)
    groups: list[tuple[str, list[Mapping[str, Any]]]]
    if queries is None:
        groups = _group_as_tables(usable, x, y)
    else:
        groups = []
        for index, query in enumerate(queries):
            selected = [r for r in usable if match(r, query)]
            if not selected:
                raise ResultsError(
                    f"--series query {index + 1} {json.dumps(dict(query))} matches none of "
                    f"the {len(usable)} ok record(s) that have {x} and {y}"
                )
            groups.append((_query_label(query), selected))
    if legend is not None and len(legend) != len(groups):
        raise ChartError(
            f"--legend names {len(legend)} series but there are {len(groups)}: "
            + "; ".join(label for label, _ in groups)
        )
    series = [
        _aggregate(legend[i] if legend is not None else label, group, x, y, aggregation)
        for i, (label, group) in enumerate(groups)
    ]
    if baseline_x is not None:
        series = [_normalise(s, x, baseline_x) for s in series]
    return series


def count_points(series: Sequence[ChartSeries]) -> int:
    """All points of all series."""
    return sum(len(s.x) for s in series)
