"""A scorecard against a baseline, in the manner of Mila's training benchmarks.

The baseline (:mod:`dlbench.report.scorecard.baseline`) lists benchmarks, each a query and a
target. Per benchmark, of the runs its query selects (exp.status ok, a number in
the metric), as Mila's ``mlbench-report`` computes them (:mod:`dlbench.report.scorecard.verdicts`):
the result is the mean of their values without the best and the worst (four or more),
sd the sample sd of all of them, sd% = 100 * sd / result, diff% = 100 * (result /
target - 1). A value is one GPU's, as Mila's reports were: a run of N copies on one
node (``exp.parallel_jobs``) gives N values, each copy's own
(:mod:`dlbench.report.scorecard.gpu_reports`), not the node's sum. Each benchmark needs
``min_runs`` runs (4 by default, as Mila's): fewer is an error, not a verdict.

The verdict is Mila's: Bench Passes (every benchmark present), Deviation Quantile
(the 80% quantile of sd% below the stability threshold) and Performance (the mean
diff% >= 0). Beside them, informational: whether each benchmark is within its
tolerance (result >= target * (1 - tolerance), or <= target * (1 + tolerance) when
lower is better), the score, the weighted geometric mean of r = result / target
(target / result when lower is better) with a missing or failed benchmark counting
r = missing_penalty, ``score = exp(sum(w * ln r) / sum(w))``, and Mila's ``train_item``
of each GPU report, from its batch times (avg, min, max and range, averaged over the
reports).

The overall verdict is **INCONCLUSIVE** instead of PASS or FAIL when every
benchmark is present but some of the runs behind them were judged unstable by the
worker for a bias (``results.stable`` false: contention from other processes,
throttled clocks, visible warm-up; read through :mod:`dlbench.results.noise`): a
result from such runs says more about the machine's neighbours than about the
machine. A spread alone is Mila's own Deviation Quantile's to judge. A missing or
failed benchmark is a FAIL whatever the others' runs were.

The report (:class:`ScorecardReport`) also says, for a CI gate, whether the verdict
passed and which benchmarks missed their target (missing, failed, or outside their
tolerance): ``dlbench report --type scorecard --fail-on-miss`` exits 1 on those.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.errors import ResultsError
from dlbench.report.aggregate import (
    MAX_NAMED,
    SEPARATE_BY,
    LabeledTable,
    as_number,
    environment_warning,
    identity_candidates,
)
from dlbench.report.cells import Report
from dlbench.report.registry import ReportOptions, ReportType
from dlbench.report.scorecard.baseline import Baseline, Benchmark, load_baseline
from dlbench.report.scorecard.gpu_reports import THROUGHPUT, TrainItem, copy_values, train_items
from dlbench.report.scorecard.verdicts import (
    QUANTILE,
    Figures,
    Verdicts,
    mila_verdicts,
    run_statistics,
)
from dlbench.results.noise import Noise, record_noise
from dlbench.results.query import filter_records
from dlbench.results.stats import mean_or_none


@dataclass
class BenchmarkResult:
    """How one benchmark of a baseline fared."""

    benchmark: Benchmark
    metric: str
    status: str  # ok, MISSING (no record matches) or FAILED (none usable)
    ratio: float  # result / target, better-is-larger; the penalty when no result
    higher_is_better: bool = True
    within_tolerance: bool | None = None  # None without a result
    runs: int = 0
    reports: int = 0  # one per copy of each run (Mila's one report per GPU)
    result: float | None = None
    sd: float | None = None
    throughputs: tuple[float, ...] = ()  # each report's items/s (train_item avg)
    train_items: tuple[TrainItem, ...] = ()  # each report's with batch times
    why: str = ""
    noise: Noise = field(default_factory=lambda: record_noise([]))  # of the runs used

    @property
    def figures(self) -> Figures:
        """What the verdicts need of this benchmark."""
        return Figures(self.result, self.sd, self.benchmark.target, self.higher_is_better)

    @property
    def sd_percent(self) -> float | None:
        """100 * sd / result."""
        return self.figures.sd_percent

    @property
    def diff_percent(self) -> float | None:
        """100 * (result / target - 1)."""
        return self.figures.diff_percent


@dataclass
class ScorecardReport(Report):
    """A scorecard: its tables, and what a CI gate needs: ``passed``, whether the
    overall verdict is not a conclusive FAIL (Mila's three verdicts passed, or the runs
    cannot support a verdict); ``inconclusive``, why it is INCONCLUSIVE (each
    benchmark with unstable runs), empty when it is PASS or FAIL; and ``missed``, each
    benchmark that missed its target (``name: why``)."""

    passed: bool = False
    missed: list[str] = field(default_factory=list)
    inconclusive: list[str] = field(default_factory=list)


def missed_target(result: BenchmarkResult, tolerance: float) -> str | None:
    """Why ``result`` missed its target: no result (MISSING, FAILED) or outside its
    tolerance; None when it met it."""
    if result.status != "ok":
        return f"{result.benchmark.name}: {result.status}"
    if result.within_tolerance is False:
        return (f"{result.benchmark.name}: diff {result.diff_percent:+.1f}%, outside the "
                f"tolerance of {_pct(tolerance)}")
    return None


def weighted_score(results: Sequence[BenchmarkResult]) -> float | None:
    """``exp(sum(w * ln r) / sum(w))`` over the benchmarks; None when weights sum to 0."""
    total = math.fsum(r.benchmark.weight for r in results)
    if total == 0:
        return None
    return math.exp(math.fsum(r.benchmark.weight * math.log(r.ratio) for r in results) / total)


def _too_few_runs(short: list[tuple[str, int]], baseline: Baseline) -> ResultsError:
    named = ", ".join(f"{name} ({runs})" for name, runs in short[:MAX_NAMED])
    more = f" and {len(short) - MAX_NAMED} more" if len(short) > MAX_NAMED else ""
    return ResultsError(
        f"the scorecard needs at least {baseline.min_runs} runs of each benchmark; "
        f"{len(short)} have fewer: {named}{more} (repeat the sweep, e.g. "
        f"-V 'user.run=[1,2,3,4]', or lower min_runs in the baseline)")


def evaluate(
    records: Sequence[dict[str, Any]], baseline: Baseline
) -> tuple[list[BenchmarkResult], list[str]]:
    """Each benchmark's result against its target, and warnings (a query that
    selects several configurations, whose runs are then averaged as one).

    ``ResultsError`` when a benchmark has some runs but fewer than
    ``baseline.min_runs``.
    """
    results: list[BenchmarkResult] = []
    warnings: list[str] = []
    short: list[tuple[str, int]] = []
    penalty = baseline.missing_penalty
    for bench in baseline.benchmarks:
        metric = baseline.metric_of(bench)
        better = baseline.higher_is_better_of(bench)
        matched = filter_records(records, bench.query)
        ok = [r for r in matched if r.get("exp.status") == "ok" and as_number(r.get(metric))
              is not None]
        if not ok:
            status = "FAILED" if matched else "MISSING"
            why = (f"{len(matched)} record(s) match, none with exp.status ok and a numeric "
                   f"{metric}") if matched else "no record matches the query"
            results.append(BenchmarkResult(bench, metric, status, penalty, better, why=why))
            continue
        if len(ok) < baseline.min_runs:
            short.append((bench.name, len(ok)))
            continue
        # One value per GPU report: each copy of a run, as Mila's report averaged them.
        stats = run_statistics([v for r in ok for v in copy_values(r, metric)])
        result, tolerance = stats.result, baseline.tolerance_of(bench)
        within = (result >= bench.target * (1 - tolerance) if better
                  else result <= bench.target * (1 + tolerance))
        ratio = result / bench.target if better else (bench.target / result if result else 0.0)
        throughputs, items = _throughputs(ok)
        results.append(BenchmarkResult(
            bench, metric, "ok", ratio if ratio > 0 else penalty, better, within,
            len(ok), stats.runs, result, stats.sd, throughputs, items,
            noise=record_noise(ok)))
        spread = [k for k in [*SEPARATE_BY, *identity_candidates(ok, SEPARATE_BY)]
                  if len({json.dumps(r.get(k), sort_keys=True) for r in ok}) > 1]
        if spread:
            warnings.append(f"benchmark {bench.name} selects runs that differ in "
                            f"{', '.join(spread)}; they are averaged as one benchmark")
    if short:
        raise _too_few_runs(short, baseline)
    return results, warnings


def _throughputs(
    runs: Sequence[dict[str, Any]]
) -> tuple[tuple[float, ...], tuple[TrainItem, ...]]:
    """Each GPU report's items/s (its ``train_item`` avg, or its own throughput where
    the run keeps no batch times) and the ``train_item`` of those with batch times."""
    rates: list[float] = []
    items: list[TrainItem] = []
    for run in runs:
        own = train_items(run)
        items += own
        rates += [t.avg for t in own] if own else copy_values(run, THROUGHPUT)
    return tuple(rates), tuple(items)


def _pct(value: float) -> str:
    return f"{100 * value:g}%"


def _benchmark_table(results: list[BenchmarkResult], baseline: Baseline) -> LabeledTable:
    metrics = list(dict.fromkeys(r.metric for r in results))
    labels = ["benchmark", "metric"] if len(metrics) > 1 else ["benchmark"]
    directions = sorted({
        ">= target * (1 - tolerance)" if r.higher_is_better
        else "<= target * (1 + tolerance)" for r in results
    })
    tolerances = sorted({baseline.tolerance_of(r.benchmark) for r in results})
    return LabeledTable(
        title=f"Benchmarks ({metrics[0]})" if len(metrics) == 1 else "Benchmarks",
        columns=[*labels, "target", "result", "sd", "sd%", "diff%", "runs", "tolerance",
                 "status"],
        rows=[
            [r.benchmark.name, *([r.metric] if len(metrics) > 1 else []), r.benchmark.target,
             r.result, r.sd, r.sd_percent, r.diff_percent, r.runs,
             None if r.within_tolerance is None else _verdict(r.within_tolerance), r.status]
            for r in results
        ],
        notes=[
            "result: mean of the runs' values, without the best and the worst when there "
            "are 4 or more; sd: sample sd of all of them; sd% = 100 * sd / result; diff% = "
            "100 * (result / target - 1)",
            "a value is one GPU's, as Mila's reports: a run of N copies "
            "(exp.parallel_jobs) gives N, each copy's own (results.copy_*), not the "
            "node's sum",
            f"tolerance (informational): PASS when result {' or '.join(directions)}, "
            f"tolerance {', '.join(_pct(t) for t in tolerances)}",
            "status: MISSING when no record matches the query, FAILED when none has "
            "exp.status ok and the metric",
            *(f"{r.benchmark.name}: {r.why}" for r in results if r.why),
        ],
        label_columns=len(labels),
    )


def _throughput_table(results: list[BenchmarkResult]) -> LabeledTable:
    rows: list[list[Any]] = []
    for r in results:
        items = r.train_items
        rows.append([r.benchmark.name, r.runs or None, len(r.throughputs) or None,
                     mean_or_none(r.throughputs), mean_or_none([t.min for t in items]),
                     mean_or_none([t.max for t in items]), mean_or_none([t.range for t in items])])
    return LabeledTable(
        title="Throughput per GPU report, items/s (Mila's train_item)",
        columns=["benchmark", "runs", "reports", "avg", "min", "max", "range"],
        rows=rows,
        notes=["reports: one per GPU, each copy of each run (exp.parallel_jobs), from "
               "the copy's own batches, not the node's sum",
               "per report, over its timed batches (results.time_data, warm-up "
               f"dropped), items = what one step processes ({THROUGHPUT} x results.time "
               "/ 1000): avg = items / mean batch time, max = items / shortest, min = "
               "items / longest, range = max - min; the row is the mean over the reports"],
    )


def _summary_table(verdicts: Verdicts, results: list[BenchmarkResult],
                   baseline: Baseline) -> LabeledTable:
    threshold = f"< {_pct(baseline.stability_threshold)}"
    within = sum(r.within_tolerance is True for r in results)
    score = weighted_score(results)
    lower = any(not r.higher_is_better for r in results)
    inverse = " (target / result where lower is better)" if lower else ""
    flipped = " (-diff% where lower is better)" if lower else ""
    quantile_pass = "n/a" if verdicts.deviation_quantile is None else _truth(verdicts.stable)
    return LabeledTable(
        title="Summary",
        columns=["statistic", "value", "required", "pass"],
        rows=[
            ["Bench Passes", verdicts.present, verdicts.expected,
             _truth(verdicts.bench_passes)],
            [f"Deviation Quantile ({QUANTILE:.0%})", verdicts.deviation_quantile, threshold,
             quantile_pass],
            ["Performance", verdicts.performance, ">= 0", _truth(verdicts.performs)],
            ["within tolerance", within, verdicts.expected, None],
            ["score", score, None, None],
        ],
        notes=[
            "Bench Passes: benchmarks present with a result, of those in the baseline",
            f"Deviation Quantile: the {QUANTILE:.0%} quantile of sd% over the benchmarks "
            f"with 2 or more runs (linear interpolation); passes when {threshold}",
            f"Performance: the mean diff%{flipped}; passes when >= 0",
            "within tolerance and score are informational: the verdict is the three above",
            f"score = exp(sum(w * ln r) / sum(w)), r = result / target{inverse}; a MISSING "
            f"or FAILED benchmark counts r = {baseline.missing_penalty:g}",
        ],
        floatfmt="{:.4f}",
        label_columns=1,
    )


def scorecard_report(
    records: Sequence[dict[str, Any]], baseline: Baseline, source: str = "the baseline"
) -> ScorecardReport:
    """The scorecard of ``records`` against ``baseline``: a table of benchmarks, the
    throughput of their runs, Mila's three verdicts with the informational
    statistics, and an overall verdict (PASS when all three verdicts pass)."""
    results, warnings = evaluate(records, baseline)
    differs = environment_warning([r for r in records if r.get("exp.status") == "ok"])
    if differs:
        warnings.append(differs)
    verdicts = mila_verdicts([r.figures for r in results], baseline.stability_threshold)
    reasons = [f"{verdicts.expected - verdicts.present} missing or failed"] \
        if not verdicts.bench_passes else []
    reasons += [] if verdicts.stable else ["unstable"]
    if verdicts.performance is not None and not verdicts.performs:
        reasons.append(f"performance {verdicts.performance:+.2f}% below target")
    doubts = [f"{r.benchmark.name}: {r.noise.describe()}" for r in results if r.noise.biased]
    inconclusive = doubts if verdicts.bench_passes else []
    if inconclusive:
        verdict = f"INCONCLUSIVE ({' | '.join(inconclusive)})"
    else:
        verdict = "PASS" if verdicts.passed else f"FAIL ({', '.join(reasons)})"
    score = weighted_score(results)
    missed = [why for r in results
              if (why := missed_target(r, baseline.tolerance_of(r.benchmark))) is not None]
    return ScorecardReport(
        title=f"Scorecard against {source}",
        tables=[_benchmark_table(results, baseline), _throughput_table(results),
                _summary_table(verdicts, results, baseline)],
        warnings=warnings,
        summary=[f"Overall: {verdict}" + (f"; score {score:.4f}" if score is not None else "")],
        passed=verdicts.passed or bool(inconclusive),
        missed=missed,
        inconclusive=inconclusive,
    )


class Scorecard(ReportType):
    """``dlbench report --type scorecard --baseline FILE``."""

    uses_baseline = True

    def build(self, records: Sequence[dict[str, Any]], options: ReportOptions) -> Report:
        """The scorecard of ``records`` against the baseline file of ``options``."""
        assert options.baseline is not None  # the command line insists on one
        return scorecard_report(records, load_baseline(options.baseline), source=options.baseline)


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _truth(passed: bool) -> str:
    # Mila's report prints True and False; a reader comparing the two sees the same.
    return "True" if passed else "False"
