"""Hardening corpus: what a user types never destroys a file, runs a sweep twice, writes
when it only reads, prints a password or a control character, or ends in a traceback.

Each refused case goes through ``dlbench.cli.main.main`` in this process and ends in
exactly one line on stderr, exit status 2, and every file of the workspace unchanged
(byte for byte); each accepted case ends in the right result.
"""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dlbench.cli.main import main
from dlbench.results.store import Store

FAKE = ["-P", "exp.framework=fake", "-P", "exp.model=toy", "-P", "exp.num_batches=1",
        "-P", "exp.num_warmup_batches=0"]

RECORDS = [
    {"exp.id": f"e{batch}", "exp.status": "ok", "exp.framework": "fake", "exp.model": "toy",
     "exp.phase": "training", "exp.replica_batch": batch, "results.time": 10.0 * batch,
     "results.throughput": 100.0, "results.start_time": "2024-05-01T02:00:00+00:00"}
    for batch in (1, 2)
]


def _make_run_dir(root: Path) -> Path:
    """A run directory as a runner leaves it: a store, a log and an experiment input."""
    run = root / "R"
    (run / "logs").mkdir(parents=True)
    (run / "experiments").mkdir()
    with Store.in_directory(run) as store:
        for record in RECORDS:
            store.put(record)
    (run / "logs" / "e1.log").write_text('__exp.id="e1"\n__exp.status="ok"\n')
    (run / "experiments" / "e1.json").write_text('{"exp.id": "e1"}\n')
    return run


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a run directory ``R``, an export, a baseline, a history
    and a log outside any run directory; ``DLBENCH_HOME`` is its ``home``."""
    _make_run_dir(tmp_path)
    (tmp_path / "records.jsonl").write_text(
        "".join(f'{{"exp.id": "{r["exp.id"]}", "exp.model": "toy", "results.time": '
                f'{r["results.time"]}}}\n' for r in RECORDS))
    (tmp_path / "base.json").write_text(
        '{"metric": "results.time", "benchmarks": [{"name": "toy", "query": '
        '{"exp.model": "toy"}, "target": 10.0, "tolerance": 0.5}]}\n')
    (tmp_path / "loose.log").write_text('__exp.id="x"\n__results.time=1.0\n')
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("DLBENCH_HOME", str(tmp_path / "home"))
    assert main(["history", "import", str(tmp_path / "R"), "--store",
                 str(tmp_path / "H.sqlite")]) == 0
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` by its content's hash: what must not change."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str], root: Path,
                     words: list[str]) -> str:
    before = _tree(root)
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 2, captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlbench: error: "), captured.err
    assert "Traceback" not in captured.err
    for word in words:
        assert word in lines[0], lines[0]
    assert _tree(root) == before
    return lines[0]


# ----------------------------------------------------------- --output over our files

#: (case id, argv, words of the one-line refusal).
OUTPUTS: list[tuple[str, list[str], list[str]]] = [
    ("report-html-over-store", ["report", "--input", "R", "--format", "html", "--output",
                                "R/results.sqlite"], ["--output", "SQLite"]),
    ("report-over-log", ["report", "--input", "R", "--output", "R/logs/e1.log"],
     ["R/logs/e1.log", "logs"]),
    ("report-new-file-in-logs", ["report", "--input", "R", "--output", "R/logs/t.txt"],
     ["logs"]),
    ("report-csv-over-experiment", ["report", "--input", "R", "--format", "csv", "--output",
                                    "R/experiments/e1.json"], ["experiments"]),
    ("report-over-wal", ["report", "--input", "R", "--output", "R/results.sqlite-wal"],
     ["R/results.sqlite"]),
    ("report-over-its-input", ["report", "--input", "records.jsonl", "--output",
                               "records.jsonl"], ["input of this command"]),
    ("report-over-its-baseline", ["report", "--input", "R", "--type", "scorecard",
                                  "--baseline", "base.json", "--output", "base.json"],
     ["input"]),
    ("report-over-history", ["report", "--input", "R", "--output", "H.sqlite"], ["SQLite"]),
    ("report-over-loose-log", ["report", "--input", "R", "--output", "loose.log"],
     ["experiment log"]),
    ("report-over-directory", ["report", "--input", "R", "--output", "home"],
     ["directory"]),
    ("baseline-over-store", ["baseline", "--input", "R", "--output", "R/results.sqlite"],
     ["SQLite"]),
    ("baseline-over-input", ["baseline", "--input", "records.jsonl", "--output",
                             "records.jsonl"], ["input"]),
    ("plot-into-logs", ["plot", "--input", "R", "--x", "exp.replica_batch", "--output",
                        "R/logs/chart.png"], ["logs"]),
    ("plot-into-experiments", ["plot", "--input", "R", "--x", "exp.replica_batch",
                               "--output", "R/experiments/e1.svg"], ["experiments"]),
    ("parse-over-its-log", ["parse", "loose.log", "--output", "loose.log"], ["input"]),
    ("parse-into-experiments", ["parse", "R/logs", "--output", "R/experiments/all.json"],
     ["experiments"]),
    ("history-html-over-store", ["history", "html", "--store", "H.sqlite", "--output",
                                 "H.sqlite"], ["input"]),
    ("history-html-over-run-store", ["history", "html", "--store", "H.sqlite", "--output",
                                     "R/results.sqlite"], ["SQLite"]),
    ("history-html-over-default", ["history", "html", "--store", "H.sqlite", "--output",
                                   "home/history.sqlite"], ["history store"]),
]


@pytest.mark.parametrize(("argv", "words"), [(a, w) for _, a, w in OUTPUTS],
                         ids=[case for case, _, _ in OUTPUTS])
def test_output_over_a_file_of_dlbench_is_refused(
    workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    _one_line_exit_2(argv, capsys, workspace, words)


def test_output_through_a_symbolic_link_is_refused(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "innocent.html").symlink_to(workspace / "R" / "results.sqlite")
    _one_line_exit_2(["report", "--input", "R", "--format", "html", "--output",
                      "innocent.html"], capsys, workspace, ["SQLite"])


def test_output_beside_the_run_is_written_whole(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--input", "R", "--format", "csv", "--output", "R/report.csv"]) == 0
    text = (workspace / "R" / "report.csv").read_text()
    assert text.splitlines()[0].startswith("exp.") or "," in text.splitlines()[0]
    # Written through a temporary file renamed into place: none is left behind.
    assert not [p for p in (workspace / "R").iterdir() if p.name.endswith(".tmp")]
    assert "written to R/report.csv" in capsys.readouterr().err


# ----------------------------------------------------------- one runner per directory

def test_second_runner_on_the_same_out_is_refused_and_runs_nothing(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlbench.launch.rundir_lock import lock_run_directory

    run = workspace / "busy"
    held = lock_run_directory(run)  # another runner, as the OS sees it: an open lock
    try:
        line = _one_line_exit_2(["run", *FAKE, "--out", str(run)], capsys, workspace,
                                [str(run), "in use by another dlbench run", f"pid {os.getpid()}"])
    finally:
        os.close(held)
    assert "--out" in line
    # Nothing ran: no log, no experiment input, no store (the folders may exist).
    assert sorted(p.name for p in run.rglob("*") if p.is_file()) == ["dlbench.lock"]


def test_a_killed_runner_never_blocks_the_resume(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = workspace / "resumed"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from dlbench.launch.rundir_lock import lock_run_directory; "
         f"lock_run_directory(Path({str(run)!r})); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert main(["run", *FAKE, "--out", str(run)]) == 2
        capsys.readouterr()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert main(["run", *FAKE, "--out", str(run)]) == 0
    with sqlite3.connect(run / "results.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == 1
