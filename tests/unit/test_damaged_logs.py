"""Damaged logs never give a wrong number: a corpus of damaged logs, and properties.

The corpus is made from one good log by cutting it at every interesting offset, by
cutting it and letting a later writer append (as the runner does after a kill), by
spoiling one byte of a key line, and from hand-written cases. For each, the parser
returns the record of the lines that survived whole (or no record), with a warning,
and no value that differs from the good log's. Hypothesis then throws bytes at it.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlbench.results.log import scan as logscan
from dlbench.results.log.file import LogWriter, format_line
from dlbench.results.log.parser import parse_log, parse_logs
from dlbench.results.log.scan import ParseWarning, scan_bytes
from tests.cpu_cost import CostBound

MARKS = {"exp.status": "incomplete", "exp.status_msg": logscan.INCOMPLETE_MSG}

#: The good log: (key, value) lines as the worker writes them, with framework output.
LINES: list[tuple[str, Any] | str] = [
    ("exp.model", "resnet50"),
    ("exp.replica_batch", 16),
    ("exp.gpus", "0,1"),
    ("exp.status", ""),
    ("exp.status_msg", ""),
    "Epoch 1/1: loss=2.31 (framework output)",
    ("results.time", 100.137),
    ("results.throughput", 159.78),
    ("results.time_data", [99.5, 100.25, 100.661]),
    ("results.use", {"gpu": [41, 57], "unit": "%"}),
    ("exp.status", "ok"),
    ("exp.status_msg", ""),
]


def _line(item: tuple[str, Any] | str) -> bytes:
    return (item + "\n" if isinstance(item, str) else format_line(*item)).encode()


GOOD = b"".join(_line(item) for item in LINES)
FULL = {k: v for item in LINES if isinstance(item, tuple) for k, v in [item]}
#: Where each line ends (the offset just past its "\n"), with its item.
ENDS = [(sum(len(_line(i)) for i in LINES[: n + 1]), item) for n, item in enumerate(LINES)]


def record_of_lines(kept: list[tuple[str, Any] | str]) -> dict[str, Any]:
    """What a log made of ``kept`` whole lines must parse to."""
    record = {k: v for item in kept if isinstance(item, tuple) for k, v in [item]}
    if record and not record.get("exp.status"):
        record.update(MARKS)
    return record


def cut_at(offset: int) -> tuple[bytes, dict[str, Any]]:
    return GOOD[:offset], record_of_lines([item for end, item in ENDS if end <= offset])


def _interesting_offsets() -> list[int]:
    offsets = {0, 1, 2}
    for end, _ in ENDS:
        offsets.update({end - 1, end, end + 2})  # before and after each line end
    start = GOOD.index(b"__results.throughput__=")
    value_at = start + len(b"__results.throughput__=")
    offsets.update(range(start + 3, value_at + len(b"159.78")))  # every byte of the key
    for marker in (b'"resn', b"[99.5, ", b'{"gpu": [41', b'"o'):
        offsets.add(GOOD.index(marker) + len(marker))
    return sorted(o for o in offsets if o < len(GOOD))


def _spoiled(line_number: int, byte: int) -> tuple[bytes, dict[str, Any]]:
    """The good log with one byte of a key line's value replaced by ``byte``."""
    lines = [_line(item) for item in LINES]
    raw = bytearray(lines[line_number])
    raw[raw.index(b"=") + 2] = byte
    lines[line_number] = bytes(raw)
    kept = [item for n, item in enumerate(LINES) if n != line_number]
    return b"".join(lines), record_of_lines(kept)


CASES: dict[str, tuple[bytes, dict[str, Any]]] = {}
for _offset in _interesting_offsets():
    CASES[f"cut-at-{_offset}"] = cut_at(_offset)
for _n, _item in enumerate(LINES):
    if isinstance(_item, tuple) and _item[1] not in ("", 16):  # a byte in the value
        CASES[f"line-{_n + 1}-byte-ff"] = _spoiled(_n, 0xFF)  # invalid UTF-8
        CASES[f"line-{_n + 1}-byte-nul"] = _spoiled(_n, 0x00)

