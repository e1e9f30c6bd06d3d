"""``dlbench report`` and ``dlbench baseline`` end to end, on a real fake-framework run."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dlbench.results.store import Store
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
    assert lines[:2] == ["Exploration: Batch time, ms", "=" * 27]
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
                   "--where", '{"exp.model": "resnet18"}')
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
                   "--baseline", str(base), "--fail-on-miss", "--fail-on-verdict")
    assert proc.returncode == 0, proc.stderr  # every target met: the gates pass
    # 3 timed batches a run are too few for the worker to trust (< 5): every target is
    # met, but the verdict says the runs cannot support it, and why.
    (overall,) = [line for line in proc.stdout.splitlines() if line.startswith("Overall:")]
    assert overall.startswith("Overall: INCONCLUSIVE (resnet")
    assert "only 3 timed batches (< 5)" in overall and overall.endswith("; score 1.0000")
    assert "resnet18-training-b8" in proc.stdout
    # Against results of resnet50 only, resnet18's benchmarks are missing.
    proc = dlbench("report", "--type", "scorecard", "--input", str(run_dir),
                   "--baseline", str(base), "--where", '{"exp.model": "resnet50"}',
                   "--fail-on-miss")
    # The report is printed whole; --fail-on-miss then fails the command, naming them.
    assert proc.returncode == 1
    assert "Overall: FAIL (2 missing or failed)" in proc.stdout
    assert proc.stdout.count("MISSING") >= 2
    assert "--fail-on-miss: 2 benchmark(s) missed their target: resnet18-training-b8: " \
           "MISSING; resnet18-training-b16: MISSING" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--where", '{"exp.model": "vgg"}'],
         "matches none of the 8 record(s) of --input {run}; values that exist: "
         "exp.model: resnet18, resnet50"),
        (["--target-variable", "results.nope"],
         "none of the 8 selected record(s) has exp.status ok and a numeric results.nope"),
        (["--format", "html"], "--format html needs --output FILE"),
        (["--type", "scorecard"], "--type scorecard needs --baseline FILE"),
        (["--where", "{oops"], "--where: not valid JSON"),
        (["--fail-on-miss"], "--fail-on-miss is used by --type scorecard only, not exploration"),
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
    text = page.read_text()
    assert "<table" in text
    section = text[text.index('<section id="tables">'):]
    tables = _html_tables(section[: section.index("</section>")])
    assert [t.heading for t in tables] == [
        "Batch time, ms", "Throughput, samples/s = effective batch * 1000 / t"]
    # The cells are the records' numbers: per model and batch, the mean batch time of
    # the two runs, and the throughput it makes.
    records = _records(run_dir)
    for table in tables:
        assert table.header == ["exp.model", "8", "16"]
        assert [row[0][0] for row in table.rows] == ["resnet18", "resnet50"]
    for (time_row, speed_row) in zip(tables[0].rows, tables[1].rows, strict=True):
        model = time_row[0][0]
        for column, batch in ((1, 8), (2, 16)):
            times = [float(r["results.time"]) for r in records  # type: ignore[arg-type]
                     if r["exp.model"] == model and r["exp.replica_batch"] == batch]
            mean = sum(times) / len(times)
            shown, sort_key = time_row[column]
            assert len(times) == 2 and float(sort_key) == pytest.approx(mean, rel=1e-9)
            assert shown.split()[0] == f"{mean:.2f}" and shown.split()[1].startswith("±")
            assert float(speed_row[column][1]) == pytest.approx(batch * 1000 / mean, rel=1e-3)
    # One chart per model, drawn inline as SVG, with the batches on its x axis and the
    # throughput on its y axis.
    charts = re.findall(r'<figure class="chart"><figcaption>(.*?)</figcaption>\s*<svg(.*?)</svg>'
                        r"(.*?)</figure>", text, re.DOTALL)
    assert [caption for caption, _, _ in charts] == [
        f"{model} (fake, cpu): throughput in samples/s vs replica batch"
        for model in ("resnet18", "resnet50")]
    for (caption, svg, table) in charts:
        labels = set(re.findall(r">([^<>]+)</text>", svg))
        assert {"8", "16", "exp.replica_batch", "results.throughput (samples/s)"} <= labels
        # The points drawn are the mean throughputs of the model's runs at each batch;
        # the chart's table carries the value each was drawn from.
        model = caption.split()[0]
        points = {x: float(y) for x, y in re.findall(
            r'<tr><td>[^<]*</td><td class="num" data-sort="[^"]*">([^<]*)</td>'
            r'<td class="num" data-sort="([^"]*)"', table)}
        assert sorted(points) == ["16", "8"]
        for batch_text, drawn in points.items():
            speeds = [float(r["results.throughput"]) for r in records  # type: ignore[arg-type]
                      if r["exp.model"] == model and r["exp.replica_batch"] == int(batch_text)]
            assert drawn == pytest.approx(sum(speeds) / len(speeds), rel=1e-9)


@dataclass
class _Table:
    heading: str = ""
    header: list[str] = field(default_factory=list)
    rows: list[list[tuple[str, str | None]]] = field(default_factory=list)


class _TableReader(HTMLParser):
    """Each ``<table>`` of a page: the ``<h3>`` before it, its header cells, and its
    body cells as (text, ``data-sort``)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[_Table] = []
        self._heading = ""
        self._in: str | None = None
        self._text = ""
        self._sort: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append(_Table(heading=self._heading))
        elif tag == "tr" and self.tables and self._in is None:
            self.tables[-1].rows.append([])
        if tag in ("h3", "th", "td"):
            self._in, self._text, self._sort = tag, "", dict(attrs).get("data-sort")

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag != self._in:
            return
        self._in = None
        if tag == "h3":
            self._heading = self._text.strip()
        elif tag == "th":
            self.tables[-1].header.append(self._text.strip())
        else:
            self.tables[-1].rows[-1].append((self._text.strip(), self._sort))


def _html_tables(page: str) -> list[_Table]:
    reader = _TableReader()
    reader.feed(page)
    for table in reader.tables:  # the header row is not a body row
        table.rows = [row for row in table.rows if row]
    return reader.tables


def _records(run_dir: Path) -> list[dict[str, object]]:
    with Store.in_directory(run_dir, create=False) as store:
        return store.records()
