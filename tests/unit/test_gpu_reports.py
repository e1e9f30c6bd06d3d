"""A record read as Mila's per-GPU reports: each copy's value and Mila's train_item,
against the reports printed in Mila's README and answers worked out by hand from raw
batch times."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dlbench.report.scorecard.baseline import Baseline, Benchmark, make_baseline
from dlbench.report.scorecard.gpu_reports import (
    TrainItem,
    copies_of,
    copy_batch_times,
    copy_values,
    train_item,
    train_items,
)
from dlbench.report.scorecard.scorecard import evaluate, scorecard_report


def _observations(mean_s: float, low_s: float, high_s: float) -> list[float]:
    """Five observations, ms, with this mean, shortest and longest (as the README's
    report, count 5): the other three share what is left of the sum."""
    rest = (5 * mean_s - low_s - high_s) / 3
    return [1000 * t for t in (low_s, rest, high_s, rest, rest)]


def _record(items: float, times_ms: list[float]) -> dict[str, Any]:
    """One process's record: every observation is one timed batch of ``items``."""
    mean_ms = math.fsum(times_ms) / len(times_ms)
    return {"exp.model": "convnet", "exp.phase": "training", "exp.status": "ok",
            "exp.effective_batch": items, "results.time": mean_ms,
            "results.throughput": items * 1000 / mean_ms, "results.time_data": times_ms}


@pytest.mark.parametrize(("items", "train", "expected"), [
    # Mila's README, stdout example: batch 32, number 1; train avg, min, max in s.
    (32, (7.1848473072052, 7.058995008468628, 7.299542665481567),
     (4.4538176848809785, 4.383836284884416, 4.533223208347621, 0.14938692346320526)),
    # Its report example: batch 32, number 5, so 160 items an observation.
    (32 * 5, (10.032922506332397, 9.798663139343262, 10.155806064605713),
     (15.947496843418666, 15.754534793414432, 16.328758089210496, 0.5742232957960631)),
])
def test_train_item_of_the_readme_reports(items: int, train: tuple[float, float, float],
                                          expected: tuple[float, float, float, float]) -> None:
    mean_s, low_s, high_s = train
    item = train_item(items, _observations(mean_s, low_s, high_s))
    # avg = items / mean time, min = items / longest, max = items / shortest
    assert (item.avg, item.min, item.max, item.range) == pytest.approx(expected, rel=1e-12)
    # The same from a record whose batches are those observations: one GPU report.
    (from_record,) = train_items(_record(items, _observations(mean_s, low_s, high_s)))
    assert (from_record.avg, from_record.min, from_record.max) == pytest.approx(
        expected[:3], rel=1e-12)


def _two_copies() -> dict[str, Any]:
    """Two copies of batch 4 that stopped after 3 and 2 batches (an adaptive stop):
    copy 1 took 10, 12 and 14 ms (mean 12), copy 2 8 and 10 ms (mean 9)."""
    return {
        "exp.model": "convnet", "exp.phase": "training", "exp.status": "ok",
        "exp.parallel_jobs": 2, "results.copies": 2,
        "results.time_data": [10.0, 12.0, 14.0, 8.0, 10.0],
        "results.copy_time": [12.0, 9.0], "results.time": 10.5,
        "results.copy_throughput": [4000 / 12, 4000 / 9],
        "results.throughput": 4000 / 12 + 4000 / 9,  # the node's: 777.78
    }


def test_two_copies_are_two_reports_from_their_own_batches() -> None:
    record = _two_copies()
    assert copies_of(record) == 2
    assert copy_batch_times(record) == [[10.0, 12.0, 14.0], [8.0, 10.0]]
    # Where the record lists each copy's batch count, the counts split it, whatever
    # the means say.
    counted = {**record, "results.copy_num_batches": [1, 4]}
    assert copy_batch_times(counted) == [[10.0], [12.0, 14.0, 8.0, 10.0]]
    assert copy_batch_times({**record, "results.copy_num_batches": [2, 2]}) == \
        [[10.0, 12.0, 14.0], [8.0, 10.0]]  # counts that do not add up: cut by the means
    assert copy_values(record, "results.throughput") == [4000 / 12, 4000 / 9]
    first, second = train_items(record)
    # Copy 1: 4 items a batch; avg 4000 / 12, min 4000 / 14, max 4000 / 10.
    assert (first.avg, first.min, first.max) == pytest.approx((333.3333, 285.7143, 400.0),
                                                              abs=1e-4)
    # Copy 2: avg 4000 / 9, min 4000 / 10, max 4000 / 8.
    assert (second.avg, second.min, second.max) == pytest.approx((444.4444, 400.0, 500.0),
                                                                 abs=1e-4)
    assert second.range == pytest.approx(100.0)


