"""The exploration and scaling reports read only the keys ``table_report_keys`` lists
(and the series in ``SERIES_USED``), and give the same report however large the
records; and the faster grouping helpers decide as the plain loops did."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from dlbench.report.aggregate import (
    SERIES_USED,
    _identity,
    environment_warning,
    row_keys,
    split_groups,
    table_report_keys,
)
from dlbench.report.render import render_report
from dlbench.report.tables.reports import build_table_report

_ODD = [1, 1.0, True, None, [1], "y", 0.0, -0.0, math.nan, {"a": 1}]


def _records(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records = []
    for i in range(rng.randint(1, 30)):
        record: dict[str, Any] = {
            "exp.id": f"e{i}", "exp.status": rng.choice(["ok", "ok", "ok", "failure"]),
            "exp.framework": rng.choice(["fake", "fake", "pytorch"]), "exp.device_type": "cpu",
            "exp.model": rng.choice(["a", "b"]), "exp.replica_batch": rng.choice([1, 2, 2.0]),
            "exp.num_replicas": rng.choice([1, 2]), "exp.num_nodes": 1,
            "results.time": rng.choice([1.0, 2.0, 3.5]), "results.throughput": 9.5,
            "results.time_data": [1.0, 2.0], "sys.env": {"A": "1"}, "user.note": "x",
            "results.stable": rng.choice([True, False]), "results.unstable_reasons": ["cv"],
        }
        for key in ("exp.image_size", "fake.step_ms", "exp.dtype", "exp.phase", "sys.hostname",
                    "hw.cpu_model", "exp.gpus", "exp.effective_batch", "exp.seq_len"):
            draw = rng.random()
            if draw < 0.5:
                record[key] = "x"
            elif draw < 0.65:
                record[key] = rng.choice(_ODD)
        records.append(record)
    return records


def _text(records: list[dict[str, Any]], kind: str, target: str) -> str:
    try:
        return "\n".join(render_report(build_table_report(records, kind, target), "text"))
    except Exception as exc:  # the same error, for the same reason, counts as the same
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("target", ["results.time", "results.throughput"])
def test_records_cut_to_the_report_keys_give_the_same_report(target: str) -> None:
    keys = set(table_report_keys(target))
    assert set(SERIES_USED) <= keys
    for seed in range(25):
        records = _records(seed)
        cut = [{k: v for k, v in r.items() if k in keys} for r in records]
        for kind in ("exploration", "weak-scaling", "strong-scaling"):
            assert _text(cut, kind, target) == _text(records, kind, target), (seed, kind)


def _plain_row_keys(records: list[dict[str, Any]], base: list[str], axis: list[str],
                    candidates: list[str]) -> list[str]:
    keys = list(base)
    for candidate in candidates:
        seen: dict[Any, Any] = {}
        for record in records:
            cell = tuple(_identity(record.get(k)) for k in [*keys, *axis])
            value = _identity(record.get(candidate))
            if seen.setdefault(cell, value) != value:
                keys.append(candidate)
                break
    return keys


def test_grouping_helpers_decide_as_the_plain_loops() -> None:
    candidates = ["exp.image_size", "fake.step_ms", "exp.dtype", "exp.gpus", "exp.seq_len"]
    for seed in range(60):
        records = _records(seed)
        assert row_keys(records, ["exp.model"], ["exp.replica_batch"], candidates) == \
            _plain_row_keys(records, ["exp.model"], ["exp.replica_batch"], candidates)
        groups = split_groups(records, ["exp.dtype", "exp.phase"])
        varying = [k for k in ["exp.dtype", "exp.phase"]
                   if len({_identity(r.get(k)) for r in records}) > 1]
        assert [list(g) for g, _ in groups] == [varying] * len(groups)
        assert sum(len(members) for _, members in groups) == len(records)
    same = [{"sys.hostname": "h", "hw.cpu_model": 1} for _ in range(3)]
    assert environment_warning(same) is None
    assert environment_warning([*same, {"sys.hostname": "h", "hw.cpu_model": True}]) == (
        "records come from different environments: hw.cpu_model: 1 (3), True (1)")
