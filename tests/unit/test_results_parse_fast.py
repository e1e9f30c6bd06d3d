"""The fast log reader, the parallel reading and the streamed writing give exactly
what the line-by-line reader and the whole-file writers give."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlbench.results import export
from dlbench.results.export import dumps_records, write_records
from dlbench.results.log import parser
from dlbench.results.log.file import CUT_MARK
from dlbench.results.log.rawjson import NUMBER_LIST, RawJSON
from dlbench.results.log.scan import ParseWarning, scan_bytes, scan_stream

# Pieces of logs, clean and damaged: key lines of every kind of value, free text,
# blanks, CRLF, brackets, a cut mark, a surrogate escape, control characters, bad
# UTF-8 and NUL bytes (which the fast reader hands to the line reader).
_PIECES = [
    '__exp.model__="resnet50"\n', "__results.time__= 12.5\n", '__exp.status__="ok"\n',
    "  __results.time_data__=[1.0, 2.5, NaN]\n", '\t__x__ \t= {"a": [1, {"b": null}]}\n',
    "__x__=\n", "__ __=1\n", "__bad__=[1, 2\n", "__a=b__=true\n", "__x__=__y__=1\n",
    "__n\tm__=1\n", "__n\x01m__=2\n", "__y__=   \n", '__s__="\\ud800"\n', '__s__="\\u00e9"\n',
    "__d__=" + "[" * 70 + "]" * 70 + "\n", "__c__=15" + CUT_MARK + "\n", "loss=2.3 __k__=1\n",
    "noise \x0b here\n", "__v__=1\r\n", "é\n", "\n", "__e__=1e400\n", "__big__=" + "9" * 30 + "\n",
    '__exp.status__=""\n', '__u__="\\u2028"\n', "__tail__=1",
]
_BYTES = [p.encode() for p in _PIECES] + [b"\xff\xfe bad utf-8\n", b"__z__=\x00\n",
                                           b"\x00\x00\x00\n", b"__q__=\xe9\n"]


def _line_reader(data: bytes) -> tuple[dict[str, Any], list[ParseWarning]]:
    return scan_stream(io.BytesIO(data), "t.log")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_BYTES), max_size=25))
def test_fast_reader_gives_the_line_readers_record_and_warnings(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    fast, slow = scan_bytes(data, "t.log"), _line_reader(data)
    assert json.dumps(fast[0]) == json.dumps(slow[0])  # NaN is NaN; key order counts
    assert fast[1] == slow[1]


def _logs(directory: Path, count: int) -> None:
    directory.mkdir()
    for i in range(count):
        body = f'__exp.id__="e{i}"\n__results.time__={i}.5\nnoise\n'
        if i % 3 == 0:
            body += '__exp.status__="ok"\n'
        if i % 5 == 0:
            body += "__broken__=[1,\n"
        (directory / f"{i:03d}.log").write_text(body if i % 7 else "")


def test_parallel_reading_gives_the_same_records_warnings_and_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _logs(tmp_path / "logs", 40)
    serial = parser.parse_logs([tmp_path], recursive=True, jobs=1)
    # Small enough to be read by two workers, a few files per task.
    monkeypatch.setattr(parser, "PARALLEL_MIN_FILES", 8)
    monkeypatch.setattr(parser, "_TASK_FILES", 3)
    assert parser._workers(2, 40) == 2
    assert parser.parse_logs([tmp_path], recursive=True, jobs=2) == serial
    warned: list[ParseWarning] = []
    streamed = list(parser.stream_logs([tmp_path], recursive=True, on_warning=warned.append,
                                       jobs=2))
    assert (streamed, warned) == serial
    assert [r["exp.id"] for r in streamed] == [f"e{i}" for i in range(40) if i % 7]


def test_stream_logs_raises_for_a_missing_path_when_first_asked(tmp_path: Path) -> None:
    records = parser.stream_logs([tmp_path / "nope"], on_warning=print)
    with pytest.raises(Exception, match="does not exist"):
        next(records)


@pytest.mark.parametrize("count", [0, 1, 700])
def test_streamed_files_are_the_bytes_the_whole_file_writers_wrote(
    tmp_path: Path, count: int
) -> None:
    records = [{"exp.id": f"e{i}", "x": "é" * (i % 4), "t": [i / 3] * (i % 50),
                "n": None if i % 2 else float("nan")} for i in range(count)]
    text = dumps_records(records)
    for name, expected in (
        ("r.json", text.encode()),
        ("r.json.gz", gzip.compress(text.encode("utf-8"), mtime=0)),
        ("r.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()),
    ):
        assert write_records(iter(records), tmp_path / name) == count
        assert (tmp_path / name).read_bytes() == expected, name


# Numbers as a log may hold them: json.dumps's own forms and others that decode to
# the same value but are written differently (which must not be passed through).
_NUMBERS = ["0", "-0", "7", "-12", "123456789012345678", "1234567890123456789", "0.0", "-0.0",
            "2.5", "2.50", "100.0", "100.05", "0.0001", "0.00001", "1e-05", "1E5", "1.5e+16",
            "0.30000000000000004", "0.1000000000000000055", "1234567.25", "12345678.5",
            "3.14159265358979", "NaN", "Infinity", "-Infinity", "05", "1.", "true", '"x"']


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(_NUMBERS), min_size=1, max_size=40),
       st.sampled_from([", ", ",", " , "]), st.booleans())
def test_lists_kept_as_text_write_the_bytes_decoding_them_writes(
    numbers: list[str], separator: str, placeholder_in_record: bool
) -> None:
    listed = "[" + separator.join(numbers) + "]"
    text = f'__exp.id__="a"\n__results.time_data__={listed}\n__exp.status__="ok"\n'
    if placeholder_in_record:  # a string of the record's own that reads as the placeholder
        text += '__exp.note__="\\u0000raw"\n'
    data = (text + f"__results.use.time__={listed}\n").encode()
    raw = scan_bytes(data, "t.log", raw_lists=True)
    decoded = scan_bytes(data, "t.log")
    assert raw[1] == decoded[1]
    assert export._log_json(raw[0]) == export.record_json(decoded[0])
    if isinstance(raw[0].get("results.time_data"), RawJSON):
        # Passed through only when it is exactly what json.dumps writes for the list.
        assert json.dumps(json.loads(listed)) == listed


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.floats(), st.integers(-(10**20), 10**20)), min_size=8))
def test_a_list_json_dumps_wrote_is_passed_through_when_the_pattern_takes_it(
    values: list[float | int]
) -> None:
    listed = json.dumps(values)
    if NUMBER_LIST.fullmatch(listed):
        assert json.dumps(json.loads(listed)) == listed


def test_dlbench_parse_writes_what_parse_logs_and_write_records_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlbench.cli.main import main

    _logs(tmp_path / "logs", 12)
    for i in range(5):  # logs with batch times, kept as text on the way
        times = [round(0.2 + i / 7 + k / 1000, 6) for k in range(30)]
        (tmp_path / "logs" / f"t{i}.log").write_text(
            f'__exp.id__="t{i}"\n__results.time_data__={json.dumps(times)}\n'
            '__exp.status__="ok"\n')
    records, warnings = parser.parse_logs([tmp_path / "logs"], jobs=1)
    kept = scan_bytes((tmp_path / "logs" / "t1.log").read_bytes(), raw_lists=True)[0]
    assert isinstance(kept["results.time_data"], RawJSON)
    monkeypatch.setattr(parser, "PARALLEL_MIN_FILES", 8)  # two workers, as for many logs
    monkeypatch.setattr(parser, "_TASK_FILES", 4)
    assert main(["parse", str(tmp_path / "logs"), "--output", str(tmp_path / "o.json")]) == 0
    assert (tmp_path / "o.json").read_text() == dumps_records(records)
    err = capsys.readouterr().err
    assert err.splitlines() == [f"dlbench: warning: {w}" for w in warnings] + [
        f"{len(records)} record(s) written to {tmp_path / 'o.json'}"]
    monkeypatch.setattr(parser, "PARALLEL_MIN_FILES", 256)
    assert main(["parse", str(tmp_path / "logs")]) == 0
    assert capsys.readouterr().out == dumps_records(records) + "\n"
