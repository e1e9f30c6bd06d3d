"""Outputs in hostile places and hostile text in outputs: a device or a FIFO is written
in place and never replaced, a directory or a block device is refused, a failed or
interrupted write leaves no temporary file, CSV quotes every line break, and a lone
surrogate round-trips through JSON and shows visibly elsewhere."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.results.export import open_output, write_atomically
from dlbench.results.io import load_records, write_records
from dlbench.results.outputs import check_output, writes_in_place
from dlbench.results.text_table import csv_line, format_table
from dlbench.textsafe import UNICODE_ESCAPE, encode_utf8, escape_surrogates
from tests.io_helpers import FifoReader

#: A value that needs every kind of CSV quoting: a bare CR, LF, CRLF, a quote, a comma.
AWKWARD = 'a\rb\nc\r\nd"e,f'


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    yield path
    # A test that failed before writing leaves its reader waiting: opening and closing
    # the writing end ends its read (ENXIO: no reader is left).
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


# ------------------------------------------------------------------ where outputs go


def test_a_fifo_is_written_in_place(fifo: Path) -> None:
    reader = FifoReader(fifo)
    count = write_records([{"exp.model": "resnet50"}, {"exp.model": "vgg16"}], fifo)
    assert count == 2
    assert json.loads(reader.join()) == {"data": [{"exp.model": "resnet50"},
                                                  {"exp.model": "vgg16"}]}
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in fifo.parent.iterdir()] == [fifo.name]  # no temporary file


def test_check_output_never_reads_a_fifo(fifo: Path) -> None:
    done = threading.Event()

    def check() -> None:
        check_output(fifo, ["runs"])
        done.set()

    thread = threading.Thread(target=check, daemon=True)
    thread.start()
    thread.join(timeout=60)  # a guard: reading the FIFO would wait for a writer
    assert done.is_set()


def test_dev_null_is_written_and_stays_a_device() -> None:
    assert writes_in_place("/dev/null")
    check_output("/dev/null", ["runs"])
    write_atomically("/dev/null", b"nothing to keep\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_device_is_one_line_and_stays() -> None:
    with pytest.raises(ResultsError, match=r"^cannot write /dev/full: No space left on device$"):
        write_atomically("/dev/full", b"x" * 100)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    for call in (lambda: check_output(tmp_path / "out"),
                 lambda: write_atomically(tmp_path / "out", b"x")):
        with pytest.raises(ResultsError, match="is a directory; give a file name"):
            call()
    assert (tmp_path / "out").is_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_block_device_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    # A device number no driver has: even a write that got through would fail.
    disk = tmp_path / "disk"
    os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(259, 999_999))
    for call in (lambda: check_output(disk), lambda: write_atomically(disk, b"x")):
        with pytest.raises(ResultsError, match=r"--output .*disk: is a block device"):
            call()
    assert stat.S_ISBLK(os.stat(disk).st_mode)


def test_a_loop_of_links_names_the_flag(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for output in (tmp_path / "a", tmp_path / "a" / "report.json"):
        with pytest.raises(ResultsError, match=r"^--output .*: cannot be followed"):
            check_output(output)
        with pytest.raises(ResultsError, match=r"^--output .*: cannot be followed"):
            write_atomically(output, b"{}")
    # An input that loops is no file the output could be: nothing to refuse.
    check_output(tmp_path / "fine.json", [tmp_path / "a"])


def test_a_link_to_a_file_is_followed_and_kept(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    write_records([{"a": 1}], tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink()
    assert load_records([tmp_path / "real.json"]) == [{"a": 1}]


# ------------------------------------------------------- failed writes leave nothing


def _records_then(error: BaseException) -> Iterator[dict[str, Any]]:
    yield {"a": 1}
    raise error


@pytest.mark.parametrize("error", [KeyboardInterrupt(), ValueError("a bug"),
                                   OSError(5, "Input/output error")],
                         ids=["ctrl-c", "exception", "oserror"])
@pytest.mark.parametrize("name", ["out.json", "out.jsonl", "out.csv"])
def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, error: BaseException, name: str
) -> None:
    target = tmp_path / name
    target.write_text("old")
    with pytest.raises((type(error), ResultsError)):
        write_records(_records_then(error), target)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_a_read_error_inside_the_write_keeps_its_own_message(tmp_path: Path) -> None:
    missing = tmp_path / "elsewhere" / "log.txt"

    def records() -> Iterator[dict[str, Any]]:
        yield {"a": missing.read_text()}

    with pytest.raises(FileNotFoundError):
        write_records(records(), tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []


def test_open_output_writes_a_file_whole(tmp_path: Path) -> None:
    with open_output(tmp_path / "sub" / "x.txt") as out:
        out.write(b"one ")
        assert not (tmp_path / "sub" / "x.txt").exists()  # not before the end
        out.write(b"two")
    assert (tmp_path / "sub" / "x.txt").read_bytes() == b"one two"


# ---------------------------------------------------------------------------- CSV


def test_csv_quotes_every_line_break_and_reads_back() -> None:
    line = csv_line([AWKWARD, "plain", "x\ry"])
    assert line == '"a\rb\nc\r\nd""e,f",plain,"x\ry"'
    assert list(csv.reader(io.StringIO(line + "\n", newline=""))) == [
        [AWKWARD, "plain", "x\ry"]]


def test_a_csv_export_reads_back_with_csv_and_pandas(tmp_path: Path) -> None:
    pandas = pytest.importorskip("pandas")
    records = [{"exp.note": AWKWARD, "n": 1}, {"exp.note": "\r", "n": 2}]
    write_records(records, tmp_path / "out.csv")
    assert load_records([tmp_path / "out.csv"]) == records
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as file:
        assert list(csv.reader(file)) == [["exp.note", "n"], [AWKWARD, "1"], ["\r", "2"]]
    frame = pandas.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert frame["exp.note"].tolist() == [AWKWARD, "\r"]
    assert frame["n"].tolist() == [1, 2]


# ---------------------------------------------------------------- lone surrogates


@pytest.mark.parametrize(("text", "escaped"), [
    ("plain", "plain"),
    ("é中😀", "é中😀"),                    # valid text is never touched
    ("a\ud800b", "a\\ud800b"),
    ("\udcff", "\\udcff"),                   # a byte decoded with surrogateescape
    ("\ud83d\ude00", "\\ud83d\\ude00"),      # two lone halves stay escaped
])
def test_escape_surrogates_known_answers(text: str, escaped: str) -> None:
    assert escape_surrogates(text) == escaped
    assert encode_utf8(text) == escaped.encode("utf-8")


def test_the_stream_rule_writes_json_escapes() -> None:
    assert "é😀\ud800".encode("ascii", UNICODE_ESCAPE) == b"\\u00e9\\ud83d\\ude00\\ud800"
    # As JSON, the escapes read back as the text.
    assert json.loads('"' + "é😀x".encode("ascii", UNICODE_ESCAPE).decode() + '"') == "é😀x"


SURROGATES = [{"exp.model": "res\ud800net", "user.\udcff": ["x\udfff"], "n": 1}]


@pytest.mark.parametrize("name", ["out.json", "out.jsonl", "out.json.gz", "out.csv"])
def test_lone_surrogates_round_trip_through_every_records_format(
    tmp_path: Path, name: str
) -> None:
    write_records(SURROGATES, tmp_path / name)
    expected = SURROGATES
    if name.endswith(".csv"):  # a CSV header is text, not JSON: the key shows escaped
        expected = [{"exp.model": "res\ud800net", "user.\\udcff": ["x\udfff"], "n": 1}]
    assert load_records([tmp_path / name]) == expected


def test_lone_surrogates_show_escaped_in_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    write_records(SURROGATES, tmp_path / "out.parquet")
    # Parquet strings are UTF-8: the string shows its escape; JSON text reads back.
    assert load_records([tmp_path / "out.parquet"]) == [
        {"exp.model": "res\\ud800net", "user.\\udcff": ["x\udfff"], "n": 1}]


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv"])
def test_lone_surrogates_in_tables_are_visible(fmt: str) -> None:
    lines = format_table(SURROGATES, ["exp.model", "n"], fmt=fmt)
    text = "\n".join(lines)
    assert "res\\ud800net" in text
    text.encode("utf-8")  # raises UnicodeEncodeError if a surrogate is left
