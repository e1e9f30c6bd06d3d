"""The history page as HTML text: a chart per configuration, confidence intervals and
change points drawn, each run's environment in its table, and every value escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dlbench.report.history.changes import analyse_history
from dlbench.report.history.page import render_history_page
from dlbench.results.history.records import history_row
from dlbench.results.history.store import open_history
from tests.integration.test_history_import import history_cli, nightly_record, write_nights

EVIL = '<script>alert(1)</script>"onmouseover="alert(2)'


def test_a_chart_per_configuration_with_its_change_and_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_nights(tmp_path / "runs", 30, step_at=22, step=-0.1)
    store = str(tmp_path / "h.sqlite")
    history_cli(["import", *map(str, paths), "--store", store, "--revision", "abc"], capsys)
    page = tmp_path / "h.html"
    status, out, _ = history_cli(["html", "--store", store, "--output", str(page)], capsys)
    assert status == 0 and "2 configurations, 1 new regressions" in out
    text = page.read_text()
    assert text.count('<section class="series"') == 2
    # Each chart is matplotlib's: 30 dots, 30 intervals (results.ci95_rel in every
    # record), the one regression's dashed line, and its x axis's title.
    for number in (0, 1):
        svg = text.split(f'id="series-{number}"')[1].split("</svg>")[0]
        dots = svg.split(f'<g id="series-{number}-history-runs">')[1].split("</g>")[0]
        assert dots.count("<use ") == 30
        bars = svg.split(f'<g id="series-{number}-history-ci">')[1].split("</g>")[0]
        assert bars.count("<path ") == 30
    assert text.count('-regression-0">') == 1 and "-change-0" not in text
    assert text.count(">30 runs</text>") == 2
    # Its runs are a table under it, with their revision and environment.
    assert text.count('<details class="runs"><summary>The 30 runs as a table') == 2
    runs = text.split('<details class="runs">')[1].split("</details>")[0]
    assert runs.count("<tr><td>#") == 30 and "<td>abc</td>" in runs
    assert "sys.framework_version: 2.3.0 → 2.4.0" in text
    assert "hw.device_name: NVIDIA A100" in runs
    assert "1 new regression(s)" in text
    # Self-contained: no resource from anywhere.
    assert not re.search(r'\b(src|href)="(?!#|data:)', text)


def test_every_value_from_the_history_is_escaped() -> None:
    rows = []
    for night in range(12):
        value = (100.0 if night < 6 else 50.0) + night % 3
        record = nightly_record(EVIL, night, value, EVIL if night > 5 else "x")
        record["hw.device_name"] = EVIL
        record["user.note"] = EVIL
        rows.append(history_row(record, run_id=EVIL, run_time=f"2024-01-{night + 1:02d}",
                                revision=EVIL))
    text = render_history_page(analyse_history(rows), source=EVIL)
    # The change point's row names the environment change, values and all.
    assert text.count('-regression-0">') == 1 and "sys.framework_version: x → " in text
    assert text.count("<script") == 1  # the page's own
    assert "onmouseover=" not in text.replace("onmouseover=&#34;", "")
    assert EVIL not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&#34;onmouseover=&#34;alert(2)" in text


def test_an_empty_history_is_an_error_naming_the_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "h.sqlite"
    open_history(str(store)).close()
    status, _, err = history_cli(
        ["html", "--store", str(store), "--output", str(tmp_path / "x.html")], capsys)
    assert status == 2 and "--metric results.throughput: no ok record" in err
    assert not (tmp_path / "x.html").exists()


def _ylabels(text: str) -> list[str]:
    return re.findall(r'<text [^>]*transform="rotate\(-90[^>]*>([^<]*)<', text)


def test_the_y_axis_names_the_metric_and_the_unit_the_records_state() -> None:
    rows = []
    for night in range(6):
        record = nightly_record("resnet50", night, 100.0 + night, "2.3.0")
        record["results.throughput_unit"] = "images/s"
        rows.append(history_row(record, run_id=f"r{night}", run_time=f"2024-01-{night + 1:02d}"))
    # the throughput in the unit the records state; the time in the key's declared unit
    assert _ylabels(render_history_page(analyse_history(rows))) == [
        "results.throughput (images/s)"]
    assert _ylabels(render_history_page(analyse_history(rows, metric="results.time"))) == [
        "results.time (ms)"]
    # a record that states no unit counts samples/s (an imported DLBS log)
    for row in rows:
        del row.results["results.throughput_unit"]
    assert _ylabels(render_history_page(analyse_history(rows))) == [
        "results.throughput (samples/s)"]
