"""``dlbench report`` and ``dlbench baseline`` end to end, on a real fake-framework run."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CliRunner


def _dlbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dlbench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two models x two batch sizes x two repeats; batch 16 steps take 8 ms, batch 8 2 ms
    (4x apart, so that a shared machine's noise cannot swap their order)."""
    root = tmp_path_factory.mktemp("report")
    proc = _dlbench(
        "run", "-P", "exp.framework=fake", "-P", "exp.num_warmup_batches=1",
        "-P", "exp.num_batches=3", "-P", "fake.step_ms=2",
        "-V", "exp.model=[resnet18,resnet50]", "-V", "exp.replica_batch=[8,16]",
        "-V", "user.run=[1,2]",
        "-E", '{"condition": {"exp.replica_batch": 16}, "parameters": {"fake.step_ms": 8}}',
        "--out", "out", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root / "out"


def test_exploration_text(dlbench: CliRunner, run_dir: Path) -> None:
    proc = dlbench("report", "--input", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["Exploration: results.time", "=" * 25]
    assert "8 record(s) in 1 group(s) of tables." in lines
    start = lines.index("Batch time, ms")
    assert lines[start + 1].split() == ["exp.model", "8", "16"]
    rows = [line.split() for line in lines[start + 3: start + 5]]
    # Two runs per cell: mean and ±sd%. A fake step lasts at least its fake.step_ms:
    # 2 ms at batch 8, 8 ms at batch 16 (upper bounds would depend on the machine).
    assert [r[0] for r in rows] == ["resnet18", "resnet50"]
    assert all(r[2].startswith("±") and r[4].startswith("±") for r in rows)
    assert all(2.0 <= float(r[1]) < float(r[3]) and float(r[3]) >= 8.0 for r in rows)
    assert "Throughput, samples/s = effective batch * 1000 / t" in lines


def test_weak_scaling_on_one_replica_and_formats(dlbench: CliRunner, run_dir: Path,
                                                 tmp_path: Path) -> None:
    proc = dlbench("report", "--type", "weak-scaling", "--input", str(run_dir),
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert [t["title"].split(" =")[0] for t in document["tables"]] == [
        "Batch time, ms", "Throughput, samples/s", "Speedup", "Efficiency, %"]
    assert any("every record has 1 replica" in n for n in document["tables"][0]["notes"])
    cell = document["tables"][0]["rows"][0][2]
    assert cell["n"] == 2 and cell["sd"] >= 0

    out = tmp_path / "report.csv"
    proc = dlbench("report", "--input", str(run_dir), "--format", "csv", "--output", str(out))
    assert proc.returncode == 0 and proc.stdout == ""
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 8  # 2 tables x 2 models x 2 batch sizes
    assert {r["n"] for r in rows if r["table"] == "Batch time, ms"} == {"2"}

    proc = dlbench("report", "--input", str(run_dir), "--format", "markdown",
                   "--query", '{"exp.model": "resnet18"}')
    assert proc.returncode == 0
    assert "| exp.model |" in proc.stdout and "resnet50" not in proc.stdout


def test_baseline_then_scorecard(dlbench: CliRunner, run_dir: Path, tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    proc = dlbench("baseline", "--input", str(run_dir), "--output", str(base))
    assert proc.returncode == 0, proc.stderr
    assert "4 benchmark(s) of results.throughput written" in proc.stderr
    # 2 ms fake steps on a busy test machine can vary by more than the default 5 %;
    # stability is not what this test is about.
    text = base.read_text()
    assert "stability_threshold: 0.05" in text
    # Two repeats keep the run short; the scorecard wants 4 unless the baseline says less.
    assert "min_runs: 4" in text
    base.write_text(text.replace("stability_threshold: 0.05", "stability_threshold: 10")
                    .replace("min_runs: 4", "min_runs: 2"))
    proc = dlbench("report", "--type", "scorecard", "--input", str(run_dir),
                   "--baseline", str(base))
    assert proc.returncode == 0, proc.stderr
    assert "Overall: PASS; score 1.0000" in proc.stdout
    assert "resnet18-training-b8" in proc.stdout
    # Against results of resnet50 only, resnet18's benchmarks are missing.
    proc = dlbench("report", "--type", "scorecard", "--input", str(run_dir),
                   "--baseline", str(base), "--query", '{"exp.model": "resnet50"}')
    assert proc.returncode == 0
    assert "Overall: FAIL (2 missing or failed)" in proc.stdout
    assert proc.stdout.count("MISSING") >= 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--query", '{"exp.model": "vgg"}'],
         "matches none of the 8 record(s) of --input {run}; values that exist: "
         "exp.model: resnet18, resnet50"),
        (["--target-variable", "results.nope"],
         "none of the 8 selected record(s) has exp.status ok and a numeric results.nope"),
        (["--format", "html"], "--format html needs --output FILE"),
        (["--type", "scorecard"], "--type scorecard needs --baseline FILE"),
        (["--query", "{oops"], "--query: not valid JSON"),
    ],
)
def test_bad_input_is_one_line_exit_2(dlbench: CliRunner, run_dir: Path, args: list[str],
                                      message: str) -> None:
    proc = dlbench("report", "--input", str(run_dir), *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert message.format(run=run_dir) in proc.stderr


def test_empty_input_holds_no_records(dlbench: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = dlbench("report", "--input", "empty")
    assert proc.returncode == 2
    assert "dlbench: error: --input empty holds no records" in proc.stderr


def test_html_goes_to_the_html_writer(dlbench: CliRunner, run_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = dlbench("report", "--input", str(run_dir), "--format", "html", "--output", str(page))
    assert proc.returncode == 0, proc.stderr
    assert "<table" in page.read_text()
