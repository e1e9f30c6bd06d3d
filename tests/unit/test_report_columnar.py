"""The exploration and scaling reports, one implementation for every input: a store
read where it is, and records (logs, exported files) written to a store in memory
first. Small inputs built here; every expected number has its arithmetic beside it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.errors import ResultsError
from dlbench.report.cells import Report, Table
from dlbench.report.tables.columnar import records_table_report, table_report
from dlbench.report.tables.columnar_groups import (
    count_distinct,
    first_appearance,
    group_means,
    ordered_counts,
    stable_order,
)
from dlbench.report.tables.reports import build_table_report
from dlbench.results.store import Store
from dlbench.results.store.arrays import StoreArrays


def rec(exp_id: str, batch: int, replicas: int, time: float | None, **more: Any
        ) -> dict[str, Any]:
    """One ok record of the fake workload on one node of the CPU."""
    record: dict[str, Any] = {
        "exp.id": exp_id, "exp.framework": "fake", "exp.model": "m", "exp.phase": "training",
        "exp.dtype": "float32", "exp.device_type": "cpu", "exp.gpus": "", "exp.num_nodes": 1,
        "exp.num_local_replicas": replicas, "exp.num_replicas": replicas,
        "exp.replica_batch": batch, "exp.effective_batch": batch * replicas,
        "exp.status": "ok", "exp.log_file": f"logs/{exp_id}.log", "results.time": time}
    if time is None:
        del record["results.time"]
    record.update(more)
    return record


#: Batch 8 on one replica twice (100, 110 ms), then on two (120); batch 16 on one (180)
#: and two (200); a failure and a record without a time.
RECORDS = [rec("a1", 8, 1, 100.0), rec("a2", 8, 1, 110.0, **{"user.run": 1}),
           rec("b1", 8, 2, 120.0), rec("c1", 16, 1, 180.0), rec("c2", 16, 2, 200.0),
           rec("f1", 8, 1, 90.0, **{"exp.status": "failure"}), rec("n1", 8, 1, None)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tables") / "results.sqlite"
    with Store(path) as opened:
        opened.put_many(RECORDS)
    return path


def cells(report: Report, title: str) -> dict[tuple[Any, ...], list[Any]]:
    """The table of ``report`` whose title starts with ``title``: row labels → values."""
    (table,) = [t for t in report.tables if t.title.startswith(title)]
    labels = int(getattr(table, "label_columns", 1))
    return {tuple(row[:labels]): row[labels:] for row in table.rows}


def table(report: Report, title: str) -> Table:
    (found,) = [t for t in report.tables if t.title.startswith(title)]
    return found


def test_exploration_of_a_store(store: Path) -> None:
    report = table_report([store], {}, "--where", "exploration")
    # Two replica counts at batch 8 are two measurements: exp.num_replicas splits rows.
    assert table(report, "Batch time").columns == ["exp.model", "exp.num_replicas", "8", "16"]
    times = cells(report, "Batch time")
    mean = times[("m", 1)][0]
    assert (mean.mean, mean.n) == (105.0, 2)  # (100 + 110) / 2
    assert mean.sd == pytest.approx(math.sqrt((5.0**2 + 5.0**2) / 1))  # 7.07
    assert times == {("m", 1): [105.0, 180.0], ("m", 2): [120.0, 200.0]}
    throughput = cells(report, "Throughput")  # effective batch * 1000 / t
    assert throughput[("m", 1)] == pytest.approx([8 * 1000 / 105, 16 * 1000 / 180])
    assert throughput[("m", 2)] == pytest.approx([16 * 1000 / 120, 32 * 1000 / 200])
    assert report.warnings == [
        "1 record(s) skipped: exp.status is not ok (1 failure)",
        "1 record(s) skipped: no numeric results.time: n1"]
    # 7 records less the failure and n1: a1, a2, b1, c1, c2.
    assert report.summary[0] == "5 record(s) in 1 group(s) of tables."


def test_weak_and_strong_scaling_of_a_store(store: Path) -> None:
    weak = table_report([store.parent], {}, "--where", "weak-scaling")
    assert cells(weak, "Batch time") == {("m", 8): [105.0, 120.0], ("m", 16): [180.0, 200.0]}
    # speedup = throughput_2 / throughput_1 = (2 * B / t2) / (B / t1) = 2 * t1 / t2
    assert cells(weak, "Speedup")[("m", 8)] == pytest.approx([1.0, 2 * 105 / 120])  # 1.75
    assert cells(weak, "Speedup")[("m", 16)] == pytest.approx([1.0, 2 * 180 / 200])  # 1.8
    assert cells(weak, "Efficiency")[("m", 8)] == pytest.approx([100.0, 100 * 105 / 120])
    strong = table_report([store], {}, "--where", "strong-scaling")
    # Rows by effective batch: 8 (one replica), 16 (c1 on one, b1 on two), 32 (c2 only).
    assert cells(strong, "Batch time") == {("m", 8): [105.0, None], ("m", 16): [180.0, 120.0],
                                           ("m", 32): [None, 200.0]}
    assert cells(strong, "Speedup")[("m", 16)] == pytest.approx([1.0, 180 / 120])  # 1.5
    # efficiency = 100 * t1 / (N * tN) = 100 * 180 / (2 * 120) = 75
    assert cells(strong, "Efficiency")[("m", 16)] == pytest.approx([100.0, 75.0])
    assert ("no 1-replica result for exp.model=m, exp.effective_batch=32: no speedup or "
            "efficiency") in table(strong, "Speedup").notes


def test_a_query_runs_in_the_store(store: Path) -> None:
    report = table_report([store], {"exp.replica_batch": 16}, "--where", "weak-scaling")
    assert cells(report, "Batch time") == {("m", 16): [180.0, 200.0]}
    assert report.warnings == []  # the failure and n1 were not selected
    with pytest.raises(ResultsError, match=r"--where \{\"exp.model\": \"vgg\"\} matches none "
                                           r"of the 7 record\(s\).*exp.model: m"):
        table_report([store], {"exp.model": "vgg"}, "--where", "exploration")


def test_records_lacking_what_the_layout_needs_are_filled_in(tmp_path: Path) -> None:
    """DLBS logs say neither exp.num_nodes nor exp.num_replicas nor the effective batch:
    the replicas come from exp.gpus and the effective batch is replicas * batch."""
    records = []
    for index, (gpus, time) in enumerate([("0", 50.0), ("0,1", 60.0), ("0", 54.0)]):
        record = rec(f"d{index}", 32, 1, time, **{"exp.gpus": gpus, "exp.device_type": "gpu"})
        for key in ("exp.num_nodes", "exp.num_replicas", "exp.num_local_replicas",
                    "exp.effective_batch"):
            del record[key]
        records.append(record)
    path = tmp_path / "dlbs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    weak = table_report([path], {}, "--where", "weak-scaling")
    assert table(weak, "Batch time").columns == ["exp.model", "exp.replica_batch", "1", "2"]
    assert cells(weak, "Batch time") == {("m", 32): [52.0, 60.0]}  # (50 + 54) / 2
    assert cells(weak, "Speedup")[("m", 32)] == pytest.approx([1.0, 2 * 52 / 60])
    strong = table_report([path], {}, "--where", "strong-scaling")
    # The effective batch filled in is 1 * 32.0 and 2 * 32.0: floats, shown as they are.
    assert cells(strong, "Batch time") == {("m", 32.0): [52.0, None], ("m", 64.0): [None, 60.0]}
    assert table(strong, "Batch time").rows[0][1] == 32.0


@pytest.mark.parametrize("kind", ["exploration", "weak-scaling", "strong-scaling"])
def test_what_is_filled_in_is_what_normalised_gives_each_record(kind: str) -> None:
    """Some records lack what the layout needs, some do not; of those lacking it,
    some say their GPUs and some their local replicas, one value everywhere or
    several: the report is that of the records each filled in by ``normalised``."""
    from dlbench.report.tables.grid import normalised

    records = [rec("whole", 8, 4, 40.0, **{"exp.num_nodes": 2})]
    for index, (gpus, local, time) in enumerate([
            ("0", None, 50.0), ("0,1", None, 60.0), ("0", None, 54.0), ("", 2, 70.0),
            ("", 2, 72.0), ("0,1,2,3", None, 30.0)]):
        record = rec(f"d{index}", 8 * (1 + index % 2), 1, time,
                     **{"exp.gpus": gpus, "exp.device_type": "gpu" if gpus else "cpu"})
        for key in ("exp.num_nodes", "exp.num_replicas", "exp.effective_batch",
                    "exp.num_local_replicas"):
            del record[key]
        if local is not None:
            record["exp.num_local_replicas"] = local
        records.append(record)
    filled = [normalised(r) for r in records]
    assert any("exp.num_nodes" not in r for r in records)
    assert table_report_rows(records_table_report(records, kind)) == table_report_rows(
        records_table_report(filled, kind))


def table_report_rows(report: Report) -> list[tuple[str, list[str], list[list[Any]]]]:
    return [(t.title, list(t.columns), [[c if not hasattr(c, "mean") else (c.mean, c.n)
                                         for c in row] for row in t.rows])
            for t in report.tables]


def test_values_equal_in_python_share_a_cell_labelled_by_the_first() -> None:
    records = [rec("a", 4, 1, 10.0), rec("b", 4, 1, 20.0, **{"exp.replica_batch": 4.0}),
               rec("c", 2, 1, 30.0, **{"exp.replica_batch": 2.0}), rec("d", 2, 1, 50.0)]
    report = build_table_report(records, "exploration")
    # 4 and 4.0 are one batch size (mean (10 + 20) / 2 = 15), 2.0 and 2 another (40).
    assert table(report, "Batch time").columns == ["exp.model", "2.0", "4"]
    assert cells(report, "Batch time") == {("m",): [40.0, 15.0]}


def test_records_without_ids_and_with_shared_ids_are_each_counted() -> None:
    twin = rec("t", 8, 1, 30.0)
    nameless = rec("x", 8, 1, None)
    del nameless["exp.id"], nameless["exp.log_file"]
    logged = rec("y", 8, 1, None)
    del logged["exp.id"]
    report = build_table_report([rec("t", 8, 1, 10.0), twin, nameless, logged], "exploration")
    assert cells(report, "Batch time") == {("m",): [20.0]}  # both "t": (10 + 30) / 2
    # Named as a record is: exp.id, else its log file, else its position.
    assert report.warnings == [
        "2 record(s) skipped: no numeric results.time: record #3, logs/y.log"]


def test_what_no_report_can_be_made_of() -> None:
    with pytest.raises(ResultsError, match=r"none of the 2 selected record\(s\) has exp.status "
                                           r"ok and a numeric results.time: 1 record"):
        records_table_report([rec("a", 8, 1, None), rec("b", 8, 1, 5.0,
                                                        **{"exp.status": "timeout"})],
                             "exploration")
    with pytest.raises(ResultsError, match=r"none of the 0 selected"):
        records_table_report([], "weak-scaling")
    with pytest.raises(ValueError, match="unknown report type 'scorecard'"):
        records_table_report(RECORDS, "scorecard")
    # A status that is a list, a time that is NaN: skipped, and said why.
    odd = [rec("a", 8, 1, 10.0), rec("b", 8, 1, float("nan")),
           rec("c", 8, 1, 12.0, **{"exp.status": ["ok"]})]
    report = build_table_report(odd, "exploration")
    assert cells(report, "Batch time") == {("m",): [10.0]}
    assert report.warnings == ["1 record(s) skipped: exp.status is not ok (1 ['ok'])",
                               "1 record(s) skipped: no numeric results.time: b"]


def test_store_arrays_known_answers(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as opened:
        opened.put_many([
            {"exp.id": "a", "exp.model": "m1", "results.time": 1.5, "exp.num_nodes": 1},
            {"exp.id": "b", "exp.model": "m2", "results.time": "x", "exp.num_nodes": 1},
            {"exp.id": "c", "exp.model": None, "exp.num_nodes": 1},
            {"exp.id": "d", "results.time": 3, "exp.num_nodes": 1.0},
        ])
    with StoreArrays(tmp_path / "s.sqlite") as arrays:
        model = arrays.codes("exp.model")
        assert [model.values[c] for c in model.codes] == ["m1", "m2", None, None]
        assert model.present.tolist() == [True, True, True, False]
        nodes = arrays.codes("exp.num_nodes")  # 1 and 1.0: a code each, as stored
        assert [nodes.values[c] for c in nodes.codes] == [1, 1, 1, 1.0]
        assert type(nodes.values[nodes.codes[3]]) is float and count_distinct(nodes.codes) == 2
        values, numeric = arrays.numbers("results.time")
        assert numeric.tolist() == [True, False, False, True]
        assert values[numeric].tolist() == [1.5, 3.0]
        assert arrays.ids(np.array([3, 0])) == ["d", "a"]
        assert arrays.value("exp.model", 1) == "m2"
    with StoreArrays(tmp_path / "s.sqlite", {"exp.model": {"$ne": "m1"}}) as arrays:
        assert len(arrays) == 2 and arrays.ids(np.arange(2)) == ["b", "c"]  # d lacks it
    # Records in memory: their own exp.id (absent, or shared) is what exp.id reads.
    with StoreArrays.of_records([{"exp.id": "a", "v": 1}, {"v": [2]}, {"exp.id": "a"}]) as mem:
        assert len(mem) == 3 and not mem.stored_ids
        assert [mem.value("exp.id", i, "-") for i in range(3)] == ["a", "-", "a"]
        assert mem.present("exp.id").tolist() == [True, False, True]
        codes = mem.codes("v")  # a list next to a number
        assert [codes.values[c] for c in codes.codes] == [1, [2], None]


def test_store_arrays_survey_known_answers(tmp_path: Path) -> None:
    """Which keys hold one value everywhere, told by one scan, as reading them would."""
    rows = [{"exp.id": f"e{i}", "exp.status": "ok" if i != 1 else "failure", "same": "x",
             "ints": i, "none": None, "list": [1, 2], "exp.latency_percentile": 99,
             "mixed": 1 if i else 1.0} for i in range(4)]
    rows[3]["exp.status"] = ["ok"]
    with Store(tmp_path / "s.sqlite") as opened:
        opened.put_many(rows)
    keys = ["same", "ints", "none", "list", "exp.latency_percentile", "mixed", "nowhere"]
    with StoreArrays(tmp_path / "s.sqlite") as surveyed:
        surveyed.survey(keys)
        found = {k: (i.single, i.first) for k in keys if (i := surveyed.info(k)) is not None}
        # exp.status: the experiments table's text says which rows to read.
        positions, statuses = surveyed.other_than("exp.status", "ok")
        assert positions.tolist() == [1, 3] and statuses == ["failure", ["ok"]]
    # 99 under a key declared a float is kept in exact, in every record: still one value.
    assert found == {"same": (True, "x"), "ints": (False, None), "none": (True, None),
                     "list": (True, [1, 2]), "exp.latency_percentile": (True, 99),
                     "mixed": (False, None)}
    with StoreArrays(tmp_path / "s.sqlite") as read:  # the same, key by key
        one_by_one = {k: (i.single, i.first) for k in keys if (i := read.info(k)) is not None}
    assert one_by_one == found


def test_grouping_known_answers() -> None:
    ids, firsts = first_appearance([np.array([5, 3, 5, 7])], 4)
    assert ids.tolist() == [0, 1, 0, 2] and firsts.tolist() == [0, 1, 3]
    ids, firsts = first_appearance([np.array([1, 1, 2, 2, 1]), np.array([0, 9, 0, 0, 9])], 5)
    assert ids.tolist() == [0, 1, 2, 2, 1] and firsts.tolist() == [0, 1, 2]
    # Combinations beyond a direct table are renumbered first: the same answer.
    ids, firsts = first_appearance([np.array([10**7, 3, 10**7, 3]), np.array([9, 9, 9, 10**6])], 4)
    assert ids.tolist() == [0, 1, 0, 2] and firsts.tolist() == [0, 1, 3]
    ids, firsts = first_appearance([], 3)
    assert ids.tolist() == [0, 0, 0] and firsts.tolist() == [0]
    means = group_means(np.array([0, 1, 0, 0]), 2, np.array([10.0, 5.0, 12.0, 14.0]))
    assert (means[0].mean, means[0].sd, means[0].n) == (12.0, 2.0, 3)
    assert (means[1].mean, means[1].sd, means[1].n) == (5.0, None, 1)
    # Exact whatever the order: 1e16 + 1 + -1e16 summed naively is 0.
    (exact,) = group_means(np.zeros(3, dtype=np.int64), 1, np.array([1e16, 1.0, -1e16]))
    assert exact.mean == 1.0 / 3
    assert stable_order(np.array([2, 0, 2, 1]), 3).tolist() == [1, 3, 0, 2]
    assert stable_order(np.array([70000, 5, 70000]), 70001).tolist() == [1, 0, 2]
    # Group 0 holds rows 1 and 3 (codes 8, 7), group 1 rows 0 and 2 (7, 9).
    found, counts, first_rows = ordered_counts(np.array([1, 0, 1, 0]), np.array([7, 8, 9, 7]))
    assert found.tolist() == [8, 7, 9] and counts.tolist() == [1, 2, 1]
    assert first_rows.tolist() == [1, 3, 2]


def test_dlbench_report_of_a_store_and_of_its_logs(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlbench.cli.main import main

    assert main(["report", "--type", "strong-scaling", "--input", str(store.parent),
                 "--where", '{"exp.replica_batch": 8}', "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (time_table, *_) = document["tables"]
    # Batch 8: effective batch 8 on one replica (105), 16 on two (120).
    assert [row[2:] for row in time_table["rows"]] == [
        [{"mean": 105.0, "sd": pytest.approx(math.sqrt(50.0)), "n": 2}, None],
        [None, {"mean": 120.0, "sd": None, "n": 1}]]
    exported = tmp_path / "records.json"
    exported.write_text(json.dumps(RECORDS[:2]))
    assert main(["report", "--type", "exploration", "--input", str(exported),
                 "--format", "csv"]) == 0
    assert "105" in capsys.readouterr().out
    assert main(["report", "--type", "exploration", "--input", str(exported),
                 "--where", '{"exp.model": "vgg"}']) == 2
    assert "matches none of the 2 record(s)" in capsys.readouterr().err
