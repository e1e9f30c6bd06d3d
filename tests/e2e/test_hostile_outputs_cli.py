"""The command line with hostile outputs, as a user meets them: ``--output`` on a FIFO,
``/dev/null`` or ``/dev/full``, a loop of symbolic links, a closed or broken standard
output, an ASCII terminal, and records holding lone surrogates or line breaks."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRunner
from tests.io_helpers import FifoReader as _FifoReader

#: Two records of one model at two batch sizes: enough for every report format.
RECORDS: list[dict[str, Any]] = [
    {"exp.id": "a", "exp.framework": "pytorch", "exp.model": "res\ud800net",
     "exp.phase": "training", "exp.status": "ok", "exp.replica_batch": 8,
     "results.time": 10.5, "results.throughput": 100.0, "exp.note": "x\udcffy"},
    {"exp.id": "b", "exp.framework": "pytorch", "exp.model": "res\ud800net",
     "exp.phase": "training", "exp.status": "ok", "exp.replica_batch": 16,
     "results.time": 20.5, "results.throughput": 120.0, "exp.note": 'a\rb\nc\r\nd"e,f'},
]


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    # json.dumps writes the surrogates as \ud800 escapes, as another tool would.
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"data": RECORDS}), encoding="ascii")
    return path


def _one_error_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlbench: error:"), done.stderr
    for word in words:
        assert word in lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "out.json"
    os.mkfifo(path)
    yield path
    with contextlib.suppress(OSError):  # release a reader a failed test left waiting
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


# ------------------------------------------------------------- devices and FIFOs


@pytest.mark.parametrize("argv", [
    ["report", "--input", "runs.json", "--format", "markdown", "--output", "out.json"],
    ["query", "--input", "runs.json", "--format", "json", "--output", "out.json"],
    ["parse", "logs", "--output", "out.json"],
], ids=["report", "query", "parse"])
def test_output_on_a_fifo_is_written_in_place(
    dlbench: CliRunner, runs: Path, fifo: Path, argv: list[str]
) -> None:
    logs = fifo.parent / "logs"
    logs.mkdir()
    (logs / "a.log").write_text('__exp.model__="resnet50"\n__results.time__=1.5\n'
                                '__exp.status__="ok"\n')
    reader = _FifoReader(fifo)
    done = dlbench(*argv, timeout=60)  # the timeout is a guard: reading it would hang
    assert done.returncode == 0, done.stderr
    written = reader.join().decode("utf-8")
    assert "res\\ud800net" in written or "resnet50" in written
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not [p for p in fifo.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("fmt", ["json", "html", "csv"])
def test_output_dev_null_is_written_and_stays_a_device(
    dlbench: CliRunner, runs: Path, fmt: str
) -> None:
    done = dlbench("report", "--input", "runs.json", "--format", fmt, "--output", "/dev/null")
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_dev_stdout_writes_to_standard_output(dlbench: CliRunner, runs: Path) -> None:
    done = dlbench("query", "--input", "runs.json", "--format", "json", "--output",
                   "/dev/stdout")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"][0]["exp.model"] == "res\ud800net"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("argv", [
    ["report", "--input", "runs.json", "--format", "html", "--output", "/dev/full"],
    ["query", "--input", "runs.json", "--format", "csv", "--output", "/dev/full"],
], ids=["report-html", "query-csv"])
def test_output_dev_full_is_one_line(dlbench: CliRunner, runs: Path, argv: list[str]) -> None:
    _one_error_line(dlbench(*argv), "/dev/full", "No space left on device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_output_directory_is_one_line(dlbench: CliRunner, runs: Path, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    _one_error_line(dlbench("report", "--input", "runs.json", "--output", "out"),
                    "--output out", "directory")


@pytest.mark.parametrize("output", ["loop", "loop/report.txt"])
def test_output_through_a_loop_of_links_is_one_line(
    dlbench: CliRunner, runs: Path, tmp_path: Path, output: str
) -> None:
    (tmp_path / "loop").symlink_to("other")
    (tmp_path / "other").symlink_to("loop")
    _one_error_line(dlbench("query", "--input", "runs.json", "--output", output),
                    f"--output {output}", "symbolic links")


# ---------------------------------------------------------------- standard output


def test_closed_stdout_ends_with_1_and_no_traceback(runs: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        ["sh", "-c", f'exec "{sys.executable}" -m dlbench query --input runs.json >&-'],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "dlbench: error: cannot write the output: standard output is closed"]


@pytest.mark.parametrize("argv", [
    ["query", "--input", "runs.json", "--format", "json"],
    ["report", "--input", "runs.json", "--format", "text"],
], ids=["query", "report"])
def test_broken_stdout_ends_quietly_with_1(runs: Path, tmp_path: Path, argv: list[str]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader has left before the first line: every write breaks
    try:
        done = subprocess.run([sys.executable, "-m", "dlbench", *argv], cwd=tmp_path,
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == 1
    assert done.stderr == ""


@pytest.mark.parametrize("argv", [
    ["report", "--input", "runs.json", "--format", "markdown"],
    ["report", "--input", "runs.json", "--format", "text"],
    ["query", "--input", "runs.json", "--format", "text"],
    ["query", "--input", "runs.json", "--format", "json"],
], ids=["report-markdown", "report-text", "query-text", "query-json"])
def test_an_ascii_terminal_shows_escapes(runs: Path, tmp_path: Path, argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "dlbench", *argv], cwd=tmp_path,
                          capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.isascii() and done.stderr.isascii()
    assert b"res\\ud800net" in done.stdout
    if argv[-1] == "json":  # still JSON, which reads back as the records
        assert json.loads(done.stdout)["data"] == RECORDS


# ------------------------------------------------------------ text in every format


@pytest.mark.parametrize("fmt", ["json", "csv", "text"])
def test_query_writes_lone_surrogates(dlbench: CliRunner, runs: Path, fmt: str) -> None:
    done = dlbench("query", "--input", "runs.json", "--format", fmt, "--columns",
                   "exp.model,exp.note")
    assert done.returncode == 0, done.stderr
    if fmt == "json":
        assert json.loads(done.stdout)["data"] == [
            {"exp.model": r["exp.model"], "exp.note": r["exp.note"]} for r in RECORDS]
    else:
        assert "res\\ud800net" in done.stdout


def test_query_parquet_writes_lone_surrogates(
    dlbench: CliRunner, runs: Path, tmp_path: Path
) -> None:
    pytest.importorskip("pyarrow")
    done = dlbench("query", "--input", "runs.json", "--format", "parquet", "--output",
                   "out.parquet")
    assert done.returncode == 0, done.stderr
    back = dlbench("query", "--input", "out.parquet", "--format", "json")
    assert json.loads(back.stdout)["data"][0]["exp.model"] == "res\\ud800net"


@pytest.mark.parametrize("fmt", ["json", "html", "csv", "text", "markdown"])
def test_report_writes_lone_surrogates(
    dlbench: CliRunner, runs: Path, tmp_path: Path, fmt: str
) -> None:
    done = dlbench("report", "--input", "runs.json", "--format", fmt, "--output", "out")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "out").read_text(encoding="utf-8")  # valid UTF-8
    if fmt == "json":
        assert "res\ud800net" in json.dumps(json.loads(text), ensure_ascii=False)
    else:
        assert "res\\ud800net" in text


@pytest.mark.parametrize("output", ["out.csv", "-"])
def test_csv_line_breaks_read_back(runs: Path, tmp_path: Path, output: str) -> None:
    pandas = pytest.importorskip("pandas")
    argv = ["query", "--input", "runs.json", "--format", "csv", "--columns",
            "exp.id,exp.note", *(["--output", output] if output != "-" else [])]
    # Bytes: a text-mode pipe or read_text would turn each "\r" into "\n" itself.
    done = subprocess.run([sys.executable, "-m", "dlbench", *argv], cwd=tmp_path,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    data = (tmp_path / output).read_bytes() if output != "-" else done.stdout
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert rows[2] == ["b", 'a\rb\nc\r\nd"e,f']
    frame = pandas.read_csv(io.BytesIO(data))
    assert frame["exp.note"].tolist()[1] == 'a\rb\nc\r\nd"e,f'
