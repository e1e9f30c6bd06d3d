"""``dlbench report`` and ``dlbench baseline``: load, call the library, print or write."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dlbench.errors import ResultsError
from dlbench.formats import HTML_FORMAT
from dlbench.report.baseline import dump_baseline, make_baseline
from dlbench.report.cells import Report
from dlbench.report.render import render_report
from dlbench.report.types import ReportOptions, report_type, report_types
from dlbench.results.io import load_records, write_atomically
from dlbench.results.parser import ParseWarning
from dlbench.results.query import parse_query, select_records


def _selected(args: argparse.Namespace) -> list[dict[str, Any]]:
    query = parse_query(args.query, "--query")
    warnings: list[ParseWarning] = []
    records = load_records(args.input, parse_warnings=warnings)
    for warning in warnings:
        print(f"dlbench: warning: {warning}", file=sys.stderr)
    return select_records(records, query, "--query", f"--input {' '.join(args.input)}")


def _check_arguments(args: argparse.Namespace) -> None:
    if args.format == HTML_FORMAT and not args.output:
        raise ResultsError(f"--format {HTML_FORMAT} needs --output FILE (an HTML page is not "
                           "printed)")
    uses_baseline = report_type(args.report_type).load().uses_baseline
    if uses_baseline and not args.baseline:
        raise ResultsError(f"--type {args.report_type} needs --baseline FILE (.json, .yaml or "
                           ".csv); `dlbench baseline` writes one from results")
    if args.baseline and not uses_baseline:
        takers = [e.name for e in report_types() if e.load().uses_baseline]
        raise ResultsError(f"--baseline is used by --type {' and '.join(takers)} only, not "
                           f"{args.report_type}")


def build_report(args: argparse.Namespace, records: list[dict[str, Any]]) -> Report:
    """The report ``args`` ask for, of ``records``."""
    options = ReportOptions(target=args.target_variable, baseline=args.baseline)
    return report_type(args.report_type).load().build(records, options)


def report(args: argparse.Namespace) -> int:
    """Build the report, print it or write it to --output."""
    _check_arguments(args)
    records = _selected(args)
    built = build_report(args, records)
    if args.format == HTML_FORMAT:
        # Imported here: only HTML pages need the charting code it pulls in.
        from dlbench.report.html import write_html_report

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
            print(f"dlbench: warning: {warning}", file=sys.stderr)
    if args.output:
        print(f"{args.report_type} report written to {args.output}", file=sys.stderr)
    return 0


def baseline(args: argparse.Namespace) -> int:
    """Write a baseline file with one benchmark per configuration of the results."""
    records = _selected(args)
    made, warnings = make_baseline(records, args.metric)
    text = dump_baseline(made, args.output)  # checks the extension before any write
    for warning in warnings:
        print(f"dlbench: warning: {warning}", file=sys.stderr)
    write_atomically(args.output, text.encode("utf-8"))
    print(f"{len(made.benchmarks)} benchmark(s) of {made.metric} written to {args.output}",
          file=sys.stderr)
    return 0
