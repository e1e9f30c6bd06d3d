"""Mila's three scorecard verdicts, against the report printed in Mila's own README.

The table below is the one Mila's README shows for ``mlbench-report`` (target,
result, sd, sd% and diff per benchmark), typed in as data. Its summary said: Bench
Passes True, Deviation Quantile (80%) +1.1458 % True, Performance +0.2129 % True
(the last a fraction: a mean diff of +21.29%).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.errors import ResultsError
from dlbench.report.scorecard.baseline import Baseline, Benchmark, parse_baseline
from dlbench.report.scorecard.scorecard import scorecard_report
from dlbench.report.scorecard.verdicts import Figures, mila_verdicts, run_statistics

# name, target, result, sd, sd% (a fraction), diff (a fraction)
SEED = [
    ("atari", 5.41, 7.424253, 0.055735, 0.007507, 0.372320),
    ("cart", 2000.00, 2195.248475, 6.457116, 0.002941, 0.097624),
    ("convnet", 178.76, 175.973774, 0.191682, 0.001089, -0.015586),
    ("convnet_distributed", 276.10, 756.841070, 60.333975, 0.079718, 1.741185),
    ("convnet_distributed_fp16", 330.41, 785.470579, 43.330802, 0.055165, 1.377260),
    ("convnet_fp16", 262.56, 329.347550, 0.770485, 0.002339, 0.254371),
    ("dcgan_all", 139.29, 274.608760, 1.361280, 0.004957, 0.971489),
    ("dcgan", 115.52, 147.794385, 0.632454, 0.004279, 0.279384),
    ("fast_style", 156.75, 146.285007, 0.218744, 0.001495, -0.066762),
    ("loader", 1200.00, 1188.224303, 62.070805, 0.052238, -0.009813),
    ("recom", 20650.19, 20802.705368, 103.476919, 0.004974, 0.007386),
    ("reso", 138.34, 178.694817, 0.920870, 0.005153, 0.291708),
    ("ssd", 59.96, 49.263719, 0.203476, 0.004130, -0.178390),
    ("toy_lstm", 2.65, 1.254635, 0.007228, 0.005761, -0.526553),
    ("toy_reg", 368820.18, 215482.487073, 3745.776792, 0.017383, -0.415752),
    ("translator", 223.47, 212.040509, 0.443492, 0.002092, -0.051146),
    ("vae", 7972.69, 5931.232565, 26.450238, 0.004459, -0.256056),
    ("wlm", 1440.87, 1365.497700, 2.910483, 0.002131, -0.052310),
    ("wlmfp16", 3793.37, 4649.460342, 18.698980, 0.004022, 0.225681),
]


def test_verdicts_of_the_seed_table() -> None:
    figures = [Figures(result, sd, target) for _, target, result, sd, _, _ in SEED]
    for figure, (name, _, _, _, sd_frac, diff) in zip(figures, SEED, strict=True):
        # sd% and diff as Mila defines them give the table's own columns.
        assert figure.sd_percent == pytest.approx(100 * sd_frac, abs=1e-4), name
        assert figure.diff_percent == pytest.approx(100 * diff, abs=1e-4), name
    verdicts = mila_verdicts(figures)
    assert (verdicts.present, verdicts.expected, verdicts.bench_passes) == (19, 19, True)
    # The printed "+1.1458 %" and "+0.2129 %", to the 4 decimals printed.
    assert verdicts.deviation_quantile == pytest.approx(1.1458, abs=5e-5)
    assert verdicts.performance == pytest.approx(21.29, abs=5e-3)
    assert (verdicts.stable, verdicts.performs, verdicts.passed) == (True, True, True)


def test_verdicts_fail_each_on_its_own() -> None:
    on_target = Figures(100.0, 1.0, 100.0)
    missing = mila_verdicts([on_target, Figures(None, None, 50.0)])
    assert (missing.bench_passes, missing.stable, missing.performs) == (False, True, True)
    # Exactly 5% is not below 5%: Mila's test is strict.
    edge = mila_verdicts([Figures(100.0, 5.0, 100.0)])
    assert edge.deviation_quantile == 5.0 and not edge.stable and not edge.passed
    slow = mila_verdicts([on_target, Figures(99.0, 1.0, 100.0)])  # mean diff -0.5%
    assert slow.performance == pytest.approx(-0.5) and not slow.performs
    # Lower is better: 90 ms against a 100 ms target is a gain of +10%.
    faster = Figures(90.0, 1.0, 100.0, higher_is_better=False)
    assert faster.diff_percent == pytest.approx(-10.0)
    assert faster.gain_percent == pytest.approx(10.0)
    assert mila_verdicts([faster]).performs


def test_run_statistics_trim_the_mean_not_the_sd() -> None:
    stats = run_statistics([90.0, 100.0, 101.0, 102.0, 130.0])
    # result (100 + 101 + 102) / 3; sd of all five: sqrt(899.2 / 4)
    assert (stats.result, stats.runs) == (101.0, 5)
    assert stats.sd == pytest.approx(math.sqrt(224.8))


# Each GPU report's timed batches, ms: a mean of 1 s, so that a report of v items/s
# processes v items a step, and its train_item is avg v, min v / 1.1, max v / 0.9.
BATCHES = [900.0, 1000.0, 1100.0]


def _seed_run(name: str, run: int, per_gpu: list[float]) -> dict[str, Any]:
    """One run of ``name``, one GPU report per value of ``per_gpu`` (two: two copies on
    one node, whose results.throughput is the node's sum)."""
    record = {"exp.framework": "pytorch", "exp.model": name, "exp.phase": "training",
              "exp.status": "ok", "user.run": run, "exp.id": f"{name}-{run}",
              "results.throughput": sum(per_gpu), "results.time": 1000.0,
              "results.time_data": BATCHES * len(per_gpu)}
    if len(per_gpu) > 1:
        record.update({"exp.parallel_jobs": len(per_gpu), "results.copies": len(per_gpu),
                       "results.copy_throughput": per_gpu,
                       "results.copy_time": [1000.0] * len(per_gpu)})
    return record


def _seed_runs(tmp_path: Path, copies: int = 1) -> tuple[Path, Path]:
    """Four runs per benchmark of the seed, R - x, R, R, R + x with x = sd * sqrt(3/2):
    their trimmed mean is R and their sample sd is sd (2x² / 3 = sd²).

    With two copies per run, each run's copies are v - d and v + d, d = sd / sqrt(8):
    of the eight reports the trimmed mean drops R - x - d and R + x + d and is R, and
    their squared deviations sum to 4x² + 8d² = 6sd² + sd² = 7sd², so the sd is sd."""
    records, benchmarks = [], []
    for name, target, result, sd, _, _ in SEED:
        x, d = sd * math.sqrt(1.5), sd / math.sqrt(8)
        for run, value in enumerate((result - x, result, result, result + x)):
            records.append(_seed_run(name, run, [value] if copies == 1
                                     else [value - d, value + d]))
        benchmarks.append({"name": name, "query": {"exp.model": f"{name}$"}, "target": target})
    runs, base = tmp_path / "runs.jsonl", tmp_path / "base.json"
    runs.write_text("".join(json.dumps(r) + "\n" for r in records))
    base.write_text(json.dumps({"benchmarks": benchmarks}))
    return runs, base


@pytest.mark.parametrize("copies", [1, 2])
def test_seed_end_to_end_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         copies: int) -> None:
    # Two copies a run: each GPU report is compared with the target, as Mila's report
    # does, not the node's sum (which would be twice the table's results).
    runs, base = _seed_runs(tmp_path, copies)
    code = main(["report", "--type", "scorecard", "--input", str(runs), "--baseline",
                 str(base), "--format", "json"])
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    assert document["summary"][0].startswith("Overall: PASS; score ")
    benches, throughput, summary = document["tables"]
    by_name = {row[0]: row for row in benches["rows"]}
    atari = by_name["atari"]  # target, result, sd, sd%, diff%, runs, tolerance, status
    assert atari[1:3] == [5.41, pytest.approx(7.424253)]
    assert atari[3] == pytest.approx(0.055735) and atari[4] == pytest.approx(0.7507, abs=1e-4)
    assert atari[5] == pytest.approx(37.2320, abs=1e-4) and atari[6:] == [4, "PASS", "ok"]
    assert by_name["ssd"][7] == "FAIL"  # -17.8%: outside tolerance, yet the suite passes
    rows = {row[0]: row[1:] for row in summary["rows"]}
    assert rows["Bench Passes"] == [19, 19, "True"]
    assert rows["Deviation Quantile (80%)"][0] == pytest.approx(1.1458, abs=5e-5)
    assert rows["Deviation Quantile (80%)"][1:] == ["< 5%", "True"]
    assert rows["Performance"][0] == pytest.approx(21.29, abs=5e-3)
    assert rows["Performance"][1:] == [">= 0", "True"]
    # Mila's train_item of each GPU report, from its batches (items v a step, 0.9 s,
    # 1 s and 1.1 s): avg v, min v / 1.1, max v / 0.9; the reports' v average to R.
    r = 7.424253
    assert throughput["rows"][0][:3] == ["atari", 4, 4 * copies]
    assert throughput["rows"][0][3:] == pytest.approx([r, r / 1.1, r / 0.9,
                                                       r / 0.9 - r / 1.1])

    main(["report", "--type", "scorecard", "--input", str(runs), "--baseline", str(base)])
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["Bench", "Passes", "19", "19", "True"] in lines
    assert ["Deviation", "Quantile", "(80%)", "1.1458", "<", "5%", "True"] in lines
    assert ["Performance", "21.2949", ">=", "0", "True"] in lines


