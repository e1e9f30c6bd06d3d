"""Charts of a result against a parameter: DLBS's ``series_builder``, with matplotlib.

:func:`build_series` turns records into series of (x, aggregated y) points;
:func:`render_chart` draws them as a line or grouped-bar chart and returns the bytes
of a PNG, SVG or PDF file. Rendering never touches pyplot, so it works headless and
leaves no global figure state behind.

Example::

    series = build_series(records, "exp.replica_batch", "results.throughput",
                          queries=[{"exp.model": "resnet18"}, {"exp.model": "alexnet"}])
    Path("chart.png").write_bytes(render_chart(series, title="Throughput"))
"""

from __future__ import annotations

import io
import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dlbench.config.registry import is_user_param, varying_parameters
from dlbench.errors import DlbenchError, ResultsError
from dlbench.results.query import match
from dlbench.results.values import is_number as _is_number

AGGREGATIONS: dict[str, Callable[[list[float]], float]] = {
    "avg": statistics.fmean,
    "min": min,
    "max": max,
    "median": statistics.median,
}
CHART_TYPES = ("line", "bar")
CHART_FORMATS = ("png", "svg", "pdf")


class ChartError(DlbenchError):
    """A chart cannot be built as asked (legend, baseline, chart type or format)."""


@dataclass
class Series:
    """One line (or one colour of bars) of a chart.

    ``x`` holds the x values in order: numbers sorted numerically, anything else in
    the order first seen. ``y[i]`` aggregates the records at ``x[i]``; ``err[i]`` is
    the sample standard deviation of those records' y values (0.0 where there is one
    record), and ``err`` is None when no point has more than one record.
    """

    label: str
    x: list[Any]
    y: list[float]
    err: list[float] | None


def _key(value: Any) -> str:
    # Values may be lists (unhashable); their JSON text identifies them. 1 and 1.0
    # are one point: a CSV round trip may turn one into the other.
    if _is_number(value) and float(value).is_integer():
        return json.dumps(float(value))
    return json.dumps(value, sort_keys=True)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _query_label(query: Mapping[str, Any]) -> str:
    return ", ".join(_text(value) for value in query.values()) or "all"


def _group_by_parameters(
    records: Sequence[Mapping[str, Any]], x: str, y: str
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """One group per distinct combination of the parameters that vary besides ``x``."""
    names = [
        name for name in varying_parameters(records) if name != x and not is_user_param(name)
    ]
    groups: dict[str, tuple[str, list[Mapping[str, Any]]]] = {}
    for record in records:
        values = [record.get(name) for name in names]
        label = ", ".join(f"{n}={_text(v)}" for n, v in zip(names, values, strict=True)) or y
        groups.setdefault(_key(values), (label, []))[1].append(record)
    return list(groups.values())


def _aggregate(
    label: str, records: Sequence[Mapping[str, Any]], x: str, y: str, aggregation: str
) -> Series:
    points: dict[str, tuple[Any, list[float]]] = {}
    for record in records:
        points.setdefault(_key(record[x]), (record[x], []))[1].append(float(record[y]))
    ordered = list(points.values())
    if all(_is_number(value) for value, _ in ordered):
        ordered.sort(key=lambda point: float(point[0]))
    reduce = AGGREGATIONS[aggregation]
    err = [statistics.stdev(values) if len(values) > 1 else 0.0 for _, values in ordered]
    return Series(
        label=label,
        x=[value for value, _ in ordered],
        y=[float(reduce(values)) for _, values in ordered],
        err=err if any(e > 0 for e in err) else None,
    )


def _same_x(value: Any, wanted: Any) -> bool:
    if _is_number(value) and _is_number(wanted):
        return bool(float(value) == float(wanted))
    # "--baseline-x 0" parses as the int 0, while exp.gpus "0" is a string.
    return _text(value) == _text(wanted)


def _normalise(series: Series, x: str, baseline_x: Any) -> Series:
    index = next((i for i, value in enumerate(series.x) if _same_x(value, baseline_x)), None)
    if index is None:
        have = ", ".join(_text(v) for v in series.x)
        raise ChartError(
            f"--baseline-x {_text(baseline_x)}: series {series.label!r} has no point at "
            f"{x}={_text(baseline_x)}; its {x} values: {have}"
        )
    base = series.y[index]
    if base == 0:
        raise ChartError(
            f"--baseline-x {_text(baseline_x)}: series {series.label!r} is 0 there; "
            "cannot divide by it"
        )
    return Series(
        label=series.label,
        x=series.x,
        y=[value / base for value in series.y],
        err=None if series.err is None else [e / abs(base) for e in series.err],
    )


def _usable(
    records: Sequence[Mapping[str, Any]], x: str, y: str, warnings: list[str] | None
) -> list[Mapping[str, Any]]:
    ok = [r for r in records if r.get("exp.status") == "ok"]
    if not ok:
        raise ResultsError(f"none of the {len(records)} record(s) has exp.status ok")
    without_x = [r for r in ok if r.get(x) is None]
    without_y = [r for r in ok if r.get(x) is not None and not _is_number(r.get(y))]
    if warnings is not None:
        if without_x:
            warnings.append(f"{len(without_x)} record(s) without {x} skipped")
        if without_y:
            warnings.append(f"{len(without_y)} record(s) without a numeric {y} skipped")
    usable = [r for r in ok if r.get(x) is not None and _is_number(r.get(y))]
    if not usable:
        raise ResultsError(f"none of the {len(ok)} ok record(s) has both {x} and a numeric {y}")
    return usable


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
) -> list[Series]:
    """Series of ``y`` against ``x`` from the records whose ``exp.status`` is ``ok``.

    With ``queries`` (DLBS query syntax, see :mod:`dlbench.results.query`) there is one
    series per query, labelled with the query's values joined (``"mxnet, resnet50"``);
    a query that matches nothing raises ``ResultsError``. Without, there is one series
    per distinct combination of the parameters that vary among the records other than
    ``x`` and ``user.*``, labelled ``name=value, ...``. ``legend`` replaces the labels
    and must name every series. Records at the same x are combined by ``aggregation``
    (avg, min, max, median). ``baseline_x`` divides each series by its own y at that
    x (a speedup chart); a series without a point there raises ``ChartError``.

    Records without x or without a numeric y are skipped; one line per kind of skip is
    appended to ``warnings`` when given.

    >>> rs = [{"exp.status": "ok", "n": n, "t": t} for n, t in [(1, 10.0), (2, 18.0)]]
    >>> build_series(rs, "n", "t", baseline_x=1)[0].y
    [1.0, 1.8]
    """
    if aggregation not in AGGREGATIONS:
        raise ChartError(
            f"unknown aggregation {aggregation!r}; accepted: {', '.join(AGGREGATIONS)}"
        )
    usable = _usable(records, x, y, warnings)
    groups: list[tuple[str, list[Mapping[str, Any]]]]
    if queries is None:
        groups = _group_by_parameters(usable, x, y)
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


