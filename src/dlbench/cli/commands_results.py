"""``dlbench parse`` and ``dlbench query``."""

from __future__ import annotations

import argparse
import sys

from dlbench.results.io import dumps_records, load_records, write_records
from dlbench.results.parser import ParseWarning, parse_logs
from dlbench.results.query import parse_query, select_records
from dlbench.results.text_table import choose_columns, format_table


def parse(args: argparse.Namespace) -> int:
    """Parse logs into records; write them to --output or print JSON."""
    records, warnings = parse_logs(args.paths, recursive=args.recursive)
    for warning in warnings:
        print(f"dlbench: warning: {warning}", file=sys.stderr)
    if args.output:
        write_records(records, args.output)
        print(f"{len(records)} record(s) written to {args.output}", file=sys.stderr)
    else:
        print(dumps_records(records))
    return 0


def query(args: argparse.Namespace) -> int:
    """Print the records that match --where."""
    flag = args.where_flag  # --where, or the deprecated alias the user typed
    where = parse_query(args.where, flag)
    warnings: list[ParseWarning] = []
    # From logs (no store), a damaged or incomplete log is worth knowing about here too.
    records = load_records(args.input, parse_warnings=warnings)
    for warning in warnings:
        print(f"dlbench: warning: {warning}", file=sys.stderr)
    selected = select_records(records, where, flag, f"--input {' '.join(args.input)}")
    if args.format == "json":
        print(dumps_records(selected))
        return 0
    if args.columns:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    else:
        columns = choose_columns(
            selected, ["exp.model", "exp.status", "results.time", "results.throughput"])
    # A CSV is read by programs: full precision. A table is read by people: each number
    # at its precision (2 decimals from 1 up, 4 significant digits below).
    fmt, floatfmt = ("csv", "{!r}") if args.format == "csv" else ("text", None)
    for line in format_table(selected, columns, fmt=fmt, floatfmt=floatfmt):
        print(line)
    return 0
