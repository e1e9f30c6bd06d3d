"""The curves of the serving report (:mod:`dlbench.report.serving.report`): server-scenario
records turned into curves of points by offered load, and each curve's knee.

The records are server-scenario runs (``exp.scenario=server``, docs/inference.md): each
one offers queries at ``exp.target_qps`` and records the rate it achieved
(``results.qps_achieved``), its latency percentiles and whether LoadGen's rules held
(``results.valid``). A record of ``exp.target_qps=auto`` brings its whole peak search:
each probe of ``results.scenario_probes`` is a point.

A **curve** is what the tables of the other reports call a row: records are split into
groups by device, phase and precision (never averaged across them), and within a group
into one curve per model, per framework where several ran, and per any other
parameter that would otherwise be averaged at one offered load (``exp.replica_batch``,
the batcher's largest batch; ``exp.max_queue_delay_ms``; ...). Its points are its
offered loads, in order; runs at one load (``user.*`` repeats) are averaged, a mean of
several being a :class:`~dlbench.report.aggregate.Measured`. A search is a curve of
its own.

The **knee** of a curve is the point with the highest achieved throughput whose latency
at the percentile of the rules (``results.latency_at_percentile``) is within a limit:
the point's ``exp.latency_bound_ms``, or, without a bound, :data:`KNEE_FACTOR` times
that latency at the curve's lowest offered load (where queueing starts to dominate the
service time). With a bound it is the highest load one can deploy at under that bound;
validity (enough queries, a long enough run) is shown beside it, not folded in.

Example::

    usable, warnings = server_records(load_records(["runs/serving"]))
    for curve in serving_curves(usable):
        print(curve.label, curve.points[curve.knee].achieved if curve.knee is not None else None)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from dlbench.config.scenarios.registry import BATCH, arrives_at_rate
from dlbench.report.aggregate import (
    MAX_NAMED,
    SEPARATE_BY,
    as_number,
    identity_candidates,
    key_of,
    record_name,
    row_keys,
    split_groups,
    summarize,
    value_order,
)
from dlbench.report.charts.series import unit_of, value_text
from dlbench.report.tables.grid import model_rows

#: The phase of language-model serving, whose records make token curves instead
#: (:mod:`dlbench.report.serving.tokens.curves`): their latency is not a query's.
GENERATE = "generate"
#: The parameter swept along a curve: the offered load, queries per second.
LOAD = "exp.target_qps"
AUTO = "auto"
OFFERED = "results.qps_target"
ACHIEVED = "results.qps_achieved"
AT_PERCENTILE = "results.latency_at_percentile"
PERCENTILES = ((50.0, "results.latency_p50"), (90.0, "results.latency_p90"),
               (99.0, "results.latency_p99"))
PROBES = "results.scenario_probes"
#: Without a bound, the knee is the last point within this many times the latency at
#: the lowest offered load.
KNEE_FACTOR = 2.0
#: ``exp.latency_percentile=auto`` in the server scenario: LoadGen's 99th percentile
#: (docs/inference.md); the record keeps the parameter as given.
SERVER_AUTO_PERCENTILE = 99.0

#: What splits the curves into groups: as the tables, everything but the framework,
#: whose curves share a chart so that they can be compared.
_SEPARATE = tuple(key for key in SEPARATE_BY if key != "exp.framework")


@dataclass
class ServingPoint:
    """One offered load of a curve: rates in queries/s, latencies in ms (a
    :class:`~dlbench.report.aggregate.Measured` where several runs were averaged;
    None where unknown), the rules' verdict and the bound of the run, if any."""

    offered: float
    achieved: float | None
    percentiles: dict[float, float | None]
    at_percentile: float | None
    valid: bool | None
    reasons: list[str]
    bound_ms: float | None
    runs: int = 1


@dataclass
class ServingCurve:
    """One curve: its label and the parameters that name it, its group, the
    percentile of its rules (None when its points differ), its points by offered load,
    its knee (an index into ``points``) and each point's limit for the knee."""

    label: str
    key: dict[str, Any]
    group: dict[str, Any]
    percentile: float | None
    points: list[ServingPoint]
    x_unit: str
    y_unit: str
    search: str | None = None  # the exp.id (or name) of the search it comes from
    knee: int | None = None
    limits: list[float | None] = field(default_factory=list)

    @property
    def bounds(self) -> list[float]:
        """The distinct latency bounds of its points, ms."""
        return list(dict.fromkeys(p.bound_ms for p in self.points if p.bound_ms is not None))


