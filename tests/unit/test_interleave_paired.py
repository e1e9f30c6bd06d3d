"""Interleaved repeats (launch.order) and their paired comparison
(report.compare.paired): the order processes run in, and the statistics, with known
answers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from dlbench.launch.launchers import Finish, LaunchContext, Launcher, ProcessLauncher
from dlbench.launch.order import INTERLEAVED, REPEAT_ORDER_INTERLEAVED, SEQUENTIAL
from dlbench.report.compare.compare import compare_records
from dlbench.report.compare.paired import paired_ratio, paired_values, process_medians
from dlbench.results.stats import summarize_times


def test_process_medians_split_the_pooled_batches_by_process() -> None:
    record = {"results.time_data": [1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 40.0],
              "results.repeat_num_batches": [3, 4]}
    assert process_medians(record) == [2.0, 25.0]
    assert process_medians({**record, "results.repeat_num_batches": [3, 3]}) is None


def test_paired_ratio_known_answers() -> None:
    # Every pair 10% apart: the ratio is exact and, without spread, certain.
    assert paired_ratio([1.0, 2.0], [1.1, 2.2]) == (pytest.approx(1.1), 0.0)
    assert paired_ratio([3.0, 5.0], [3.0, 5.0]) == (1.0, 1.0)
    # Log ratios 0.1, 0.3, 0.1, 0.3: mean 0.2, sd 0.11547, t = 3.4641 on 3 degrees of
    # freedom, two-sided p = 0.04052.
    b = [math.exp(x) for x in (0.1, 0.3, 0.1, 0.3)]
    ratio, p = paired_ratio([1.0] * 4, b)
    assert ratio == pytest.approx(math.exp(0.2))
    assert p == pytest.approx(0.040519, abs=1e-5)
    with pytest.raises(ValueError):
        paired_ratio([1.0], [1.0])


def _record(step_ms: float, medians: list[float],
            order: str = REPEAT_ORDER_INTERLEAVED) -> dict[str, Any]:
    times = [t for m in medians for t in (m - 0.1, m, m + 0.1)]
    mean = sum(times) / len(times)
    return {"exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet50",
            "exp.phase": "training", "exp.replica_batch": 10, "exp.effective_batch": 10,
            "fake.step_ms": step_ms, "results.time": mean,
            "results.throughput": 10 * 1000 / mean, "results.time_data": times,
            "results.repeat_num_batches": [3] * len(medians), "results.repeat_order": order}


def test_compare_pairs_interleaved_processes_and_cancels_a_common_drift() -> None:
    # The machine slows by 30% between pairs; B is 5% slower than A in every pair.
    drift = [2.0, 2.6, 2.0, 2.6]
    a = _record(2.0, drift)
    b = _record(2.1, [d * 1.05 for d in drift])
    (row,) = compare_records([a], [b], threshold=0.02).rows
    assert row.ratio == pytest.approx(1 / 1.05)
    assert row.verdict == "slower"
    # Not interleaved: the same numbers are pooled, and the drift drowns the change.
    (pooled,) = compare_records([{**a, "results.repeat_order": ""}],
                                [{**b, "results.repeat_order": ""}], threshold=0.02).rows
    assert pooled.verdict == "unchanged"
    assert paired_values([a], [a, b], "results.throughput") is None  # not one record a side


class Recording(ProcessLauncher):
    """Runs no worker: records which process ran, in order; c's second one fails."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

    @classmethod
    def create(cls, options: Mapping[str, Any], report: Any) -> Recording:
        return cls()

    def run_process(self, experiment: Mapping[str, Any], out_dir: Path, suffix: str,
                    context: LaunchContext) -> tuple[dict[str, Any], bool]:
        self.ran.append((str(experiment["exp.id"]), suffix))
        ok = not (experiment["exp.id"] == "c" and suffix == ".2")
        times = [1.0, 1.0]
        return ({**experiment, **summarize_times(times), "results.time_data": times,
                 "results.num_batches": 2, "exp.status": "ok" if ok else "failure",
                 "exp.status_msg": "" if ok else "boom"}, False)


def _batch(tmp_path: Path) -> list[tuple[int, dict[str, Any]]]:
    return [(i, {"exp.id": name, "exp.repeat": repeat, "exp.out_dir": str(tmp_path),
                 "exp.log_file": str(tmp_path / f"{name}.log"), "exp.cv_threshold": 0.05})
            for i, (name, repeat) in enumerate((("a", 2), ("b", 1), ("c", 3)))]


def test_interleaved_order_runs_process_k_of_every_experiment_before_k_plus_1(
    tmp_path: Path,
) -> None:
    launcher = Recording()
    finished: dict[int, dict[str, Any]] = {}
    finish: Finish = lambda i, record, s: finished.__setitem__(i, record)  # noqa: E731
    assert INTERLEAVED.batch_size(launcher) > 3 and INTERLEAVED.supports(launcher)
    assert not INTERLEAVED.launch(launcher, _batch(tmp_path), finish,
                                  LaunchContext.quiet(print))
    assert launcher.ran == [("a", ".1"), ("b", ""), ("c", ".1"), ("a", ".2"), ("c", ".2")]
    assert finished[0]["results.repeat_order"] == REPEAT_ORDER_INTERLEAVED
    assert finished[0]["results.repeat_times"] == [1.0, 1.0]
    assert finished[1]["exp.status"] == "ok" and "results.repeat_order" not in finished[1]
    assert finished[2]["exp.status_msg"] == "process 2 of 3: boom"
    # The failed process's record is the experiment's, in its log (the last line wins).
    assert '"process 2 of 3: boom"' in (tmp_path / "c.log").read_text()


def test_sequential_order_runs_each_experiments_processes_in_a_row(tmp_path: Path) -> None:
    launcher = Recording()
    finished: dict[int, dict[str, Any]] = {}
    assert SEQUENTIAL.batch_size(launcher) == 1
    assert not SEQUENTIAL.launch(launcher, _batch(tmp_path),
                                 lambda i, record, s: finished.__setitem__(i, record),
                                 LaunchContext.quiet(print))
    assert launcher.ran == [("a", ".1"), ("a", ".2"), ("b", ""), ("c", ".1"), ("c", ".2")]
    assert "results.repeat_order" not in finished[0]
    assert finished[0]["results.repeat_times"] == [1.0, 1.0]
    assert finished[2]["exp.status_msg"] == "process 2 of 3: boom"


def test_only_a_launcher_that_runs_processes_here_can_interleave() -> None:
    class Elsewhere(Launcher):
        batch_size = 7

        @classmethod
        def create(cls, options: Mapping[str, Any], report: Any) -> Elsewhere:
            return cls()

        def launch(self, batch: Any, finish: Finish, context: LaunchContext) -> bool:
            return False

    assert not INTERLEAVED.supports(Elsewhere()) and SEQUENTIAL.supports(Elsewhere())
    assert SEQUENTIAL.batch_size(Elsewhere()) == 7
