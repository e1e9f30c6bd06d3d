"""Scaling reports keep GPU sets apart: two replicas on GPUs 0,1 (one PCIe switch),
4,5 (the other) and 0,5 (across the CPU) are three columns, as a multi-GPU study's
PIX-against-PHB table has them, not one averaged cell, whether the records come as
records or as a store. Records of the fake workload, built by hand; every expected
number has its arithmetic in a comment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.report.cells import Report, Table
from dlbench.report.render import render_report
from dlbench.report.tables.columnar import table_report
from dlbench.report.tables.reports import build_table_report
from dlbench.results.store import Store


def rec(gpus: str, time: float, batch: int = 16, run: int = 0) -> dict[str, Any]:
    """One ok record of the fake workload on one node, ``gpus`` in DLBS syntax."""
    replicas = len(gpus.split(","))
    return {
        "exp.id": f"{gpus}-{batch}-{run}", "exp.framework": "fake", "exp.model": "resnet50",
        "exp.phase": "training", "exp.dtype": "float32", "exp.device_type": "gpu",
        "exp.gpus": gpus, "exp.num_nodes": 1, "exp.num_local_replicas": replicas,
        "exp.num_replicas": replicas, "exp.replica_batch": batch,
        "exp.effective_batch": replicas * batch, "exp.num_batches": 20, "exp.status": "ok",
        "fake.step_ms": 1.0, "user.run": run, "hw.device_name": "GTX 1070",
        "sys.hostname": "node1", "results.time": time,
        "results.throughput": replicas * batch * 1000.0 / time,
    }


#: GPU 0 twice (100, 102), GPU 4 once, then pairs within a switch (0,1 and 4,5) and
#: across (0,5, twice: 130, 134).
WEAK = [rec("0", 100.0), rec("0", 102.0, run=1), rec("4", 104.0), rec("0,1", 110.0),
        rec("4,5", 112.0), rec("0,5", 130.0), rec("0,5", 134.0, run=1)]


def by_title(report: Report) -> dict[str, Table]:
    return {t.title.split(",")[0].split(" =")[0]: t for t in report.tables}


def values(table: Table) -> list[Any]:
    (row,) = table.rows
    return list(row[table_label_count(table):])


def table_label_count(table: Table) -> int:
    return int(getattr(table, "label_columns", 1))


def test_weak_scaling_has_a_column_per_gpu_set() -> None:
    by = by_title(build_table_report(WEAK, "weak-scaling"))
    assert by["Batch time"].columns == [
        "exp.model", "exp.replica_batch", "1 (GPUs 0)", "1 (GPUs 4)", "2 (GPUs 0,1)",
        "2 (GPUs 0,5)", "2 (GPUs 4,5)"]
    # GPU 0: (100 + 102) / 2 = 101; 0,5: (130 + 134) / 2 = 132. Averaged together, the
    # four 2-GPU runs would have been one cell of (110 + 112 + 130 + 134) / 4 = 121.5.
    times = values(by["Batch time"])
    assert times == pytest.approx([101.0, 104.0, 110.0, 132.0, 112.0])
    assert [t.n for t in times] == [2, 1, 1, 2, 1]
    # sd of 130, 134: sqrt((2² + 2²) / 1) = sqrt(8) = 2.828…
    assert times[3].sd == pytest.approx(8 ** 0.5)
    # Throughput N * B * 1000 / t: 16000/101, 16000/104, 32000/110, 32000/132, 32000/112.
    assert values(by["Throughput"]) == pytest.approx(
        [158.415842, 153.846154, 290.909091, 242.424242, 285.714286])
    # Each pair scales from a GPU of its own: 0,1 and 0,5 from GPU 0 (101), 4,5 from
    # GPU 4 (104). Speedup 2 * 101 / 110, 2 * 101 / 132, 2 * 104 / 112.
    assert values(by["Speedup"]) == pytest.approx(
        [1.0, 1.0, 1.836364, 1.530303, 1.857143], abs=1e-6)
    # Efficiency 100 * t1 / tN: 100 * 101 / 110, 100 * 101 / 132, 100 * 104 / 112.
    assert values(by["Efficiency"]) == pytest.approx(
        [100.0, 100.0, 91.818182, 76.515152, 92.857143], abs=1e-6)
    assert any("GPU sets" in note for note in by["Speedup"].notes)
    assert not by["Batch time"].notes


def test_text_shows_each_gpu_set_with_its_own_spread() -> None:
    lines = render_report(build_table_report(WEAK, "weak-scaling"), "text")
    row = lines[lines.index("Batch time, ms") + 3]
    # 0,5: sd 2.828 / mean 132 = 2.14 %; GPU 0: 1.414 / 101 = 1.40 %.
    assert row.split() == ["resnet50", "16", "101.00", "±1.4%", "104.00", "110.00",
                           "132.00", "±2.1%", "112.00"]


def test_rate_target_scales_each_gpu_set_from_its_own_gpu() -> None:
    by = by_title(build_table_report(WEAK, "weak-scaling", "results.throughput"))
    # Mean throughputs: GPU 0 (16000/100 + 16000/102) / 2; 0,5 (32000/130 + 32000/134) / 2.
    gpu0 = (16000 / 100 + 16000 / 102) / 2
    across = (32000 / 130 + 32000 / 134) / 2
    assert values(by["Speedup"])[3] == pytest.approx(across / gpu0)
    # 4,5 from GPU 4: (32000 / 112) / (16000 / 104) = 2 * 104 / 112.
    assert values(by["Speedup"])[4] == pytest.approx(2 * 104 / 112)
    # Efficiency = 100 * speedup / N.
    assert values(by["Efficiency"])[3] == pytest.approx(50 * across / gpu0)


def test_strong_scaling_keeps_gpu_sets_apart() -> None:
    # Effective batch 32: one replica of 32 on GPU 0, two of 16 on 0,1 and on 0,5.
    records = [rec("0", 200.0, batch=32), rec("0,1", 120.0), rec("0,5", 150.0)]
    by = by_title(build_table_report(records, "strong-scaling"))
    assert by["Batch time"].columns[2:] == ["1", "2 (GPUs 0,1)", "2 (GPUs 0,5)"]
    # Efficiency 100 * t1 / (N * tN): 100 * 200 / 240 = 83.33…, 100 * 200 / 300 = 66.66…
    assert values(by["Efficiency"]) == pytest.approx([100.0, 83.333333, 66.666667], abs=1e-6)


def test_one_gpu_set_per_count_keeps_the_plain_columns() -> None:
    by = by_title(build_table_report([rec("0", 100.0), rec("0,1", 110.0)], "weak-scaling"))
    assert by["Batch time"].columns[2:] == ["1", "2"]
    assert not any("GPU sets" in note for note in by["Speedup"].notes)


@pytest.mark.parametrize("report_type", ["weak-scaling", "strong-scaling", "exploration"])
def test_a_store_gives_the_same_report_as_its_records(tmp_path: Path, report_type: str) -> None:
    path = tmp_path / "results.sqlite"
    with Store(path) as store:
        store.put_many(WEAK)
    for target in ("results.time", "results.throughput"):
        stored = table_report([path], {}, "--where", report_type, target)
        expected = build_table_report(WEAK, report_type, target)
        for fmt in ("text", "csv", "json", "markdown"):
            assert render_report(stored, fmt) == render_report(expected, fmt), (target, fmt)
    if report_type == "weak-scaling":
        by = by_title(table_report([path], {}, "--where", report_type))
        # Columns 1 (GPUs 0), 1 (GPUs 4), 2 (GPUs 0,1), 2 (GPUs 0,5), 2 (GPUs 4,5): GPU 0
        # (100 + 102) / 2 = 101, 0,5 (130 + 134) / 2 = 132.
        assert values(by["Batch time"]) == [101.0, 104.0, 110.0, 132.0, 112.0]
        # speedup = 2 * t1 / t2 from the 1-replica run on the column's own GPUs.
        assert values(by["Speedup"]) == pytest.approx(
            [1.0, 1.0, 2 * 101 / 110, 2 * 101 / 132, 2 * 104 / 112])
