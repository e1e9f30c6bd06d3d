"""``dlbench compare`` and ``dlbench plot`` end to end on real fake-workload runs."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CliRunner

# Jitter gives the batch times a spread to test; the same seed gives both runs of one
# configuration the same jitter. Steps of 20 ms keep a busy machine's late wake-ups
# (a fraction of a millisecond) well inside the 5 % threshold.
FAKE = ["-P", "exp.framework=fake", "-P", "exp.num_warmup_batches=1",
        "-P", "exp.num_batches=20", "-P", "fake.jitter_ms=1"]


def _run(out: Path, *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", *FAKE, *args,
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base: 20 ms steps at batches 1, 2; same: a second run of base; slow: 25 ms at
    batches 1, 2, 4."""
    root = tmp_path_factory.mktemp("runs")
    _run(root / "base", "-P", "fake.step_ms=20", "-V", "exp.replica_batch=[1,2]")
    _run(root / "same", "-P", "fake.step_ms=20", "-V", "exp.replica_batch=[1,2]")
    _run(root / "slow", "-P", "fake.step_ms=25", "-V", "exp.replica_batch=[1,2,4]")
    return root


def _flagged(run: Path) -> bool:
    """Whether the worker judged some result of ``run`` unstable for more than its
    spread (contention on a busy machine)."""
    from dlbench.results.noise import record_noise

    proc = subprocess.run([sys.executable, "-m", "dlbench", "query", "--input", str(run),
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    return record_noise(json.loads(proc.stdout)["data"]).biased


def test_compare_flags_a_real_slowdown(dlbench: CliRunner, runs: Path) -> None:
    proc = dlbench("compare", str(runs / "base"), str(runs / "slow"), "--fail-on-regression")
    assert "A and B differ in: fake.step_ms (A: 20.0, B: 25.0)" in proc.stdout
    # 20.5 ms -> 25.5 ms on average (jitter adds 0.5): throughput ratio about 0.80.
    verdicts = [line.split()[-1] for line in proc.stdout.splitlines()
                if line.split()[:1] in (["1"], ["2"])]
    assert "only in B: exp.replica_batch=4" in proc.stdout
    if _flagged(runs / "base") or _flagged(runs / "slow"):
        # A loaded machine flagged a run: that row has no direction, and says why.
        assert set(verdicts) <= {"slower", "inconclusive"} and "flags" in proc.stdout
        assert proc.returncode == (1 if "slower" in verdicts else 0), proc.stderr
        return
    assert proc.returncode == 1, proc.stderr
    assert verdicts == ["slower", "slower"]
    assert "faster: 0, slower: 2, unchanged: 0, inconclusive: 0" in proc.stdout


def test_compare_time_metric_says_slower_too(dlbench: CliRunner, runs: Path) -> None:
    proc = dlbench("compare", str(runs / "base"), str(runs / "slow"), "--metric",
                   "results.time", "--format", "json")
    assert proc.returncode == 0, proc.stderr  # no --fail-on-regression
    doc = json.loads(proc.stdout)
    assert doc["higher_is_better"] is False
    assert [r["verdict"] for r in doc["rows"]] == [
        "inconclusive" if r["why_inconclusive"] else "slower" for r in doc["rows"]]
    assert all(1.15 < r["ratio"] < 1.35 for r in doc["rows"])  # about 25.5 / 20.5 = 1.24


def test_compare_same_configuration_stays_quiet(dlbench: CliRunner, runs: Path) -> None:
    proc = dlbench("compare", str(runs / "base"), str(runs / "same"), "--fail-on-regression",
                   "--format", "csv")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader(proc.stdout.splitlines()))
    assert [r["verdict"] for r in rows] == ["unchanged", "unchanged"]


def test_compare_bad_threshold_is_one_line(dlbench: CliRunner, runs: Path) -> None:
    proc = dlbench("compare", str(runs / "base"), str(runs / "same"), "--threshold", "5")
    assert proc.returncode == 2
    assert proc.stderr.startswith("dlbench: error: --threshold '5'")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_plot_writes_a_chart(dlbench: CliRunner, runs: Path, tmp_path: Path) -> None:
    proc = dlbench("plot", "--input", str(runs / "base"), str(runs / "slow"),
                   "--x", "exp.replica_batch", "--y", "results.throughput",
                   "--series", '[{"fake.step_ms": 20}, {"fake.step_ms": 25}]',
                   "--legend", "10 ms", "12 ms", "--baseline-x", "1",
                   "--output", "charts/speedup.png")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "chart written to charts/speedup.png (2 series, 5 points)"
    assert (tmp_path / "charts" / "speedup.png").read_bytes().startswith(b"\x89PNG")
    assert [p.name for p in (tmp_path / "charts").iterdir()] == ["speedup.png"]
    # The chart check found nothing; a speedup is a ratio, so its axis has no unit.
    from PIL import Image

    with Image.open(tmp_path / "charts" / "speedup.png") as image:
        described = json.loads(image.text["dlbench.chart"])  # type: ignore[attr-defined]
    assert described["problems"] == [] and described["units"] == [""]
    assert described["ylabels"] == ["results.throughput / value at 1"]
    assert described["legend"][:2] == ["10 ms", "12 ms"]


@pytest.mark.parametrize(("args", "expected"), [
    (["--output", "chart.gif"], "accepted: .png .svg .pdf"),
    (["--series", '[{"exp.model": "vgg16"}]', "--output", "c.svg"], "matches none"),
    (["--legend", "a", "--output", "c.pdf"], "--legend names 1 series but there are 2"),
    (["--baseline-x", "4", "--output", "c.png"], "--baseline-x 4"),
    (["--series", "{", "--output", "c.png"], "--series: not valid JSON"),
])
def test_plot_errors_are_one_line(dlbench: CliRunner, runs: Path, tmp_path: Path,
                                  args: list[str], expected: str) -> None:
    proc = dlbench("plot", "--input", str(runs / "base"), str(runs / "slow"),
                   "--x", "exp.replica_batch", *args)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith("dlbench: error:")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert expected in proc.stderr
    assert not list(tmp_path.iterdir())


def test_plot_empty_input_is_an_error(dlbench: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text('{"data": []}')
    proc = dlbench("plot", "--input", "empty.json", "--x", "exp.replica_batch",
                   "--output", "c.png")
    assert proc.returncode == 2
    assert "holds no records" in proc.stderr
