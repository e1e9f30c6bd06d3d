"""The HTML report of a real fake-workload run, opened in headless Chromium.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package;
skipped when any of them is missing. The driver is given by path, so selenium's
manager never tries to download one.

``DLBENCH_HTML_SCREENSHOT=docs/img/html-report.png`` also saves a full-page
screenshot there (how the one in ``docs/html-report.md`` was taken).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlbench.report.html.page import write_html_report
from dlbench.report.tables.reports import build_table_report
from dlbench.results import load_records
from tests.e2e.chromium import chromium_driver, require_chromium

require_chromium()
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The exploration report, as HTML, of two ok and two failed fake experiments;
    and the report's title."""
    root = tmp_path_factory.mktemp("html")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dlbench",
            "run",
            "-P",
            "exp.framework=fake",
            "-P",
            "fake.step_ms=1",
            "-P",
            "exp.num_batches=3",
            "-V",
            "exp.replica_batch=[1,2]",
            "-V",
            "fake.failure=[none, exception]",
            "--out",
            str(root / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Two experiments fail on purpose, so the exit status says so.
    assert "2 of 4 experiment(s) did not end ok" in proc.stderr, proc.stderr
    records = load_records([root / "run"])
    path = root / "report.html"
    report = build_table_report(records, "exploration")
    write_html_report(report, records, path)
    return path, report.title


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium_driver(tmp_path_factory.mktemp("chromium-profile")) as browser:
        yield browser


def _save_screenshot(browser: Any, path: Path) -> None:
    """A full-page PNG, reduced to a palette so that it stays small in the docs."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    # The window's height includes what is not page; leave room so nothing scrolls.
    browser.set_window_size(1100, int(height) + 200)
    browser.execute_script("window.scrollTo(0, 0)")
    from PIL import Image  # matplotlib's own dependency

    image = Image.open(io.BytesIO(browser.get_screenshot_as_png())).convert("RGB")
    # Below the page, a headless window paints black: keep the page only.
    image = image.crop((0, 0, image.width, min(image.height, int(height))))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.quantize(colors=64).save(path, optimize=True)


def test_report_opens_in_chromium_without_errors(
    report_file: tuple[Path, str], driver: Any
) -> None:
    path, title = report_file
    driver.get(path.as_uri())
    assert title.startswith("Exploration")
    assert driver.title == title
    assert driver.find_element(By.TAG_NAME, "h1").text == title
    tables = driver.find_elements(By.TAG_NAME, "table")
    # The exploration tables, then one parameters/results/environment table per block.
    assert len(tables) >= 3
    assert "resnet50" in driver.find_element(By.CSS_SELECTOR, "table.sortable").text

    failures = driver.find_elements(By.CSS_SELECTOR, "#failures .failure")
    assert len(failures) == 2
    assert "RuntimeError: fake failure at batch 0" in failures[0].text
    assert "FAILURE" in failures[0].text  # the status, upper-cased by the page's style

    charts = driver.find_elements(By.CSS_SELECTOR, "#charts figure svg")
    assert len(charts) == 1
    assert charts[0].size["width"] > 200  # laid out, not an empty box
    # The caption and the axis name the unit the records state, the fake workload's.
    caption = driver.find_element(By.CSS_SELECTOR, "#charts figcaption").text
    assert caption == "resnet50 (fake, cpu): throughput in samples/s vs replica batch"
    assert ">results.throughput (samples/s)</text>" in charts[0].get_attribute("innerHTML")

    # The inline script works: sorting a column and opening a linked experiment.
    header = driver.find_elements(By.CSS_SELECTOR, "#tables table.sortable thead th")[-1]
    header.click()
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    failures[0].find_element(By.PARTIAL_LINK_TEXT, "All parameters").click()
    opened = driver.find_elements(By.CSS_SELECTOR, "#experiments details[open]")
    assert len(opened) == 1 and "fake.failure" in opened[0].text

    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []

    screenshot = os.environ.get("DLBENCH_HTML_SCREENSHOT")
    if screenshot:
        _save_screenshot(driver, Path(screenshot))


def test_operators_and_memory_section_in_chromium(tmp_path: Path, driver: Any) -> None:
    """A profiled record's operator table sorts by click; its memory chart is laid out."""
    from dlbench.report.cells import Report
    from dlbench.report.html.page import render_html

    ops = [{"name": name, "calls": 2, "self_device_ms": 0.0, "self_host_ms": ms, "share": ms / 50}
           for name, ms in (("aten::mm", 20.0), ("aten::relu", 2.0), ("aten::add", 6.0))]
    record = {"exp.status": "ok", "exp.framework": "pytorch", "exp.model": "toy",
              "exp.phase": "training", "results.profile.top_ops": ops,
              "results.profile.batches": 2, "results.memory.weights_bytes": 3 << 20,
              "results.memory.activations_bytes": 1 << 20}
    path = tmp_path / "profiled.html"
    path.write_text(render_html(Report("profiled"), [record]), encoding="utf-8")
    driver.get(path.as_uri())
    chart = driver.find_element(By.CSS_SELECTOR, "#profiles figure.memory-chart svg")
    assert chart.size["width"] > 200
    # Two parts stacked on the bar, each laid out at a real width.
    for part in ("weights", "activations"):
        segment = chart.find_element(By.CSS_SELECTOR, f"g[id='memory-0-memory-0-{part}']")
        assert segment.size["width"] > 10
    table = driver.find_element(By.CSS_SELECTOR, "#profiles details.operators table")

    def names() -> list[str]:
        rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
        return [row.find_elements(By.TAG_NAME, "td")[0].text for row in rows]

    assert names() == ["aten::mm", "aten::add", "aten::relu"]
    table.find_elements(By.CSS_SELECTOR, "thead th")[1].click()  # self ms / step, ascending
    assert names() == ["aten::relu", "aten::add", "aten::mm"]
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []


def test_serving_curve_over_six_loads_in_chromium(tmp_path: Path, driver: Any) -> None:
    """A serving report of six offered loads: its chart is laid out at a real size, with
    the knee and the bound drawn, and its table has a row per load."""
    from dlbench.report.html.page import render_html
    from dlbench.report.serving.report import build_serving_report

    records = [{"exp.status": "ok", "exp.framework": "fake", "exp.model": "resnet50",
                "exp.phase": "inference", "exp.scenario": "server", "exp.target_qps": q,
                "exp.latency_bound_ms": 100.0, "exp.latency_percentile": 90.0,
                "results.qps_target": q, "results.qps_achieved": q * 0.99,
                "results.latency_p50": p / 2, "results.latency_p90": p,
                "results.latency_p99": p * 1.5, "results.latency_at_percentile": p,
                "results.valid": p <= 100, "results.valid_reasons": []}
               for q, p in ((40, 8.5), (80, 10.6), (120, 14.5), (160, 23.7), (180, 39.8),
                            (190, 120.0))]
    path = tmp_path / "serving.html"
    path.write_text(render_html(build_serving_report(records), records), encoding="utf-8")
    driver.get(path.as_uri())
    chart = driver.find_element(By.CSS_SELECTOR, "#serving figure svg")
    assert chart.size["width"] > 200 and chart.size["height"] > 150
    # The knee's star, the bound's dashed line and the invalid run's hollow point.
    for gid in ("serving-knee-0", "serving-bound-0", "serving-invalid-0"):
        mark = chart.find_element(By.CSS_SELECTOR, f"g[id='serving-0-{gid}']")
        assert mark.size["width"] > 0, gid
    rows = driver.find_elements(By.CSS_SELECTOR, "#tables table.sortable tbody tr")
    assert len(rows) == 6
    assert rows[4].find_elements(By.TAG_NAME, "td")[1].text == "178.20"  # the knee's
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
