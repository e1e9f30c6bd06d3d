"""A/B comparison of two sets of results: which configurations got faster or slower.

This module matches configurations and reaches the verdicts; the tables and the
JSON document are made by :mod:`dlbench.report.compare.formatting`.

Configurations are matched on the parameters that define a measurement (registry
``identity``, not derived, nothing from ``user.*``:
:func:`dlbench.config.identity.identity_parameters`), except those that hold one value
throughout A and another throughout B: such a parameter (``pytorch.num_threads`` 1
against 2, a new ``fake.step_ms``) is what is being compared, so it is reported and
left out of the match. Repeats of a configuration on one side are pooled.

A change counts only when it is both significant (Welch's t-test on the per-batch
values, p < 0.05) and larger than the threshold. Per-batch values come from
``results.time_data``: the batch times themselves for ``results.time*`` metrics, the
per-batch throughput ``exp.effective_batch * 1000 / t`` for ``results.throughput``.
Which way is better is the metric's declared direction (``dlbench help --results``,
column ``better``): a falling MFU or a rising latency is "slower". Consecutive
batches are autocorrelated (clocks, caches, the allocator), so the
effective sample size is smaller than the number of batches and the p-values are
optimistic; the threshold is what keeps that from flagging noise.

A direction is only as good as its inputs: a change that would be "faster" or
"slower" is **inconclusive** instead when a side has too few values to test (no
p-value), or when a record of either side was judged unstable by the worker
(``results.stable`` false) for a bias: contention from other processes, throttled
clocks, visible warm-up, processes that disagree, too few batches
(:mod:`dlbench.results.noise` reads that verdict, never re-decides it). A t-test
sees the spread within each side, not contention that differed between the two
runs, which can move a mean many times over. A record unstable only for its spread
(a coefficient of variation above ``exp.cv_threshold``) keeps the direction: that
spread is the variance the test already weighs. Each row carries both sides' flags,
whatever its verdict, and, when inconclusive, why.

Where a configuration was profiled on both sides (``results.profile.top_ops``), its
row also carries its operators' self time per step in A and B, matched by name
(:func:`dlbench.report.operators.compare_operators`); they get no verdict.

Example::

    comparison = compare_records(load_records(["old"]), load_records(["new"]),
                                 metric="results.throughput", threshold=0.05)
    comparison.has_regression()  # any configuration significantly slower
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.config.identity import identity_parameters
from dlbench.errors import CompareError as CompareError  # importable here too, where it began
from dlbench.errors import ResultsError
from dlbench.report.aggregate import ENVIRONMENT_KEYS
from dlbench.report.compare.paired import is_batch_time_statistic, paired_ratio, paired_values
from dlbench.report.operators import OperatorChange, compare_operators, operator_bases
from dlbench.results.keys.lookup import higher_is_better as declared_higher_is_better
from dlbench.results.noise import Noise, record_noise
from dlbench.results.stats import mean
from dlbench.results.values import is_number as _is_number

#: Significance level of the test behind a verdict.
ALPHA = 0.05
VERDICTS = ("faster", "slower", "unchanged", "inconclusive")
#: Fewest values a side needs for a test.
MIN_VALUES = 2
_THRESHOLD_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*$")


@dataclass
class ConfigComparison:
    """One configuration present on both sides.

    ``a`` and ``b`` are the metric's mean over the side's records; ``ratio`` is
    ``b / a``; ``p_value`` is None when a side has fewer than two values to test.
    ``operators``: when both sides were profiled, each operator's self time per step
    in A and B (:func:`dlbench.report.operators.compare_operators`), else None.
    ``noise_a`` and ``noise_b``: the sides' stability flags (:mod:`dlbench.results.noise`);
    ``why``: why the verdict is ``inconclusive``, empty otherwise.
    """

    config: dict[str, Any]
    a: float
    b: float
    ratio: float
    p_value: float | None
    verdict: str
    n_a: int
    n_b: int
    operators: list[OperatorChange] | None = None
    noise_a: Noise = field(default_factory=lambda: record_noise([]))
    noise_b: Noise = field(default_factory=lambda: record_noise([]))
    why: list[str] = field(default_factory=list)

    def flags(self) -> str:
        """Both sides' flags for a table cell: ``A: contention; B: unstable 1/2``,
        ``-`` when neither side is flagged."""
        parts = [f"{side}: {', '.join(noise.flags())}"
                 for side, noise in (("A", self.noise_a), ("B", self.noise_b))
                 if noise.flagged]
        return "; ".join(parts) or "-"

    @property
    def change_pct(self) -> float:
        """``(ratio - 1) * 100``."""
        return (self.ratio - 1.0) * 100.0


@dataclass
class Comparison:
    """Everything :func:`compare_records` found; formatted by
    :func:`dlbench.report.compare.formatting.format_comparison`."""

    metric: str
    higher_is_better: bool
    threshold: float
    columns: list[str]
    rows: list[ConfigComparison]
    differing: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    only_a: list[dict[str, Any]] = field(default_factory=list)
    only_b: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many configurations got each verdict."""
        return {v: sum(1 for row in self.rows if row.verdict == v) for v in VERDICTS}

    def geometric_mean(self) -> float:
        """The geometric mean of the ratios B/A (rows always exist)."""
        return math.exp(mean([math.log(row.ratio) for row in self.rows]))

    def has_regression(self) -> bool:
        """Whether some configuration is conclusively slower: significantly, beyond the
        threshold, on inputs that support a direction."""
        return any(row.verdict == "slower" for row in self.rows)

    def has_inconclusive(self) -> bool:
        """Whether some configuration's change could not be given a direction."""
        return any(row.verdict == "inconclusive" for row in self.rows)

    def flagged(self) -> bool:
        """Whether some row has a side flagged unstable."""
        return any(row.noise_a.flagged or row.noise_b.flagged for row in self.rows)