_DEEP = b"__results.deep__=" + b"[" * 1200 + b"]" * 1200 + b"\n"
HAND_WRITTEN: dict[str, tuple[bytes, dict[str, Any]]] = {
    "empty": (b"", {}),
    "blank-lines": (b"\n\n  \n", {}),
    "not-a-log": (b"Traceback (most recent call last):\nKilled\n", {}),
    "nul-block-appended": (GOOD + b"\x00" * 4096, FULL),
    "nul-block-instead-of-the-end": (GOOD[:200] + b"\x00" * 512, cut_at(200)[1]),
    "nested-1200-deep": (GOOD + _DEEP, FULL),
    "nested-65-deep": (GOOD + b"__results.x__=" + b"[" * 65 + b"]" * 65 + b"\n", FULL),
    "lone-surrogate": (GOOD + b'__exp.status_msg__="\\ud800"\n', FULL),
    "surrogate-pair-is-fine": (GOOD + b'__x__="\\ud83d\\ude00"\n', {**FULL, "x": "\U0001f600"}),
    "invalid-utf8-in-free-text": (b"\xff\xfe junk \xc3\n" + GOOD, FULL),
    "nul-in-free-text": (b"progress\x00 50%\n" + GOOD, FULL),
    "invalid-utf8-in-a-key-line": (GOOD + b'__exp.model__="r\xe9snet"\n', FULL),
    "cesu-surrogate-bytes": (GOOD + b'__exp.model__="\xed\xa0\x80"\n', FULL),
    "4301-digits": (GOOD + b"__results.throughput__=" + b"1" * 4301 + b"\n", FULL),
    "control-char-in-name": (GOOD + b"__results\x07.time__=1\n", FULL),
    "cr-only-line-ends": (GOOD.replace(b"\n", b"\r"), {}),
    "unterminated-string": (GOOD + b'__exp.status_msg__="half\n', FULL),
    "trailing-comma": (GOOD + b"__results.time_data__=[1, 2,]\n", FULL),
    "value-then-junk": (GOOD + b"__results.throughput__=159.78 img/s\n", FULL),
    "glued-lines": (GOOD + b'__a__=1__b__=2\n', FULL),
}


def _one_line(warning: ParseWarning) -> bool:
    return "\n" not in str(warning) and "\r" not in str(warning)


def check(data: bytes, expected: dict[str, Any]) -> list[ParseWarning]:
    record, warnings = scan_bytes(data, "case.log")
    assert record == expected
    # Never a wrong value: whatever is kept is the good log's.
    assert all(FULL.get(k, v) == v or k in MARKS for k, v in record.items())
    assert all(_one_line(w) for w in warnings)
    return warnings


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_damage(name: str) -> None:
    data, expected = CASES[name]
    warnings = check(data, expected)
    assert warnings or expected == FULL


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_damage(name: str) -> None:
    data, expected = HAND_WRITTEN[name]
    # Not damage: free text is the framework's business, whatever its bytes.
    harmless = name in ("surrogate-pair-is-fine", "invalid-utf8-in-free-text", "nul-in-free-text")
    assert bool(check(data, expected)) is not harmless


@pytest.mark.parametrize("offset", [GOOD.index(b"159.78") + 2, GOOD.index(b"[99.5") + 3,
                                    GOOD.index(b'"resnet50"') + 4, ENDS[6][0], ENDS[6][0] - 1])
def test_cut_then_a_later_writer_appends(tmp_path: Path, offset: int) -> None:
    # The runner writes the status of a killed worker after its last line.
    log = tmp_path / "killed.log"
    log.write_bytes(GOOD[:offset])
    with LogWriter(log) as writer:
        writer.write("exp.status", "timeout")
    record, warnings = parse_log(log)
    kept = [item for end, item in ENDS if end <= offset]
    assert record == record_of_lines([*kept, ("exp.status", "timeout")])
    assert record.get("results.throughput") in (None, 159.78)  # never 15
    assert bool(warnings) == (offset not in [end for end, _ in ENDS])


def test_a_line_over_the_length_bound_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logscan, "MAX_LINE_BYTES", 64)
    long = format_line("results.time_data", list(range(100))).encode()
    record, warnings = scan_bytes(long + GOOD, "big.log")
    assert record == FULL
    assert [(w.line, w.message) for w in warnings] == [(1, "line longer than 64 bytes; skipped")]
    record, warnings = scan_bytes(GOOD + b"_" * 1000, "tail.log")  # and without a line end
    assert record == FULL and len(warnings) == 1


def test_a_flood_of_bad_lines_gives_a_bounded_list_of_warnings() -> None:
    record, warnings = scan_bytes(GOOD + b"__x__=?\n" * 500, "flood.log")
    assert record == FULL
    assert len(warnings) == logscan.MAX_WARNINGS + 1
    assert warnings[-1].message == "480 more warning(s) not shown"


def test_one_bad_file_never_costs_the_others(tmp_path: Path) -> None:
    for name, (data, _) in {**CASES, **HAND_WRITTEN}.items():
        (tmp_path / f"{name}.log").write_bytes(data)
    (tmp_path / "good.log.gz").write_bytes(gzip.compress(GOOD, mtime=0))
    (tmp_path / "not-gzip.log.gz").write_bytes(GOOD)
    (tmp_path / "dir.log").mkdir()
    os.mkfifo(tmp_path / "fifo.log")
    records, warnings = parse_logs([tmp_path])
    expected = [e for _, (_, e) in sorted({**CASES, **HAND_WRITTEN, "good": (b"", FULL)}.items())
                if e]
    assert sorted(map(json.dumps, records)) == sorted(map(json.dumps, expected))
    by_file = {Path(w.path).name: w.message for w in warnings if w.line == 0}
    assert by_file["dir.log"].startswith("is a directory, not a log; skipped")
    assert by_file["fifo.log"] == "not a regular file; skipped"
    assert any(Path(w.path).name == "not-gzip.log.gz" and "cannot read further" in w.message
               for w in warnings)
    # In a recursive walk the directory is walked, the FIFO still skipped.
    (tmp_path / "dir.log" / "inner.log").write_bytes(GOOD)
    again, _ = parse_logs([tmp_path], recursive=True)
    assert len(again) == len(records) + 1


