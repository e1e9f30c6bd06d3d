"""Every chart of the documentation is checked: the ``dlbench plot`` commands of
docs/compare-and-charts.md that write docs/img/, and the charts of the HTML report of
docs/html-report.md's example.

The committed PNGs were drawn from real runs; each carries its labels and the problems
the chart check found then (``dlbench.chart``). Here the same commands run again, in
this process, on records built to match those runs: their labels must equal the
committed image's, every y label must name its unit, and neither drawing may have a
problem (a point on the edge, a legend past the image, a categorical line).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.report.charts.charts import PNG_KEY
from dlbench.report.html.charts import report_charts
from dlbench.report.html.page import render_html
from dlbench.report.tables.reports import build_table_report
from dlbench.results.io import write_records

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "compare-and-charts.md"
IMAGES = REPO / "docs" / "img"


def _record(framework: str, model: str, batch: int, ms: float, unit: str, **params: Any
            ) -> dict[str, Any]:
    return {"exp.framework": framework, "exp.model": model, "exp.phase": "training",
            "exp.device_type": "cpu", "exp.dtype": "float32", "exp.replica_batch": batch,
            "exp.effective_batch": batch, "exp.status": "ok", "results.time": ms,
            "results.throughput": batch * 1000.0 / ms, "results.throughput_unit": unit,
            "results.ci95_rel": 0.02, "hw.device_name": framework, **params}


def _fake_run(step_ms: float, batches: list[int]) -> list[dict[str, Any]]:
    """docs' `F` runs: fake steps of step_ms plus 1 ms of jitter on average, 3 repeats."""
    return [_record("fake", "resnet50", b, step_ms + 1.0 + 0.05 * r, "samples/s",
                    **{"fake.step_ms": step_ms, "fake.jitter_ms": 2.0, "user.repeat": r})
            for b in batches for r in (1, 2, 3)]


def _threads_run(threads: int) -> list[dict[str, Any]]:
    """docs' `T` runs: deep_mnist on PyTorch (images/s), batches 16 and 64, 3 repeats."""
    return [_record("pytorch", "deep_mnist", b, b / (0.45 * threads) * (1 + 0.03 * r),
                    "images/s", **{"pytorch.num_threads": threads, "user.repeat": r})
            for b in (16, 64) for r in (1, 2, 3)]


def _units_run() -> list[dict[str, Any]]:
    """docs' runs/units: toy (samples/s) and deep_mnist (images/s), once each."""
    return [_record("pytorch", model, b, ms * b, unit)
            for model, unit, ms in (("toy", "samples/s", 0.1), ("deep_mnist", "images/s", 1.0))
            for b in (8, 16)]


RUNS = {"runs/base": _fake_run(10.0, [1, 2, 4, 8]),
        "runs/slow": _fake_run(12.0, [1, 2, 4, 8, 16]),
        "runs/threads1": _threads_run(1), "runs/threads2": _threads_run(2),
        "runs/units": _units_run()}


def documented_plots() -> dict[str, list[str]]:
    """The documented ``dlbench plot`` commands that write docs/img/, by image name."""
    text = DOC.read_text(encoding="utf-8")
    commands = re.findall(r"^\$ dlbench plot ((?:.*\\\n)*.*)$", text, re.M)
    plots = {}
    for command in commands:
        args = shlex.split(command.replace("\\\n", " "))
        output = args[args.index("--output") + 1]
        if output.startswith("docs/img/"):
            plots[Path(output).name] = args
    return plots


def _described(path: Path) -> dict[str, Any]:
    from PIL import Image

    with Image.open(path) as image:
        text: dict[str, str] = image.text  # type: ignore[attr-defined]
    assert PNG_KEY in text, f"{path.name} was not drawn by this chart code"
    described: dict[str, Any] = json.loads(text[PNG_KEY])
    return described


def test_every_committed_chart_comes_from_a_documented_command() -> None:
    committed = {p.name for p in IMAGES.glob("chart-*.png")}
    assert committed == set(documented_plots())
    text = DOC.read_text(encoding="utf-8")
    assert all(f"](img/{name})" in text for name in committed)


@pytest.mark.parametrize("name", sorted(documented_plots()))
def test_a_documented_chart_is_unit_correct_unclipped_and_its_legend_inside(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    args = documented_plots()[name]
    for run, records in RUNS.items():
        if run in args:
            write_records(records, tmp_path / f"{run}.json")
            args[args.index(run)] = f"{run}.json"
    assert main(["plot", *args]) == 0
    assert "warning: chart" not in capsys.readouterr().err
    fresh = _described(tmp_path / "docs" / "img" / name)
    committed = _described(IMAGES / name)
    # Checked when drawn from the real runs, and again now.
    assert committed["problems"] == [] and fresh["problems"] == []
    for label, unit in zip(committed["ylabels"], committed["units"], strict=True):
        assert unit in label
    assert fresh == committed


def _html_example() -> list[dict[str, Any]]:
    """docs/html-report.md's sweep: fake steps of 1 ms, batches 1 and 2, half failing."""
    records = []
    for failure in ("none", "exception"):
        for batch in (1, 2):
            record = _record("fake", "resnet50", batch, 1.02, "samples/s",
                             **{"fake.step_ms": 1.0, "fake.failure": failure})
            if failure != "none":
                record["exp.status"] = "failure"
                for key in ("results.time", "results.throughput", "results.ci95_rel"):
                    del record[key]
            records.append(record)
    return records


def test_the_html_reports_charts_name_the_records_unit() -> None:
    records = _html_example()
    (chart,) = report_charts(records)
    assert chart.problems == []
    assert chart.caption == "resnet50 (fake, cpu): throughput in samples/s vs replica batch"
    assert ">results.throughput (samples/s)</text>" in chart.svg  # the y axis's title
    # The case: a language model counts tokens, and both the caption and the axis
    # say so, while the tables count samples.
    bert = [_record("fake", "bert_base", b, 1000.0 * b / 4.45, "tokens/s") for b in (1, 2)]
    for record in bert:
        record["results.throughput"] *= 16  # 16 tokens a sample
    (tokens,) = report_charts(bert)
    assert tokens.caption == "bert_base (fake, cpu): throughput in tokens/s vs replica batch"
    assert ">results.throughput (tokens/s)</text>" in tokens.svg and tokens.problems == []
    page = render_html(build_table_report(records + bert, "exploration"), records + bert)
    assert page.count("<svg") == 2 and ": throughput (samples/s) vs" not in page
    assert "throughput in tokens/s" in page and ">results.throughput (tokens/s)</text>" in page