def percentile_text(percentile: float | None) -> str:
    """``p90``, ``p99.9``; ``the percentile`` when unknown."""
    return "the percentile" if percentile is None else f"p{percentile:g}"


def rules_percentile(record: Mapping[str, Any]) -> float | None:
    """The percentile of a server record's rules, ``auto`` resolved to LoadGen's."""
    value = record.get("exp.latency_percentile")
    return SERVER_AUTO_PERCENTILE if value == AUTO else as_number(value)


def find_knee(points: Sequence[ServingPoint]) -> tuple[int | None, list[float | None]]:
    """The knee's index in ``points`` (ordered by offered load; None when no point is
    within its limit) and each point's limit: its bound, else :data:`KNEE_FACTOR` times
    the latency at the percentile of the first point that has one. Of equal achieved
    rates the lower offered load wins."""
    timed = [p.at_percentile for p in points if p.at_percentile is not None]
    low_load = KNEE_FACTOR * timed[0] if timed else None
    limits = [p.bound_ms if p.bound_ms is not None else low_load for p in points]
    knee: int | None = None
    for index, (point, limit) in enumerate(zip(points, limits, strict=True)):
        if point.at_percentile is None or point.achieved is None or limit is None:
            continue
        if point.at_percentile <= limit and (
                knee is None or point.achieved > (points[knee].achieved or 0.0)):
            knee = index
    return knee, limits


_PARAM_RE = re.compile(r"exp\.[a-z_]+")


def short_reason(reason: str) -> str:
    """The rule a sentence of ``results.valid_reasons`` says failed, in a few words:
    ``over exp.latency_bound_ms``, ``below exp.scenario_min_duration``, ``early stopping
    (exp.latency_bound_ms)``; a sentence that names no parameter as it is."""
    named = _PARAM_RE.search(reason)
    if named is None:
        return reason
    name = named.group(0)
    if reason.startswith("early stopping"):
        return f"early stopping ({name})"
    if name == "exp.latency_bound_ms":
        return f"over {name}" + (", stopped early" if "stopped after" in reason else "")
    return f"below {name}"