def test_fewer_than_four_runs_is_one_line_exit_2(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    runs, base = _seed_runs(tmp_path)
    lines = runs.read_text().splitlines()
    # Drop one run of atari and two of cart.
    kept = [line for line in lines if '"atari-3"' not in line and '"cart-2"' not in line
            and '"cart-3"' not in line]
    runs.write_text("\n".join(kept) + "\n")
    code = main(["report", "--type", "scorecard", "--input", str(runs), "--baseline",
                 str(base)])
    assert code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("dlbench: error: the scorecard needs at least 4 runs of each benchmark; 2 "
                   "have fewer: atari (3), cart (2) (repeat the sweep, e.g. -V "
                   "'user.run=[1,2,3,4]', or lower min_runs in the baseline)\n")


def test_performance_below_target_fails_the_suite() -> None:
    records = [{"exp.model": "a", "exp.status": "ok", "results.throughput": v}
               for v in (97.0, 98.0, 98.0, 99.0)]
    baseline = Baseline([Benchmark("a", {"exp.model": "a$"}, 100.0)])
    report = scorecard_report(records, baseline)
    # result 98, diff -2%: within the 5% tolerance, yet Performance fails.
    assert report.tables[0].rows[0][-2:] == ["PASS", "ok"]
    assert report.summary == ["Overall: FAIL (performance -2.00% below target); score 0.9800"]


@pytest.mark.parametrize("value", [0, 2.5, "4", True])
def test_min_runs_must_be_a_whole_number(value: object) -> None:
    text = json.dumps({"min_runs": value,
                       "benchmarks": [{"name": "a", "query": {}, "target": 1}]})
    with pytest.raises(ResultsError, match=r"^base.json: min_runs must be a whole number >= 1"):
        parse_baseline(text, "base.json")
    assert parse_baseline(text.replace(json.dumps(value), "2", 1), "base.json").min_runs == 2