def parse_threshold(text: str) -> float:
    """``"5%"`` or ``"0.05"`` → 0.05; anything else raises ``CompareError``.

    A bare number must be a fraction below 1, so ``5`` (500 %? 5 %?) is refused.
    """
    found = _THRESHOLD_RE.match(text)
    value = float(found.group(1)) / (100.0 if found.group(2) else 1.0) if found else math.nan
    if not 0.0 <= value < 1.0:
        raise CompareError(
            f"--threshold {text!r}: expected a percentage such as 5% or a fraction such as "
            "0.05 (from 0 to below 100%)"
        )
    return value


def _key(value: Any) -> str:
    if _is_number(value) and float(value).is_integer():
        return json.dumps(float(value))  # 1 and 1.0 are one value (CSV round trips)
    return json.dumps(value, sort_keys=True)


def value_text(value: Any) -> str:
    """A parameter's value as text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def shown_value(value: Any) -> str:
    """A value for people: ``-`` where the parameter is absent."""
    return "-" if value is None else value_text(value)


def _constant(records: Sequence[Mapping[str, Any]], name: str) -> bool:
    return len({_key(r.get(name)) for r in records}) == 1


def _batch_values(record: Mapping[str, Any], metric: str) -> list[float] | None:
    """The record's per-batch values of ``metric``, or None when it has none."""
    times = record.get("results.time_data")
    if not isinstance(times, list) or not times or not all(_is_number(t) for t in times):
        return None
    if is_batch_time_statistic(metric):
        return [float(t) for t in times]
    batch = record.get("exp.effective_batch")
    if metric == "results.throughput" and _is_number(batch) and all(t > 0 for t in times):
        return [float(batch) * 1000.0 / t for t in times]
    return None


def _samples(records: Sequence[Mapping[str, Any]], metric: str) -> list[float]:
    """Values to test: every batch of every record, or else one value per record."""
    batches = [_batch_values(r, metric) for r in records]
    if all(b is not None for b in batches):
        return [value for b in batches if b is not None for value in b]
    return [float(r[metric]) for r in records]


