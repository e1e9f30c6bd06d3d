"""The token curves of the serving report: language-model serving runs
(``exp.phase=generate``: an OpenAI-compatible endpoint, ``exp.framework=endpoint``, or a
model generating in process) turned into curves of points by load, and each curve's
knee. The tables are :mod:`dlbench.report.serving.tokens.tables`, the charts
:mod:`dlbench.report.serving.tokens.chart`.

A point's **load** is how hard the run pushed: in an open loop (``exp.scenario=server``)
the requests offered per second, ``exp.target_qps``; in a closed loop
(``exp.scenario=batch``) the requests in flight, ``exp.replica_batch``
(``single_stream`` is a closed loop of one). The two are never on one curve. Each point
carries what the run measured there: output tokens/s (``results.output_tokens_per_s``),
requests/s, TTFT and TPOT p50/p99, ITL p99, goodput, SLO attainment, failed requests,
the validity verdict and whether the client kept up (``results.client_kept_up``: false
means the client, not only the server, set the figures).

Curves are made as the latency curves of :mod:`dlbench.report.serving.curves` are:
groups by device, phase and precision, then a curve per model, per framework where
several ran, and per any other parameter that would otherwise be averaged at one load
(``endpoint.url``, ``endpoint.max_concurrency``, an SLO...); runs at one load
(``user.*`` repeats) are averaged. A load search (``exp.target_qps=auto``,
``exp.replica_batch=auto``) is a curve of its own, its probes the points and its
answer the knee (:mod:`dlbench.report.serving.tokens.search`).

The **knee** is the point with the most output tokens/s among those that meet the
SLOs given (``endpoint.slo_ttft_ms``, ``endpoint.slo_tpot_ms``,
``endpoint.slo_latency_ms``): at least :data:`KNEE_ATTAINMENT` of the requests good
(``results.slo_attainment``), so that the knee's requests meet the SLOs at the 99th
percentile, as MLPerf gates TTFT and TPOT. Without an SLO, a point qualifies when its
TTFT p99 and TPOT p99 are within :data:`~dlbench.report.serving.curves.KNEE_FACTOR`
times those of the curve's lowest load (the latency report's rule). A point whose
client fell behind is never the knee: its load was not the load offered. Validity is
shown beside the knee, not folded in.

Example::

    usable, warnings = token_records(load_records(["runs/serve"]))
    for curve in token_curves(usable):
        knee = curve.points[curve.knee] if curve.knee is not None else None
"""

from __future__ import annotations

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
from dlbench.report.serving.curves import GENERATE, KNEE_FACTOR, counted
from dlbench.report.serving.tokens.search import (
    TokenSearch,
    is_search,
    probe_record,
    probes_by_load,
    token_search,
)
from dlbench.report.tables.grid import model_rows

#: The loops, and the parameter that is each one's load.
OPEN, CLOSED = "open", "closed"
LOAD_OF = {OPEN: "exp.target_qps", CLOSED: "exp.replica_batch"}
#: The closed-loop scenario of one request in flight.
SINGLE_STREAM = "single_stream"

THROUGHPUT = "results.output_tokens_per_s"
REQUESTS = "results.requests_per_s"
TTFT_P50, TTFT_P99 = "results.ttft_p50", "results.ttft_p99"
TPOT_P50, TPOT_P99 = "results.tpot_p50", "results.tpot_p99"
ITL_P99 = "results.itl_p99"
GOODPUT, GOODPUT_REQUESTS = "results.goodput_tokens_per_s", "results.goodput_requests_per_s"
ATTAINMENT = "results.slo_attainment"
FAILED = "results.requests_failed"
KEPT_UP = "results.client_kept_up"
#: The figures a point averages over its runs, in the order of its table.
FIGURES = (THROUGHPUT, REQUESTS, TTFT_P50, TTFT_P99, TPOT_P50, TPOT_P99, ITL_P99, GOODPUT,
           GOODPUT_REQUESTS, ATTAINMENT)