def test_parse_prints_one_line_per_warning(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from dlbench.cli.main import main

    (tmp_path / "a.log").write_bytes(GOOD[: GOOD.index(b"159.78") + 2])
    (tmp_path / "b.log").write_bytes(GOOD + _DEEP + b'__s__="\\udfff"\n')
    assert main(["parse", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    records = json.loads(captured.out)["data"]
    assert [r["exp.status"] for r in records] == ["incomplete", "ok"]
    assert "results.throughput" not in records[0]
    lines = captured.err.splitlines()
    assert lines == [
        f"dlbench: warning: {tmp_path / 'a.log'}:8: last line has no line end "
        "(cut while being written); dropped",
        f"dlbench: warning: {tmp_path / 'a.log'}: no closing exp.status: record marked "
        "incomplete (the run was killed, or is still running)",
        f"dlbench: warning: {tmp_path / 'b.log'}:13: value of results.deep nests deeper "
        "than 64 levels; key skipped",
        f"dlbench: warning: {tmp_path / 'b.log'}:14: value of s holds a lone UTF-16 "
        "surrogate; key skipped",
    ]


# ---------------------------------------------------------------- properties

_FRAGMENTS = st.sampled_from([
    b"__", b"__x__=", b"  __y__ = ", b"\t", b"=", b"\n", b"\r\n", b'"', b"\\u", b"d800",
    b"[", b"]", b"{", b"}", b"1", b"-0.5e3", b"NaN", b"null", b"\x00", b"\xff", b"\xed\xa0",
    b"exp.status", b'"ok"', b"_",
])
_SHAPED = st.lists(st.one_of(_FRAGMENTS, st.binary(max_size=8)), max_size=60).map(b"".join)


#: Any 3 kB of bytes cost at most this many scans of an ordinary 3 kB log (CPU time:
#: a ratio, which a loaded machine does not move; see tests/cpu_cost.py).
SCAN_BOUND = CostBound(lambda: scan_bytes(b"".join(
    b"__user.k%d__=%d\n" % (i, i) for i in range(200)), "ordinary.log"), factor=1000)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=3000), _SHAPED))
def test_any_bytes_give_records_or_warnings_quickly(data: bytes) -> None:
    found: list[tuple[dict[str, Any], list[ParseWarning]]] = []
    SCAN_BOUND.check(lambda: found.append(scan_bytes(data, "any.log")), repr(data[:60]))
    [(record, warnings)] = found
    assert isinstance(record, dict) and all(isinstance(w, ParseWarning) for w in warnings)
    assert all(_one_line(w) for w in warnings)
    json.dumps(record).encode("utf-8")  # every value can be written out again
    assert record or warnings or not data.strip()


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
_NAMES = st.from_regex(r"[a-z][a-z0-9_.]{0,12}[a-z0-9]", fullmatch=True)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.dictionaries(_NAMES, _VALUES, min_size=1, max_size=8), st.data())
def test_a_cut_log_keeps_only_values_it_had_whole(values: dict[str, Any], data: Any) -> None:
    text = b"".join(format_line(k, v).encode() for k, v in values.items())
    cut = data.draw(st.integers(0, len(text)))
    record, _ = scan_bytes(text[:cut], "cut.log")
    for key, value in record.items():
        if key in MARKS and key not in values:
            continue
        assert value == values[key] or (key in MARKS and value == MARKS[key])


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) + len(HAND_WRITTEN) >= 50


def test_query_shows_incomplete_records_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dlbench.cli.main import main

    (tmp_path / "done.log").write_bytes(GOOD)
    (tmp_path / "killed.log").write_bytes(GOOD[: GOOD.index(b"159.78") + 2])
    assert main(["query", "--input", str(tmp_path), "--where", '{"exp.status": "incomplete"}',
                 "--format", "json"]) == 0
    captured = capsys.readouterr()
    (record,) = json.loads(captured.out)["data"]
    assert record == cut_at(GOOD.index(b"159.78"))[1]
    assert f"{tmp_path / 'killed.log'}: no closing exp.status" in captured.err
    assert main(["query", "--input", str(tmp_path / "killed.log"), "--columns",
                 "exp.model,exp.status,results.time"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].split() == ["resnet50", "incomplete", "100.14"]
