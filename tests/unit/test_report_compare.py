"""A/B comparison: matching, ratios, verdicts in both directions, summary, formats."""

from __future__ import annotations

import csv
import json
import math
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.report.compare.compare import (
    CompareError,
    Comparison,
    ConfigComparison,
    compare_records,
    parse_threshold,
    verdict,
    welch_p_value,
)
from dlbench.report.compare.formatting import format_comparison


def rec(batch: int, throughput: float, times: list[float] | None = None,
        **params: Any) -> dict[str, Any]:
    """An ok fake record at exp.replica_batch=batch."""
    record: dict[str, Any] = {
        "exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet50",
        "exp.replica_batch": batch, "exp.effective_batch": batch, "fake.step_ms": 10.0,
        "results.throughput": throughput, "sys.hostname": "node1",
    }
    if times is not None:
        record["results.time_data"] = times
    record.update({k.replace("__", "."): v for k, v in params.items()})
    return record


def row(ratio: float, verdict: str = "unchanged") -> ConfigComparison:
    return ConfigComparison({}, 1.0, ratio, ratio, None, verdict, 1, 1)


@pytest.mark.parametrize(("text", "value"), [
    ("5%", 0.05), ("0.05", 0.05), ("12.5%", 0.125), (" 0 % ", 0.0), (".1", 0.1)])
def test_threshold_accepts_percent_and_fraction(text: str, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "abc", "-5%", "100%", "5%%", "", "1.5"])
def test_threshold_refuses_anything_else(text: str) -> None:
    with pytest.raises(CompareError, match="--threshold"):
        parse_threshold(text)


def test_geometric_mean_of_ratios() -> None:
    comparison = Comparison("results.throughput", True, 0.05, [], [row(1.1), row(0.9)])
    # sqrt(1.1 * 0.9) = sqrt(0.99)
    assert comparison.geometric_mean() == pytest.approx(0.994987, abs=1e-6)


@pytest.mark.parametrize(("ratio", "p", "higher_better", "expected"), [
    (0.8, 0.001, True, "slower"),      # throughput down 20 %
    (1.2, 0.001, True, "faster"),      # throughput up 20 %
    (0.8, 0.001, False, "faster"),     # time down 20 %
    (1.2, 0.001, False, "slower"),     # time up 20 %
    (1.03, 0.001, True, "unchanged"),  # significant but within the 5 % threshold
    (1.2, 0.2, True, "unchanged"),     # beyond the threshold but not significant
    (0.8, None, True, "inconclusive"),  # nothing to test: no direction
    (1.02, None, True, "unchanged"),   # nothing to test, and within the threshold
])
def test_verdict_directions(ratio: float, p: float | None, higher_better: bool,
                            expected: str) -> None:
    assert verdict(ratio, p, 0.05, higher_better) == expected


def test_welch_known_answer() -> None:
    # a: mean 3, var 2.5, n 5; b: mean 5, var 4, n 3. se = sqrt(2.5/5 + 4/3) = 1.3540,
    # t = -2 / 1.3540 = -1.4771, Welch df = 1.8333² / (0.5²/4 + 1.3333²/2) = 3.533,
    # two-sided p at t=1.477, df=3.53: 0.2227.
    assert welch_p_value([1, 2, 3, 4, 5], [3, 5, 7]) == pytest.approx(0.2227, abs=1e-4)


def test_welch_degenerate_cases() -> None:
    assert welch_p_value([1.0], [1.0, 2.0]) is None
    assert welch_p_value([2.0, 2.0], [2.0, 2.0]) == 1.0
    assert welch_p_value([2.0, 2.0], [3.0, 3.0]) == 0.0


A = [rec(1, 100.0, [10.0, 10.2, 9.8]), rec(2, 200.0, [10.0, 10.1, 9.9]),
     rec(4, 400.0, [10.0, 10.1, 9.9])]
B = [rec(1, 80.0, [12.5, 12.6, 12.4], fake__step_ms=12.0),
     rec(2, 204.0, [9.8, 9.9, 9.7], fake__step_ms=12.0),
     rec(8, 640.0, [12.5, 12.4, 12.6], fake__step_ms=12.0)]


def test_match_ratio_verdict_and_one_side_only() -> None:
    c = compare_records(A, B)
    assert c.differing == {"fake.step_ms": (10.0, 12.0)}
    assert c.columns == ["exp.replica_batch"]
    assert [(r.config, r.a, r.b) for r in c.rows] == [
        ({"exp.replica_batch": 1}, 100.0, 80.0), ({"exp.replica_batch": 2}, 200.0, 204.0)]
    assert [r.ratio for r in c.rows] == pytest.approx([0.8, 1.02])
    assert [r.verdict for r in c.rows] == ["slower", "unchanged"]
    assert c.rows[0].change_pct == pytest.approx(-20.0)
    assert c.only_a == [{"exp.replica_batch": 4}]
    assert c.only_b == [{"exp.replica_batch": 8}]
    assert c.counts() == {"faster": 0, "slower": 1, "unchanged": 1, "inconclusive": 0}
    assert c.geometric_mean() == pytest.approx(math.sqrt(0.8 * 1.02))
    assert c.has_regression()


