"""The tables of the token curves (:mod:`dlbench.report.serving.tokens.curves`): a table per
curve, a point per row, and a table of the knees of a group's curves.

A curve's table has its load (requests/s offered, or requests in flight), output
tokens/s, requests/s, TTFT and TPOT p50 and p99, ITL p99, goodput in tokens/s and
requests/s, SLO attainment, failed requests, whether the client kept up, valid, and the
rules that failed in a few words. A column no point has a value for (goodput without
SLOs, the client's check of an in-process run) is left out. Its notes say the load,
the SLOs, the points whose client fell behind, and the knee.

A load search's curve (:mod:`dlbench.report.serving.tokens.search`) has, besides, the
probes at each load and how many passed, and its notes say where its points come from
and its peak with the 95 % interval over its searches; its knee is the search's
answer. The columns its probes do not keep (TTFT and TPOT p50) are left out.

Example::

    for curve in token_curves(usable):
        print(curve_token_table(curve).notes)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from dlbench.report.aggregate import LabeledTable
from dlbench.report.charts.series import value_text
from dlbench.report.serving.curves import KNEE_FACTOR, short_reason
from dlbench.report.serving.tokens.curves import (
    ATTAINMENT,
    CLOSED,
    GOODPUT,
    GOODPUT_REQUESTS,
    ITL_P99,
    KNEE_ATTAINMENT,
    OPEN,
    REQUESTS,
    SLOS,
    THROUGHPUT,
    TPOT_P50,
    TPOT_P99,
    TTFT_P50,
    TTFT_P99,
    TokenCurve,
    TokenPoint,
)
from dlbench.report.serving.tokens.search import (
    PEAK,
    PEAK_CI95,
    SEARCH_LOAD,
    TokenSearch,
    peak_text,
)

__all__ = ["curve_token_table", "knee_rule", "load_header", "load_text", "reasons_text",
           "token_knees_table", "token_notes", "token_reason"]

#: Each figure's column: its header before the unit.
_HEADERS = {THROUGHPUT: "output", REQUESTS: "completed", TTFT_P50: "TTFT p50",
            TTFT_P99: "TTFT p99", TPOT_P50: "TPOT p50", TPOT_P99: "TPOT p99",
            ITL_P99: "ITL p99", GOODPUT: "goodput", GOODPUT_REQUESTS: "goodput",
            ATTAINMENT: "SLO attainment"}
#: The figures every table shows, known or not; the others only where a point has one.
_ALWAYS = (THROUGHPUT, REQUESTS, TTFT_P50, TTFT_P99, TPOT_P50, TPOT_P99)
#: The units of the loads, as the reports' columns name them.
_LOAD_UNITS = {OPEN: "requests/s", CLOSED: "requests"}

_P99_RE = re.compile(r"99th percentile (\w+), .* is over ((?:endpoint|exp)\.[a-z_]+)")
_ATTAINED_RE = re.compile(r"^([\d.]+ %) of the requests met every SLO, under "
                          r"(endpoint\.search_attainment)")


def token_reason(reason: str) -> str:
    """A sentence of ``results.valid_reasons`` in a few words: ``TTFT p99 over
    endpoint.slo_ttft_ms``, ``client fell behind (endpoint.max_client_lag_ms)``; one
    that names an ``exp.*`` rule as :func:`~dlbench.report.serving.report.short_reason`
    shortens it; any other as it is. A search's: ``95.0 % good, under
    endpoint.search_attainment``; the search's doubts on its peak, in short."""
    attained = _ATTAINED_RE.search(reason)
    if attained is not None:
        return f"{attained.group(1)} good, under {attained.group(2)}"
    if reason.endswith("the peak found may be the client's, not the server's"):
        return "client fell behind at a failing load: the peak may be the client's"
    if reason.startswith("every probe met the SLOs"):  # the limit names an exp.* parameter
        return reason.split(": the peak", 1)[0]
    if "fell behind" in reason:
        return "client fell behind (endpoint.max_client_lag_ms)"
    over = _P99_RE.search(reason)
    if over is not None:
        return f"{over.group(1)} p99 over {over.group(2)}"
    if reason.startswith("the client used"):
        return reason.split(" (", 1)[0].removeprefix("the ")
    return short_reason(reason) if "exp." in reason else reason


def reasons_text(reasons: Sequence[str]) -> str:
    """``reasons`` in a few words each (:func:`token_reason`), each said once: runs that
    failed one gate by different margins give one sentence each, one short reason.

    >>> reasons_text(["the 99th percentile TTFT, 60.000 ms, is over endpoint.slo_ttft_ms=50",
    ...               "the 99th percentile TTFT, 70.000 ms, is over endpoint.slo_ttft_ms=50"])
    'TTFT p99 over endpoint.slo_ttft_ms'
    """
    return "; ".join(dict.fromkeys(map(token_reason, reasons)))


