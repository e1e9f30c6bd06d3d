"""Regressions in a history: one time series per configuration, its change points, and
what changed in the environment when the numbers did.

For each configuration (:mod:`dlbench.results.history.records` says what one is) the
records that ended ok with a number for the metric form a series, in run order (run
time, then record time). :func:`~dlbench.report.history.changepoint.detect_change_points`
finds its changes; each gets:

- **when**: the run (its id, time, revision) of the first value after the change,
  and its index in the series;
- **size**: the relative change of the mean between the segments on either side;
- **confidence**: the permutation test's p-value;
- **what coincides**: the environment keys (``sys.*``, ``hw.*``, run-specific
  parameters, the importer's ``revision``) that held one value over the last
  :data:`ENV_WINDOW` records before some run and another one over the records
  from it on, for a run within :data:`ENV_TOLERANCE` of the change (the detector
  places a step of 2.5 standard deviations within two runs of where it is, not
  always on it); the nearest such run wins. A key that varies within either side (a
  cluster's host names) is not a coinciding change.

A change is a **regression** when it goes the bad way for the metric (down for a
throughput, TFLOP/s, MFU or samples per joule; up for anything else: times,
memory, energy) by at least ``threshold``; it is **new** when it falls in the newest
``window`` values of its series. ``dlbench history check`` fails on a new regression.
A regression is found at the earliest ``min_size`` values after it (the detector's
smallest segment), and stays new for ``window - min_size`` more runs.

Some series cannot support a verdict, and say so instead of "no change": a series
shorter than the detector needs (:func:`~dlbench.report.history.changepoint.fewest_values`,
``2 × min_size`` runs) is **inconclusive**, however large its steps; and a regression
is inconclusive when at least half of the ``min_size`` runs on either side of it were
judged unstable by the worker for a bias (``results.stable`` false for contention,
throttled clocks, warm-up, ...: :attr:`dlbench.results.noise.Noise.biased`), since
then the step may be the machine's rather than the code's. A run unstable only for
its spread is what the detector's permutation test weighs, and a run imported
without its reasons counts as stable for this.
:meth:`HistoryAnalysis.regressions` leaves inconclusive regressions out;
:meth:`HistoryAnalysis.inconclusive` lists them with the short series.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.report.history.changepoint import (
    DEFAULT_MIN_SIZE,
    DEFAULT_P_THRESHOLD,
    DEFAULT_PERMUTATIONS,
    ChangePoint,
    detect_change_points,
    fewest_values,
)
from dlbench.results.history.records import CORE_PARAMS, HistoryRow
from dlbench.results.keys.lookup import higher_is_better as declared_higher_is_better
from dlbench.results.noise import join_reasons, record_noise
from dlbench.results.values import is_number

#: Records on each side of a change whose environments are compared.
ENV_WINDOW = 5

#: How many runs from a change point an environment change may be and still coincide.
ENV_TOLERANCE = 2

#: Newest values of a series in which a regression is new (``--window``).
DEFAULT_WINDOW = 10

#: Smallest relative change that counts as a regression (``--threshold``).
DEFAULT_THRESHOLD = 0.02

#: Newest values of each series analysed (``--last``); 0 is all of them.
DEFAULT_LAST = 250

#: The first words of a configuration's label, without their names.
_LABEL_HEAD = ("exp.framework", "exp.model", "exp.phase")

#: Left out of a label at these values (still part of the configuration): one CPU
#: process on one node says nothing; the device type follows from exp.gpus.
_LABEL_QUIET: dict[str, tuple[Any, ...]] = {
    "exp.gpus": ("",), "exp.num_replicas": (1,), "exp.num_nodes": (1,),
    "exp.device_type": ("cpu", "gpu"),
}


def config_label(config: Mapping[str, Any]) -> str:
    """``fake resnet50 training replica_batch=16 dtype=float32 ...``: the framework,
    model and phase, then the other values, core axes first, ``exp.`` left out (and
    a single process on the CPU not said)."""
    words = [str(config[k]) for k in _LABEL_HEAD if k in config]
    rest = [k for k in CORE_PARAMS if k in config and k not in _LABEL_HEAD]
    rest += [k for k in config if k not in CORE_PARAMS]
    for name in rest:
        value = config[name]
        if value in _LABEL_QUIET.get(name, ()):
            continue
        shown = value if isinstance(value, str) else json.dumps(value)
        words.append(f"{name.removeprefix('exp.')}={shown}")
    return " ".join(words)


@dataclass(frozen=True)
class Point:
    """One value of a series, with its record."""

    row: HistoryRow
    value: float


@dataclass(frozen=True)
class EnvChange:
    """An environment key that changed near a change point, at ``index`` of the series."""

    before: Any
    after: Any
    index: int


@dataclass(frozen=True)
class Change:
    """A change point of a series and what the history says about it."""

    point: ChangePoint
    row: HistoryRow  # the first record after the change
    environment: dict[str, EnvChange]  # keys stable on both sides of a run near it
    regression: bool
    new: bool
    doubts: tuple[str, ...] = ()  # why the change cannot be trusted (unstable runs near it)

    @property
    def inconclusive(self) -> bool:
        """Whether the change is a regression whose runs cannot support it."""
        return self.regression and bool(self.doubts)

    @property
    def index(self) -> int:
        """Index in the series of the first value after the change."""
        return self.point.index


@dataclass
class HistorySeries:
    """One configuration's values, in run order, and their changes."""

    key: str
    config: dict[str, Any]
    points: list[Point]
    changes: list[Change] = field(default_factory=list)
    skipped: int = 0  # earlier values left out by ``last``
    too_few: str = ""  # why the series is too short to judge, empty when it is not

    @property
    def label(self) -> str:
        """The configuration as words (:func:`config_label`)."""
        return config_label(self.config)


