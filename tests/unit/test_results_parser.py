"""Log files → records: last value wins, junk is ignored, damage is a warning.

The DLBS grammar, ``.log.gz`` and interoperability are in ``test_dlbs_logs.py``;
damaged logs by the dozen in ``test_damaged_logs.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.errors import ResultsError
from dlbench.results.log.parser import ParseWarning, parse_log, parse_logs


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_last_occurrence_wins_and_free_text_is_ignored(tmp_path: Path) -> None:
    log = write(
        tmp_path / "a.log",
        "Loading model...\n"
        '__exp.model__="resnet50"\n'
        '__exp.status__="running"\n'
        "loss=2.3 __not.a.key__=1 (mid-line: framework output)\n"
        "step 1/10 loss=2.3\n"
        '__exp.status__="ok"\r\n'
        "__results.time__=12.5\n",
    )
    record, warnings = parse_log(log)
    assert record == {"exp.model": "resnet50", "exp.status": "ok", "results.time": 12.5}
    assert warnings == []


INCOMPLETE = {
    "exp.status": "incomplete",
    "exp.status_msg": "the log ends before the worker's closing exp.status "
                      "(killed, or still running)",
}


def test_truncated_final_line_warns_with_its_line_number(tmp_path: Path) -> None:
    log = write(
        tmp_path / "killed.log",
        '__exp.model__="vgg16"\nnoise\n__results.time__=3.0\n__results.time_data__=[1.0, 2.',
    )
    record, warnings = parse_log(log)
    assert record == {"exp.model": "vgg16", "results.time": 3.0, **INCOMPLETE}
    assert [str(w) for w in warnings] == [
        f"{log}:4: last line has no line end (cut while being written); dropped",
        f"{log}: no closing exp.status: record marked incomplete "
        "(the run was killed, or is still running)",
    ]
    assert warnings[0].line == 4 and warnings[0].path == str(log)


def test_a_value_cut_short_is_never_read_as_a_whole_one(tmp_path: Path) -> None:
    # A valid JSON prefix ("15" of "159.78") without its line end is dropped.
    log = write(tmp_path / "cut.log", '__exp.status__="ok"\n__results.throughput__=15')
    record, warnings = parse_log(log)
    assert "results.throughput" not in record
    assert warnings[0].line == 2 and "no line end" in warnings[0].message


def test_corrupt_later_value_keeps_the_earlier_one(tmp_path: Path) -> None:
    log = write(tmp_path / "x.log", '__exp.status__="running"\n__exp.status__="o\n')
    record, warnings = parse_log(log)
    assert record == {"exp.status": "running"}
    assert "earlier value is kept" in warnings[0].message


def test_garbage_bytes_do_not_crash(tmp_path: Path) -> None:
    junk = bytes(b for b in range(256) if b != ord("\n")) * 4
    log = write(
        tmp_path / "g.log",
        junk + b'\n__exp.model__="alexnet"\n\xff\xfe\x00\n__results.time__=\xff1\n__exp.x__=2\n'
        b'__exp.status__="ok"\n',
    )
    record, warnings = parse_log(log)
    assert record == {"exp.model": "alexnet", "exp.x": 2, "exp.status": "ok"}
    assert [(w.line, w.message) for w in warnings] == [
        (4, "line of results.time is not valid UTF-8; key skipped"),
        (1, "NUL bytes in the file: part of it may be lost"),
    ]


def test_a_record_without_closing_status_is_marked_incomplete(tmp_path: Path) -> None:
    # The worker writes exp.status "" with its parameters and the real one last.
    log = write(tmp_path / "k.log", '__exp.model__="alexnet"\n__exp.status__=""\n')
    records, warnings = parse_logs([log])
    assert records == [{"exp.model": "alexnet", **INCOMPLETE}]
    assert [w.message for w in warnings] == [
        "no closing exp.status: record marked incomplete (the run was killed, or is still running)"
    ]
    # Any non-empty status closes a record: the worker's, the runner's, DLBS's.
    for status in ("ok", "failure", "timeout", "skipped"):
        write(log, f'__exp.model__="alexnet"\n__exp.status__="{status}"\n')
        assert parse_logs([log]) == ([{"exp.model": "alexnet", "exp.status": status}], [])


def test_log_without_keys_gives_no_record_and_a_warning(tmp_path: Path) -> None:
    log = write(tmp_path / "plain.log", "just output\n")
    assert parse_log(log) == ({}, [ParseWarning(str(log), 0, parse_log(log)[1][0].message)])
    records, warnings = parse_logs([log])
    assert records == []
    assert len(warnings) == 1 and "not a dlbench log" in str(warnings[0])
    assert str(warnings[0]) == f"{log}: {warnings[0].message}"


def done(n: int) -> str:
    return f'__n__={n}\n__exp.status__="ok"\n'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(tmp_path / "b.log", done(2))
    write(tmp_path / "a.log", done(1))
    write(tmp_path / "notes.txt", done(99))
    write(tmp_path / "sub" / "c.log", done(3))
    write(tmp_path / "sub" / "deeper" / "d.log", done(4))
    return tmp_path


def test_directory_without_recursive_reads_only_its_own_logs(tree: Path) -> None:
    records, warnings = parse_logs([tree])
    assert [r["n"] for r in records] == [1, 2]
    assert warnings == []


def test_directory_recursive_reads_all_logs_in_sorted_order(tree: Path) -> None:
    records, _ = parse_logs([tree], recursive=True)
    assert [r["n"] for r in records] == [1, 2, 3, 4]
    records, _ = parse_logs([tree], recursive=True, pattern="*.txt")
    assert [r["n"] for r in records] == [99]


def test_explicit_files_are_read_whatever_their_name_and_once(tree: Path) -> None:
    records, _ = parse_logs([tree / "notes.txt", tree / "a.log", tree / "a.log"])
    assert [r["n"] for r in records] == [99, 1]


def test_a_log_reached_twice_through_a_link_or_a_directory_is_read_once(tree: Path) -> None:
    (tree / "sub" / "link.log").symlink_to(tree / "a.log")
    (tree / "sub" / "gone.log").symlink_to(tree / "nowhere.log")  # broken: read, warned
    records, warnings = parse_logs([tree, tree / "sub", tree / "b.log"])
    # a.log, b.log, then sub's c.log; sub/link.log is a.log again.
    assert [r["n"] for r in records] == [1, 2, 3]
    assert [w.path for w in warnings] == [str(tree / "sub" / "gone.log")]


def test_missing_path_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match=r"nope\.log"):
        parse_logs([tmp_path / "nope.log"])
    with pytest.raises(ResultsError, match=r"nope\.log"):
        parse_log(tmp_path / "nope.log")


def test_unreadable_file_is_a_warning_and_others_are_still_read(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # chmod does not stop root, so make one file unreadable from the inside.
    real_open = Path.open

    def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == "b.log":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    records, warnings = parse_logs([tree], recursive=True)
    assert [r["n"] for r in records] == [1, 3, 4]
    assert [str(w) for w in warnings] == [
        f"{tree / 'b.log'}: cannot read: Permission denied; skipped"
    ]