def load_header(curve: TokenCurve) -> str:
    """The load's column: ``offered (requests/s)`` or ``concurrency (requests)``."""
    what = "offered" if curve.loop == OPEN else "concurrency"
    return f"{what} ({_LOAD_UNITS[curve.loop]})"


def load_text(curve: TokenCurve, load: float) -> str:
    """A load in words: ``2 requests/s offered``, ``8 in flight``; a search's rate, which
    it computed, to four significant digits."""
    if curve.loop == OPEN:
        return f"{load:.4g} requests/s offered" if curve.search else f"{load:g} requests/s offered"
    return f"{load:g} in flight"


def _header(curve: TokenCurve, key: str) -> str:
    unit = curve.units.get(key, "")
    return f"{_HEADERS[key]} ({unit})" if unit else _HEADERS[key]


def _title(text: str, group: Mapping[str, Any]) -> str:
    suffix = ", ".join(f"{k}={value_text(v)}" for k, v in group.items())
    return f"{text} [{suffix}]" if suffix else text


def _slo_text(curve: TokenCurve) -> str:
    named = {name: short for name, _, short in SLOS}
    return ", ".join(f"{named[name]} <= {value:g} ms ({name})"
                     for name, value in curve.slos.items())


def knee_rule(curve: TokenCurve) -> str:
    """What the knee of ``curve`` had to meet, in words."""
    if curve.slos:
        return (f"at least {KNEE_ATTAINMENT:.0%} of requests within the SLOs "
                f"({ATTAINMENT} >= {KNEE_ATTAINMENT:g}), the client keeping up")
    limits = ", ".join(f"{_HEADERS[key]} {limit:.2f} ms" for key, limit in curve.limits.items())
    return (f"TTFT p99 and TPOT p99 within {KNEE_FACTOR:g}x those at the lowest load"
            + (f" ({limits})" if limits else "") + ", the client keeping up")


def _figure(value: float | None, text: str) -> str:
    return f"{text} -" if value is None else f"{text} {value:.2f} ms"


def token_notes(curve: TokenCurve) -> list[str]:
    """The load, SLOs, points whose client fell behind, and the knee of ``curve``, as
    lines under its table; a search's also where its points come from, its peak, and
    what ``passed`` means."""
    load = ("exp.target_qps, requests offered per second (an open loop: exp.scenario=server)"
            if curve.loop == OPEN else
            "exp.replica_batch, requests in flight (a closed loop: exp.scenario=batch; "
            "single_stream is one)")
    notes = [f"load: {load}"]
    search = curve.search
    if search is not None:
        notes.append(f"points: the probes of the {search.param}=auto search {search.name} "
                     "(results.scenario_probes), every repeat's: a load probed by several "
                     "searches is their mean; a probe keeps no TTFT or TPOT p50, nor ITL")
    notes.append(f"SLOs: {_slo_text(curve)}; a request is good when it meets every one"
                 if curve.slos else
                 "no SLO (endpoint.slo_ttft_ms, endpoint.slo_tpot_ms, endpoint.slo_latency_ms)")
    if search is not None:
        notes.append(f"peak: {peak_text(search)} ({_peak_source(search)})")
        notes.append("probes, passed: the probes at a load over all searches, and how many "
                     "passed (valid, and at least endpoint.search_attainment of requests "
                     "within every SLO)")
    behind = [p for p in curve.points if p.kept_up is False]
    if behind:
        loads = ", ".join(f"{p.load:g}" for p in behind)
        notes.append(f"client fell behind at {loads} ({curve.load_name}): results.client_kept_up "
                     "is false, so those points measure the client as much as the server; "
                     "never the knee")
    if any(p.failed is not None and p.runs > 1 for p in curve.points):
        notes.append("errors: failed requests (results.requests_failed), summed over a "
                     "point's runs")
    if any(point.reasons for point in curve.points):
        notes.append("reasons: the rules a run failed, in short; results.valid_reasons "
                     "words them in full")
    if search is not None:
        notes += _search_knee(curve, search.load)
        if search.valid is False:
            notes.append("search not valid (results.valid): "
                         + reasons_text(search.reasons))
    elif curve.knee is None:
        notes.append(f"knee: none, no point has {knee_rule(curve)}")
    else:
        knee = curve.points[curve.knee]
        unit = curve.units.get(THROUGHPUT) or "tokens/s"
        notes.append(
            f"knee: {knee.throughput or 0.0:.2f} {unit} at {load_text(curve, knee.load)}, "
            f"{_figure(knee.figures.get(TTFT_P99), 'TTFT p99')}, "
            f"{_figure(knee.figures.get(TPOT_P99), 'TPOT p99')}: the highest output "
            f"tokens/s with {knee_rule(curve)}"
            + (f"; not valid: {reasons_text(knee.reasons)}"
               if knee.valid is False else ""))
    return notes


