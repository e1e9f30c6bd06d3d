"""Headless Chromium for the browser tests: Debian's ``chromium`` and
``chromium-driver`` with the ``selenium`` package. The driver is given by path, so
selenium's manager never tries to download one. A test module calls
:func:`require_chromium` at import and is skipped, with the reason, where any piece
is missing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def require_chromium() -> None:
    """Skip the calling test module unless selenium, Chromium and its driver are here."""
    pytest.importorskip("selenium", reason="selenium is not installed")
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip(
            f"needs {CHROMIUM} and {CHROMEDRIVER} (Debian: apt-get install chromium "
            "chromium-driver)",
            allow_module_level=True,
        )


@contextmanager
def chromium_driver(profile_dir: Path) -> Iterator[Any]:
    """A headless Chromium (1100x900, its browser console logged) with its profile in
    ``profile_dir``; quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1100,900",
        f"--user-data-dir={profile_dir}",
    ):
        options.add_argument(argument)
    options.binary_location = str(CHROMIUM)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)),
                               options=options)
    browser.set_page_load_timeout(20)
    try:
        yield browser
    finally:
        browser.quit()
