"""The report-type registry: adding a report type is one class plus one registration
line, and the command line's ``--type`` choices and help come from the registry."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import build_parser, main
from dlbench.formats import DATA_FORMATS, HTML_FORMAT, PARQUET_FORMAT, REPORT_FORMATS
from dlbench.report import registry
from dlbench.report.cells import Report, Table
from dlbench.report.registry import ReportOptions, ReportType


class CountReport(ReportType):
    """A report type written for this test: how many records there are."""

    def build(self, records: Sequence[dict[str, Any]], options: ReportOptions) -> Report:
        """One table of one cell, the record count."""
        return Report(title="Count", tables=[Table("records", ["n"], [[len(records)]])])


@pytest.fixture
def count_type() -> Iterator[None]:
    """The ``count`` report type, registered for one test only."""
    registry.register("count", "the number of records", CountReport)
    yield
    registry.unregister("count")


def _choices(argv: Sequence[str], dest: str) -> list[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = commands.choices[argv[0]]
    return list(next(a for a in sub._actions if a.dest == dest).choices or ())


def _records_file(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "records.jsonl"
    lines = [json.dumps({"exp.id": f"e{i}", "exp.status": "ok", "results.time": 1.0 + i})
             for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_shipped_report_types_are_the_cli_choices() -> None:
    names = [entry.name for entry in registry.report_types()]
    assert names == ["exploration", "weak-scaling", "strong-scaling", "scorecard", "serving"]
    assert _choices(["report"], "report_type") == names
    # Each class imports and says whether it needs a baseline: only the scorecard does.
    assert [e.name for e in registry.report_types() if e.load().uses_baseline] == ["scorecard"]


def test_a_registered_report_type_runs_end_to_end_and_leaves_no_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(_records_file(tmp_path, 3))
    registry.register("count", "the number of records", CountReport)  # the one line
    try:
        assert "count" in _choices(["report"], "report_type")
        assert main(["report", "--help"]) == 0
        assert "count: the number of records" in " ".join(capsys.readouterr().out.split())
        assert main(["report", "--type", "count", "--input", source]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[:2] == ["Count", "====="]
        assert out[-3:] == ["n", "-", "3"]
        assert main(["report", "--type", "count", "--input", source, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["tables"][0]["rows"] == [[3]]
    finally:
        registry.unregister("count")
    assert "count" not in _choices(["report"], "report_type")
    assert main(["report", "--type", "count", "--input", source]) == 2
    assert capsys.readouterr().err.strip() == (
        "dlbench: error: --type: 'count' is not one of exploration, weak-scaling, "
        "strong-scaling, scorecard, serving")


def test_baseline_belongs_to_the_types_that_use_one(
    count_type: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = str(_records_file(tmp_path, 1))
    assert main(["report", "--type", "count", "--input", source, "--baseline", "b.json"]) == 2
    assert capsys.readouterr().err.strip() == (
        "dlbench: error: --baseline is used by --type scorecard only, not count")
    assert main(["report", "--type", "scorecard", "--input", source]) == 2
    assert "--type scorecard needs --baseline FILE" in capsys.readouterr().err


def test_registry_refuses_a_taken_name_and_names_the_accepted_ones(count_type: None) -> None:
    with pytest.raises(ValueError, match="'count' is already registered"):
        registry.register("count", "again", CountReport)
    with pytest.raises(ValueError, match=r"accepted: exploration, weak-scaling, .*count"):
        registry.report_type("counts")
    assert registry.report_type("count").load().build([{}, {}], ReportOptions()).tables[0].rows \
        == [[2]]


def test_format_choices_come_from_the_two_format_families() -> None:
    assert _choices(["query"], "format")[:3] == ["text", "json", "csv"] == list(DATA_FORMATS)
    assert _choices(["query"], "format")[3:] == [PARQUET_FORMAT]
    assert _choices(["plan"], "format") == ["text", "json"]
    assert _choices(["report"], "format") == [*REPORT_FORMATS, HTML_FORMAT]
    assert _choices(["compare"], "format") == ["text", "markdown", "csv", "json"]
    assert _choices(["sysinfo"], "format") == _choices(["peak"], "format") == ["text", "json"]
