"""The column-at-a-time reports of a store give what the record path gives, byte for
byte, and the array functions under them give known answers."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.errors import ResultsError
from dlbench.report.render import render_report
from dlbench.report.tables.columnar import store_table_report
from dlbench.report.tables.columnar_groups import (
    count_distinct,
    first_appearance,
    group_means,
    ordered_counts,
    stable_order,
)
from dlbench.report.tables.reports import REPORT_TYPES, build_table_report
from dlbench.results.io import load_records
from dlbench.results.query import select_records
from dlbench.results.store import Store
from dlbench.results.store.arrays import StoreArrays

FORMATS = ("text", "markdown", "csv", "json")


def fake_records() -> list[dict[str, Any]]:
    """A few hundred records of the fake workload: models, batches, replica and node
    counts, repeats, phases, precisions, two frameworks, a parameter that splits rows,
    failures, a record without a time, unstable results, two hosts."""
    rng = random.Random(7)
    records: list[dict[str, Any]] = []
    layouts = [(1, 1), (2, 1), (4, 1), (2, 2)]  # (replicas, nodes)
    for model in ("resnet50", "alexnet", "bert_base"):
        for batch in (1, 4, 16):
            for replicas, nodes in layouts:
                for phase in ("training", "inference"):
                    for run in range(2 if phase == "inference" else 3):
                        i = len(records)
                        time = (10 + 3 * batch) * (1 + rng.random() / 10) / replicas ** 0.9
                        record: dict[str, Any] = {
                            "exp.id": f"exp{i:04d}", "exp.framework": "fake",
                            "exp.model": model, "exp.phase": phase,
                            "exp.dtype": "float32" if i % 7 else "bfloat16",
                            "exp.device_type": "cpu", "exp.gpus": "", "exp.num_nodes": nodes,
                            "exp.num_local_replicas": replicas // nodes,
                            "exp.num_replicas": replicas, "exp.replica_batch": batch,
                            "exp.effective_batch": batch * replicas, "exp.num_batches": 20,
                            "exp.status": "ok", "exp.log_file": f"logs/exp{i:04d}.log",
                            "fake.step_ms": 2.0 if model == "alexnet" and run == 2 else 1.0,
                            "user.run": run, "hw.device_name": "cpu",
                            "sys.hostname": "node1" if i % 5 else "node2",
                            "sys.framework_version": "fake",
                            "results.time": time, "results.time_p50": time * 0.99,
                            "results.throughput": batch * replicas * 1000.0 / time,
                            "results.stable": True, "results.unstable_reasons": [],
                            "results.time_data": [time] * 3,
                        }
                        if model == "bert_base":
                            record["exp.seq_len"] = 128 if run else 256
                        records.append(record)
    records[5].update({"exp.status": "failure", "exp.status_msg": "worker exited with 1"})
    del records[9]["results.time"]
    records[17]["exp.status"] = "timeout"
    del records[18]["exp.status"]
    del records[30]["results.time_p50"]  # ok, yet no number in that target
    records[41].update({"results.stable": False,
                        "results.unstable_reasons": ["cv 12% > 10%", "drift"]})
    records[42]["results.stable"] = False
    for record in records[100:106]:  # another framework on one model
        record.update({"exp.framework": "pytorch", "sys.framework_version": "2.5"})
    return records


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("columnar") / "results.sqlite"
    with Store(path) as opened:
        opened.put_many(fake_records())
    return path


def record_path(path: Path, report_type: str, target: str, where: dict[str, Any]) -> Any:
    records = select_records(load_records([path]), where, "--where", str(path))
    return build_table_report(records, report_type, target)


@pytest.mark.parametrize("report_type", REPORT_TYPES)
def test_every_report_and_format_is_the_record_paths(store: Path, report_type: str) -> None:
    for target in ("results.time", "results.time_p50", "results.throughput"):
        columnar = store_table_report([store], {}, report_type, target)
        assert columnar is not None
        expected = record_path(store, report_type, target, {})
        for fmt in FORMATS if target == "results.time" else ("text", "json"):
            assert render_report(columnar, fmt) == render_report(expected, fmt), (target, fmt)
    # What the input holds shows in the report: the column path saw it all.
    text = "\n".join(render_report(columnar, "text"))
    assert "exp.status is not ok (1 failure, 1 missing, 1 timeout)" in text
    assert "sys.hostname: node2 (35), node1" in text and "2 of " in text and "drift" in text


def test_a_selection_and_the_run_directory_give_the_record_paths(store: Path) -> None:
    where = {"exp.model": "alexnet", "exp.phase": "training"}
    columnar = store_table_report([store.parent], where, "exploration", "results.time")
    assert columnar is not None
    assert render_report(columnar, "csv") == render_report(
        record_path(store, "exploration", "results.time", where), "csv")
    # fake.step_ms differs between runs of one configuration: it splits the rows.
    assert "fake.step_ms" in columnar.tables[0].columns


def test_what_the_arrays_do_not_cover_is_left_to_the_record_path(tmp_path: Path,
                                                                 store: Path) -> None:
    assert store_table_report([store], {}, "scorecard", "results.time") is None
    assert store_table_report([store, store], {}, "exploration", "results.time") is None
    assert store_table_report([store], {"exp.model": "vgg"}, "exploration",
                              "results.time") is None  # nothing selected
    # No record has a number there: the record path raises, naming why.
    assert store_table_report([store], {}, "exploration", "results.stable") is None
    with pytest.raises(ResultsError, match=r"numeric results\.stable"):
        record_path(store, "exploration", "results.stable", {})
    for change in ({"exp.replica_batch": 4.0}, {"results.time": float("nan")}):
        records = fake_records()
        records[3].update(change)
        odd = tmp_path / f"odd{len(list(tmp_path.iterdir()))}.sqlite"
        with Store(odd) as opened:
            opened.put_many(records)
        assert store_table_report([odd], {}, "exploration", "results.time") is None
    records = fake_records()
    del records[3]["exp.num_replicas"]  # the record path fills it in
    with Store(tmp_path / "filled.sqlite") as opened:
        opened.put_many(records)
    assert store_table_report([tmp_path / "filled.sqlite"], {}, "exploration",
                              "results.time") is None


def test_store_arrays_known_answers(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as opened:
        opened.put_many([
            {"exp.id": "a", "exp.model": "m1", "results.time": 1.5, "exp.num_nodes": 1},
            {"exp.id": "b", "exp.model": "m2", "results.time": "x", "exp.num_nodes": 1},
            {"exp.id": "c", "exp.model": None, "exp.num_nodes": 1},
            {"exp.id": "d", "results.time": 3, "exp.num_nodes": 1},
        ])
    with StoreArrays(tmp_path / "s.sqlite") as arrays:
        model = arrays.codes("exp.model")
        assert [model.values[c] for c in model.codes] == ["m1", "m2", None, None]
        assert model.present.tolist() == [True, True, True, False]
        nodes = arrays.codes("exp.num_nodes")  # one value everywhere: not read
        assert nodes.values[nodes.codes[0]] == 1 and count_distinct(nodes.codes) == 1
        values, numeric = arrays.numbers("results.time")
        assert numeric.tolist() == [True, False, False, True]
        assert values[numeric].tolist() == [1.5, 3.0]
        assert arrays.ids(np.array([3, 0])) == ["d", "a"]
        assert arrays.value("exp.model", 1) == "m2"
    with StoreArrays(tmp_path / "s.sqlite", {"exp.model": {"$ne": "m1"}}) as arrays:
        assert len(arrays) == 2 and arrays.ids(np.arange(2)) == ["b", "c"]  # d lacks it


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
    found, counts = ordered_counts(np.array([1, 0, 1, 0]), np.array([7, 8, 9, 7]))
    assert found.tolist() == [8, 7, 9] and counts.tolist() == [1, 2, 1]


def test_dlbench_report_of_a_store_is_the_record_paths(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlbench.cli.main import main
    from dlbench.report.tables import columnar

    taken: list[bool] = []
    original = columnar.columnar_table_report

    def counted(*args: Any, **kwargs: Any) -> Any:
        taken.append(True)
        return original(*args, **kwargs)

    monkeypatch.setattr(columnar, "columnar_table_report", counted)
    where = '{"exp.phase": "training"}'
    assert main(["report", "--type", "strong-scaling", "--input", str(store.parent),
                 "--where", where, "--format", "json"]) == 0
    expected = record_path(store, "strong-scaling", "results.time", {"exp.phase": "training"})
    assert capsys.readouterr().out.splitlines() == render_report(expected, "json")
    assert taken == [True]
