"""Which way a result improves is read from its key's declaration, by every judge.

Every declared key with a direction goes through ``compare``, the history's change
points and a scorecard, falling and rising: each must call a fall of a higher-is-better
key (a throughput, an MFU, an accuracy) and a rise of a lower-is-better key (a time, a
latency, memory) a regression, and the opposite an improvement.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.errors import MetricError
from dlbench.report.compare.compare import compare_records
from dlbench.report.history.changes import analyse_history
from dlbench.report.scorecard.baseline import Baseline, Benchmark, make_baseline, parse_baseline
from dlbench.report.scorecard.scorecard import evaluate
from dlbench.results.history.records import history_row
from dlbench.results.keys.lookup import better, higher_is_better
from dlbench.results.keys.table import PLACEHOLDERS, RESULT_KEYS

#: One concrete name for each placeholder of a key family.
_EXAMPLE = {"i": "0", "series": "cpu_percent"}


def _concrete(name: str) -> str:
    return re.sub(r"<([a-z]+)>", lambda m: _EXAMPLE[m.group(1)], name)


DIRECTED = [(_concrete(k.name), k.better) for k in RESULT_KEYS if k.better]
UNDIRECTED_NUMBERS = [k.name for k in RESULT_KEYS
                      if not k.better and k.type in ("float", "int") and "<" not in k.name]


def test_every_direction_is_one_of_the_two_and_numbers_only() -> None:
    assert len(DIRECTED) >= 40
    for name, direction in DIRECTED:
        assert direction in ("higher", "lower"), name
    for key in RESULT_KEYS:
        if key.better:
            assert key.type in ("float", "int"), key.name  # a list or a text has no way up
    assert PLACEHOLDERS.keys() == _EXAMPLE.keys()


def test_the_directions_that_were_decided_three_ways() -> None:
    # compare once called only throughputs higher-is-better, the baseline everything but
    # results.time*, the history a list of words: each got one of these wrong.
    for name in ("results.throughput", "results.mfu", "results.tflops", "results.qps_achieved",
                 "results.accuracy_final", "results.use.samples_per_joule",
                 "results.output_tokens_per_s"):
        assert higher_is_better(name) is True, name
    for name in ("results.time", "results.time_p99", "results.latency_p99", "results.ttft_p50",
                 "results.tpot_mean", "results.itl_p99", "results.memory.peak_bytes",
                 "results.use.energy_j", "results.time_to_target", "results.compile_time"):
        assert higher_is_better(name) is False, name
    assert better("results.num_batches") == "" and better("user.anything") == ""


def _record(metric: str, value: float, **extra: Any) -> dict[str, Any]:
    return {"exp.framework": "fake", "exp.model": "toy", "exp.phase": "training",
            "exp.status": "ok", "exp.id": "e1", metric: value, **extra}


@pytest.mark.parametrize(("metric", "direction"), DIRECTED)
def test_compare_judges_by_the_declared_direction(metric: str, direction: str) -> None:
    # A fall of half, each side two runs (one value a side is too few for a direction).
    before, after = [_record(metric, 100.0)] * 2, [_record(metric, 50.0)] * 2
    fall = compare_records(before, after, metric=metric, threshold=0.05)
    rise = compare_records(after, before, metric=metric, threshold=0.05)
    assert fall.higher_is_better is (direction == "higher")
    assert fall.has_regression() is (direction == "higher")
    assert rise.has_regression() is (direction == "lower")
    assert fall.rows[0].verdict == ("slower" if direction == "higher" else "faster")


@pytest.mark.parametrize(("metric", "direction"), DIRECTED)
def test_history_calls_the_bad_way_a_regression(metric: str, direction: str) -> None:
    def rows(values: list[float]) -> list[Any]:
        return [history_row(_record(metric, value, **{"exp.id": f"n{night}"}),
                            run_id=f"n{night}", run_time=f"2024-01-{night + 1:02d}T00:00:00")
                for night, value in enumerate(values)]

    # Six nights at 100, six at 50 (a small wobble keeps the series from being flat).
    falling = [(100.0 if n < 6 else 50.0) + n % 2 for n in range(12)]
    rising = [(50.0 if n < 6 else 100.0) + n % 2 for n in range(12)]
    for values, bad in ((falling, direction == "higher"), (rising, direction == "lower")):
        analysis = analyse_history(rows(values), metric=metric, permutations=200)
        changes = [c for s in analysis.series for c in s.changes]
        assert len(changes) == 1, (metric, values)
        assert changes[0].regression is bad, (metric, values)


@pytest.mark.parametrize(("metric", "direction"), DIRECTED)
def test_a_scorecard_passes_only_the_good_way(metric: str, direction: str) -> None:
    baseline = Baseline([Benchmark(name="toy", query={"exp.model": "toy$"}, target=100.0)],
                        metric=metric, min_runs=1)
    grown = evaluate([_record(metric, 150.0)], baseline)[0][0]
    shrunk = evaluate([_record(metric, 50.0)], baseline)[0][0]
    assert grown.within_tolerance is (direction == "higher"), metric
    assert shrunk.within_tolerance is (direction == "lower"), metric


def test_a_key_without_a_direction_is_refused_unless_told(tmp_path: Path) -> None:
    records = [_record("results.num_batches", 10)]
    with pytest.raises(MetricError, match=r"--metric results.num_batches: declares no "
                                          r"direction"):
        compare_records(records, records, metric="results.num_batches")
    told = compare_records(records * 2, [_record("results.num_batches", 5)] * 2,
                           metric="results.num_batches", higher_is_better=True)
    assert told.has_regression()
    with pytest.raises(MetricError, match="is not a declared result key"):
        analyse_history([], metric="user.score")
    with pytest.raises(MetricError, match=r"results\.num_batches"):
        make_baseline(records, "results.num_batches")
    made, _ = make_baseline(records, "results.num_batches", higher_is_better=False)
    assert made.higher_is_better is False
    text = ('{"metric": "results.num_batches", '
            '"benchmarks": [{"name": "toy", "query": {}, "target": 1}]}')
    with pytest.raises(MetricError, match=r"b.json: benchmark 'toy': metric "
                                          r"results.num_batches: declares no direction"):
        parse_baseline(text, "b.json")
    assert parse_baseline(text.replace('"benchmarks"', '"higher_is_better": false, '
                                       '"benchmarks"'), "b.json").higher_is_better is False
    assert UNDIRECTED_NUMBERS  # such keys exist: the refusal is reachable


def test_the_cli_refuses_in_one_line_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nothing-here")
    assert main(["compare", missing, missing, "--metric", "results.num_batches"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "results.num_batches" in err and "--better" in err
    assert main(["history", "check", "--store", missing, "--metric", "results.copies"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "results.copies: declares no direction" in err