def _averaged(members: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [v for v in (as_number(r.get(key)) for r in members) if v is not None]
    if not values:
        return None
    return values[0] if len(values) == 1 else summarize(values)


def _bound(record: Mapping[str, Any]) -> float | None:
    bound = as_number(record.get("exp.latency_bound_ms"))
    return bound if bound is not None and bound > 0 else None


def _point(offered: float, members: Sequence[Mapping[str, Any]]) -> ServingPoint:
    """The runs of one configuration at one offered load, averaged."""
    verdicts = [r.get("results.valid") for r in members]
    reasons = dict.fromkeys(str(reason) for r in members
                            for reason in (r.get("results.valid_reasons") or []))
    return ServingPoint(
        offered=offered, achieved=_averaged(members, ACHIEVED),
        percentiles={q: _averaged(members, key) for q, key in PERCENTILES},
        at_percentile=_averaged(members, AT_PERCENTILE),
        valid=all(verdicts) if all(isinstance(v, bool) for v in verdicts) else None,
        reasons=list(reasons), bound_ms=_bound(members[0]), runs=len(members))


def _probe_points(record: Mapping[str, Any]) -> list[ServingPoint]:
    """The probes of an ``exp.target_qps=auto`` search, by offered load. The probe the
    record reports (``results.qps_target``) also gets the record's p50, p90 and p99."""
    chosen = as_number(record.get(OFFERED))
    points = []
    for probe in record.get(PROBES) or []:
        offered = as_number(probe.get("qps")) if isinstance(probe, Mapping) else None
        if offered is None:
            continue
        valid = probe.get("valid")
        points.append(ServingPoint(
            offered=offered, achieved=as_number(probe.get("qps_achieved")),
            percentiles={q: as_number(record.get(key)) if offered == chosen else None
                         for q, key in PERCENTILES},
            at_percentile=as_number(probe.get("latency_at_percentile")),
            valid=valid if isinstance(valid, bool) else None,
            reasons=[str(reason) for reason in probe.get("reasons") or []],
            bound_ms=_bound(record)))
    return sorted(points, key=lambda p: p.offered)


def _curve(label: str, key: dict[str, Any], group: dict[str, Any],
           members: Sequence[Mapping[str, Any]], points: list[ServingPoint],
           search: str | None = None) -> ServingCurve:
    percentiles = {rules_percentile(r) for r in members}
    curve = ServingCurve(
        label=label, key=key, group=group,
        percentile=percentiles.pop() if len(percentiles) == 1 else None, points=points,
        x_unit=unit_of(members[0], ACHIEVED), y_unit=unit_of(members[0], AT_PERCENTILE),
        search=search)
    curve.knee, curve.limits = find_knee(points)
    return curve


def _named(record: Mapping[str, Any], names: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """A curve's label and the values of the parameters that name it."""
    key = {name: record.get(name) for name in names}
    return ", ".join(f"{n}={value_text(v)}" for n, v in key.items()), key


def serving_curves(records: Sequence[Mapping[str, Any]]) -> list[ServingCurve]:
    """The curves of ``records`` (ok server-scenario runs, see :func:`server_records`),
    grouped and ordered as the tables of the other reports order their rows."""
    curves: list[ServingCurve] = []
    for group, members in split_groups(records, _SEPARATE):
        base = model_rows(cast("list[dict[str, Any]]", members))
        candidates = identity_candidates(members, [*SEPARATE_BY, *base, LOAD])
        names = row_keys(members, base, [LOAD], candidates)
        sweeps: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
        searches: list[tuple[int, Mapping[str, Any]]] = []
        for index, record in enumerate(members):
            if record.get(LOAD) == AUTO:
                searches.append((index, record))
            else:
                sweeps.setdefault(key_of(record, names), []).append(record)

        found: list[tuple[list[Any], ServingCurve]] = []
        for runs in sweeps.values():
            label, key = _named(runs[0], names)
            at: dict[float, list[Mapping[str, Any]]] = {}
            for record in runs:
                offered = as_number(record.get(LOAD))
                offered = offered if offered is not None else as_number(record.get(OFFERED))
                if offered is not None:
                    at.setdefault(offered, []).append(record)
            points = [_point(offered, at[offered]) for offered in sorted(at)]
            order = [*(value_order(v) for v in key.values()), (0, 0)]
            found.append((order, _curve(label, key, group, runs, points)))
        for index, record in searches:
            label, key = _named(record, names)
            name = record_name(record, index)
            order = [*(value_order(v) for v in key.values()), (1, name)]
            found.append((order, _curve(f"{label}, search {name}", key, group, [record],
                                        _probe_points(record), name)))
        curves += [curve for _, curve in sorted(found, key=lambda item: item[0])]
    return curves


def counted(counts: Mapping[str, int]) -> str:
    """``{"a": 2, "b": 1}`` as ``2 a, 1 b``: the kinds of records a warning left out."""
    return ", ".join(f"{count} {what}" for what, count in sorted(counts.items()))


def server_records(
    records: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The ok server-scenario records that have a point to draw (an achieved rate and a
    latency at the percentile, or the probes of a search), and one warning per kind of
    record left out. Generate-phase records are not looked at: they make token curves
    (:func:`~dlbench.report.serving.tokens.token_records`)."""
    usable: list[Mapping[str, Any]] = []
    not_ok: dict[str, int] = {}
    scenarios: dict[str, int] = {}
    no_point: list[str] = []
    for index, record in enumerate(records):
        if record.get("exp.phase") == GENERATE:
            continue
        status, scenario = record.get("exp.status"), record.get("exp.scenario", BATCH)
        if status != "ok":
            not_ok[str(status or "missing")] = not_ok.get(str(status or "missing"), 0) + 1
        elif not arrives_at_rate(scenario):
            scenarios[str(scenario)] = scenarios.get(str(scenario), 0) + 1
        elif (record.get(LOAD) == AUTO and _probe_points(record)) or (
                as_number(record.get(ACHIEVED)) is not None
                and as_number(record.get(AT_PERCENTILE)) is not None):
            usable.append(record)
        else:
            no_point.append(record_name(record, index))
    warnings = []
    if not_ok:
        warnings.append(f"{sum(not_ok.values())} record(s) left out: exp.status is not ok "
                        f"({counted(not_ok)})")
    if scenarios:
        warnings.append(f"{sum(scenarios.values())} record(s) left out: not server-scenario "
                        f"runs (exp.scenario: {counted(scenarios)}); a serving curve needs "
                        "exp.scenario=server")
    if no_point:
        shown = ", ".join(no_point[:MAX_NAMED])
        more = f" and {len(no_point) - MAX_NAMED} more" if len(no_point) > MAX_NAMED else ""
        warnings.append(f"{len(no_point)} server record(s) left out: no numeric {ACHIEVED} "
                        f"and {AT_PERCENTILE}: {shown}{more}")
    return usable, warnings