def test_time_metric_lower_is_better() -> None:
    a = [rec(1, 0, [10.0, 10.2, 9.8], results__time=10.0)]
    b = [rec(1, 0, [8.0, 8.1, 7.9], results__time=8.0, fake__step_ms=8.0)]
    c = compare_records(a, b, metric="results.time")
    assert not c.higher_is_better
    assert c.rows[0].ratio == pytest.approx(0.8)
    assert c.rows[0].verdict == "faster"
    assert not c.has_regression()


def test_throughput_is_tested_on_per_batch_throughput() -> None:
    # exp.effective_batch 4 at 10 ms is 400 samples/s in every batch on both sides:
    # no spread at all, equal means, so p = 1 whatever the recorded means say.
    a = [rec(4, 400.0, [10.0, 10.0], exp__effective_batch=4)]
    b = [rec(4, 500.0, [10.0, 10.0], exp__effective_batch=4, fake__seed=1)]
    assert compare_records(a, b).rows[0].p_value == 1.0


def test_repeats_are_pooled() -> None:
    a = [rec(1, 100.0, [10.0, 10.1]), rec(1, 110.0, [9.0, 9.1])]
    b = [rec(1, 105.0, [9.5, 9.6], fake__seed=2)]
    (r,) = compare_records(a, b).rows
    assert (r.a, r.n_a, r.n_b) == (105.0, 2, 1)
    assert r.ratio == 1.0


def test_parameter_varying_on_one_side_stays_in_the_key() -> None:
    # A sweeps fake.step_ms; B holds one value: not "the" difference, part of the key.
    a = [rec(1, 100.0, fake__step_ms=10.0), rec(1, 90.0, fake__step_ms=11.0)]
    b = [rec(1, 95.0, fake__step_ms=11.0)]
    c = compare_records(a, b)
    assert c.differing == {}
    assert [(r.config, r.ratio) for r in c.rows] == [({"fake.step_ms": 11.0}, 95.0 / 90.0)]
    assert c.only_a == [{"fake.step_ms": 10.0}]


def test_user_parameters_do_not_separate_configurations() -> None:
    a = [rec(1, 100.0, user__note="old")]
    b = [rec(1, 100.0, user__note="new")]
    assert len(compare_records(a, b).rows) == 1


def test_not_ok_records_and_environment_differences_are_warned() -> None:
    a = [rec(1, 100.0), {**rec(1, 1.0), "exp.status": "failure"}]
    b = [rec(1, 100.0, sys__hostname="node2", hw__cpu_model="Xeon")]
    c = compare_records(a, b)
    assert c.warnings == [
        "A and B ran in different environments: sys.hostname (A: node1; B: node2); "
        "hw.cpu_model (A: -; B: Xeon)",
        "A: 1 record(s) not ok left out",
    ]
    assert c.notes == ["p-value '-': too few values to test; a change beyond the threshold "
                       "is inconclusive"]


def test_nothing_in_common_is_an_error() -> None:
    with pytest.raises(ResultsError, match=r"no configuration is present in both A and B; "
                       r"values that differ: exp.replica_batch \(A: 1, 2; B: 4, 8\)$"):
        compare_records([rec(1, 1.0), rec(2, 1.0)], [rec(4, 1.0), rec(8, 1.0)])
    with pytest.raises(ResultsError, match="B has no ok record"):
        compare_records([rec(1, 1.0)], [{**rec(1, 1.0), "exp.status": "failure"}])


def test_text_format() -> None:
    lines = format_comparison(compare_records(A, B), "text")
    assert lines[0].startswith("results.throughput (higher is better): ratio = B / A")
    assert lines[1] == "A and B differ in: fake.step_ms (A: 10.0, B: 12.0)"
    header = lines[3].split()
    assert header == ["exp.replica_batch", "A", "B", "ratio", "change", "%", "p-value",
                      "verdict"]
    assert lines[5].split()[:5] == ["1", "100.00", "80.00", "0.8000", "-20.00"]
    assert lines[5].split()[-1] == "slower"
    assert "faster: 0, slower: 1, unchanged: 1, inconclusive: 0" in lines
    assert "only in A: exp.replica_batch=4" in lines
    assert "only in B: exp.replica_batch=8" in lines


def test_csv_and_json_formats_keep_full_precision() -> None:
    c = compare_records(A, B)
    rows = list(csv.DictReader(format_comparison(c, "csv")))
    assert rows[0]["exp.replica_batch"] == "1" and float(rows[0]["ratio"]) == 0.8
    assert rows[1]["verdict"] == "unchanged"
    doc = json.loads("\n".join(format_comparison(c, "json")))
    assert doc["differing"] == {"fake.step_ms": {"A": 10.0, "B": 12.0}}
    assert doc["rows"][0]["change_pct"] == pytest.approx(-20.0)
    assert doc["counts"] == {"faster": 0, "slower": 1, "unchanged": 1, "inconclusive": 0}
    assert doc["only_B"] == [{"exp.replica_batch": 8}]
    markdown = format_comparison(c, "markdown")
    assert any(line.startswith("| exp.replica_batch |") for line in markdown)
