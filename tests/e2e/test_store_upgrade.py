"""``dlbench store upgrade PATH`` converts an older store in its file, once, and leaves a
store holding a trigger or a view dlbench did not make byte for byte as it was; a writer
opening such an older store refuses it the same way."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from dlbench.results.store import FORMAT_VERSION, STORE_FILENAME
from tests.conftest import CliRunner
from tests.e2e.conftest import FAKE
from tests.e2e.test_reads_never_write import TRIGGERS, _as_format4, _files


@pytest.fixture()
def run(tmp_path: Path, pristine: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(pristine, copy)
    return copy


def _sql(store: Path, script: str) -> None:
    db = sqlite3.connect(store, isolation_level=None)
    try:
        db.executescript(script)
    finally:
        db.close()


def _format_and_count(store: Path) -> tuple[str, int]:
    db = sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True)
    try:
        version = db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        count = db.execute("SELECT COUNT(*) FROM experiments").fetchone()
        return str(version[0]), int(count[0])
    finally:
        db.close()


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlbench: error: "), proc.stderr
    return lines[0]


def test_an_older_store_is_converted_once_and_reads_the_same(
    dlbench: CliRunner, run: Path
) -> None:
    store = run / STORE_FILENAME
    before = dlbench("query", "--input", str(run), "--format", "json")
    _as_format4(store)
    proc = dlbench("store", "upgrade", str(run))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"results store {store} converted from format 4 to format {FORMAT_VERSION}")
    assert _format_and_count(store) == (str(FORMAT_VERSION), 2)
    after = dlbench("query", "--input", str(run), "--format", "json")
    assert json.loads(after.stdout) == json.loads(before.stdout)
    # Again: nothing to do, and nothing written.
    files = _files(run)
    proc = dlbench("store", "upgrade", str(store))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"results store {store} is already format {FORMAT_VERSION}: nothing to do")
    assert _files(run) == files


@pytest.mark.parametrize("old_format", [True, False], ids=["format4", "current"])
def test_a_store_holding_a_planted_trigger_or_view_is_refused_and_left_as_it_was(
    dlbench: CliRunner, run: Path, old_format: bool
) -> None:
    store = run / STORE_FILENAME
    if old_format:
        _as_format4(store)
    _sql(store, TRIGGERS)
    files = _files(run)
    line = _one_line_error(dlbench("store", "upgrade", str(run)))
    for name in ("trigger planted_insert", "trigger planted_update", "view planted_view",
                 str(store), f"dlbench store upgrade {store}"):
        assert name in line
    assert _files(run) == files
    assert _format_and_count(store) == ("4" if old_format else str(FORMAT_VERSION), 2)


def test_a_view_named_results_is_dlbenchs_only_from_format_4(
    dlbench: CliRunner, tmp_path: Path
) -> None:
    # A format 1 store: a view named results is not one dlbench made.
    store = tmp_path / "old.sqlite"
    _sql(store, """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        INSERT INTO meta VALUES ('format_version', '1');
        CREATE TABLE experiments (id TEXT PRIMARY KEY, seq INTEGER UNIQUE, status TEXT,
                                  updated TEXT, record TEXT);
        INSERT INTO experiments VALUES ('a', 1, 'ok', '2024-01-01', '{"exp.id": "a"}');
        CREATE VIEW results AS SELECT * FROM experiments;
    """)
    line = _one_line_error(dlbench("store", "upgrade", str(store)))
    assert "view results" in line
    _sql(store, "DROP VIEW results;")
    proc = dlbench("store", "upgrade", str(store))
    assert proc.returncode == 0, proc.stderr
    assert "converted from format 1" in proc.stdout
    assert _format_and_count(store) == (str(FORMAT_VERSION), 1)


def test_a_writer_refuses_to_convert_a_store_holding_a_planted_trigger(
    dlbench: CliRunner, run: Path
) -> None:
    store = run / STORE_FILENAME
    _as_format4(store)
    _sql(store, TRIGGERS)
    proc = dlbench("run", *FAKE, "-P", "fake.step_ms=2", "--out", str(run), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"dlbench store upgrade {store}" in proc.stderr
    assert _format_and_count(store) == ("4", 2)


@pytest.mark.parametrize("what", ["missing", "empty", "text", "not a store", "newer"])
def test_what_is_not_an_older_store_is_refused_in_one_line(
    dlbench: CliRunner, tmp_path: Path, pristine: Path, what: str
) -> None:
    path = tmp_path / "x.sqlite"
    expected = {"missing": "does not exist", "empty": "empty file", "text": "not an SQLite",
                "not a store": "not a dlbench results store", "newer": "upgrade dlbench"}
    if what == "empty":
        path.write_bytes(b"")
    elif what == "text":
        path.write_text("exp.id,results.time\n")
    elif what == "not a store":
        _sql(path, "CREATE TABLE t (x);")
    elif what == "newer":
        shutil.copy(pristine / STORE_FILENAME, path)
        _sql(path, "UPDATE meta SET value = '99' WHERE key = 'format_version';")
    before = path.read_bytes() if path.exists() else None
    line = _one_line_error(dlbench("store", "upgrade", str(path)))
    assert expected[what] in line and str(path) in line
    assert (path.read_bytes() if path.exists() else None) == before
