"""Scaling reports from the median batch time (or another time statistic), and from
throughput, against the multi-GPU scaling study's own numbers.

The study reports speedup_N = throughput_N / throughput_1 and efficiency
= 100 * speedup_N / N, from median throughput. Its tables give, e.g., on 2 GPUs
alexnet 1.17x / 58.70% and resnet44 2.07x / 103.28%, and for the median over the
TensorFlow benchmarks 1.93x / 96.42% on 2 GPUs, 3.87x / 96.84% on 4, 7.44x / 93.02%
on 8. The printed speedups are rounded: the efficiencies keep two more digits, so
the tests build runs from the efficiencies and check both columns.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.report.cells import Report, Table
from dlbench.report.tables.reports import build_table_report, is_time_variable, time_title
from dlbench.results.stats import summarize_times

# model, printed speedup on 2 GPUs, printed efficiency (%)
CIFAR10_2GPUS = [("alexnet", "1.17", 58.70), ("resnet20", "1.51", 75.65),
                 ("resnet32", "2.00", 99.93), ("resnet44", "2.07", 103.28),
                 ("resnet56", "2.00", 99.83), ("resnet110", "1.92", 96.04),
                 ("densenet40_k12", "2.00", 99.94), ("densenet100_k12", "1.98", 98.89)]
# GPUs, printed median speedup, printed median efficiency (%)
TF_MEDIANS = [(2, "1.93", 96.42), (4, "3.87", 96.84), (8, "7.44", 93.02)]


def rec(model: str, replicas: int, batch: int, extra: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "exp.framework": "tensorflow", "exp.model": model, "exp.phase": "training",
        "exp.dtype": "float32", "exp.device_type": "gpu", "exp.num_nodes": 1,
        "exp.gpus": ",".join(str(i) for i in range(replicas)), "exp.num_replicas": replicas,
        "exp.replica_batch": batch, "exp.effective_batch": replicas * batch,
        "exp.status": "ok", "exp.id": f"{model}-{replicas}-{batch}",
    }
    record.update(extra)
    return record


def table(report: Report, prefix: str) -> Table:
    return next(t for t in report.tables if t.title.startswith(prefix))


def test_weak_scaling_from_the_median_time_gives_the_studys_table() -> None:
    records = []
    for model, _, efficiency in CIFAR10_2GPUS:
        # Weak scaling: efficiency = 100 * t1 / t2, so t2 = 100 * t1 / efficiency. The
        # mean time is made 50% worse than the median so that using it would show.
        for replicas, p50 in ((1, 100.0), (2, 100.0 * 100.0 / efficiency)):
            records.append(rec(model, replicas, 32,
                               {"results.time_p50": p50, "results.time": 1.5 * p50 * replicas}))
    report = build_table_report(records, "weak-scaling", "results.time_p50")
    assert report.title == "Weak scaling: Median batch time, ms (results.time_p50)"
    assert table(report, "Median batch time, ms (results.time_p50)")
    throughput = table(report, "Throughput")
    assert any("t is results.time_p50, the median batch time" in n for n in throughput.notes)
    speedups = {row[0]: row[3] for row in table(report, "Speedup").rows}
    efficiencies = {row[0]: row[3] for row in table(report, "Efficiency").rows}
    for model, printed, efficiency in CIFAR10_2GPUS:
        assert efficiencies[model] == pytest.approx(efficiency), model
        # speedup_2 = throughput_2 / throughput_1 = 2 * t1 / t2 = 2 * efficiency / 100
        assert speedups[model] == pytest.approx(2 * efficiency / 100), model
        assert f"{speedups[model]:.2f}" == printed, model
    # From the mean, whose t2 / t1 here is 2 * (t2 / t1 of the median), efficiency halves.
    by_mean = build_table_report(records, "weak-scaling")
    alexnet = next(r for r in table(by_mean, "Efficiency").rows if r[0] == "alexnet")
    assert alexnet[3] == pytest.approx(58.70 / 2)


def test_strong_scaling_from_the_median_time_is_t1_over_tn() -> None:
    records = [rec("resnet50", n, 64 // n, {"results.time_p50": t})
               for n, t in ((1, 400.0), (2, 210.0), (4, 115.0))]
    report = build_table_report(records, "strong-scaling", "results.time_p50")
    (row,) = table(report, "Speedup").rows
    # speedup = t1 / tN: 400 / 210 = 1.904762, 400 / 115 = 3.478261
    assert row[2:] == pytest.approx([1.0, 1.904762, 3.478261], abs=1e-6)
    (eff,) = table(report, "Efficiency").rows
    # 100 * t1 / (N * tN) = 100 * speedup / N: 95.238095, 86.956522
    assert eff[2:] == pytest.approx([100.0, 95.238095, 86.956522], abs=1e-6)
    (thr,) = table(report, "Throughput").rows
    assert thr[2:] == pytest.approx([160.0, 304.761905, 556.521739], abs=1e-6)  # 64000 / t


def test_throughput_target_gives_speedup_and_efficiency() -> None:
    # The study's medians: speedup 1.9284 → 1.93x and 96.42% on 2 GPUs, and so on.
    for kind in ("weak-scaling", "strong-scaling"):
        # Weak: 32 per replica; strong: 256 split over the replicas.
        def batch(n: int, kind: str = kind) -> int:
            return 32 if kind == "weak-scaling" else 256 // n

        records = [rec("inception3", 1, batch(1), {"results.throughput": 100.0})]
        records += [rec("inception3", n, batch(n), {"results.throughput": efficiency * n})
                    for n, _, efficiency in TF_MEDIANS]
        report = build_table_report(records, kind, "results.throughput")
        assert [t.title.split(" =")[0] for t in report.tables] == [
            "results.throughput", "Speedup", "Efficiency, %"]
        speedup = table(report, "Speedup").rows[0][2:]
        assert [f"{s:.2f}" for s in speedup] == ["1.00", *(p for _, p, _ in TF_MEDIANS)]
        efficiency = table(report, "Efficiency").rows[0][2:]
        assert efficiency == pytest.approx([100.0, *(e for _, _, e in TF_MEDIANS)])


def test_throughput_target_without_a_one_replica_run_says_so() -> None:
    records = [rec("vgg16", 2, 32, {"results.throughput": 10.0})]
    report = build_table_report(records, "weak-scaling", "results.throughput")
    assert table(report, "Speedup").rows[0][2:] == [None]
    assert any("no 1-replica result for exp.model=vgg16" in n
               for n in table(report, "Efficiency").notes)


def test_median_time_is_the_median_of_per_batch_throughput() -> None:
    # An odd number of batches, one slow: the mean moves, the median does not.
    times = [10.0, 10.2, 9.9, 30.0, 10.1]
    summary = summarize_times(times)
    assert summary["results.time_p50"] == 10.1 and summary["results.time"] == pytest.approx(14.04)
    per_batch = [32 * 1000 / t for t in times]
    assert statistics.median(per_batch) == pytest.approx(32 * 1000 / summary["results.time_p50"])


def test_which_variables_are_times() -> None:
    assert all(is_time_variable(n) for n in (
        "results.time", "results.time_p50", "results.time_p99", "results.time_min",
        "results.time_max"))
    assert not any(is_time_variable(n) for n in (
        "results.time_std", "results.time_cv", "results.time_data", "results.throughput",
        "results.timed_seconds"))
    assert time_title("results.time") == "Batch time, ms"
    assert time_title("results.time_p50") == "Median batch time, ms (results.time_p50)"
    assert time_title("results.time_p90") == "p90 batch time, ms (results.time_p90)"
    assert time_title("results.time_min") == "Minimum batch time, ms (results.time_min)"
    # A spread is not a time per batch: one table, nothing derived.
    spread = build_table_report([rec("a", 1, 8, {"results.time_std": 1.0})], "weak-scaling",
                                "results.time_std")
    assert [t.title for t in spread.tables] == ["results.time_std"]


def test_cli_weak_scaling_with_median_target(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "scaling.jsonl"
    path.write_text("".join(json.dumps(rec("alexnet", n, 32, {"results.time_p50": t})) + "\n"
                            for n, t in ((1, 100.0), (2, 100.0 * 100.0 / 58.70))))
    code = main(["report", "--type", "weak-scaling", "--input", str(path),
                 "--target-variable", "results.time_p50"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Median batch time, ms (results.time_p50)" in lines
    speedup = lines.index("Speedup = throughput_N / throughput_1")
    assert lines[speedup + 3].split() == ["alexnet", "32", "1.00", "1.17"]
    efficiency = lines.index("Efficiency, % = 100 * t1 / tN")
    assert lines[efficiency + 3].split() == ["alexnet", "32", "100.00", "58.70"]
