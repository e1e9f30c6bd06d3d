"""The three verdicts of Mila's training-benchmark report, from per-benchmark figures.

Mila's ``mlbench-report`` judges a machine on a suite of benchmarks, each run
several times, against one target per benchmark. Of each benchmark's values (one
per GPU report: each GPU of each run, items/s; see :mod:`dlbench.report.scorecard.gpu_reports`):

- result: the mean of the values without the best and the worst one (four or more;
  with fewer nothing is dropped);
- sd: the sample standard deviation (n - 1) of *all* the values, extremes included;
- sd% = sd / result; diff = result / target - 1.

Then three verdicts over the suite:

- Bench Passes: every benchmark of the suite is present with a result;
- Deviation Quantile (80%): the 80% quantile of sd% over the benchmarks (linear
  interpolation, pandas' and numpy's default), which passes *below* the stability
  threshold (5%);
- Performance: the mean of diff over the benchmarks, which passes at >= 0.

dlbench keeps sd% and diff in percent (mlbench-report printed the fractions, its
"+0.2129 %" being a mean diff of +21.29%). Where lower is better (a time), the
performance averages -diff, so that >= 0 still means "at or better than target".

Example::

    stats = run_statistics([99.0, 100.0, 101.0, 104.0])  # result 100.5, sd 2.16
    verdicts = mila_verdicts([Figures(stats.result, stats.sd, target=95.0)])
    verdicts.passed  # True: present, sd% 2.15 < 5, diff +5.79% >= 0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dlbench.report.aggregate import summarize, trim_extremes
from dlbench.results.stats import percentile

#: The quantile of sd% the stability verdict looks at.
QUANTILE = 0.8


@dataclass(frozen=True)
class RunStatistics:
    """What a benchmark's runs amount to: Mila's result and sd, and how many runs."""

    result: float
    sd: float | None  # None for a single run
    runs: int


def run_statistics(values: Sequence[float]) -> RunStatistics:
    """Result (mean without the best and the worst of four or more runs) and sd
    (sample sd of every run) of one benchmark's run values.

    ``run_statistics([90, 100, 101, 102, 130])``: result (100 + 101 + 102) / 3 = 101,
    sd of all five = 14.3. ``ValueError`` when empty.
    """
    every = summarize(values)
    return RunStatistics(float(summarize(trim_extremes(values))), every.sd, every.n)


@dataclass(frozen=True)
class Figures:
    """One benchmark as the verdicts see it: its result and sd (None when it has no
    result: missing or failed), its target and the direction of its metric."""

    result: float | None
    sd: float | None
    target: float
    higher_is_better: bool = True

    @property
    def sd_percent(self) -> float | None:
        """100 * sd / result."""
        if self.sd is None or not self.result:
            return None
        return 100.0 * self.sd / abs(self.result)

    @property
    def diff_percent(self) -> float | None:
        """100 * (result / target - 1)."""
        return None if self.result is None else 100.0 * (self.result / self.target - 1)

    @property
    def gain_percent(self) -> float | None:
        """diff% where higher is better, -diff% where lower is better."""
        diff = self.diff_percent
        return None if diff is None else (diff if self.higher_is_better else -diff)


@dataclass(frozen=True)
class Verdicts:
    """Mila's three verdicts over a suite; percentages are in percent."""

    present: int
    expected: int
    deviation_quantile: float | None  # None when no benchmark has an sd
    performance: float | None  # mean gain%, None when no benchmark has a result
    stability_threshold: float  # percent

    @property
    def bench_passes(self) -> bool:
        """Every benchmark present with a result."""
        return self.present == self.expected

    @property
    def stable(self) -> bool:
        """The sd% quantile is below the threshold (true when there is no sd at all:
        nothing measured twice, nothing to call unstable)."""
        return self.deviation_quantile is None or \
            self.deviation_quantile < self.stability_threshold

    @property
    def performs(self) -> bool:
        """The mean gain is at least 0."""
        return self.performance is not None and self.performance >= 0

    @property
    def passed(self) -> bool:
        """All three verdicts pass."""
        return self.bench_passes and self.stable and self.performs


def mila_verdicts(figures: Sequence[Figures], stability_threshold: float = 0.05) -> Verdicts:
    """The three verdicts of ``figures`` (one per benchmark of the suite, present or
    not); ``stability_threshold`` is a fraction (0.05 = 5%).

    The quantile is over the benchmarks that have an sd (two runs or more), the
    mean over those with a result.
    """
    spreads = [p for f in figures if (p := f.sd_percent) is not None]
    gains = [g for f in figures if (g := f.gain_percent) is not None]
    return Verdicts(
        present=sum(f.result is not None for f in figures),
        expected=len(figures),
        deviation_quantile=percentile(spreads, 100 * QUANTILE) if spreads else None,
        performance=math.fsum(gains) / len(gains) if gains else None,
        stability_threshold=100.0 * stability_threshold,
    )
