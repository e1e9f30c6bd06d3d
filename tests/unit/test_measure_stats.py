"""Statistics against vectors worked out by hand: the summary, and repeats."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dlbench.measure.combine import combine_repeats
from dlbench.results.stats import (
    ci95_half_width,
    median_ci95_half_width,
    sample_std,
    summarize_times,
    throughput,
    throughput_batch_mean,
)


def test_summary_of_five_times_by_hand() -> None:
    # [2, 4, 4, 4, 10]: mean 24/5 = 4.8; deviations -2.8, -0.8 x3, 5.2;
    # squares 7.84 + 3*0.64 + 27.04 = 36.8; sd = sqrt(36.8/4) = sqrt(9.2).
    # p90 at rank 0.9*4 = 3.6 -> 4 + 0.6*(10-4) = 7.6; p95 rank 3.8 -> 8.8;
    # p99 rank 3.96 -> 9.76. ci: n=5 -> 2 groups of 2 ([2,4], [4,4]; 10 left out),
    # means 3 and 4, sd = sqrt(0.5), t(1) = 12.706 -> 12.706 * sqrt(0.5) / sqrt(2) = 6.353.
    s = summarize_times([2.0, 4.0, 4.0, 4.0, 10.0])
    assert s["results.time"] == pytest.approx(4.8)
    assert s["results.time_std"] == pytest.approx(math.sqrt(9.2))
    assert s["results.time_cv"] == pytest.approx(math.sqrt(9.2) / 4.8)
    assert s["results.time_p50"] == 4.0
    assert s["results.time_p90"] == pytest.approx(7.6)
    assert s["results.time_p95"] == pytest.approx(8.8)
    assert s["results.time_p99"] == pytest.approx(9.76)
    assert s["results.ci95"] == pytest.approx(6.353)


def test_two_means_of_throughput_by_hand() -> None:
    # batch 8 at 4, 5 and 8 ms: per-batch throughputs 2000, 1600 and 1000 samples/s,
    # their mean 4600 / 3 = 1533.33...; the mean time is 17 / 3 ms, and
    # results.throughput = 8 * 1000 / (17 / 3) = 24000 / 17 = 1411.76...
    times = [4.0, 5.0, 8.0]
    assert throughput_batch_mean(8, times) == pytest.approx(4600 / 3)
    assert throughput(8, sum(times) / 3) == pytest.approx(24000 / 17)
    # equal batch times: both are the same
    assert throughput_batch_mean(8, [4.0, 4.0]) == pytest.approx(2000.0)


@pytest.mark.parametrize("times", [[], [4.0, 0.0], [-1.0]])
def test_throughput_batch_mean_refuses_no_or_non_positive_times(times: list[float]) -> None:
    with pytest.raises(ValueError):
        throughput_batch_mean(8, times)


def _process(times: list[float], **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = dict(summarize_times(times))
    record.update({"results.time_data": times, "results.num_batches": len(times),
                   "results.num_warmup_batches": 2, "results.stop_reason": "fixed",
                   "results.throughput_unit": "samples/s"})
    record.update(extra)
    return record


def test_three_processes_combine_by_hand() -> None:
    # Process means 10, 12, 14 -> results.time 12 (mean of means), between sd 2,
    # repeat cv 2/12; ci95 = t(2) * 2 / sqrt(3) = 4.303 * 2 / 1.7320508 = 4.9687.
    # Within-process cvs: sd([9,11]) = sqrt(2), so cvs sqrt(2)/10, sqrt(2)/12, 0.
    # Throughput 16 * 1000 / 10 = 1600 for process 1 -> 1600 * 10 / 12 = 1333.33.
    processes = [
        _process([9.0, 11.0], **{"results.throughput": 1600.0,
                                 "results.use.cpu_percent_mean": 100.0,
                                 "results.use.rss_mb_max": 500.0,
                                 "results.use.energy_j": 10.0,
                                 "results.use.samples_per_joule": 3.0,
                                 "results.use.cpus_available": 2}),
        _process([11.0, 13.0], **{"results.throughput": 16000 / 12,
                                  "results.use.cpu_percent_mean": 50.0,
                                  "results.use.rss_mb_max": 700.0,
                                  "results.use.energy_j": 30.0,
                                  "results.use.samples_per_joule": 1.0,
                                  "results.use.cpus_available": 2}),
        _process([14.0, 14.0], **{"results.throughput": 16000 / 14,
                                  "results.use.cpu_percent_mean": 0.0,
                                  "results.use.rss_mb_max": 600.0,
                                  "results.use.energy_j": 20.0,
                                  "results.use.samples_per_joule": 2.0,
                                  "results.use.cpus_available": 2,
                                  "results.stop_reason": "ci_reached"}),
    ]
    combined = combine_repeats(processes)
    assert combined["results.time"] == pytest.approx(12.0)
    assert combined["results.repeat_times"] == [10.0, 12.0, 14.0]
    assert combined["results.repeat_time_std"] == pytest.approx(2.0)
    assert combined["results.repeat_cv"] == pytest.approx(2.0 / 12.0)
    assert combined["results.ci95"] == pytest.approx(4.303 * 2 / math.sqrt(3))
    assert combined["results.repeat_within_cv"] == pytest.approx(
        (math.sqrt(2) / 10 + math.sqrt(2) / 12 + 0.0) / 3)
    assert combined["results.time_data"] == [9.0, 11.0, 11.0, 13.0, 14.0, 14.0]
    assert combined["results.time_min"] == 9.0 and combined["results.time_max"] == 14.0
    assert combined["results.num_batches"] == 6
    assert combined["results.num_warmup_batches"] == 6
    assert combined["results.repeat_num_batches"] == [2, 2, 2]
    assert combined["results.stop_reason"] == "fixed,ci_reached"
    assert combined["results.throughput"] == pytest.approx(16000 / 12)
    assert combined["results.throughput_unit"] == "samples/s"
    # Monitor summaries: mean of means, max of maxima, sum of energies; samples per
    # joule = (3*10 + 1*30 + 2*20) / 60 = 100 / 60.
    assert combined["results.use.cpu_percent_mean"] == pytest.approx(50.0)
    assert combined["results.use.rss_mb_max"] == 700.0
    assert combined["results.use.energy_j"] == 60.0
    assert combined["results.use.samples_per_joule"] == pytest.approx(100 / 60)
    assert combined["results.use.cpus_available"] == 2


def test_one_process_keeps_its_own_interval() -> None:
    single = _process([1.0, 2.0, 3.0, 4.0])
    combined = combine_repeats([single])
    assert combined["results.time"] == 2.5
    assert combined["results.ci95"] == single["results.ci95"]  # no between-process CI
    assert combined["results.repeat_time_std"] == 0.0
    with pytest.raises(ValueError):
        combine_repeats([])


def test_median_interval_by_batch_medians_by_hand() -> None:
    # n=16 -> 4 groups of 4; group medians 2.5, 3.5, 4.5, 5.5 (the 100 ms outlier is
    # the top of its group and leaves its median at 3.5); sd = sqrt(5/3), t(3) = 3.182
    # -> 3.182 * sqrt(5/3) / 2 = 2.054. The mean's interval swallows the outlier.
    times = [1.0, 2.0, 3.0, 4.0, 2.0, 3.0, 4.0, 100.0, 3.0, 4.0, 5.0, 6.0, 4.0, 5.0, 6.0, 7.0]
    assert median_ci95_half_width(times) == pytest.approx(3.182 * math.sqrt(5 / 3) / 2)
    assert ci95_half_width(times) == pytest.approx(3.182 * sample_std(
        [2.5, 27.25, 4.5, 5.5]) / 2)
    assert median_ci95_half_width(times[:3]) is None
