"""``dlbench report`` and ``dlbench baseline``: load, call the library, print or write."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dlbench.cli.usage import better_flag, check_keys, note, read_warnings, warn
from dlbench.errors import ResultsError
from dlbench.formats import HTML_FORMAT
from dlbench.report.cells import Report
from dlbench.report.registry import ReportOptions, report_type, report_types
from dlbench.report.render import render_report
from dlbench.report.scorecard.baseline import dump_baseline, make_baseline
from dlbench.report.scorecard.scorecard import ScorecardReport
from dlbench.results.io import load_records, write_atomically
from dlbench.results.log.parser import ParseWarning
from dlbench.results.outputs import check_output
from dlbench.results.query import parse_query, select_records


def _selected(args: argparse.Namespace, warnings: list[ParseWarning]) -> list[dict[str, Any]]:
    """The records of --input that --where selects; what reading could not read goes to
    ``warnings``."""
    flag = args.where_flag  # --where, or the deprecated --query if that is what was typed
    query = parse_query(args.where, flag)
    records = load_records(args.input, parse_warnings=warnings)
    return select_records(records, query, flag, f"--input {' '.join(args.input)}")


def _check_arguments(args: argparse.Namespace) -> None:
    if args.output:
        check_output(args.output, [*args.input, *([args.baseline] if args.baseline else [])])
    if args.format == HTML_FORMAT and not args.output:
        raise ResultsError(f"--format {HTML_FORMAT} needs --output FILE (an HTML page is not "
                           "printed)")
    uses_baseline = report_type(args.report_type).load().uses_baseline
    if uses_baseline and not args.baseline:
        raise ResultsError(f"--type {args.report_type} needs --baseline FILE (.json, .yaml or "
                           ".csv); `dlbench baseline` writes one from results")
    takers = [e.name for e in report_types() if e.load().uses_baseline]
    for flag, given in (("--baseline", args.baseline), ("--fail-on-miss", args.fail_on_miss),
                        ("--fail-on-verdict", args.fail_on_verdict)):
        if given and not uses_baseline:
            raise ResultsError(f"{flag} is used by --type {' and '.join(takers)} only, not "
                               f"{args.report_type}")


def _table_report(args: argparse.Namespace) -> Report | None:
    """The exploration or scaling report of the input, read a column at a time (one
    store where it is, other inputs through a store in memory); None for the other
    report types, which are built from records."""
    # Imported here: it brings NumPy, which the other reports do not all need.
    from dlbench.report.tables.columnar import table_report
    from dlbench.report.tables.reports import TABLE_KINDS

    if args.report_type not in TABLE_KINDS:
        return None
    query = parse_query(args.where, args.where_flag)
    warnings: list[ParseWarning] = []
    # A failed read or report is one line: the read's warnings go into it.
    with read_warnings(warnings):
        return table_report(args.input, query, args.where_flag, args.report_type,
                            args.target_variable, parse_warnings=warnings)


def build_report(args: argparse.Namespace, records: list[dict[str, Any]]) -> Report:
    """The report ``args`` ask for, of ``records``."""
    options = ReportOptions(target=args.target_variable, baseline=args.baseline)
    return report_type(args.report_type).load().build(records, options)


def report(args: argparse.Namespace) -> int:
    """Build the report, print it or write it to --output."""
    _check_arguments(args)
    # An HTML page charts the records themselves: it always loads them (and its tables
    # come from them, through the same computation).
    built = None if args.format == HTML_FORMAT else _table_report(args)
    if built is None:
        warnings: list[ParseWarning] = []
        # A failed read or report is one line: the read's warnings go into it.
        with read_warnings(warnings):
            records = _selected(args, warnings)
            built = build_report(args, records)
    if args.format == HTML_FORMAT:
        # Imported here: only HTML pages need the charting code it pulls in.
        from dlbench.report.html.page import write_html_report

        write_html_report(built, records, Path(args.output))
    else:
        text = "\n".join(render_report(built, args.format)) + "\n"
        if not args.output:
            sys.stdout.write(text)
        else:
            write_atomically(args.output, text.encode("utf-8"))
    # Text, markdown and json carry the warnings; a file or a csv on stdout does not
    # show them to whoever ran the command.
    if args.output or args.format == "csv":
        for warning in built.warnings:
            warn(warning)
    if args.output:
        note(f"{args.report_type} report written to {args.output}")
    return _gate(args, built)


def _gate(args: argparse.Namespace, built: Report) -> int:
    """1 when a CI gate asked for (--fail-on-miss, --fail-on-verdict) is not met, with
    why on stderr; else 0."""
    if not isinstance(built, ScorecardReport):
        return 0
    failed = 0
    if args.fail_on_miss and built.missed:
        note(f"dlbench: --fail-on-miss: {len(built.missed)} benchmark(s) missed their "
             f"target: {'; '.join(built.missed)}")
        failed = 1
    if args.fail_on_verdict and not built.passed:
        print("dlbench: --fail-on-verdict: the overall verdict is FAIL", file=sys.stderr)
        failed = 1
    return failed


def baseline(args: argparse.Namespace) -> int:
    """Write a baseline file with one benchmark per configuration of the results."""
    check_output(args.output, args.input)
    read: list[ParseWarning] = []
    with read_warnings(read):  # a failed read or baseline is one line, with the warnings
        records = _selected(args, read)
        check_keys("--metric", [args.metric], {key for record in records for key in record},
                   len(records))
        made, warnings = make_baseline(records, args.metric, better_flag(args))
        text = dump_baseline(made, args.output)  # checks the extension before any write
    for warning in warnings:
        warn(warning)
    write_atomically(args.output, text.encode("utf-8"))
    note(f"{len(made.benchmarks)} benchmark(s) of {made.metric} written to {args.output}")
    return 0