@dataclass
class HistoryAnalysis:
    """Every series of a history for one metric, and the settings that found them."""

    metric: str
    higher_is_better: bool
    window: int
    threshold: float
    p_threshold: float
    series: list[HistorySeries]
    min_size: int = DEFAULT_MIN_SIZE

    def regressions(self, *, new_only: bool = True) -> list[tuple[HistorySeries, Change]]:
        """The conclusive (new, unless ``new_only`` is false) regressions, series by
        series."""
        return [(s, c) for s in self.series for c in s.changes
                if c.regression and not c.inconclusive and (c.new or not new_only)]

    def inconclusive(self, *, new_only: bool = True) -> list[tuple[HistorySeries, str]]:
        """Each verdict that could not be reached, with why: the series too short to
        judge, and the (new, unless ``new_only`` is false) regressions whose runs
        were unstable."""
        found = [(s, s.too_few) for s in self.series if s.too_few]
        found += [(s, f"run #{c.index + s.skipped + 1}: " + "; ".join(c.doubts))
                  for s in self.series for c in s.changes
                  if c.inconclusive and (c.new or not new_only)]
        return found


def _environment_of(row: HistoryRow) -> dict[str, str]:
    """The row's environment values as canonical JSON, with its revision."""
    values = {k: json.dumps(v, sort_keys=True) for k, v in row.environment.items()}
    if row.revision is not None:
        values["revision"] = json.dumps(row.revision)
    return values


def environment_change(before: Sequence[HistoryRow], after: Sequence[HistoryRow]
                       ) -> dict[str, tuple[Any, Any]]:
    """Keys with one value throughout ``before`` and another throughout ``after``
    (a key a side lacks counts as null there), as ``{key: (before, after)}``."""
    sides = [[_environment_of(r) for r in side] for side in (before, after)]
    keys = sorted({k for side in sides for env in side for k in env})
    changed: dict[str, tuple[Any, Any]] = {}
    for key in keys:
        seen = [{env.get(key, "null") for env in side} for side in sides]
        if len(seen[0]) == 1 and len(seen[1]) == 1 and seen[0] != seen[1]:
            old, new = (json.loads(next(iter(s))) for s in seen)
            changed[key] = (old, new)
    return changed


def _coinciding(rows: Sequence[HistoryRow], index: int, start: int, end: int
                ) -> dict[str, EnvChange]:
    """The environment changes at runs within :data:`ENV_TOLERANCE` of ``index``
    (inside the segments ``start:index`` and ``index:end``), nearest first."""
    found: dict[str, EnvChange] = {}
    nearest = sorted(range(index - ENV_TOLERANCE, index + ENV_TOLERANCE + 1),
                     key=lambda j: (abs(j - index), j))
    for j in nearest:
        if not start < j < end:
            continue
        before = rows[max(start, j - ENV_WINDOW):j]
        after = rows[j:min(end, j + ENV_WINDOW)]
        for key, (old, new) in environment_change(before, after).items():
            found.setdefault(key, EnvChange(old, new, j))
    return dict(sorted(found.items()))


