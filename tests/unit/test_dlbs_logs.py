"""DLBS interoperability of logs: its line grammar, its log directories, ``.log.gz``,
and the keys its log parser and summary builder read from a dlbench log.

``tests/data/logs/dlbs/expected.json`` is what DLBS's own log parser produced from the
DLBS-format logs beside it; nothing here needs DLBS at test time.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from dlbench.config.spec import load_spec
from dlbench.config.validate import plan_experiments
from dlbench.results.log.file import LINE_RE, LogWriter
from dlbench.results.log.parser import parse_log, parse_logs
from dlbench.results.log.scan import scan_bytes
from dlbench.worker.experiment import run_experiment

DATA = Path(__file__).resolve().parents[1] / "data" / "logs" / "dlbs"


INCOMPLETE = {
    "exp.status": "incomplete",
    "exp.status_msg": "the log ends before the worker's closing exp.status "
                      "(killed, or still running)",
}


def ok_log(*lines: str) -> bytes:
    """A closed log holding ``lines``, so that only their own warnings show."""
    return ("\n".join(lines) + '\n__exp.status__="ok"\n').encode()


@pytest.mark.parametrize(
    ("line", "expected", "warned"),
    [
        ('__exp.model__="resnet50"', {"exp.model": "resnet50"}, False),
        ("__results.time__= 33.343", {"results.time": 33.343}, False),  # as DLBS's launchers
        ("  __exp.replica_batch__=16", {"exp.replica_batch": 16}, False),  # leading spaces
        ("\t\t__exp.num_gpus__=2", {"exp.num_gpus": 2}, False),  # leading tabs
        ("__results.throughput__ \t=  212.6  ", {"results.throughput": 212.6}, False),
        ('__exp.gpus__=\t"0,1"\r', {"exp.gpus": "0,1"}, False),  # CRLF line end
        ("__results.mem__=   ", {"results.mem": None}, False),  # only whitespace: null
        ("__ spaced.name __=1", {"spaced.name": 1}, False),  # the name is stripped too
        ('__odd_name___=[1, {"a": null}]', {"odd_name_": [1, {"a": None}]}, False),
        ("__a=b__=true", {"a=b": True}, False),  # the first "__=" ends the name
        ("__x__=__y__=1", {}, True),  # ...so the value is '__y__=1': not JSON
        ("__x__=", {}, True),  # nothing after "=": DLBS ignores the line; we say so
        ("__ __=1", {}, True),  # an empty name (DLBS would keep it under "")
        ("x __y__=1", {}, False),  # free text: not at the start of the line
        ("__y__ : 1", {}, False),
        ("__y_=1", {}, False),
        ("____=1", {}, False),
    ],
)
def test_dlbs_line_grammar_known_answers(
    line: str, expected: dict[str, Any], warned: bool
) -> None:
    record, warnings = scan_bytes(ok_log(line), "t.log")
    assert record == {**expected, "exp.status": "ok"}
    assert [w.line for w in warnings] == ([1] if warned else [])


def test_line_re_is_the_dlbs_grammar() -> None:
    found = LINE_RE.match("  __results.time__ \t= 75.2")
    assert found is not None
    assert (found.group("name"), found.group("value")) == ("results.time", " 75.2")
    assert LINE_RE.match("loss=2.3 __not.a.key__=1") is None


def _sorted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: str(r["exp.id"]))


def test_a_dlbs_log_directory_gives_the_records_dlbs_gives(tmp_path: Path) -> None:
    expected = json.loads((DATA / "expected.json").read_text())["data"]
    records, warnings = parse_logs([DATA])
    assert warnings == []
    assert _sorted(records) == expected  # the .log.gz is read in a directory walk too
    # The records the old grammar lost without a word.
    first = _sorted(records)[0]
    assert (first["results.throughput"], first["results.time"]) == (212.6, 75.258)
    assert first["results.mem"] is None and math.isinf(first["results.extra"]["c"])
    assert [r["exp.status"] for r in _sorted(records)] == ["ok", "ok", "failure", "ok"]
    # Recursively, from a copy one level down, the same records.
    shutil.copytree(DATA, tmp_path / "runs" / "dlbs")
    again, _ = parse_logs([tmp_path], recursive=True)
    assert _sorted(again) == expected


def test_log_gz_given_explicitly_and_damaged(tmp_path: Path) -> None:
    text = ok_log("__exp.model__=\"alexnet\"", "__results.time__=29.038")
    (tmp_path / "a.log.gz").write_bytes(gzip.compress(text, mtime=0))
    assert parse_log(tmp_path / "a.log.gz") == (
        {"exp.model": "alexnet", "results.time": 29.038, "exp.status": "ok"}, [])
    # Cut short: the lines before the damage are kept, the record is incomplete.
    noise = random.Random(0).randbytes(3000).hex().encode()  # hardly compressible
    body = text.replace(b"__exp.status__", noise + b"\n__exp.status__")
    whole = gzip.compress(body, mtime=0)
    (tmp_path / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    record, warnings = parse_log(tmp_path / "cut.log.gz")
    assert record == {"exp.model": "alexnet", "results.time": 29.038, **INCOMPLETE}
    assert warnings[0].message.startswith("cannot read further (")
    assert warnings[1].message.startswith("no closing exp.status")
    # Not gzip at all: one warning, no record, and the other logs still read.
    (tmp_path / "fake.log.gz").write_bytes(b'__exp.model__="x"\n')
    records, warnings = parse_logs([tmp_path])
    assert [r["exp.model"] for r in records] == ["alexnet", "alexnet"]
    assert [Path(w.path).name for w in warnings if "cannot read further" in w.message] == [
        "cut.log.gz", "fake.log.gz"]


#: The DLBS log grammar restated independently of dlbench's: a line is
#: read when it starts with optional blanks and "__"; the name runs to the first "__"
#: followed by blanks and "="; name and value are stripped; a blank value is null.
_DLBS_READER = re.compile(r"[ \t]*__(.+?)__[ \t]*=(.+)")


def _read_as_dlbs(text: str) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for line in text.split("\n"):
        found = _DLBS_READER.match(line)
        if found:
            value = found.group(2).strip()
            record[found.group(1).strip()] = json.loads(value) if value else None
    return record


def test_a_dlbench_log_has_what_dlbs_log_parser_and_summary_builder_need(
    tmp_path: Path,
) -> None:
    spec = load_spec(params=["exp.framework=fake", "exp.model=resnet50", "fake.step_ms=1",
                             "exp.num_warmup_batches=1", "exp.num_batches=3",
                             "monitor.enabled=false", f"exp.out_dir={tmp_path}"])
    (experiment,) = plan_experiments(spec)
    with LogWriter(tmp_path / "x.log") as log:
        assert run_experiment(experiment, log)
    record, warnings = parse_log(tmp_path / "x.log")
    assert warnings == []
    # Every line dlbench writes reads the same under DLBS's rules.
    assert _read_as_dlbs((tmp_path / "x.log").read_text()) == record
    # DLBS's log parser keeps a benchmark with a positive numeric throughput; its
    # summary builder indexes by model title, GPUs and effective batch.
    assert isinstance(record["results.throughput"], float) and record["results.throughput"] > 0
    assert record["exp.model_title"] == "ResNet-50"
    assert record["exp.framework_title"] == "Fake workload"
    assert (record["exp.gpus"], record["exp.effective_batch"]) == ("", 16)
    assert isinstance(record["results.time"], float)
    assert record["exp.status"] == "ok"
