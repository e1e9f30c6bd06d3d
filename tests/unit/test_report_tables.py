"""Exploration and scaling reports against answers worked out by hand.

Records are plain dicts: data-parallel runs do not exist yet, so scaling data is
synthetic. Every expected number has its arithmetic in a comment.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.report.aggregate import (
    Measured,
    row_keys,
    split_groups,
    summarize,
    trim_extremes,
)
from dlbench.report.cells import Report, Table
from dlbench.report.render import label_columns, render_report
from dlbench.report.tables.reports import build_table_report
from dlbench.results.query import select_records
from dlbench.results.stats import percentile


def rec(model: str = "resnet50", batch: int = 16, gpus: str = "0", time: float = 100.0,
        extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ok record in dlbench's naming, on one node."""
    replicas = len(gpus.split(",")) if gpus else 1
    record: dict[str, Any] = {
        "exp.framework": "pytorch", "exp.model": model, "exp.phase": "training",
        "exp.gpus": gpus, "exp.device_type": "gpu" if gpus else "cpu", "exp.num_nodes": 1,
        "exp.num_local_replicas": replicas, "exp.num_replicas": replicas,
        "exp.replica_batch": batch, "exp.effective_batch": replicas * batch,
        "exp.dtype": "float32", "exp.num_batches": 20, "exp.status": "ok",
        "exp.id": f"{model}-{batch}-{gpus}-{time}", "hw.device_name": "H100",
        "sys.hostname": "node1", "results.time": time,
    }
    record.update(extra or {})
    return record


def rows_of(table: Table) -> list[list[Any]]:
    return [list(row) for row in table.rows]


def tables_by_title(report: Report) -> dict[str, Table]:
    return {t.title.split(" [")[0].split(",")[0].split(" =")[0]: t for t in report.tables}


# ---------------------------------------------------------------- aggregation


def test_summarize_known_answer() -> None:
    # mean (10 + 12 + 14) / 3 = 12; deviations -2, 0, 2 → (4 + 0 + 4) / (3 - 1) = 4,
    # sd = 2; sd% = 100 * 2 / 12 = 16.666…
    m = summarize([10.0, 12.0, 14.0])
    assert float(m) == 12.0 and m.sd == pytest.approx(2.0) and m.n == 3
    assert m.sd_percent == pytest.approx(16.6667, abs=1e-4)
    one = summarize([5.0])
    assert one.sd is None and one.sd_percent is None and one + 1 == 6.0


