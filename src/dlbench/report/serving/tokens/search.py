"""A load search's record, read for the token curves (:mod:`dlbench.report.serving.tokens.curves`).

An endpoint run of ``exp.target_qps=auto`` (an open loop) or ``exp.replica_batch=auto``
(a closed loop) searches the highest load that meets its SLOs (docs/serving.md, "The
highest load that meets the SLOs"). Its record keeps ``auto`` as its load, so it has no
point of its own on a sweep's curve; what it has is its probes
(``results.scenario_probes``), each a whole run at one load, judged as any run is.
Each probe names its figures as a record does, less ``results.`` (``ttft_p99`` is
``results.ttft_p99``), so a probe is read here as a record of one run, and the search
becomes a curve of its own whose points are its probes.

**Every search's probes are points**, not only the last search's: the search is
repeated because one search is one draw of the arrivals, and a load that several
searches probed is the mean of their probes (as runs repeated at one load are), its
spread shown. A probe keeps no p50s or ITL, so neither do the points.

**The knee** is the search's own answer, the load of the record's other figures
(``results.search_load``: the highest load that passed in the last search), when that
probe passed; none when it did not (no probe of the last search passed). **The peak**
is the mean of the searches' peaks with the half-width of its 95 % interval
(``results.peak_load``, ``results.peak_load_ci95``), in :func:`peak_text`.

Example::

    search = token_search(record, "exp.replica_batch", "3ad425e2")
    peak_text(search)  # '2 ± 0 requests in flight over 3 searches'
    probes_by_load(record)  # {1.0: [probe, probe, probe], 2.0: [...], ...}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dlbench.report.aggregate import as_number
from dlbench.report.serving.curves import AUTO, PROBES

__all__ = ["AUTO", "PEAK", "PEAK_CI95", "PEAK_REPEATS", "PEAK_UNIT", "SEARCH_LOAD",
           "TokenSearch", "is_search", "peak_text", "probe_load", "probe_record",
           "probes_by_load", "token_search"]

SEARCH_LOAD = "results.search_load"
PEAK, PEAK_CI95 = "results.peak_load", "results.peak_load_ci95"
PEAK_REPEATS, PEAK_UNIT = "results.peak_load_repeats", "results.peak_load_unit"
#: A probe's name for its load: ``load``, else ``qps`` (a rate, as the in-process
#: search names it) or ``concurrency``.
_LOAD_NAMES = ("load", "qps", "concurrency")


@dataclass
class TokenSearch:
    """What a curve's search found: its name (``exp.id``), the parameter searched,
    the load of the record's figures and whether that probe passed, the peak (mean of
    the searches' peaks), the half-width of its 95 % interval, each search's peak,
    their unit (``requests`` in flight or ``requests/s``), and the record's verdict."""

    name: str
    param: str
    load: float | None
    passed: bool
    peak: float | None
    ci95: float | None
    peaks: list[float] = field(default_factory=list)
    unit: str = ""
    valid: bool | None = None
    reasons: list[str] = field(default_factory=list)


def is_search(record: Mapping[str, Any], param: str) -> bool:
    """Whether ``record`` searched ``param`` (its value is ``auto``)."""
    return record.get(param) == AUTO


def probe_load(probe: Mapping[str, Any]) -> float | None:
    """A probe's load: requests/s offered or requests in flight; None when it has none.

    >>> probe_load({"repeat": 0, "load": 4.0, "concurrency": 4})
    4.0
    """
    for name in _LOAD_NAMES:
        load = as_number(probe.get(name))
        if load is not None:
            return load
    return None


def probes_by_load(record: Mapping[str, Any]) -> dict[float, list[Mapping[str, Any]]]:
    """The probes of ``record``'s searches that have a load, by load (ascending), each
    load's in the order they ran."""
    found: dict[float, list[Mapping[str, Any]]] = {}
    for probe in record.get(PROBES) or []:
        load = probe_load(probe) if isinstance(probe, Mapping) else None
        if load is not None:
            found.setdefault(load, []).append(probe)
    return {load: found[load] for load in sorted(found)}


def probe_record(probe: Mapping[str, Any]) -> dict[str, Any]:
    """A probe as the record of its run: each figure under its result key, and its
    ``reasons`` (why it did not pass: its run's gates and too few requests within the
    SLOs) as ``results.valid_reasons``.

    >>> probe_record({"ttft_p99": 22.1, "valid": True, "reasons": []})
    {'results.ttft_p99': 22.1, 'results.valid': True, 'results.valid_reasons': []}
    """
    out = {f"results.{name}": value for name, value in probe.items() if name != "reasons"}
    out["results.valid_reasons"] = list(probe.get("reasons") or [])
    return out


def token_search(record: Mapping[str, Any], param: str, name: str) -> TokenSearch:
    """The search of ``record`` (which searched ``param``), named ``name``."""
    load = as_number(record.get(SEARCH_LOAD))
    # A search never probes a load twice, and the record's probe is its last search's:
    # the last probe at that load is the one.
    at_load = probes_by_load(record).get(load, []) if load is not None else []
    chosen = at_load[-1] if at_load else None
    peaks = [v for v in (as_number(p) for p in record.get(PEAK_REPEATS) or []) if v is not None]
    valid = record.get("results.valid")
    return TokenSearch(
        name=name, param=param, load=load,
        passed=chosen is not None and chosen.get("passed") is True,
        peak=as_number(record.get(PEAK)), ci95=as_number(record.get(PEAK_CI95)), peaks=peaks,
        unit=str(record.get(PEAK_UNIT) or ""), valid=valid if isinstance(valid, bool) else None,
        reasons=[str(reason) for reason in record.get("results.valid_reasons") or []])


def _places(ci95: float) -> int:
    """The decimal places of the second significant digit of ``ci95`` (> 0)."""
    return max(0, 1 - math.floor(math.log10(ci95)))


def peak_text(search: TokenSearch) -> str:
    """The peak with its interval and the number of searches, in words: the mean to the
    place of the interval's second significant digit, four significant digits without
    an interval.

    >>> peak_text(TokenSearch("s", "exp.target_qps", 39.0, True, 38.93, 1.234,
    ...                       [38.0, 39.5, 39.3], "requests/s"))
    '38.9 ± 1.2 requests/s over 3 searches'
    >>> peak_text(TokenSearch("s", "exp.replica_batch", 2.0, True, 2.0, None, [2.0],
    ...                       "requests"))
    '2 requests in flight from one search, no interval'
    """
    if search.peak is None:
        return "none found"
    unit = "requests in flight" if search.unit == "requests" else search.unit
    unit = f" {unit}" if unit else ""
    if search.ci95 is None:
        return f"{search.peak:.4g}{unit} from one search, no interval"
    if search.ci95 > 0:
        places = _places(search.ci95)
        value, interval = f"{search.peak:.{places}f}", f"{search.ci95:.{places}f}"
    else:
        value, interval = f"{search.peak:.4g}", "0"
    return f"{value} ± {interval}{unit} over {len(search.peaks)} searches"
