"""Reads never write: every command that only reads a run directory's store leaves every
file of the run directory byte for byte as it was, makes no ``-wal``, ``-shm`` or
``-journal`` file, never converts a store of an older format (format 4 is read as it
is; older ones are refused in one line naming ``dlbench store upgrade``), and never
fires a trigger planted in the store; nor do ``history check`` and ``history html``
change a history."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from dlbench.results.store import FORMAT_VERSION, STORE_FILENAME
from tests.conftest import CliRunner
from tests.e2e.conftest import FAKE

Done = subprocess.CompletedProcess[str]


#: Planted in the store: any insert into, or update of, ``meta`` (which converting an
#: older format makes) deletes every experiment, and a view calling a function.
TRIGGERS = """
CREATE TRIGGER planted_insert AFTER INSERT ON meta BEGIN DELETE FROM experiments; END;
CREATE TRIGGER planted_update AFTER UPDATE ON meta BEGIN DELETE FROM experiments; END;
CREATE VIEW planted_view AS SELECT count(*) AS n FROM experiments;
"""


def _as_format4(store: Path) -> None:
    """Turn the store into format 4's layout: no index of exp.model, no count of writes."""
    db = sqlite3.connect(store, isolation_level=None)
    try:
        db.execute('DROP INDEX IF EXISTS "by exp.model"')
        db.execute("DELETE FROM meta WHERE key = 'writes'")
        db.execute("UPDATE meta SET value = '4' WHERE key = 'format_version'")
    finally:
        db.close()


def _plant(store: Path) -> None:
    db = sqlite3.connect(store, isolation_level=None)
    try:
        db.executescript(TRIGGERS)
    finally:
        db.close()


def _files(run: Path) -> dict[str, str]:
    """Every file under ``run``, by relative path: the SHA-256 of its bytes."""
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()}


def _format_and_count(store: Path) -> tuple[str, int]:
    db = sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True)
    try:
        version = db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        count = db.execute("SELECT COUNT(*) FROM experiments").fetchone()
        return str(version[0]), int(count[0])
    finally:
        db.close()


def _query(proc: Done, _: Path) -> None:
    records = json.loads(proc.stdout)["data"]
    assert sorted(r["exp.replica_batch"] for r in records) == [1, 2]
    assert {r["exp.status"] for r in records} == {"ok"}


def _report(proc: Done, _: Path) -> None:
    assert "2 record(s)" in " ".join(json.loads(proc.stdout)["summary"])


def _status(proc: Done, _: Path) -> None:
    assert json.loads(proc.stdout)["counts"]["done"] == 2


def _compare(proc: Done, _: Path) -> None:
    rows = json.loads(proc.stdout)["rows"]
    assert [(r["exp.replica_batch"], r["verdict"], r["records_A"]) for r in rows] == [
        (1, "unchanged", 1), (2, "unchanged", 1)]


def _plot(proc: Done, work: Path) -> None:
    assert "2 points" in proc.stdout + proc.stderr and (work / "chart.png").is_file()


def _history(proc: Done, work: Path) -> None:
    assert "2 added" in proc.stdout + proc.stderr and (work / "history.sqlite").is_file()


def _parse(proc: Done, work: Path) -> None:
    records = json.loads((work / "records.json").read_text())["data"]
    assert sorted(r["exp.replica_batch"] for r in records) == [1, 2]


#: Each read command: its arguments (the run directory's path and a work folder outside
#: it in), and what its output must say.
COMMANDS: dict[str, tuple[Callable[[Path, Path], list[str]], Callable[[Done, Path], None]]] = {
    "query": (lambda run, _: ["query", "--input", str(run), "--format", "json"], _query),
    "report": (lambda run, _: ["report", "--input", str(run), "--format", "json"], _report),
    "status": (lambda run, _: ["status", "--input", str(run), "--format", "json"], _status),
    "compare": (lambda run, _: ["compare", str(run), str(run), "--format", "json"], _compare),
    "plot": (lambda run, work: ["plot", "--input", str(run), "--x", "exp.replica_batch",
                                "--output", str(work / "chart.png")], _plot),
    "history import": (lambda run, work: ["history", "import", "--store",
                                          str(work / "history.sqlite"), str(run)], _history),
    "parse": (lambda run, work: ["parse", str(run / "logs"), "--output",
                                 str(work / "records.json")], _parse),
}