#: Each SLO: its parameter, the figure it bounds (the 99th percentile), its short name.
SLOS = (("endpoint.slo_ttft_ms", TTFT_P99, "TTFT"), ("endpoint.slo_tpot_ms", TPOT_P99, "TPOT"),
        ("endpoint.slo_latency_ms", "results.latency_p99", "latency"))
#: With SLOs, a point qualifies for the knee when at least this fraction of its
#: requests met every one (``results.slo_attainment``).
KNEE_ATTAINMENT = 0.99
#: Without SLOs, the figures whose p99 may grow to KNEE_FACTOR times their value at the
#: lowest load.
UNBOUNDED = (TTFT_P99, TPOT_P99)

#: What splits curves into groups: as the latency curves (the framework shares a chart).
_SEPARATE = tuple(key for key in SEPARATE_BY if key != "exp.framework")


@dataclass
class TokenPoint:
    """One load of a curve: its figures (result key → value, a
    :class:`~dlbench.report.aggregate.Measured` where several runs were averaged, None
    where unknown), its failed requests summed over its runs, the rules' verdict and
    whether the client kept up in every run (None: not recorded). A search's point is
    its probes at that load, its runs."""

    load: float
    figures: dict[str, float | None]
    failed: int | None
    valid: bool | None
    reasons: list[str]
    kept_up: bool | None
    runs: int = 1
    #: A search's point: how many of its ``runs`` probes passed; None for a sweep's.
    passed: int | None = None

    @property
    def throughput(self) -> float | None:
        """Output tokens/s."""
        return self.figures.get(THROUGHPUT)


@dataclass
class TokenCurve:
    """One curve: its label and the parameters that name it, its group, its loop
    (:data:`OPEN` or :data:`CLOSED`), its points by load, the unit of each figure,
    the SLOs of its runs (parameter → ms, those given), its knee (an index into
    ``points``) and, without SLOs, the knee's limit of each figure of
    :data:`UNBOUNDED`; ``search`` when it is a load search's probes."""

    label: str
    key: dict[str, Any]
    group: dict[str, Any]
    loop: str
    points: list[TokenPoint]
    units: dict[str, str]
    slos: dict[str, float]
    knee: int | None = None
    limits: dict[str, float] = field(default_factory=dict)
    search: TokenSearch | None = None

    @property
    def load_name(self) -> str:
        """The parameter of its load."""
        return LOAD_OF[self.loop]


def loop_of(record: Mapping[str, Any]) -> str | None:
    """:data:`OPEN` for a scenario whose requests arrive at ``exp.target_qps``,
    :data:`CLOSED` for ``batch`` and ``single_stream``, None for any other."""
    scenario = record.get("exp.scenario", BATCH)
    if arrives_at_rate(scenario):
        return OPEN
    return CLOSED if scenario in (BATCH, SINGLE_STREAM) else None


def load_of(record: Mapping[str, Any]) -> float | None:
    """A record's load: requests/s offered (open loop) or requests in flight (closed;
    one in ``single_stream``); None when it has none."""
    loop = loop_of(record)
    if loop is None:
        return None
    if record.get("exp.scenario") == SINGLE_STREAM:
        return 1.0
    return as_number(record.get(LOAD_OF[loop]))


def slos_of(record: Mapping[str, Any]) -> dict[str, float]:
    """The SLOs a record's run was given (parameter → ms), those above 0."""
    given = {name: as_number(record.get(name)) for name, _, _ in SLOS}
    return {name: value for name, value in given.items() if value is not None and value > 0}