def test_the_scorecard_averages_the_copies_reports() -> None:
    baseline = Baseline([Benchmark("convnet", {"exp.model": "convnet$"}, 390.0)], min_runs=1)
    (result,), _ = evaluate([_two_copies()], baseline)
    # One run, two reports: result (333.33 + 444.44) / 2 = 388.89, sd |444.44 - 333.33|
    # / sqrt(2) = 78.567, diff 100 * (388.89 / 390 - 1) = -0.285%.
    assert (result.runs, result.reports) == (1, 2)
    assert result.result == pytest.approx(388.8889, abs=1e-4)
    assert result.sd == pytest.approx(78.5674, abs=1e-4)
    assert result.diff_percent == pytest.approx(-0.2849, abs=1e-4)
    throughput = scorecard_report([_two_copies()], baseline).tables[1]
    # Mean over the two reports: avg 388.89, min (285.71 + 400) / 2, max (400 + 500) / 2,
    # range (114.29 + 100) / 2.
    assert throughput.rows == [["convnet", 1, 2, pytest.approx(388.8889, abs=1e-4),
                                pytest.approx(342.8571, abs=1e-4), 450.0,
                                pytest.approx(107.1429, abs=1e-4)]]
    assert any("not the node's sum" in note for note in throughput.notes)


def test_two_copies_each_at_the_target_score_zero_not_a_hundred_percent() -> None:
    # Four runs of two copies, each copy at 379/s: the node did 758/s.
    runs = [{"exp.model": "convnet", "exp.status": "ok", "user.run": run,
             "exp.parallel_jobs": 2, "results.copies": 2,
             "results.copy_throughput": [379.0, 379.0], "results.throughput": 758.0}
            for run in range(4)]
    baseline = Baseline([Benchmark("convnet", {"exp.model": "convnet$"}, 379.0)])
    (result,), _ = evaluate(runs, baseline)
    assert (result.result, result.diff_percent) == (379.0, 0.0)
    assert result.within_tolerance is True
    report = scorecard_report(runs, baseline)
    assert report.passed and report.tables[0].rows[0][5] == 0.0
    # A baseline made from such runs has the one-GPU target too.
    made, _ = make_baseline(runs)
    assert [b.target for b in made.benchmarks] == [379.0]


def test_copies_whose_record_keeps_no_list_count_once_with_their_mean() -> None:
    # exp.repeat with copies: the combined record has the node's throughput only.
    repeated = {"exp.model": "convnet", "exp.status": "ok", "exp.parallel_jobs": 2,
                "results.throughput": 758.0, "results.time": 10.0,
                "results.time_data": [9.0, 10.0, 11.0, 10.0]}
    assert copy_values(repeated, "results.throughput") == [379.0]  # summed: 758 / 2
    assert copy_values(repeated, "results.time") == [10.0]  # a mean: as it is
    assert copy_batch_times(repeated) is None and train_items(repeated) == []
    per_gpu = {**repeated, "exp.parallel_jobs": "gpus", "exp.gpus": "0,1,2,3"}
    assert copy_values(per_gpu, "results.throughput") == [189.5]  # 758 / 4


def test_records_that_cannot_give_a_train_item() -> None:
    record = _two_copies()
    # Batch times that do not split into the copies' means: no train_item, and the
    # scorecard's min, max and range are left empty; avg is the copies' own.
    broken = {**record, "results.time_data": [10.0, 12.0, 15.0, 8.0, 10.0]}
    assert copy_batch_times(broken) is None and train_items(broken) == []
    baseline = Baseline([Benchmark("convnet", {"exp.model": "convnet$"}, 390.0)], min_runs=1)
    row = scorecard_report([broken], baseline).tables[1].rows[0]
    assert row[:4] == ["convnet", 1, 2, pytest.approx(388.8889, abs=1e-4)]
    assert row[4:] == [None, None, None]
    assert train_items({**record, "results.time_data": None}) == []
    assert train_items({**record, "results.time_data": [10.0, "x", 14.0, 8.0, 10.0]}) == []
    assert train_items({**record, "exp.scenario": "server"}) == []
    # A zero batch time has no rate; a value dlbench does not write is one process.
    assert train_items({**_record(4, [0.0, 2.0]), "results.throughput": 4000.0}) == []
    assert copies_of({"exp.parallel_jobs": "many"}) == 1
    assert copy_values({"results.throughput": "fast"}, "results.throughput") == []
    with pytest.raises(ValueError, match="above 0 ms"):
        train_item(4, [])
    with pytest.raises(ValueError, match="above 0 ms"):
        train_item(4, [1.0, -1.0])
    assert TrainItem(avg=2.0, min=1.0, max=3.5).range == 2.5