#: The commands among them that read the store (``parse`` reads the logs only).
STORE_READERS = [command for command in COMMANDS if command != "parse"]


@pytest.mark.parametrize("old_format", [False, True], ids=["current", "format4"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_read_command_changes_no_byte_and_fires_no_trigger(
    dlbench: CliRunner, tmp_path: Path, pristine: Path, command: str, old_format: bool
) -> None:
    run = tmp_path / "run"
    shutil.copytree(pristine, run)
    store = run / STORE_FILENAME
    if old_format:
        _as_format4(store)
    _plant(store)
    before = _files(run)
    assert not any(name.endswith(("-wal", "-shm", "-journal")) for name in before)
    work = tmp_path / "work"
    work.mkdir()
    arguments, check = COMMANDS[command]
    proc = dlbench(*arguments(run, work), timeout=120)
    assert proc.returncode == 0, proc.stderr
    check(proc, work)
    assert _files(run) == before  # the same files, byte for byte: none made, none changed
    assert _format_and_count(store) == ("4" if old_format else str(FORMAT_VERSION), 2)


def _as_format1(store: Path) -> None:
    """Turn the store into format 1's layout: a JSON document per experiment."""
    from dlbench.results.store import Store

    with Store(store, create=False) as current:
        records = current.records()
    store.unlink()
    db = sqlite3.connect(store, isolation_level=None)
    try:
        db.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE experiments (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, "
            "status TEXT, updated TEXT NOT NULL, record TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('format_version', '1');")
        db.executemany("INSERT INTO experiments VALUES (?, ?, ?, '2026-01-01', ?)", [
            (r["exp.id"], seq, r.get("exp.status"), json.dumps(r))
            for seq, r in enumerate(records, 1)])
    finally:
        db.close()


@pytest.mark.parametrize("command", STORE_READERS)
def test_a_read_command_refuses_a_store_it_cannot_read_as_it_is_in_one_line(
    dlbench: CliRunner, tmp_path: Path, pristine: Path, command: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(pristine, run)
    store = run / STORE_FILENAME
    _as_format1(store)
    _plant(store)
    before = _files(run)
    work = tmp_path / "work"
    work.mkdir()
    arguments, _ = COMMANDS[command]
    proc = dlbench(*arguments(run, work), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("dlbench: error: ") and lines[0].endswith(
        f"run dlbench store upgrade {store}"), lines[0]
    assert _files(run) == before
    assert _format_and_count(store) == ("1", 2)


def test_a_writer_still_converts_an_older_store(
    dlbench: CliRunner, tmp_path: Path, pristine: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(pristine, run)
    _as_format4(run / STORE_FILENAME)
    proc = dlbench("run", *FAKE, "-P", "fake.step_ms=2", "--out", str(run), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _format_and_count(run / STORE_FILENAME) == (str(FORMAT_VERSION), 4)


#: Planted in a history: any insert into, or update of, its meta deletes every record.
HISTORY_TRIGGERS = """
CREATE TRIGGER planted_insert AFTER INSERT ON history_meta BEGIN DELETE FROM history_records; END;
CREATE TRIGGER planted_update AFTER UPDATE ON history_meta BEGIN DELETE FROM history_records; END;
"""


@pytest.mark.parametrize("action", ["check", "html"])
def test_history_check_and_html_change_no_byte_of_the_history(
    dlbench: CliRunner, tmp_path: Path, pristine: Path, action: str
) -> None:
    folder = tmp_path / "history"
    folder.mkdir()
    history = folder / "history.sqlite"
    proc = dlbench("history", "import", "--store", str(history), str(pristine), timeout=120)
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(history, isolation_level=None)
    try:
        db.executescript(HISTORY_TRIGGERS)
        records = db.execute("SELECT COUNT(*) FROM history_records").fetchone()[0]
    finally:
        db.close()
    assert records == 2
    before = _files(folder)
    arguments = ["history", action, "--store", str(history)]
    if action == "html":
        arguments += ["--output", str(tmp_path / "history.html")]
    proc = dlbench(*arguments, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if action == "html":
        assert (tmp_path / "history.html").stat().st_size > 0
    assert _files(folder) == before
