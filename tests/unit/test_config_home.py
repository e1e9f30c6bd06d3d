"""dlbench's home: one folder, one fallback, and every file outside a run under it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlbench.config.home import dlbench_home
from dlbench.measure.peak.peaks import peaks_path
from dlbench.results.history.store import default_store


def test_the_home_is_the_variable_else_one_fallback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path / "h"))
    assert dlbench_home() == tmp_path / "h"
    monkeypatch.setenv("DLBENCH_HOME", "")  # empty: as if unset
    assert dlbench_home() == Path.home() / ".dlbench"
    monkeypatch.delenv("DLBENCH_HOME")
    assert dlbench_home() == Path.home() / ".dlbench"


def test_peaks_and_history_live_in_the_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path))
    assert peaks_path() == tmp_path / "peaks.json"
    assert default_store() == str(tmp_path / "history.sqlite")


def test_no_other_module_reads_the_variable() -> None:
    src = Path(dlbench_home.__code__.co_filename).parents[1]
    readers = sorted(str(path.relative_to(src)) for path in src.rglob("*.py")
                     if '"DLBENCH_HOME"' in path.read_text(encoding="utf-8"))
    assert readers == [str(Path("config/home.py"))]
