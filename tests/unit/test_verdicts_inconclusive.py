"""Verdicts that admit noise: compare, history check and the scorecard say
"inconclusive", and why, where their inputs cannot support a direction."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.commands.compare import compare as compare_command
from dlbench.launch.progress_bar import stability_note
from dlbench.report.compare.compare import compare_records, doubts_of, verdict
from dlbench.report.compare.formatting import format_comparison
from dlbench.report.history.changepoint import DEFAULT_MIN_SIZE, fewest_values
from dlbench.report.history.changes import analyse_history
from dlbench.report.scorecard.baseline import Baseline, Benchmark
from dlbench.report.scorecard.scorecard import scorecard_report
from dlbench.results.history.records import HistoryRow
from dlbench.results.noise import is_contention, join_reasons, record_noise

CONTENTION = ("cpu contention: other processes used 1.52 of the worker's 2 CPUs "
              "(worker 0.40)")


def rec(step_ms: float, *reasons: str, batch: int = 16) -> dict[str, Any]:
    """An ok record of 20 batches around ``step_ms``; unstable with ``reasons``."""
    times = [step_ms * (1 + 0.01 * (i % 5 - 2)) for i in range(20)]
    mean = sum(times) / len(times)
    return {
        "exp.status": "ok", "exp.framework": "fake", "exp.model": "deep_mnist",
        "exp.replica_batch": batch, "exp.effective_batch": batch,
        "results.time": mean, "results.throughput": batch * 1000 / mean,
        "results.time_data": times, "results.stable": not reasons,
        "results.unstable_reasons": list(reasons),
    }


# --- the flags: read from results.stable and results.unstable_reasons, never re-decided

def test_noise_counts_unstable_contended_and_noisy_records() -> None:
    warm = "warm-up visible: first 3 batches median 20.00 ms vs 10.00 ms for the rest"
    noise = record_noise([rec(10, CONTENTION), rec(10, "cv 7.0% > 5%"), rec(10, warm),
                          rec(10)])
    assert (noise.records, noise.unstable, noise.contended, noise.spread) == (4, 3, 1, 1)
    assert noise.flags() == ["contention 1/4", "unstable 1/4", "noisy 1/4"]
    assert noise.describe() == (f"contention 1/4, unstable 1/4, noisy 1/4 ({CONTENTION}; "
                                f"cv 7.0% > 5%; {warm})")
    assert noise.biased
    alone = record_noise([rec(10, CONTENTION)])
    assert alone.flags() == ["contention"] and alone.biased
    # Spread alone, of one process or several: flagged, not biased.
    spread = record_noise([rec(10, "cv 7.0% > 5%", "process 2: ci ±3.0% > ±2% target")])
    assert spread.flags() == ["noisy"] and spread.flagged and not spread.biased
    clean = record_noise([rec(10), {"exp.status": "ok"}])  # no key: nothing says unstable
    assert not clean.flagged and clean.flags() == [] and clean.describe() == ""


def test_contention_is_what_the_worker_writes_for_cpus_and_gpus() -> None:
    from dlbench.measure.stability import stability_reasons

    results = {"results.use.other_cpu_percent_mean": 150.0,
               "results.use.cpu_percent_mean": 40.0, "results.use.cpus_available": 2,
               "results.use.samples": 10, "results.use.gpu0_used": True,
               "results.use.gpu0_other_processes_mean": 1.0,
               "results.use.gpu0_other_processes_max": 2}
    reasons = stability_reasons({"exp.cv_threshold": 0.05, "exp.device_type": "gpu"},
                                results)
    assert len(reasons) == 2 and all(is_contention(r) for r in reasons)
    assert not is_contention("cv 12.0% > 5%")


def test_reasons_beyond_the_shown_say_what_they_are() -> None:
    reasons = ["cv 12.0% > 5%", "warm-up visible: first 3 batches median 20.00 ms vs 10.00 ms",
               f"process 2: {CONTENTION}"]
    assert join_reasons(reasons) == "; ".join(reasons)  # short: all of them
    assert join_reasons(reasons, 1) == (
        "cv 12.0% > 5%; and 2 more reasons: warm-up visible, process 2: cpu contention")
    record = {"results.stable": False, "results.unstable_reasons": reasons}
    assert stability_note(record) == (
        " (unstable: cv 12.0% > 5%; warm-up visible: first 3 batches median 20.00 ms vs "
        "10.00 ms; and 1 more reason: process 2: cpu contention)")
    assert "more)" not in stability_note(record)


# --- compare: known answers of the verdict

@pytest.mark.parametrize(("ratio", "p", "doubts", "expected"), [
    (0.5, 0.001, ["A: contention"], "inconclusive"),   # a direction, on noisy inputs
    (2.0, 0.001, ["B: unstable (warm-up visible)"], "inconclusive"),
    (0.5, None, [], "inconclusive"),                   # nothing to test
    (1.01, 0.001, ["A: contention"], "unchanged"),     # within the threshold anyway
    (0.5, 0.3, ["A: contention"], "unchanged"),        # not significant anyway
    (0.5, 0.001, [], "slower"),                        # clean inputs keep their direction
])
def test_verdict_with_doubts(ratio: float, p: float | None, doubts: list[str],
                             expected: str) -> None:
    assert verdict(ratio, p, 0.05, True, doubts) == expected


def test_doubts_name_the_side_and_too_few_values() -> None:
    a, b = record_noise([rec(10, CONTENTION)]), record_noise([rec(10)])
    assert doubts_of(a, b, (20, 20)) == [f"A: contention ({CONTENTION})"]
    assert doubts_of(b, b, (1, 20)) == ["too few values to test (A 1, B 20; 2 a side needed)"]
    assert doubts_of(b, b, (20, 20)) == []


def test_a_contended_pair_is_inconclusive_with_the_reason() -> None:
    # 70 ms per batch against 10 ms: a 7x "speed-up" from a contended A.
    comparison = compare_records([rec(70, CONTENTION)], [rec(10)])
    (row,) = comparison.rows
    assert row.ratio == pytest.approx(7.0)
    assert row.p_value is not None and row.p_value < 0.001
    assert row.verdict == "inconclusive"
    assert row.why == [f"A: contention ({CONTENTION})"]
    assert row.flags() == "A: contention"
    assert not comparison.has_regression() and comparison.has_inconclusive()
    text = format_comparison(comparison, "text")
    header = text[2].split()
    assert header[-2:] == ["flags", "verdict"]
    assert text[4].split()[-3:] == ["A:", "contention", "inconclusive"]
    assert "faster: 0, slower: 0, unchanged: 0, inconclusive: 1" in text
    assert any(line.startswith("inconclusive: exp.framework=fake, exp.model=deep_mnist: "
                               "A: contention (cpu contention: ") for line in text)


def test_flags_stand_beside_every_verdict() -> None:
    warm = "warm-up visible: first 3 batches median 20.00 ms vs 10.00 ms for the rest"
    comparison = compare_records([rec(10), rec(10, batch=32), rec(10, batch=64)],
                                 [rec(10.02, warm), rec(20, batch=32),
                                  rec(20, "cv 6.0% > 5%", batch=64)])
    assert [(r.verdict, r.flags()) for r in comparison.rows] == [
        ("unchanged", "B: unstable"),  # no change to doubt
        ("slower", "-"),
        ("slower", "B: noisy"),        # a spread is what the test weighs: kept
    ]
    assert comparison.has_regression()


def test_clean_comparison_reads_as_before() -> None:
    lines = format_comparison(compare_records([rec(10)], [rec(20)]), "text")
    assert "flags" not in lines[2].split() and lines[4].split()[-1] == "slower"


def test_json_and_csv_carry_flags_and_reasons() -> None:
    import csv
    import json

    comparison = compare_records([rec(70, CONTENTION)], [rec(10, "warm-up did not settle")])
    doc = json.loads("\n".join(format_comparison(comparison, "json")))
    (row,) = doc["rows"]
    assert row["verdict"] == "inconclusive"
    assert row["flags_A"] == ["contention"] and row["flags_B"] == ["unstable"]
    assert row["unstable_reasons_A"] == [CONTENTION]
    assert row["why_inconclusive"] == [f"A: contention ({CONTENTION})",
                                       "B: unstable (warm-up did not settle)"]
    assert doc["counts"]["inconclusive"] == 1
    (line,) = csv.DictReader(format_comparison(comparison, "csv"))
    assert line["flags"] == "A: contention; B: unstable"
    assert line["why_inconclusive"].startswith("A: contention (cpu contention")


def _compare_args(tmp_path: Path, *, regression: bool, inconclusive: bool) -> argparse.Namespace:
    import json

    sides = []
    for name, record in (("a", rec(70, CONTENTION)), ("b", rec(10))):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps(record) + "\n")
        sides.append(str(path))
    return argparse.Namespace(a=sides[0], b=sides[1], metric="results.time",
                              better=None, threshold="5%", format="text",
                              fail_on_regression=regression,
                              fail_on_inconclusive=inconclusive)


def test_fail_on_regression_fails_only_on_a_conclusive_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A's time is 7x B's: "faster", were A not contended; nothing conclusive to fail on.
    assert compare_command(_compare_args(tmp_path, regression=True, inconclusive=False)) == 0
    assert compare_command(_compare_args(tmp_path, regression=True, inconclusive=True)) == 1
    err = capsys.readouterr().err
    assert "dlbench: warning: --fail-on-inconclusive: 1 configuration(s) inconclusive" in err


# --- history check

def _row(run: int, value: float, *reasons: str, model: str = "deep_mnist") -> HistoryRow:
    moment = f"2026-01-{run + 1:02d}T02:00:00.000000+00:00"
    return HistoryRow(run_id=f"r{run}", exp_id=f"{model}{run}", run_time=moment,
                      record_time=moment, config_key=model, status="ok",
                      config={"exp.framework": "fake", "exp.model": model},
                      results={"results.throughput": value, "results.stable": not reasons,
                               "results.unstable_reasons": list(reasons)})


def test_fewest_runs_is_the_detectors_two_segments() -> None:
    assert fewest_values() == 2 * DEFAULT_MIN_SIZE == 8
    assert fewest_values(3) == 6


def test_two_runs_with_a_7x_jump_are_inconclusive_not_unchanged() -> None:
    analysis = analyse_history([_row(0, 700.0), _row(1, 100.0)], permutations=19)
    (series,) = analysis.series
    assert series.changes == [] and analysis.regressions() == []
    assert series.too_few == ("2 runs; the change-point detector needs at least 8 "
                              "(2 x --min-size 4) to tell a change")
    assert analysis.inconclusive() == [(series, series.too_few)]


def test_a_series_long_enough_is_judged() -> None:
    rows = [_row(i, 100.0 if i < 8 else 50.0) for i in range(16)]
    analysis = analyse_history(rows, permutations=199)
    (series,) = analysis.series
    assert series.too_few == "" and analysis.inconclusive() == []
    assert [c.index for _, c in analysis.regressions()] == [8]


def test_a_regression_among_contended_runs_is_inconclusive() -> None:
    # The drop at run 9 comes with contention in 3 of the 4 runs after it.
    rows = [_row(i, 100.0 if i < 8 else 50.0, *([CONTENTION] if i in (8, 9, 10) else []))
            for i in range(16)]
    analysis = analyse_history(rows, permutations=199)
    (series,) = analysis.series
    (change,) = series.changes
    assert change.regression and change.inconclusive
    assert change.doubts == (f"3 of the 4 runs after it unstable: {CONTENTION}",)
    assert analysis.regressions() == []
    assert analysis.inconclusive() == [
        (series, f"run #9: 3 of the 4 runs after it unstable: {CONTENTION}")]


@pytest.mark.parametrize(("unstable", "reasons"), [
    ((9,), [CONTENTION]),                        # one biased run of four: still judged
    ((8, 9, 10, 11), ["cv 8.0% > 5%"]),          # spread only: the test weighs it
])
def test_a_regression_stands_on_noisy_or_mostly_clean_runs(
        unstable: tuple[int, ...], reasons: list[str]) -> None:
    rows = [_row(i, 100.0 if i < 8 else 50.0, *(reasons if i in unstable else []))
            for i in range(16)]
    assert len(analyse_history(rows, permutations=199).regressions()) == 1


def test_runs_imported_without_reasons_are_not_doubted() -> None:
    rows = [_row(i, 100.0 if i < 8 else 50.0, *([CONTENTION] if i >= 8 else []))
            for i in range(16)]
    for row in rows:
        del row.results["results.unstable_reasons"]
    assert len(analyse_history(rows, permutations=199).regressions()) == 1


# --- scorecard

def _card(records: list[dict[str, Any]], target: float = 100.0) -> Any:
    baseline = Baseline([Benchmark(name="m", query={"exp.model": "m$"}, target=target)],
                        min_runs=2)
    return scorecard_report(records, baseline, source="base.json")


def _card_rec(throughput: float, *reasons: str) -> dict[str, Any]:
    return {"exp.framework": "fake", "exp.model": "m", "exp.status": "ok",
            "results.throughput": throughput, "results.stable": not reasons,
            "results.unstable_reasons": list(reasons)}


def test_scorecard_on_contended_runs_is_inconclusive() -> None:
    card = _card([_card_rec(50.0, CONTENTION), _card_rec(51.0)])  # would be a FAIL
    assert card.inconclusive == [f"m: contention 1/2 ({CONTENTION})"]
    assert card.summary[0].startswith("Overall: INCONCLUSIVE (m: contention 1/2 (cpu ")
    assert card.passed  # not a conclusive FAIL: --fail-on-verdict lets it through
    clean = _card([_card_rec(50.0), _card_rec(51.0, "cv 7.0% > 5%")])  # spread: Mila's
    assert clean.inconclusive == [] and not clean.passed
    assert clean.summary[0].startswith("Overall: FAIL (")


def test_scorecard_with_a_missing_benchmark_fails_whatever_the_noise() -> None:
    baseline = Baseline([Benchmark(name="m", query={"exp.model": "m$"}, target=1.0),
                         Benchmark(name="gone", query={"exp.model": "gone$"}, target=1.0)],
                        min_runs=2)
    card = scorecard_report([_card_rec(50.0, CONTENTION), _card_rec(51.0)], baseline)
    assert card.inconclusive == [] and not card.passed
    assert card.summary[0].startswith("Overall: FAIL (1 missing or failed")
