"""Hardening corpus: what a user types never destroys a file, runs a sweep twice, writes
when it only reads, prints a password or a control character, or ends in a traceback.

Each refused case goes through ``dlbench.cli.main.main`` in this process and ends in
exactly one line on stderr, exit status 2, and every file of the workspace unchanged
(byte for byte); each accepted case ends in the right result.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
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
    """Every file under ``root`` by its content's hash: what must not change. (A WAL
    store's ``-wal`` and ``-shm`` files are SQLite's, made by any reader, and left out.)"""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


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
    with contextlib.closing(sqlite3.connect(run / "results.sqlite")) as db:
        assert db.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] == 1


# ----------------------------------------------------------- reading never writes

def test_reading_a_store_leaves_it_as_it_was(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = workspace / "R" / "results.sqlite"
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    for argv in (["query", "--input", "R"], ["report", "--input", "R"],
                 ["status", "--input", "R"], ["compare", "R", "R"],
                 ["query", "--input", "R/results.sqlite", "--format", "json"]):
        assert main(argv) == 0, capsys.readouterr().err
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    assert "toy" in capsys.readouterr().out


#: (case id, argv, words): a store or history that is empty or not one is named in
#: one line and left as it was (0 bytes stays 0 bytes).
READS: list[tuple[str, list[str], list[str]]] = [
    ("query-empty-store", ["query", "--input", "empty.sqlite"], ["empty.sqlite", "0 bytes"]),
    ("report-empty-store", ["report", "--input", "empty.sqlite"], ["0 bytes"]),
    ("compare-empty-store", ["compare", "empty.sqlite", "R"], ["0 bytes"]),
    ("plot-empty-store", ["plot", "--input", "empty.sqlite", "--x", "exp.replica_batch",
                          "--output", "c.png"], ["0 bytes"]),
    ("status-empty-store", ["status", "--input", "E"], ["E/results.sqlite", "0 bytes"]),
    ("query-run-dir-empty-store", ["query", "--input", "E"], ["0 bytes"]),
    ("query-text-as-store", ["query", "--input", "text.sqlite"], ["not an SQLite database"]),
    ("query-tables-less-store", ["query", "--input", "blank.db"], ["no tables"]),
    ("query-history-as-store", ["query", "--input", "H.sqlite"], ["not a dlbench results"]),
    ("check-empty-history", ["history", "check", "--store", "empty.sqlite"], ["0 bytes"]),
    ("html-empty-history", ["history", "html", "--store", "empty.sqlite", "--output",
                            "h.html"], ["0 bytes"]),
    ("check-text-history", ["history", "check", "--store", "text.sqlite"],
     ["not an SQLite database"]),
    ("check-store-as-history", ["history", "check", "--store", "R/results.sqlite"],
     ["not a dlbench history"]),
    ("check-missing-history", ["history", "check", "--store", "nohistory.sqlite"],
     ["does not exist"]),
    ("import-nothing", ["history", "import", "nothing.jsonl", "--store", "new.sqlite"],
     ["nothing.jsonl", "no records", "new.sqlite"]),
]


@pytest.fixture
def odd_files(workspace: Path) -> Path:
    """Files that look like stores and are not: empty, text, an SQLite file without
    tables; a run directory whose store is empty; an export without records."""
    (workspace / "empty.sqlite").write_bytes(b"")
    (workspace / "E").mkdir()
    (workspace / "E" / "results.sqlite").write_bytes(b"")
    (workspace / "text.sqlite").write_text("not a database\n")
    sqlite3.connect(workspace / "blank.db").execute("PRAGMA user_version = 1").close()
    (workspace / "nothing.jsonl").write_text("\n")
    return workspace


@pytest.mark.parametrize(("argv", "words"), [(a, w) for _, a, w in READS],
                         ids=[case for case, _, _ in READS])
def test_a_reader_given_no_store_says_so_and_writes_nothing(
    odd_files: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    _one_line_exit_2(argv, capsys, odd_files, words)
    assert (odd_files / "empty.sqlite").stat().st_size == 0
    assert not (odd_files / "new.sqlite").exists()


_READ_ONLY_MOUNT = shutil.which("unshare") is not None and subprocess.run(
    ["unshare", "-rm", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _READ_ONLY_MOUNT, reason="needs unshare -rm for a read-only mount")
def test_stores_on_a_read_only_file_system_are_read(workspace: Path) -> None:
    # A run directory and a history whose -shm index does not exist, as a runner and an
    # importer leave them, mounted read-only: SQLite cannot make the index there.
    for leftover in [*workspace.glob("R/results.sqlite-*"), *workspace.glob("H.sqlite-*")]:
        leftover.unlink()
    (workspace / "ro").mkdir()
    for name in ("R", "H.sqlite"):
        os.replace(workspace / name, workspace / "ro" / name)
    commands = "; ".join(
        f"{sys.executable} -m dlbench {args} >/dev/null || exit 9"
        for args in ("query --input ro/R", "report --input ro/R", "status --input ro/R",
                     "history check --store ro/H.sqlite --metric results.time"))
    script = (f"mount --bind ro ro && mount -o remount,bind,ro ro && touch ro/x 2>/dev/null "
              f"&& exit 8; {commands}")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr
    assert "unable to open" not in done.stderr


# ----------------------------------------------------------- passwords

#: (store spec, the secret that must never be printed, what is printed instead).
SECRETS = [
    ("postgresql://bench:pa/ss@127.0.0.1:1/db", "pa/ss", "postgresql://bench:***@127.0.0.1:1/db"),
    ("postgresql://bench@127.0.0.1:1/db?password=hunter2",
     "hunter2", "postgresql://bench@127.0.0.1:1/db?password=***"),
    ("postgresql://bench@h/db?sslmode=require&password=hunter2&application_name=x",
     "hunter2", "postgresql://bench@h/db?sslmode=require&password=***&application_name=x"),
    ("postgresql://bench:hun@ter2@127.0.0.1:1/db", "hun@ter2",
     "postgresql://bench:***@127.0.0.1:1/db"),
    ("postgres://bench:p%40ss@h/db", "p%40ss", "postgres://bench:***@h/db"),
    ("host=127.0.0.1 user=bench password=hunter2 dbname=db", "hunter2",
     "host=127.0.0.1 user=bench password=*** dbname=db"),
    ("host=h password='hun ter2' dbname=db", "hun ter2", "host=h password=*** dbname=db"),
    ("host=h PASSWORD = hunter2", "hunter2", "host=h PASSWORD = ***"),
]


@pytest.mark.parametrize(("spec", "secret", "shown"), SECRETS)
def test_redact_masks_every_form_of_password(spec: str, secret: str, shown: str) -> None:
    from dlbench.results.history.store import redact

    assert redact(spec) == shown
    # A driver's message quoting a piece of the password loses it too.
    assert "ter2" not in redact("failed to resolve host 'ter2@127.0.0.1'",
                                "postgresql://bench:hun@ter2@127.0.0.1:1/db")


def test_redact_leaves_specs_without_password_alone() -> None:
    from dlbench.results.history.store import redact

    for spec in ("postgresql://bench@h:5432/db", "history.sqlite", "postgresql:///db",
                 "runs/pass=word/history.sqlite"):
        assert redact(spec) == spec


@pytest.mark.parametrize("spec", [spec for spec, _, _ in SECRETS])
@pytest.mark.parametrize("command", ["check", "import"])
def test_no_message_prints_a_password(
    workspace: Path, capsys: pytest.CaptureFixture[str], spec: str, command: str
) -> None:
    argv = ["history", command, "--store", spec]
    if command == "import":
        argv.insert(2, "R")
    assert main(argv) == 2
    captured = capsys.readouterr()
    secret = next(s for p, s, _ in SECRETS if p == spec)
    assert secret not in captured.err + captured.out
    assert len(captured.err.splitlines()) == 1, captured.err
    # A keyword string is no file name: nothing is created under its name.
    assert not [p for p in workspace.iterdir() if "password" in p.name.lower()]


# ----------------------------------------------------------- control characters

ESCAPE = "\x1b[2J\x1b]0;pwned\x07\u202e"
SHOWN = "\\x1b[2J\\x1b]0;pwned\\x07\\u202e"


def _printed(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text
    return text


@pytest.mark.parametrize("argv", [
    ["parse", "loose.log", "--output", f"p{ESCAPE}.json"],
    ["report", "--input", "R", "--output", f"r{ESCAPE}.txt"],
    ["baseline", "--input", "R", "--output", f"b{ESCAPE}.json"],
    ["plot", "--input", "R", "--x", "exp.replica_batch", "--output", f"c{ESCAPE}.svg"],
    ["history", "html", "--store", "H.sqlite", "--metric", "results.time", "--output",
     f"h{ESCAPE}.html"],
], ids=["parse", "report", "baseline", "plot", "history-html"])
def test_written_to_lines_are_terminal_safe(
    workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 0
    assert SHOWN in _printed(capsys)
    assert (workspace / argv[argv.index("--output") + 1]).is_file()


def test_history_import_shows_its_source_and_run_id_safely(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = workspace / f"run{ESCAPE}"
    os.replace(workspace / "R", source)
    assert main(["history", "import", str(source), "--store", "H2.sqlite",
                 "--run-id", f"id{ESCAPE}"]) == 0
    text = _printed(capsys)
    assert f"run{SHOWN}: run id{SHOWN} (2024-05-01T02:00:00 UTC): 2 added, 0 replaced" in text


def test_scorecard_tables_and_misses_are_terminal_safe(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "hostile.json").write_text(
        '{"metric": "results.time", "min_runs": 1, "benchmarks": [{"name": "toy\\u001b[2J'
        '\\n|x", "query": {"exp.model": "toy"}, "target": 1.0, "tolerance": 0.1}]}\n')
    for fmt in ("text", "markdown"):
        status = main(["report", "--input", "R", "--type", "scorecard", "--baseline",
                       "hostile.json", "--format", fmt, "--fail-on-miss"])
        assert status == 1
        text = _printed(capsys)
        assert "toy\\x1b[2J" in text
        assert "--fail-on-miss: 1 benchmark(s) missed" in text
        # The newline of the name does not break the table or the message apart.
        assert not any(line.startswith("|x") or line == "x" for line in text.splitlines())


def test_glyph_warnings_of_plot_are_escaped(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", "--input", "R", "--x", "exp.replica_batch", "--title",
                 f"t{ESCAPE}", "--legend", f"s{ESCAPE}", "--output", "g.png"]) == 0
    text = _printed(capsys)
    assert "dlbench: warning: chart: Glyph 27 (\\x1b) missing" in text
    assert text.count("Glyph 27") == 1  # once, however often matplotlib said it


# ----------------------------------------------------------- deep JSON, damaged files

DEEP_ARRAY = "[" * 1200 + "]" * 1200
DEEP_OBJECT = '{"a": ' * 1200 + "1" + "}" * 1200


#: (case id, argv, words): JSON nested 1,200 deep wherever JSON is read, and files
#: damaged inside, are one line naming the flag or the file.
DEEP: list[tuple[str, list[str], list[str]]] = [
    ("query-where", ["query", "--input", "R", "--where", DEEP_OBJECT],
     ["--where", "nest more than 100"]),
    ("query-where-101", ["query", "--input", "R", "--where",
                         '{"exp.model": ' + "[" * 101 + "]" * 101 + "}"], ["--where", "100"]),
    ("report-where", ["report", "--input", "R", "--where", DEEP_OBJECT], ["--where"]),
    ("plot-series", ["plot", "--input", "R", "--x", "exp.replica_batch", "--output", "c.png",
                     "--series", f"[{DEEP_OBJECT}]"], ["--series", "nest"]),
    ("json-input", ["query", "--input", "deep.json"], ["deep.json", "nest"]),
    ("json-record", ["query", "--input", "deep_record.json"], ["deep_record.json", "nest"]),
    ("jsonl-input", ["query", "--input", "deep.jsonl"], ["deep.jsonl:2", "nest"]),
    ("csv-cell", ["query", "--input", "deep.csv"], ["deep.csv", "nest"]),
    ("baseline-json", ["report", "--input", "R", "--type", "scorecard", "--baseline",
                       "deep_base.json"], ["deep_base.json", "nest"]),
    ("baseline-yaml", ["report", "--input", "R", "--type", "scorecard", "--baseline",
                       "deep_base.yaml"], ["deep_base.yaml", "nest"]),
    ("baseline-csv", ["report", "--input", "R", "--type", "scorecard", "--baseline",
                      "deep_base.csv"], ["deep_base.csv", "nest"]),
    ("store-zeroed-root", ["report", "--input", "Z"], ["Z/results.sqlite", "malformed"]),
    ("store-zeroed-root-html", ["report", "--input", "Z", "--format", "html", "--output",
                                "z.html"], ["malformed"]),
    ("history-malformed-page", ["history", "check", "--store", "page.sqlite"],
     ["page.sqlite", "malformed"]),
    ("history-not-utf8", ["history", "check", "--store", "latin.sqlite"],
     ["latin.sqlite", "damaged"]),
    ("history-not-json", ["history", "check", "--store", "nojson.sqlite"],
     ["nojson.sqlite", "damaged"]),
    ("history-json-not-object", ["history", "html", "--store", "list.sqlite", "--output",
                                 "l.html"], ["list.sqlite", "not a JSON object"]),
    ("history-deep-json", ["history", "check", "--store", "deep.sqlite"],
     ["deep.sqlite", "nest"]),
    ("history-bad-version", ["history", "check", "--store", "version.sqlite"],
     ["version.sqlite", "format_version"]),
]


def _zero_root_page(path: Path, table: str) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                          (table,)).fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(path, "r+b") as file:
        file.seek((page - 1) * size)
        file.write(b"\0" * size)


def _damaged_history(workspace: Path, name: str, statement: str) -> None:
    shutil.copy(workspace / "H.sqlite", workspace / name)
    with contextlib.closing(sqlite3.connect(workspace / name)) as db:
        db.execute(statement)
        db.commit()


@pytest.fixture
def damaged(workspace: Path) -> Path:
    """Deep JSON in every kind of input, a store and histories damaged inside."""
    (workspace / "deep.json").write_text(DEEP_ARRAY)
    (workspace / "deep_record.json").write_text('{"data": [{"a": ' + DEEP_ARRAY + "}]}")
    (workspace / "deep.jsonl").write_text('{"a": 1}\n{"a": ' + DEEP_ARRAY + "}\n")
    (workspace / "deep.csv").write_text(f'a,b\n1,"{DEEP_ARRAY}"\n')
    (workspace / "deep_base.json").write_text(
        '{"metric": "results.time", "benchmarks": [' + DEEP_ARRAY + "]}")
    (workspace / "deep_base.yaml").write_text(
        "metric: results.time\nbenchmarks: " + DEEP_ARRAY + "\n")
    (workspace / "deep_base.csv").write_text(
        f'name,target,query\ntoy,1.0,"{DEEP_OBJECT.replace(chr(34), chr(34) * 2)}"\n')
    shutil.copytree(workspace / "R", workspace / "Z")
    _zero_root_page(workspace / "Z" / "results.sqlite", "experiments")
    shutil.copy(workspace / "H.sqlite", workspace / "page.sqlite")
    _zero_root_page(workspace / "page.sqlite", "history_records")
    _damaged_history(workspace, "latin.sqlite",
                     "UPDATE history_records SET revision = CAST(X'E9FF' AS TEXT)")
    first_shape = "WHERE id = (SELECT MIN(shape) FROM history_records)"
    _damaged_history(workspace, "nojson.sqlite",
                     f"UPDATE history_shapes SET parts = '{{' {first_shape}")
    _damaged_history(workspace, "list.sqlite",
                     f"UPDATE history_shapes SET parts = '[1]' {first_shape}")
    _damaged_history(workspace, "deep.sqlite",
                     f"UPDATE history_shapes SET parts = '{DEEP_ARRAY}' {first_shape}")
    _damaged_history(workspace, "version.sqlite",
                     "UPDATE history_meta SET value = 'x' WHERE key = 'format_version'")
    return workspace


@pytest.mark.parametrize(("argv", "words"), [(a, w) for _, a, w in DEEP],
                         ids=[case for case, _, _ in DEEP])
def test_deep_json_and_damaged_files_are_one_line(
    damaged: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]
) -> None:
    _one_line_exit_2(argv, capsys, damaged, words)


def test_json_just_within_the_bound_is_read(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlbench.results.jsontext import MAX_DEPTH, loads_json

    # {"data": [{"a": [[...]]}]}: three levels of the file, then the value's.
    inner = MAX_DEPTH - 3
    (workspace / "deepest.json").write_text(
        '{"data": [{"exp.id": "d", "a": ' + "[" * inner + "]" * inner + "}]}")
    assert main(["query", "--input", "deepest.json", "--columns", "exp.id"]) == 0
    assert "d" in capsys.readouterr().out.split()
    assert loads_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x") is not None
    assert loads_json('"[[[["', "x") == "[[[["  # brackets in a string are no nesting
