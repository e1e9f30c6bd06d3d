"""Reads never write: every command that only reads a run directory's store leaves every
file of the run directory byte for byte as it was, makes no ``-wal``, ``-shm`` or
``-journal`` file, never converts a store of an older format in its file, and never
fires a trigger planted in the store."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dlbench.results.store import FORMAT_VERSION, STORE_FILENAME
from tests.conftest import CliRunner

Done = subprocess.CompletedProcess[str]

FAKE = ["-P", "exp.framework=fake", "-P", "fake.step_ms=1", "-P", "exp.num_batches=2",
        "-P", "exp.num_warmup_batches=0", "-P", "monitor.enabled=false",
        "-V", "exp.replica_batch=[1,2]"]

#: Planted in the store: any insert into, or update of, ``meta`` (which converting an
#: older format makes) deletes every experiment, and a view calling a function.
TRIGGERS = """
CREATE TRIGGER planted_insert AFTER INSERT ON meta BEGIN DELETE FROM experiments; END;
CREATE TRIGGER planted_update AFTER UPDATE ON meta BEGIN DELETE FROM experiments; END;
CREATE VIEW planted_view AS SELECT count(*) AS n FROM experiments;
"""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of two fake experiments, made once."""
    out = tmp_path_factory.mktemp("pristine") / "run"
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", *FAKE, "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


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
}


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


def test_a_writer_still_converts_an_older_store(
    dlbench: CliRunner, tmp_path: Path, pristine: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(pristine, run)
    _as_format4(run / STORE_FILENAME)
    proc = dlbench("run", *FAKE, "-P", "fake.step_ms=2", "--out", str(run), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _format_and_count(run / STORE_FILENAME) == (str(FORMAT_VERSION), 4)