# ---------------------------------------------------------------- rendering


def _categories(series: Sequence[Series]) -> list[Any]:
    """Every x of every series once: sorted when all are numbers, else first seen."""
    seen: dict[str, Any] = {}
    for s in series:
        for value in s.x:
            seen.setdefault(_key(value), value)
    values = list(seen.values())
    if all(_is_number(v) for v in values):
        values.sort(key=float)
    return values


def render_chart(
    series: Sequence[Series],
    *,
    chart: str = "line",
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    fmt: str = "png",
) -> bytes:
    """Draw ``series`` as a ``line`` or grouped ``bar`` chart; the bytes of a ``fmt`` file.

    ``fmt`` is png, svg or pdf. Error bars show where a point's ``err`` is above 0.
    Numeric x values are placed on a numeric axis (line chart) with a tick at each;
    other x values, and every bar chart, get one evenly spaced slot per value. The
    legend sits under the axes; a single series labelled like ``ylabel`` gets none.
    """
    if chart not in CHART_TYPES:
        raise ChartError(f"unknown chart type {chart!r}; accepted: {', '.join(CHART_TYPES)}")
    if fmt not in CHART_FORMATS:
        raise ChartError(f"unknown chart format {fmt!r}; accepted: {', '.join(CHART_FORMATS)}")
    # matplotlib costs a noticeable import time; only drawing pays it. A Figure built
    # without pyplot uses no GUI backend, so this works on a headless node.
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.0, 4.2), dpi=100, layout="constrained")
    axes = figure.add_subplot()
    categories = _categories(series)
    numeric = chart == "line" and all(_is_number(v) for v in categories)
    slot = {_key(value): index for index, value in enumerate(categories)}
    width = 0.8 / max(len(series), 1)
    for number, s in enumerate(series):
        positions = [float(v) if numeric else float(slot[_key(v)]) for v in s.x]
        if chart == "bar":
            offset = (number - (len(series) - 1) / 2) * width
            positions = [p + offset for p in positions]
            drawn = axes.bar(positions, s.y, width=width, label=s.label)
            colour = drawn.patches[0].get_facecolor() if drawn.patches else None
        else:
            (line,) = axes.plot(positions, s.y, marker="o", label=s.label)
            colour = line.get_color()
        if s.err is not None:
            # Only points with spread get a bar: a zero-length bar still draws caps.
            shown = [i for i, e in enumerate(s.err) if e > 0]
            axes.errorbar(
                [positions[i] for i in shown],
                [s.y[i] for i in shown],
                yerr=[s.err[i] for i in shown],
                fmt="none",
                ecolor="black" if chart == "bar" else colour,
                capsize=3,
            )
    if numeric:
        if len(categories) <= 16:
            axes.set_xticks([float(v) for v in categories])
            axes.set_xticklabels([_text(v) for v in categories])
    else:
        axes.set_xticks([float(i) for i in range(len(categories))])
        axes.set_xticklabels([_text(v) for v in categories])
        # Half a slot either side, so the first and last points are not on the frame.
        axes.set_xlim(-0.5, len(categories) - 0.5)
    if all(all(v >= 0 for v in s.y) for s in series):
        # Start at 0 so that bar heights and line heights read as proportions.
        axes.set_ylim(bottom=0)
    axes.set_axisbelow(True)  # grid lines behind bars, not across them
    axes.grid(True, axis="y" if chart == "bar" else "both", alpha=0.3)
    if title:
        axes.set_title(title)
    if xlabel:
        axes.set_xlabel(xlabel)
    if ylabel:
        axes.set_ylabel(ylabel)
    if len(series) > 1 or (series and series[0].label != ylabel):
        # Outside the axes, under the x label: a legend inside may hide points or bars.
        figure.legend(loc="outside lower center", ncols=min(len(series), 3), frameon=False)
    out = io.BytesIO()
    # No creation date in SVG and PDF (each backend names it its own way), no software
    # version in PNG: the same series give the same bytes.
    metadata: dict[str, Any] = {"png": {"Software": None}, "svg": {"Date": None},
                                "pdf": {"CreationDate": None}}[fmt]
    # A fixed salt makes SVG element ids stable: the same series, the same bytes.
    with rc_context({"svg.hashsalt": "dlbench"}):
        figure.savefig(out, format=fmt, metadata=metadata)
    return out.getvalue()


def count_points(series: Sequence[Series]) -> int:
    """All points of all series."""
    return sum(len(s.x) for s in series)