def welch_p_value(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided p-value of Welch's t-test that ``a`` and ``b`` have the same mean.

    None with fewer than two values on a side. When neither side varies, the test is
    undefined: 1.0 if the means are equal, else 0.0.
    """
    if len(a) < 2 or len(b) < 2:
        return None
    if len(set(a)) == 1 and len(set(b)) == 1:  # no spread on either side
        return 1.0 if a[0] == b[0] else 0.0
    from scipy import stats  # type: ignore[import-untyped]  # costly import; only here

    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)


def verdict(ratio: float, p_value: float | None, threshold: float, higher_better: bool,
            doubts: Sequence[str] = ()) -> str:
    """``faster``, ``slower``, ``unchanged`` or ``inconclusive`` for a ratio B/A.

    A change counts when ``|ratio - 1| > threshold`` and, where a p-value exists,
    ``p < ALPHA``. Such a change is ``inconclusive`` when there is no p-value (too
    few values to test) or ``doubts`` (:func:`doubts_of`) says why its inputs cannot
    support a direction; ``unchanged`` stays ``unchanged``.
    """
    significant = p_value is None or p_value < ALPHA
    if not significant or abs(ratio - 1.0) <= threshold:
        return "unchanged"
    if p_value is None or doubts:
        return "inconclusive"
    return "faster" if (ratio > 1.0) == higher_better else "slower"


def doubts_of(noise_a: Noise, noise_b: Noise, values: tuple[int, int] | None = None
              ) -> list[str]:
    """Why a change between two sides cannot be given a direction: a side's records
    unstable for a bias (:attr:`~dlbench.results.noise.Noise.biased`), and, with
    ``values`` (how many values each side has to test), too few of them."""
    doubts = []
    if values is not None and min(values) < MIN_VALUES:
        doubts.append(f"too few values to test (A {values[0]}, B {values[1]}; "
                      f"{MIN_VALUES} a side needed)")
    for side, noise in (("A", noise_a), ("B", noise_b)):
        if noise.biased:
            doubts.append(f"{side}: {noise.describe()}")
    return doubts


def _environment_warning(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for name in ENVIRONMENT_KEYS:
        in_a = sorted({value_text(r[name]) for r in a if name in r})
        in_b = sorted({value_text(r[name]) for r in b if name in r})
        if in_a != in_b:
            parts.append(f"{name} (A: {', '.join(in_a) or '-'}; B: {', '.join(in_b) or '-'})")
    return "A and B ran in different environments: " + "; ".join(parts) if parts else ""


def _usable(records: Sequence[Mapping[str, Any]], side: str, metric: str,
            warnings: list[str]) -> list[Mapping[str, Any]]:
    ok = [r for r in records if r.get("exp.status") == "ok"]
    if len(ok) < len(records):
        warnings.append(f"{side}: {len(records) - len(ok)} record(s) not ok left out")
    usable = [r for r in ok if _is_number(r.get(metric)) and r[metric] != 0]
    if len(usable) < len(ok):
        warnings.append(f"{side}: {len(ok) - len(usable)} ok record(s) without {metric} left out")
    if not usable:
        raise ResultsError(f"{side} has no ok record with a (non-zero) {metric}")
    return usable


def _label_columns(
    records: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> list[str]:
    varying = [n for n in names if not _constant(records, n)]
    if varying:
        return varying
    # Only one configuration: name it by what it ran.
    return [n for n in ("exp.framework", "exp.model", "exp.phase") if n in records[0]]


def _nothing_in_common(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]],
                       key_names: Sequence[str], differing: Sequence[str]) -> str:
    """Why no configuration matched: the key parameters whose values differ."""
    apart = []
    for name in key_names:
        in_a = {_key(r.get(name)): shown_value(r.get(name)) for r in a}
        in_b = {_key(r.get(name)): shown_value(r.get(name)) for r in b}
        if in_a.keys() != in_b.keys():
            apart.append(f"{name} (A: {', '.join(in_a.values())}; B: {', '.join(in_b.values())})")
    return (
        "no configuration is present in both A and B; values that differ: "
        + "; ".join(apart[:5])
        + (f" (set apart as the thing compared: {', '.join(differing)})" if differing else "")
    )


def compare_records(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    *,
    metric: str = "results.throughput",
    threshold: float = 0.05,
    higher_is_better: bool | None = None,
) -> Comparison:
    """Compare the configurations of ``b`` with the same configurations in ``a``.

    Which way ``metric`` improves is its key's declared direction unless
    ``higher_is_better`` says otherwise; a key without one raises ``MetricError``.
    Only records with ``exp.status`` ok and a numeric ``metric`` count (the others are
    listed in ``warnings``). Raises ``ResultsError`` when a side has no such record or
    no configuration is present on both sides. See the module docstring for how
    configurations are matched and verdicts reached.
    """
    higher = declared_higher_is_better(metric, higher_is_better)
    warnings: list[str] = []
    a_ok, b_ok = _usable(a, "A", metric, warnings), _usable(b, "B", metric, warnings)
    # Asked now, not at import: a framework registered since brings its parameters.
    present = {name for record in [*a_ok, *b_ok] for name in record}
    differing = {
        name: (a_ok[0].get(name), b_ok[0].get(name))
        for name in identity_parameters(present)
        if _constant(a_ok, name) and _constant(b_ok, name)
        and _key(a_ok[0].get(name)) != _key(b_ok[0].get(name))
    }
    # One configuration: the same identity on both sides, less what is compared.
    key_names = identity_parameters(present, exclude=differing)
    columns = _label_columns([*a_ok, *b_ok], key_names)

    def group(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for record in records:
            groups.setdefault(_key([record.get(n) for n in key_names]), []).append(record)
        return groups

    def label(record: Mapping[str, Any]) -> dict[str, Any]:
        return {name: record.get(name) for name in columns}

    groups_a, groups_b = group(a_ok), group(b_ok)
    rows = []
    paired = 0
    for key, side_a in groups_a.items():
        side_b = groups_b.get(key)
        if side_b is None:
            continue
        mean_a = mean([float(r[metric]) for r in side_a])
        mean_b = mean([float(r[metric]) for r in side_b])
        ratio = mean_b / mean_a
        pairs = paired_values(side_a, side_b, metric)
        if pairs is None:
            samples = _samples(side_a, metric), _samples(side_b, metric)
            p = welch_p_value(*samples)
        else:  # interleaved processes, compared pair by pair (report.compare.paired)
            samples = pairs
            ratio, p = paired_ratio(*pairs)
            paired += 1
        noise_a, noise_b = record_noise(side_a), record_noise(side_b)
        doubts = doubts_of(noise_a, noise_b, (len(samples[0]), len(samples[1])))
        decided = verdict(ratio, p, threshold, higher, doubts)
        rows.append(ConfigComparison(
            config=label(side_a[0]), a=mean_a, b=mean_b, ratio=ratio, p_value=p,
            verdict=decided, n_a=len(side_a), n_b=len(side_b),
            operators=compare_operators(side_a, side_b), noise_a=noise_a, noise_b=noise_b,
            why=doubts if decided == "inconclusive" else []))
    if not rows:
        raise ResultsError(_nothing_in_common(a_ok, b_ok, key_names, list(differing)))
    environment = _environment_warning(a_ok, b_ok)
    notes = []
    if paired:
        notes.append(f"{paired} configuration(s) ran interleaved: ratio and p-value from "
                     "the processes pair by pair (median batch time of each)")
    if any(row.p_value is None for row in rows):
        notes.append("p-value '-': too few values to test; a change beyond the threshold "
                     "is inconclusive")
    if any(row.operators for row in rows):
        bases_a, bases_b = operator_bases(a_ok), operator_bases(b_ok)
        if bases_a != bases_b:
            warnings.append(f"operator times are {'/'.join(bases_a)} time in A and "
                            f"{'/'.join(bases_b)} time in B: their changes mix the two")
    return Comparison(
        metric=metric, higher_is_better=higher, threshold=threshold,
        columns=columns, rows=rows, differing=differing,
        only_a=[label(g[0]) for k, g in groups_a.items() if k not in groups_b],
        only_b=[label(g[0]) for k, g in groups_b.items() if k not in groups_a],
        warnings=[*([environment] if environment else []), *warnings], notes=notes,
    )