def test_trim_and_quantile_known_answers() -> None:
    # Five runs: drop 90 (worst) and 130 (best) → (100 + 101 + 102) / 3 = 101.
    assert trim_extremes([130, 90, 101, 100, 102]) == [100, 101, 102]
    assert trim_extremes([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]  # fewer than 4: all kept
    # 80% of [1..5]: position 0.8 * 4 = 3.2 → 4 + 0.2 * (5 - 4) = 4.2
    assert percentile([5, 1, 4, 2, 3], 80) == pytest.approx(4.2)


# ---------------------------------------------------------------- weak scaling


def test_weak_scaling_known_answers() -> None:
    records = [rec(gpus="0", time=100.0), rec(gpus="0,1", time=110.0),
               # B=32 has no one-replica run: its row must say so, not invent one.
               rec(batch=32, gpus="0,1", time=150.0)]
    report = build_table_report(records, "weak-scaling")
    by = tables_by_title(report)
    assert by["Batch time"].columns == ["exp.model", "exp.replica_batch", "1", "2"]
    assert rows_of(by["Batch time"]) == [["resnet50", 16, 100.0, 110.0],
                                         ["resnet50", 32, None, 150.0]]
    thr = rows_of(by["Throughput"])
    # thr1 = 16 * 1000 / 100 = 160; thr2 = 2 * 16 * 1000 / 110 = 290.909…
    assert thr[0][2:] == pytest.approx([160.0, 290.9090909])
    # B=32, N=2: 2 * 32 * 1000 / 150 = 426.666…
    assert thr[1][3] == pytest.approx(426.6666667)
    # speedup = 290.909… / 160 = 1.81818…; efficiency = 100 * 100 / 110 = 90.909…
    assert rows_of(by["Speedup"])[0][2:] == pytest.approx([1.0, 1.8181818])
    assert rows_of(by["Efficiency"])[0][2:] == pytest.approx([100.0, 90.9090909])
    assert rows_of(by["Speedup"])[1][2:] == [None, None]
    assert any("no 1-replica result for exp.model=resnet50, exp.replica_batch=32" in n
               for n in by["Efficiency"].notes)


def test_dlbs_published_example_without_its_rounding() -> None:
    # DLBS's weak-scaling example: ResNet50, B=16, t = 913.44, 1029.24, 1065.12 ms on
    # 1, 2, 4 GPUs. It printed speedups 1.82 and 3.53, i.e. 31/17 and 60/17 from
    # throughputs rounded to integers. From the unrounded times:
    # speedup2 = 2 * 913.44 / 1029.24 = 1826.88 / 1029.24 = 1.774979…
    # speedup4 = 4 * 913.44 / 1065.12 = 3653.76 / 1065.12 = 3.430374…
    # efficiency = 100 * 913.44 / 1029.24 = 88.7490… and 100 * 913.44 / 1065.12 = 85.7593…
    records = [rec(gpus=g, time=t) for g, t in
               (("0", 913.44), ("0,1", 1029.24), ("0,1,2,3", 1065.12))]
    by = tables_by_title(build_table_report(records, "weak-scaling"))
    assert rows_of(by["Speedup"])[0][2:] == pytest.approx([1.0, 1.774979, 3.430374], abs=1e-6)
    assert rows_of(by["Efficiency"])[0][2:] == pytest.approx([100.0, 88.7490, 85.7593],
                                                             abs=1e-4)


def test_efficiency_is_never_capped() -> None:
    # Superlinear: t2 = 80 < t1 = 100 → 100 * 100 / 80 = 125 %, shown as it is.
    report = build_table_report([rec(time=100.0), rec(gpus="0,1", time=80.0)], "weak-scaling")
    assert rows_of(tables_by_title(report)["Efficiency"])[0][3] == pytest.approx(125.0)


def test_weak_scaling_on_one_replica_is_a_table_with_a_note() -> None:
    report = build_table_report([rec(time=50.0), rec(batch=32, time=90.0)], "weak-scaling")
    time_table = tables_by_title(report)["Batch time"]
    assert time_table.columns[-1] == "1" and len(time_table.rows) == 2
    assert any("every record has 1 replica" in n for n in time_table.notes)


def test_node_layouts_with_one_replica_count_get_their_own_columns() -> None:
    one_node = rec(gpus="0,1", time=110.0)
    two_nodes = rec(gpus="0", time=130.0, extra={"exp.num_nodes": 2, "exp.num_replicas": 2,
                                             "exp.effective_batch": 32})
    report = build_table_report([rec(time=100.0), one_node, two_nodes], "weak-scaling")
    table = tables_by_title(report)["Batch time"]
    assert table.columns[2:] == ["1", "2 (1 node)", "2 (2 nodes)"]
    assert rows_of(table)[0][2:] == [100.0, 110.0, 130.0]


# ---------------------------------------------------------------- strong scaling


def test_strong_scaling_known_answers() -> None:
    # Effective batch 32: one replica of 32, then two replicas of 16.
    records = [rec(batch=32, gpus="0", time=200.0), rec(batch=16, gpus="0,1", time=120.0)]
    by = tables_by_title(build_table_report(records, "strong-scaling"))
    assert by["Batch time"].columns == ["exp.model", "exp.effective_batch", "1", "2"]
    # thr = 32 * 1000 / 200 = 160 and 32 * 1000 / 120 = 266.666…
    assert rows_of(by["Throughput"])[0][2:] == pytest.approx([160.0, 266.6666667])
    # speedup = 266.666… / 160 = 1.666…; efficiency = 100 * 200 / (2 * 120) = 83.333…
    assert rows_of(by["Speedup"])[0][2:] == pytest.approx([1.0, 1.6666667])
    assert rows_of(by["Efficiency"])[0][2:] == pytest.approx([100.0, 83.3333333])


# ---------------------------------------------------------------- exploration


def test_exploration_aggregates_repeats_and_derives_from_unrounded_means() -> None:
    records = [rec(time=t, extra={"user.run": i, "exp.id": f"r{i}"})
               for i, t in enumerate([100.0, 102.0, 104.0])]
    records += [rec(batch=32, time=40.0001), rec(model="alexnet", batch=32, time=20.0)]
    by = tables_by_title(build_table_report(records, "exploration"))
    times = rows_of(by["Batch time"])
    assert by["Batch time"].columns == ["exp.model", "16", "32"]  # user.run is no row key
    assert times[0] == ["alexnet", None, 20.0]
    cell = times[1][1]
    # mean (100 + 102 + 104) / 3 = 102, sd = 2 (deviations -2, 0, 2), n = 3
    assert isinstance(cell, Measured) and (float(cell), cell.sd, cell.n) == (102.0, 2.0, 3)
    thr = rows_of(by["Throughput"])
    # 16 * 1000 / 102 = 156.862745…; 32 * 1000 / 40.0001 = 799.998…, not 32000 / 40.00
    assert thr[1][1] == pytest.approx(156.8627451)
    assert thr[1][2] == pytest.approx(799.998000005)
    assert thr[0][2] == pytest.approx(1600.0)  # 32 * 1000 / 20


def test_other_target_variable_is_one_table() -> None:
    # Neither a batch time nor a throughput: nothing to derive. (results.throughput
    # itself now gives speedup and efficiency in scaling reports.)
    records = [rec(extra={"results.tflops": 150.0}), rec(extra={"results.tflops": 170.0})]
    report = build_table_report(records, "weak-scaling", target="results.tflops")
    assert [t.title for t in report.tables] == ["results.tflops"]
    assert float(report.tables[0].rows[0][2]) == 160.0  # (150 + 170) / 2


# ---------------------------------------------------------------- separation


def test_frameworks_share_a_table_devices_do_not_and_nothing_is_averaged_across() -> None:
    records = [rec(time=100.0), rec(time=300.0, extra={"exp.framework": "jax"}),
               rec(time=500.0, extra={"hw.device_name": "A100"})]
    report = build_table_report(records, "exploration")
    times = [t for t in report.tables if t.title.startswith("Batch time")]
    # One table per device; within it the frameworks side by side, a row each.
    assert len(times) == 2
    assert [t.group for t in times] == [{"hw.device_name": "H100"}, {"hw.device_name": "A100"}]
    h100, a100 = times
    assert h100.columns[:2] == ["exp.model", "exp.framework"]
    assert sorted((row[1], float(row[2])) for row in h100.rows) == [
        ("jax", 300.0), ("pytorch", 100.0)]
    assert [float(row[-1]) for row in a100.rows] == [500.0]
    assert any("hw.device_name: H100 (2), A100 (1)" in w for w in report.warnings)
    assert "Rows: exp.model, exp.framework," in report.summary[1]


def test_identity_parameters_that_differ_join_the_row_key() -> None:
    # fake.step_ms moves with the batch size (an extension set it per batch): it must
    # not split rows. exp.num_batches differs within batch 16: it must.
    records = [rec(time=100.0, extra={"fake.step_ms": 2.0}),
               rec(time=200.0, extra={"exp.num_batches": 50, "fake.step_ms": 2.0}),
               rec(batch=8, time=10.0, extra={"fake.step_ms": 1.0})]
    table = build_table_report(records, "exploration").tables[0]
    assert table.columns == ["exp.model", "exp.num_batches", "8", "16"]
    assert rows_of(table) == [["resnet50", 20, 10.0, 100.0], ["resnet50", 50, None, 200.0]]
    assert label_columns(table) == 2


def test_row_keys_leave_out_parameters_that_move_with_the_column() -> None:
    records = [{"m": "a", "b": 16, "fake.step_ms": 2.0, "exp.num_batches": 5},
               {"m": "a", "b": 8, "fake.step_ms": 1.0, "exp.num_batches": 5},
               {"m": "a", "b": 8, "fake.step_ms": 1.0, "exp.num_batches": 6}]
    assert row_keys(records, ["m"], ["b"], ["fake.step_ms", "exp.num_batches"]) == [
        "m", "exp.num_batches"]
    assert split_groups(records[:2], ["m"]) == [({}, records[:2])]


# ---------------------------------------------------------------- bad input


def test_skipped_records_are_counted_and_named() -> None:
    records = [rec(), rec(extra={"exp.status": "failure"}), rec(extra={"exp.status": "timeout"}),
               {**rec(), "exp.id": "abc123", "results.time": None}]
    report = build_table_report(records, "exploration")
    assert "2 record(s) skipped: exp.status is not ok (1 failure, 1 timeout)" in report.warnings
    assert "1 record(s) skipped: no numeric results.time: abc123" in report.warnings
    with pytest.raises(ResultsError, match="none of the 2 selected record"):
        build_table_report(records[1:3], "exploration")


def test_environment_warning_names_keys_and_values() -> None:
    records = [rec(), rec(batch=32, extra={"sys.hostname": "node2"})]
    report = build_table_report(records, "exploration")
    assert report.warnings == [
        "records come from different environments: sys.hostname: node1 (1), node2 (1)"]
    assert "warning: " + report.warnings[0] in render_report(report, "text")


def test_select_records_errors_say_what_exists() -> None:
    with pytest.raises(ResultsError, match="SRC holds no records"):
        select_records([], {}, "--query", "SRC")
    with pytest.raises(ResultsError, match=r"values that exist: exp\.model: alexnet, resnet50"):
        select_records([rec(), rec(model="alexnet")], {"exp.model": "vgg"}, "--query", "SRC")


# ---------------------------------------------------------------- rendering


def _weak_report() -> Report:
    records = [rec(time=t, extra={"user.run": i}) for i, t in enumerate([100.0, 102.0, 104.0])]
    return build_table_report([*records, rec(gpus="0,1", time=110.0)], "weak-scaling")


def test_text_shows_spread_aligned_and_missing_cells() -> None:
    lines = render_report(_weak_report(), "text")
    assert lines[:2] == ["Weak scaling: Batch time, ms", "=" * 28]
    start = lines.index("Batch time, ms")
    header, rule, row = lines[start + 1: start + 4]
    assert header.split() == ["exp.model", "exp.replica_batch", "1", "2"]
    # 102 ±2.0% (sd 2 / mean 102 = 1.96 %); the single 110 run pads to line up.
    assert row.split() == ["resnet50", "16", "102.00", "±2.0%", "110.00"]
    assert len(header) <= len(rule)
    assert "Efficiency, % = 100 * t1 / tN" in lines


def test_csv_is_long_form_with_mean_sd_n() -> None:
    rows = list(csv.DictReader(io.StringIO("\n".join(render_report(_weak_report(), "csv")))))
    first = rows[0]
    assert list(first) == ["table", "exp.model", "exp.replica_batch", "column", "value", "sd",
                           "n"]
    assert (first["column"], float(first["value"]), float(first["sd"]), first["n"]) == (
        "1", 102.0, 2.0, "3")
    speedup = [r for r in rows if r["table"].startswith("Speedup") and r["column"] == "2"]
    # 2 * 16 * 1000 / 110 over 16 * 1000 / 102 = 2 * 102 / 110 = 1.854545…
    assert float(speedup[0]["value"]) == pytest.approx(1.8545454545) and speedup[0]["n"] == ""


def test_json_and_markdown_carry_the_same_cells() -> None:
    document = json.loads("\n".join(render_report(_weak_report(), "json")))
    table = document["tables"][0]
    assert table["label_columns"] == 2
    assert table["rows"][0][2] == {"mean": 102.0, "sd": 2.0, "n": 3}
    markdown = render_report(_weak_report(), "markdown")
    assert markdown[0] == "### Weak scaling: Batch time, ms"
    assert "| resnet50  |                16 | 102.00 ±2.0% | 110.00 |" in markdown
    with pytest.raises(ValueError, match="unknown report format"):
        render_report(_weak_report(), "html")


def test_titles_name_the_time_and_the_unit_the_records_state() -> None:
    images = {"results.throughput_unit": "images/s"}
    report = build_table_report([rec("resnet50", 16, extra=images),
                                 rec("alexnet", 16, extra=images)], "exploration")
    assert report.title == "Exploration: Batch time, ms"
    assert [t.title for t in report.tables] == [
        "Batch time, ms", "Throughput, images/s = effective batch * 1000 / t"]
    # Models that count different things, or records that do not say: the generic unit.
    mixed = build_table_report([rec("resnet50", 16, extra=images),
                                rec("bert_base", 16, extra={"results.throughput_unit":
                                                            "sequences/s"})],
                               "weak-scaling")
    assert mixed.tables[1].title == "Throughput, samples/s = N * B * 1000 / tN"
    silent = build_table_report([rec("resnet50", 16)], "exploration")
    assert silent.tables[1].title.startswith("Throughput, samples/s")
