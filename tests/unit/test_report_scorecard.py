"""The scorecard and baseline files, against answers worked out by hand."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.report.render import render_report
from dlbench.report.scorecard.baseline import (
    Baseline,
    Benchmark,
    dump_baseline,
    load_baseline,
    make_baseline,
    parse_baseline,
)
from dlbench.report.scorecard.scorecard import evaluate, scorecard_report


def rec(model: str, thr: float, status: str = "ok",
        extra: dict[str, Any] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "exp.framework": "pytorch", "exp.model": model, "exp.phase": "training",
        "exp.dtype": "float32", "exp.device_type": "gpu", "exp.replica_batch": 32,
        "exp.num_replicas": 1, "exp.status": status, "results.throughput": thr,
        "results.time": 32 * 1000 / thr,
    }
    record.update(extra or {})
    return record


def bench(name: str, target: float, weight: float = 1.0) -> Benchmark:
    return Benchmark(name=name, query={"exp.model": f"{name}$"}, target=target, weight=weight)


def by_name(records: list[dict[str, Any]], baseline: Baseline) -> dict[str, Any]:
    return {r.benchmark.name: r for r in evaluate(records, baseline)[0]}


def test_result_drops_best_and_worst_of_four_or_more_runs() -> None:
    runs = [rec("a", t) for t in (90.0, 100.0, 101.0, 102.0, 130.0)]
    result = by_name(runs, Baseline([bench("a", 100.0)]))["a"]
    # 90 and 130 dropped: (100 + 101 + 102) / 3 = 101. sd, as Mila's, is of all five
    # runs: mean 104.6, squared deviations sum to 899.2, sd = sqrt(899.2 / 4) = 14.9933
    assert (result.result, result.runs) == (101.0, 5)
    assert result.sd == pytest.approx(math.sqrt(224.8))
    # sd% = 100 * 14.9933 / 101 = 14.8449…; diff% = 100 * (101 / 100 - 1) = 1
    assert result.sd_percent == pytest.approx(14.8449, abs=1e-4)
    assert result.diff_percent == pytest.approx(1.0)
    three = by_name(runs[:3], Baseline([bench("a", 100.0)], min_runs=3))["a"]
    assert three.result == pytest.approx(97.0)  # (90 + 100 + 101) / 3, nothing dropped


def test_pass_within_tolerance_both_directions() -> None:
    records = [rec("a", 95.0), rec("b", 94.9)]
    higher = by_name(records, Baseline([bench("a", 100.0), bench("b", 100.0)], min_runs=1))
    # tolerance 5 %: pass needs result >= 100 * 0.95 = 95
    assert (higher["a"].within_tolerance, higher["b"].within_tolerance) == (True, False)
    lower = Baseline([bench("a", 90.0), bench("b", 91.0)], metric="results.throughput",
                     higher_is_better=False, min_runs=1)
    # lower is better: pass needs result <= target * 1.05: 94.5 < 95 fails, 95.55 > 94.9 passes
    got = by_name(records, lower)
    assert (got["a"].within_tolerance, got["b"].within_tolerance) == (False, True)
    # and its ratio is target / result: 91 / 94.9
    assert got["b"].ratio == pytest.approx(91 / 94.9)


def test_score_is_weighted_geometric_mean_with_penalty() -> None:
    records = [rec("a", 110.0), rec("b", 180.0), rec("c", 1.0, status="failure")]
    baseline = Baseline([bench("a", 100.0), bench("b", 200.0), bench("c", 50.0, weight=2.0),
                         bench("d", 10.0, weight=0.0)], min_runs=1)
    report = scorecard_report(records, baseline)
    # r: a 110 / 100 = 1.1, b 180 / 200 = 0.9, c failed → 0.5 with weight 2, d missing
    # with weight 0 (no effect): (1.1 * 0.9 * 0.5²)^(1/4) = 0.2475^0.25 = 0.705332…
    stats = {row[0]: row[1:] for row in report.tables[2].rows}
    assert stats["score"][0] == pytest.approx(0.2475 ** 0.25)
    assert stats["score"][0] == pytest.approx(0.705332, abs=1e-6)
    assert stats["Bench Passes"] == [2, 4, "False"]
    assert stats["within tolerance"] == [1, 4, None]
    # Performance, the mean diff over the present: (+10 % + -10 %) / 2 = 0, passes at >= 0
    assert stats["Performance"][0] == pytest.approx(0.0)
    assert stats["Performance"][1:] == [">= 0", "True"]
    tolerance = {row[0]: row[-2:] for row in report.tables[0].rows}
    assert tolerance == {"a": ["PASS", "ok"], "b": ["FAIL", "ok"], "c": [None, "FAILED"],
                         "d": [None, "MISSING"]}
    # Outside tolerance (b) is informational: only the missing and failed fail it.
    assert report.summary == ["Overall: FAIL (2 missing or failed); score 0.7053"]


def test_stability_quantile_against_threshold() -> None:
    # sd% per benchmark: a: runs 99, 101 → sd = √2 = 1.41421, sd% = 1.41421;
    # b: 90, 110 → sd = √200 = 14.1421, sd% = 14.1421. 80 % quantile of two values:
    # position 0.8 * 1 = 0.8 → 1.41421 + 0.8 * (14.1421 - 1.41421) = 11.5980
    records = [rec("a", 99.0), rec("a", 101.0), rec("b", 90.0), rec("b", 110.0)]
    report = scorecard_report(records, Baseline([bench("a", 100.0), bench("b", 100.0)],
                                                min_runs=2))
    row = next(r for r in report.tables[2].rows if r[0].startswith("Deviation Quantile"))
    assert row[0] == "Deviation Quantile (80%)"
    assert row[1] == pytest.approx(math.sqrt(2) + 0.8 * (math.sqrt(200) - math.sqrt(2)))
    assert row[2:] == ["< 5%", "False"]
    assert report.summary[0].startswith("Overall: FAIL (unstable)")


def test_text_scorecard_prints_formula_and_thresholds() -> None:
    report = scorecard_report([rec("a", 100.0)], Baseline([bench("a", 100.0)], min_runs=1),
                              "base.json")
    text = "\n".join(render_report(report, "text"))
    assert text.startswith("Scorecard against base.json\n")
    assert "Overall: PASS; score 1.0000" in text
    assert "score = exp(sum(w * ln r) / sum(w)), r = result / target;" in text
    assert "a MISSING or FAILED benchmark counts r = 0.5" in text
    assert "PASS when result >= target * (1 - tolerance), tolerance 5%" in text


def test_query_that_selects_several_configurations_is_warned_about() -> None:
    records = [rec("a", 100.0), rec("a", 120.0, extra={"exp.replica_batch": 64})]
    _, warnings = evaluate(records, Baseline([bench("a", 100.0)], min_runs=2))
    assert warnings == ["benchmark a selects runs that differ in exp.replica_batch; they are "
                        "averaged as one benchmark"]


# ---------------------------------------------------------------- baseline files


def test_make_baseline_round_trips_in_every_format(tmp_path: Path) -> None:
    records = [rec("vgg16", 100.0), rec("vgg16", 102.0), rec("vgg16_bn", 50.0),
               rec("vgg16", 300.0, extra={"exp.replica_batch": 128})]
    made, warnings = make_baseline(records)
    assert warnings == []
    names = [b.name for b in made.benchmarks]
    assert names == ["vgg16-training-b32", "vgg16_bn-training-b32", "vgg16-training-b128"]
    assert made.benchmarks[0].target == 101.0  # (100 + 102) / 2
    for suffix in (".json", ".yaml", ".csv"):
        path = tmp_path / f"base{suffix}"
        path.write_text(dump_baseline(made, path))
        loaded = load_baseline(path)
        assert loaded.min_runs == 4
        # "vgg16$" must not select vgg16_bn: every benchmark is one configuration.
        report = scorecard_report(records, dataclasses.replace(loaded, min_runs=1))
        assert report.summary == ["Overall: PASS; score 1.0000"], suffix
        assert [b.target for b in loaded.benchmarks] == [101.0, 50.0, 300.0]


def test_time_metric_is_lower_is_better_by_default() -> None:
    made, _ = make_baseline([rec("a", 100.0)], metric="results.time")
    assert made.higher_is_better is False and made.benchmarks[0].target == 320.0  # 32000/100
    slower = rec("a", 80.0)  # 32000 / 80 = 400 ms > 320 * 1.05 = 336
    got = by_name([slower], dataclasses.replace(made, min_runs=1))["a-training-b32"]
    assert got.within_tolerance is False
    # diff% = 100 * (400 / 320 - 1) = +25; lower is better, so Performance sees -25.
    assert got.diff_percent == pytest.approx(25.0) and got.figures.gain_percent == -25.0


BAD = [
    (".json", '{"benchmarks": [\n  {"name": "a", "query": {}, "target": 1},\n  {"name": "b",'
              ' "query": {}}]}', r"base.json: benchmarks\[1\]: benchmark has no target"),
    (".json", '{"benchmarks": [\n  {"name": "a",, }]}', r"base.json:2: not valid JSON"),
    (".yaml", "benchmarks:\n  - name: a\n    query: {}\n    target: 1\n  - name: b\n"
              "    query: {}\n", r"base.yaml:5: benchmark has no target"),
    (".yaml", "benchmarks:\n  - name: a\n   bad: [\n", r"base.yaml:3: not valid YAML"),
    (".csv", "name,target,query\na,1,{}\nb,2,{oops\n", r"base.csv:3: not valid JSON in a cell"),
    (".csv", "name,query\na,{}\n", r"base.csv:1: csv header lacks target"),
    (".json", '{"benchmarks": [{"name": "a", "query": {}, "target": -1}]}',
     r"target must be a number in"),
    (".json", '{"benchmarks": [{"name": "a", "query": {"x": {"$bad": 1}}, "target": 1}]}',
     r"unknown operator"),
    (".json", '{"benchmarks": [{"name": "a", "query": {}, "targt": 1}]}',
     r"unknown key 'targt'"),
    (".json", '{"benchmarks": []}', r"'benchmarks' must be a non-empty list"),
    (".toml", "", r"unknown extension"),
]


@pytest.mark.parametrize(("suffix", "text", "message"), BAD)
def test_malformed_baselines_are_one_line_errors(suffix: str, text: str, message: str) -> None:
    with pytest.raises(ResultsError, match=message) as caught:
        parse_baseline(text, f"base{suffix}")
    assert "\n" not in str(caught.value)


def test_csv_baseline_takes_weights_and_metrics() -> None:
    text = ('name,target,weight,metric,query\n'
            'a,320,2,results.time,"{""exp.model"": ""a$""}"\n')
    loaded = parse_baseline(text, "base.csv")
    only = loaded.benchmarks[0]
    assert (only.target, only.weight, loaded.metric_of(only)) == (320, 2, "results.time")
    assert loaded.higher_is_better_of(only) is False
    assert json.dumps(only.query) == '{"exp.model": "a$"}'