def _peak_source(search: TokenSearch) -> str:
    """Where a search's peak comes from, for the note that states it."""
    if len(search.peaks) > 1:
        each = ", ".join(f"{peak:.4g}" for peak in search.peaks)
        return (f"{PEAK} ± {PEAK_CI95}: the mean of the searches' highest passing loads, "
                f"{each}, and the half-width of its 95 % interval")
    if search.peaks:
        return f"{PEAK}: its highest passing load"
    return f"{PEAK}: no search had a passing load"


def _search_knee(curve: TokenCurve, load: float | None) -> list[str]:
    """The knee of a search's curve: its answer, where that probe passed."""
    if curve.knee is None:
        where = "" if load is None else f" at {load_text(curve, load)}"
        return [f"knee: none, the search's probe{where} ({SEARCH_LOAD}) did not pass"]
    knee = curve.points[curve.knee]
    unit = curve.units.get(THROUGHPUT) or "tokens/s"
    return [f"knee: {knee.throughput or 0.0:.2f} {unit} at {load_text(curve, knee.load)}, "
            f"{_figure(knee.figures.get(TTFT_P99), 'TTFT p99')}, "
            f"{_figure(knee.figures.get(TPOT_P99), 'TPOT p99')}: the search's answer "
            f"({SEARCH_LOAD}), the highest load that passed in its last search"
            # Several searches' probes there: the last one's passed, another's may not.
            + (f"; {knee.runs - knee.passed} of its {knee.runs} probes did not pass: "
               f"{reasons_text(knee.reasons)}"
               if knee.passed is not None and knee.passed < knee.runs else "")]


def _shown(curve: TokenCurve) -> list[str]:
    """The figures of the table of ``curve``: every one of :data:`_ALWAYS` (but for a
    search's, whose probes keep fewer), the others where a point has a value."""
    return [key for key in _HEADERS if (key in _ALWAYS and curve.search is None)
            or any(p.figures.get(key) is not None for p in curve.points)]


def _row(curve: TokenCurve, point: TokenPoint, shown: Sequence[str], failed: bool,
         kept: bool) -> list[Any]:
    return [point.load, *(point.figures.get(key) for key in shown),
            *([point.failed] if failed else []), *([point.kept_up] if kept else []),
            *([point.runs, point.passed] if curve.search is not None else []),
            point.valid, reasons_text(point.reasons) or None]


def curve_token_table(curve: TokenCurve) -> LabeledTable:
    """The points of ``curve`` by load: its figures, errors, whether the client kept
    up, a search's probes and how many passed, valid and why not."""
    shown = _shown(curve)
    failed = any(p.failed is not None for p in curve.points)
    kept = any(p.kept_up is not None for p in curve.points)
    columns = [load_header(curve), *(_header(curve, key) for key in shown),
               *(["errors"] if failed else []), *(["client kept up"] if kept else []),
               *(["probes", "passed"] if curve.search is not None else []),
               "valid", "reasons"]
    rows = [_row(curve, point, shown, failed, kept) for point in curve.points]
    return LabeledTable(
        title=_title(f"Token serving curve: {curve.label}", curve.group),
        columns=columns, rows=rows, notes=token_notes(curve),
        group={**curve.group, **curve.key}, label_columns=1)


def _rule_name(curve: TokenCurve) -> str:
    """The knee's rule in a few words, for the table of the knees."""
    if curve.search is not None:
        return f"search's answer; peak {peak_text(curve.search)}"
    return "SLO attainment" if curve.slos else f"{KNEE_FACTOR:g}x lowest load"


def token_knees_table(group: Mapping[str, Any], curves: Sequence[TokenCurve]) -> LabeledTable:
    """One row per token curve of a group: the load of its knee, the figures there,
    and the rule it met (a search's: its answer, and its peak)."""
    first = curves[0]
    rows = []
    for curve in curves:
        knee = None if curve.knee is None else curve.points[curve.knee]
        at = knee.figures if knee is not None else {}
        valid = sum(p.valid is True for p in curve.points)
        rows.append([curve.label,
                     knee.load if knee is not None and curve.loop == OPEN else None,
                     knee.load if knee is not None and curve.loop == CLOSED else None,
                     at.get(THROUGHPUT), at.get(TTFT_P99), at.get(TPOT_P99),
                     _rule_name(curve),
                     f"{valid} of {len(curve.points)}"])
    return LabeledTable(
        title=_title("Token knees: the highest output tokens/s meeting the SLOs", group),
        columns=["curve", f"offered ({_LOAD_UNITS[OPEN]})", f"concurrency ({_LOAD_UNITS[CLOSED]})",
                 _header(first, THROUGHPUT), _header(first, TTFT_P99), _header(first, TPOT_P99),
                 "rule", "valid points"],
        rows=rows, group=dict(group), label_columns=1)