def build_series(rows: Sequence[HistoryRow], metric: str, last: int = 0) -> list[HistorySeries]:
    """The series of every configuration with a value of ``metric`` in an ok record,
    in the order of the rows (configuration, then time); ``last`` > 0 keeps only
    that many newest values of each."""
    grouped: dict[str, HistorySeries] = {}
    for row in rows:
        value = row.results.get(metric)
        if row.status not in ("ok", None) or not is_number(value) or not math.isfinite(value):
            continue
        series = grouped.setdefault(row.config_key, HistorySeries(row.config_key, row.config, []))
        series.points.append(Point(row, float(value)))
    if last > 0:
        for series in grouped.values():
            series.skipped = max(0, len(series.points) - last)
            series.points = series.points[series.skipped:]
    return list(grouped.values())


def _doubts(series: HistorySeries, index: int, min_size: int) -> tuple[str, ...]:
    """Why a change at ``index`` cannot be trusted: a side of it (its ``min_size``
    nearest runs) where at least half the runs are unstable for a bias."""
    doubts = []
    sides = (("before", series.points[max(0, index - min_size):index]),
             ("after", series.points[index:index + min_size]))
    for side, points in sides:
        # A run imported without its reasons cannot tell a bias from a spread.
        biased = [record_noise([p.row.results] if isinstance(
            p.row.results.get("results.unstable_reasons"), list) else []) for p in points]
        count = sum(noise.biased for noise in biased)
        if points and 2 * count >= len(points):
            reasons = [r for noise in biased if noise.biased for r in noise.reasons]
            doubts.append(f"{count} of the {len(points)} runs {side} it unstable: "
                          f"{join_reasons(list(dict.fromkeys(reasons)))}")
    return tuple(doubts)


def analyse_history(
    rows: Sequence[HistoryRow],
    *,
    metric: str = "results.throughput",
    higher_is_better: bool | None = None,
    window: int = DEFAULT_WINDOW,
    threshold: float = DEFAULT_THRESHOLD,
    p_threshold: float = DEFAULT_P_THRESHOLD,
    permutations: int = DEFAULT_PERMUTATIONS,
    min_size: int = DEFAULT_MIN_SIZE,
    last: int = DEFAULT_LAST,
    seed: int = 0,
) -> HistoryAnalysis:
    """Every configuration's series of ``metric`` with its change points (see the
    module's description for ``window`` and ``threshold``). A change is a regression
    when it goes the bad way of ``metric``'s declared direction, or of
    ``higher_is_better`` where given; a key that declares none raises ``MetricError``."""
    higher = declared_higher_is_better(metric, higher_is_better)
    all_series = build_series(rows, metric, last)
    fewest = fewest_values(min_size)
    for series in all_series:
        values = [p.value for p in series.points]
        if len(values) < fewest:
            series.too_few = (f"{len(values)} run{'s' if len(values) != 1 else ''}; the "
                              f"change-point detector needs at least {fewest} "
                              f"(2 x --min-size {min_size}) to tell a change")
        found = detect_change_points(values, p_threshold=p_threshold,
                                     permutations=permutations, min_size=min_size, seed=seed)
        bounds = [0, *(p.index for p in found), len(values)]
        rows_of = [p.row for p in series.points]
        for k, point in enumerate(found, start=1):
            worse = point.change < 0 if higher else point.change > 0
            series.changes.append(Change(
                point=point,
                row=series.points[point.index].row,
                environment=_coinciding(rows_of, point.index, bounds[k - 1], bounds[k + 1]),
                regression=worse and abs(point.change) >= threshold,
                new=point.index >= len(values) - window,
                doubts=_doubts(series, point.index, min_size),
            ))
    return HistoryAnalysis(metric=metric, higher_is_better=higher, window=window,
                           threshold=threshold, p_threshold=p_threshold, series=all_series,
                           min_size=min_size)
