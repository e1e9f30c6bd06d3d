"""``dlbench parse`` and ``dlbench query``."""

from __future__ import annotations

import argparse

from dlbench.cli.usage import note, warn
from dlbench.results.export import write_logs
from dlbench.results.io import dumps_records, load_selected, load_table
from dlbench.results.outputs import check_output
from dlbench.results.parser import ParseWarning
from dlbench.results.query import parse_query
from dlbench.results.text_table import format_table


def _warn(warning: ParseWarning) -> None:
    warn(warning)


def parse(args: argparse.Namespace) -> int:
    """Parse logs into records; write them to --output or print JSON."""
    if args.output:
        check_output(args.output, args.paths)
    # Streamed: worker processes read the logs and encode the records, which go to the
    # file (or stdout) as they come, never all held at once; warnings as they are known.
    count = write_logs(args.paths, args.output, recursive=args.recursive, on_warning=_warn)
    if args.output:
        note(f"{count} record(s) written to {args.output}")
    return 0


#: The columns of ``dlbench query``'s table before the parameters that vary.
QUERY_COLUMNS = ("exp.model", "exp.status", "results.time", "results.throughput")


def query(args: argparse.Namespace) -> int:
    """Print the records that match --where."""
    flag = args.where_flag  # --where, or the deprecated alias the user typed
    where = parse_query(args.where, flag)
    warnings: list[ParseWarning] = []
    source = f"--input {' '.join(args.input)}"
    columns = None
    if args.columns:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    try:
        # From logs (no store), a damaged or incomplete log is worth knowing about here
        # too, also when nothing matches.
        if args.format == "json":
            # JSON shows every key of every record: they are read whole.
            selected = load_selected(args.input, where, flag, source, parse_warnings=warnings)
        else:
            # A table shows a few keys: only those are read.
            selected, shown = load_table(args.input, where, flag, source,
                                         preferred=QUERY_COLUMNS, columns=columns,
                                         parse_warnings=warnings)
    finally:
        for warning in warnings:
            warn(warning)
    if args.format == "json":
        print(dumps_records(selected))
        return 0
    # A CSV is read by programs: full precision. A table is read by people: each number
    # at its precision (2 decimals from 1 up, 4 significant digits below).
    fmt, floatfmt = ("csv", "{!r}") if args.format == "csv" else ("text", None)
    for line in format_table(selected, shown, fmt=fmt, floatfmt=floatfmt):
        print(line)
    return 0