def find_token_knee(points: Sequence[TokenPoint], slos: Mapping[str, float]
                    ) -> tuple[int | None, dict[str, float]]:
    """The knee's index in ``points`` (by load; None when no point qualifies) and,
    without ``slos``, the limit of each figure of :data:`UNBOUNDED`. Of equal
    throughputs the lower load wins."""
    limits: dict[str, float] = {}
    if not slos:
        for key in UNBOUNDED:
            first = next((p.figures.get(key) for p in points if p.figures.get(key) is not None),
                         None)
            if first is not None:
                limits[key] = KNEE_FACTOR * first
    knee: int | None = None
    for index, point in enumerate(points):
        if point.throughput is None or point.kept_up is False:
            continue
        if slos:
            attained = point.figures.get(ATTAINMENT)
            qualifies = attained is not None and attained >= KNEE_ATTAINMENT
        else:
            values = [point.figures.get(key) for key in limits]
            qualifies = bool(limits) and all(
                value is not None and value <= limit
                for value, limit in zip(values, limits.values(), strict=True))
        if qualifies and (knee is None or point.throughput > (points[knee].throughput or 0.0)):
            knee = index
    return knee, limits


def _averaged(members: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [v for v in (as_number(r.get(key)) for r in members) if v is not None]
    if not values:
        return None
    return values[0] if len(values) == 1 else summarize(values)


def _point(load: float, members: Sequence[Mapping[str, Any]]) -> TokenPoint:
    """The runs of one configuration at one load, averaged."""
    verdicts = [r.get("results.valid") for r in members]
    reasons = dict.fromkeys(str(reason) for r in members
                            for reason in (r.get("results.valid_reasons") or []))
    failed = [int(v) for v in (as_number(r.get(FAILED)) for r in members) if v is not None]
    kept = [r.get(KEPT_UP) for r in members if isinstance(r.get(KEPT_UP), bool)]
    return TokenPoint(
        load=load, figures={key: _averaged(members, key) for key in FIGURES},
        failed=sum(failed) if failed else None,
        valid=all(verdicts) if all(isinstance(v, bool) for v in verdicts) else None,
        reasons=list(reasons), kept_up=all(kept) if kept else None, runs=len(members))


def _curve(label: str, key: dict[str, Any], group: dict[str, Any], loop: str,
           runs: Sequence[Mapping[str, Any]]) -> TokenCurve:
    at: dict[float, list[Mapping[str, Any]]] = {}
    for record in runs:
        load = load_of(record)
        if load is not None:
            at.setdefault(load, []).append(record)
    points = [_point(load, at[load]) for load in sorted(at)]
    # The SLOs name the curve where they differ (row_keys), so its runs share them.
    slos = slos_of(runs[0])
    curve = TokenCurve(label=label, key=key, group=group, loop=loop, points=points,
                       units={k: unit_of(runs[0], k) for k in FIGURES}, slos=slos)
    curve.knee, curve.limits = find_token_knee(points, slos)
    return curve


def _search_curve(label: str, key: dict[str, Any], group: dict[str, Any], loop: str,
                  record: Mapping[str, Any], name: str) -> TokenCurve:
    """The curve of one search: every probe of its searches, those at one load
    averaged; its knee the search's answer, where that probe passed."""
    points = []
    for load, probes in probes_by_load(record).items():
        point = _point(load, [probe_record(probe) for probe in probes])
        point.passed = sum(probe.get("passed") is True for probe in probes)
        points.append(point)
    search = token_search(record, LOAD_OF[loop], name)
    knee = next((index for index, point in enumerate(points) if point.load == search.load),
                None) if search.passed else None
    return TokenCurve(label=label, key=key, group=group, loop=loop, points=points,
                      units={k: unit_of(record, k) for k in FIGURES}, slos=slos_of(record),
                      knee=knee, search=search)


def _searched(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` is a load search with a probe to draw (a load and output
    tokens/s)."""
    loop = loop_of(record)
    return loop is not None and is_search(record, LOAD_OF[loop]) and any(
        as_number(probe.get("output_tokens_per_s")) is not None
        for probes in probes_by_load(record).values() for probe in probes)


def token_curves(records: Sequence[Mapping[str, Any]]) -> list[TokenCurve]:
    """The curves of ``records`` (ok generate-phase runs with a point, see
    :func:`token_records`), by group, open-loop curves before closed-loop ones, in
    the order of the tables of the other reports."""
    curves: list[TokenCurve] = []
    for group, members in split_groups(records, _SEPARATE):
        loops = {loop_of(r) for r in members}
        for loop in (OPEN, CLOSED):
            looped = [r for r in members if loop_of(r) == loop]
            if not looped:
                continue
            # Both loops in a group: the labels say which is which.
            suffix = f", {loop} loop" if len(loops) > 1 else ""
            base = model_rows(cast("list[dict[str, Any]]", looped))
            # The scenario says the loop; within one, single_stream is batch of one.
            exclude = [*SEPARATE_BY, *base, LOAD_OF[loop], "exp.scenario"]
            names = row_keys(looped, base, [LOAD_OF[loop]],
                             identity_candidates(looped, exclude))
            sweeps: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
            searches: list[tuple[int, Mapping[str, Any]]] = []
            for index, record in enumerate(looped):
                if is_search(record, LOAD_OF[loop]):
                    searches.append((index, record))
                else:
                    sweeps.setdefault(key_of(record, names), []).append(record)
            found = []
            for runs in sweeps.values():
                key = {name: runs[0].get(name) for name in names}
                label = ", ".join(f"{n}={value_text(v)}" for n, v in key.items()) + suffix
                found.append(([*(value_order(v) for v in key.values()), (0, "")],
                               _curve(label, key, group, loop, runs)))
            # A search after the sweeps of its configuration, each a curve of its own.
            for index, record in searches:
                key = {name: record.get(name) for name in names}
                name = record_name(record, index)
                label = ", ".join([*(f"{n}={value_text(v)}" for n, v in key.items()),
                                   f"search {name}"]) + suffix
                found.append(([*(value_order(v) for v in key.values()), (1, name)],
                               _search_curve(label, key, group, loop, record, name)))
            curves += [curve for _, curve in sorted(found, key=lambda item: item[0])]
    return curves


def token_records(
    records: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The ok generate-phase records that have a point to draw (a load and output
    tokens/s, or a load search's probes with them), and one warning per kind of
    generate-phase record left out. Records of other phases are not looked at
    (:func:`~dlbench.report.serving.curves.server_records` takes them)."""
    usable: list[Mapping[str, Any]] = []
    not_ok: dict[str, int] = {}
    scenarios: dict[str, int] = {}
    no_point: list[str] = []
    for index, record in enumerate(records):
        if record.get("exp.phase") != GENERATE:
            continue
        status = record.get("exp.status")
        if status != "ok":
            not_ok[str(status or "missing")] = not_ok.get(str(status or "missing"), 0) + 1
        elif loop_of(record) is None:
            scenario = str(record.get("exp.scenario"))
            scenarios[scenario] = scenarios.get(scenario, 0) + 1
        elif (load_of(record) is not None and as_number(record.get(THROUGHPUT)) is not None
              ) or _searched(record):
            usable.append(record)
        else:
            no_point.append(record_name(record, index))
    warnings = []
    if not_ok:
        warnings.append(f"{sum(not_ok.values())} generate-phase record(s) left out: "
                        f"exp.status is not ok ({counted(not_ok)})")
    if scenarios:
        warnings.append(f"{sum(scenarios.values())} generate-phase record(s) left out: "
                        f"no load to draw them by (exp.scenario: {counted(scenarios)}); a "
                        "token curve needs exp.scenario=server (by exp.target_qps) or batch "
                        "(by exp.replica_batch)")
    if no_point:
        shown = ", ".join(no_point[:MAX_NAMED])
        more = f" and {len(no_point) - MAX_NAMED} more" if len(no_point) > MAX_NAMED else ""
        warnings.append(f"{len(no_point)} generate-phase record(s) left out: no numeric "
                        f"load or {THROUGHPUT}: {shown}{more}")
    return usable, warnings
