"""``dlbench plot``: a chart of a result against a parameter, written to a file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dlbench.cli.usage import read_warnings, warn
from dlbench.config.spec import parse_flag_value
from dlbench.errors import QueryError, ResultsError
from dlbench.report.charts.charts import (
    CHART_FORMATS,
    ChartError,
    build_series,
    count_points,
    render_chart,
)
from dlbench.results.io import load_records, write_atomically
from dlbench.results.jsontext import loads_json
from dlbench.results.log.parser import ParseWarning
from dlbench.results.outputs import check_output
from dlbench.results.query import parse_query
from dlbench.textsafe import safe_text


def _output_format(path: str) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in CHART_FORMATS:
        accepted = " ".join(f".{f}" for f in CHART_FORMATS)
        raise ChartError(f"--output {path}: unknown extension; accepted: {accepted}")
    return suffix


def _queries(text: str | None) -> list[dict[str, Any]] | None:
    if text is None:
        return None
    try:
        queries = loads_json(text, "--series", QueryError)
    except json.JSONDecodeError as exc:
        raise QueryError(f"--series: not valid JSON ({exc.msg} at column {exc.colno}); "
                         'expected a list such as [{"exp.model": "resnet50"}]') from exc
    if not isinstance(queries, list) or not queries:
        raise QueryError('--series: expected a non-empty JSON list of queries such as '
                         '[{"exp.model": "resnet50"}]')
    return [parse_query(json.dumps(q), f"--series query {i + 1}") for i, q in enumerate(queries)]


def _shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a one-line message, cut to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _baseline(text: str | None) -> Any:
    if text is None:
        return None
    # YAML, as for -P values and with their bounds: "1" is the int 1, "1.5" a float,
    # "0,1" a string; an integer past Python's digit limit is refused in one line.
    value = parse_flag_value("--baseline-x", text)
    if value is None or isinstance(value, (list, dict)):
        raise ChartError(
            f"--baseline-x {_shown(text)}: expected one value such as 1 or resnet50")
    return value


def plot(args: argparse.Namespace) -> int:
    """Build the series, render the chart and write it to --output."""
    fmt = _output_format(args.output)
    check_output(args.output, args.input)
    queries = _queries(args.series)
    baseline = _baseline(args.baseline_x)
    parse_warnings: list[ParseWarning] = []
    warnings: list[str] = []
    # A failed read or chart is one line: the warnings so far go into it.
    with read_warnings(parse_warnings, warnings):
        records = load_records(args.input, parse_warnings=parse_warnings)
        if not records:
            raise ResultsError(f"--input {' '.join(args.input)} holds no records")
        series = build_series(records, args.x, args.y, queries=queries,
                              aggregation=args.aggregation, legend=args.legend,
                              baseline_x=baseline, warnings=warnings)
    # The x axis names the parameter, so "at 1" is enough (a longer label overflows).
    # The axis adds the records' unit to the label (none for a ratio).
    ylabel = args.ylabel or (
        args.y if baseline is None else f"{args.y} / value at {args.baseline_x}")
    problems: list[str] = []
    data = render_chart(series, chart=args.chart, title=args.title,
                        xlabel=args.xlabel or args.x, ylabel=ylabel,
                        fmt=fmt, problems=problems, log_y=args.log_y)
    for problem in problems:
        warn(f"chart: {problem}")
    write_atomically(args.output, data)
    print(safe_text(f"chart written to {args.output} ({len(series)} series, "
                    f"{count_points(series)} points)"))
    return 0
