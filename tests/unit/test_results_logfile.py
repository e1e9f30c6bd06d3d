"""The log line format and the append-only writer."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from dlbench.results.log.file import CUT_MARK, LINE_RE, LogWriter, format_line
from dlbench.results.log.parser import parse_log


def test_format_line_known_answers() -> None:
    assert format_line("exp.model", "resnet50") == '__exp.model__="resnet50"\n'
    assert format_line("exp.replica_batch", 16) == "__exp.replica_batch__=16\n"
    assert format_line("results.time_data", [1.5, 2.0]) == "__results.time_data__=[1.5, 2.0]\n"
    assert format_line("results.time", float("nan")) == "__results.time__=NaN\n"
    assert format_line("x", None) == "__x__=null\n"


def test_format_line_keeps_multiline_strings_on_one_line() -> None:
    line = format_line("exp.status_msg", "Traceback\n  line 2\u2028é")
    assert line.count("\n") == 1
    assert LINE_RE.match(line.rstrip("\n"))


@pytest.mark.parametrize("name", ["", "has space", "tab\tname", "new\nline", "a__=b"])
def test_format_line_refuses_names_that_cannot_be_read_back(name: str) -> None:
    with pytest.raises(ValueError):
        format_line(name, 1)


def test_line_re_splits_name_and_value() -> None:
    found = LINE_RE.match('__exp.model__="resnet50"')
    assert found is not None
    assert found.group("name") == "exp.model"
    assert found.group("value") == '"resnet50"'
    # A name ending in "_" is still split at its own "__=".
    found = LINE_RE.match("__odd_name___=1")
    assert found is not None and found.group("name") == "odd_name_"
    assert LINE_RE.match("some framework output __x__=1") is None


def test_writer_round_trip_through_parse_log(tmp_path: Path) -> None:
    values = {
        "exp.model": "resnet50",
        "exp.gpus": "0",
        "exp.replica_batch": 32,
        "exp.use_amp": True,
        "results.time": 41.5,
        "results.time_data": [41.0, 42.0],
        "sys.framework_build": {"gpu": [1, 2]},
        "odd_name_": None,
        "results.loss_last": math.inf,
        "exp.status": "ok",
    }
    path = tmp_path / "sub" / "dir" / "exp.log"
    with LogWriter(path) as log:
        log.write_text("framework banner, no newline")
        log.write_many(values)
        log.write_text("Epoch 1 ...\n")
    record, warnings = parse_log(path)
    assert warnings == []
    assert record == values


def test_writer_flushes_every_write(tmp_path: Path) -> None:
    path = tmp_path / "exp.log"
    log = LogWriter(path)
    log.write("exp.model", "alexnet")
    # Readable before close: a killed worker leaves exactly this on disk.
    assert path.read_text() == '__exp.model__="alexnet"\n'
    log.close()
    with pytest.raises(ValueError):
        log.write("exp.model", "x")


def test_writer_marks_a_line_cut_short_and_starts_a_fresh_one(tmp_path: Path) -> None:
    path = tmp_path / "exp.log"
    # Killed mid-line: "4" is what is left of "41.5"; it must not be read as 4.
    path.write_text('__exp.model__="alexnet"\n__results.time__=4')
    with LogWriter(path) as log:
        log.write("exp.status", "failure")
    assert path.read_text().splitlines()[-2:] == [
        f"__results.time__=4{CUT_MARK}", '__exp.status__="failure"']
    record, warnings = parse_log(path)
    assert record == {"exp.model": "alexnet", "exp.status": "failure"}
    assert [(w.line, w.message) for w in warnings] == [
        (2, "value of results.time was cut short when its writer stopped; key skipped")]


@pytest.mark.parametrize("cut", ['__exp.model__="ale', "__exp.mod", "__x__=", "__x__=[1, 2]",
                                 '__x__="a\\', "__x__=tru", "_", "__x__ "])
def test_the_cut_mark_spoils_any_partial_line(tmp_path: Path, cut: str) -> None:
    path = tmp_path / "exp.log"
    path.write_text('__x__=1\n' + cut)
    LogWriter(path).close()
    record, _ = parse_log(path)
    assert record.get("x") == 1 and "exp.model" not in record


def test_writer_is_safe_across_threads(tmp_path: Path) -> None:
    path = tmp_path / "exp.log"
    with LogWriter(path) as log:

        def write(prefix: str) -> None:
            for i in range(200):
                log.write(f"{prefix}.{i}", list(range(20)))

        threads = [threading.Thread(target=write, args=(f"t{n}",)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        log.write("exp.status", "ok")
    record, warnings = parse_log(path)
    assert warnings == []
    assert len(record) == 801
