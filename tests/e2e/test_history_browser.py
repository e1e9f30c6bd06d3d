"""The history page opened in headless Chromium: a chart per configuration, laid out,
and the filter box hiding the charts of the other configurations.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package;
skipped when any of them is missing. The driver is given by path, so selenium's
manager never tries to download one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.chromium import chromium_driver, require_chromium
from tests.integration.test_history_import import history_cli_main, write_nights

require_chromium()
from selenium.webdriver.common.by import By  # noqa: E402

MODELS = ("resnet50", "bert_base", "gpt2")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of 30 nights of three configurations, resnet50 10 % slower at the end."""
    root = tmp_path_factory.mktemp("history")
    paths = write_nights(root / "runs", 30, step_at=22, step=-0.1, models=MODELS)
    store = str(root / "h.sqlite")
    assert history_cli_main(["import", *map(str, paths), "--store", store]) == 0
    path = root / "history.html"
    assert history_cli_main(["html", "--store", store, "--output", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium_driver(tmp_path_factory.mktemp("chromium-profile")) as browser:
        yield browser


def _shown(driver: Any) -> list[str]:
    return [s.find_element(By.TAG_NAME, "h2").text
            for s in driver.find_elements(By.CSS_SELECTOR, "section.series") if s.is_displayed()]


def test_history_page_charts_and_filter(page: Path, driver: Any) -> None:
    driver.get(page.as_uri())
    assert driver.title == "History of results.throughput"
    sections = driver.find_elements(By.CSS_SELECTOR, "section.series")
    assert len(sections) == len(MODELS)
    for section in sections:
        svg = section.find_element(By.TAG_NAME, "svg")
        assert svg.size["width"] > 300  # laid out, not an empty box
        dots = section.find_elements(By.CSS_SELECTOR, "g[id$='-history-runs'] use")
        assert len(dots) == 30 and all(dot.size["width"] > 0 for dot in dots[:3])
    regression = [s for s in sections if "resnet50" in s.find_element(By.TAG_NAME, "h2").text]
    line = regression[0].find_elements(By.CSS_SELECTOR, "g[id$='-regression-0']")
    assert len(line) == 1 and line[0].size["height"] > 50
    # A run's row names its environment, once the table is opened.
    runs = regression[0].find_element(By.CSS_SELECTOR, "details.runs")
    runs.find_element(By.TAG_NAME, "summary").click()
    row = runs.find_elements(By.CSS_SELECTOR, "tbody tr")[0]
    assert "sys.framework_version: 2.3.0" in row.text

    box = driver.find_element(By.ID, "filter")
    box.send_keys("bert")
    shown = _shown(driver)
    assert len(shown) == 1 and "bert_base" in shown[0]
    assert driver.find_element(By.ID, "shown").text == "1"
    box.clear()
    box.send_keys("float16 gpt2")  # every word must match
    assert [("gpt2" in s) for s in _shown(driver)] == [True]
    box.clear()
    box.send_keys("x")
    box.send_keys("\b")  # an input event with the box empty again: everything back
    assert len(_shown(driver)) == len(MODELS)

    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
