"""``dlbench parse`` and ``dlbench query``."""

from __future__ import annotations

import argparse
import sys

from dlbench.cli.usage import check_keys, known_key, note, read_warnings, warn
from dlbench.errors import UsageError
from dlbench.formats import PARQUET_FORMAT
from dlbench.results.export import write_atomically, write_logs
from dlbench.results.io import dumps_records, load_selected, load_table
from dlbench.results.log.parser import ParseWarning
from dlbench.results.outputs import check_output
from dlbench.results.parquet import parquet_bytes
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
    """Print (or write to --output) the records that match --where."""
    flag = args.where_flag  # --where, or the deprecated alias the user typed
    where = parse_query(args.where, flag)
    if args.format == PARQUET_FORMAT and not args.output:
        raise UsageError("--format parquet writes a binary file: give --output FILE")
    if args.output:
        check_output(args.output, args.input)
    warnings: list[ParseWarning] = []
    source = f"--input {' '.join(args.input)}"
    columns = None
    if args.columns:
        columns = list(dict.fromkeys(c.strip() for c in args.columns.split(",") if c.strip()))
        if not columns:
            raise UsageError(f"--columns {args.columns!r} names no key: give "
                             f"comma-separated result keys, e.g. exp.model,results.throughput")
    # From logs (no store), a damaged or incomplete log is worth knowing about, also
    # when nothing matches: in the error's one line then.
    with read_warnings(warnings):
        if args.format in ("json", PARQUET_FORMAT):
            # Every key of every record (or every one --columns names) is read whole.
            selected = load_selected(args.input, where, flag, source, parse_warnings=warnings,
                                     keys=columns)
            shown = columns
        else:
            # A table shows a few keys: only those are read.
            selected, shown = load_table(args.input, where, flag, source,
                                         preferred=QUERY_COLUMNS, columns=columns,
                                         parse_warnings=warnings)
    if columns and selected:
        # A key neither declared nor in the records is a typo, not a column of '-'.
        present = {key for record in selected for key in record}
        if any(c not in present and not known_key(c) for c in columns):
            # Only the columns were read: every key of the input, for the suggestion.
            every = load_selected(args.input, where, flag, source, parse_warnings=[])
            present |= {key for record in every for key in record}
        check_keys("--columns", columns, present, len(selected))
    if shown is not None and args.format == "json":
        # --columns: those keys, in that order, as a table or CSV shows them.
        selected = [{key: record[key] for key in shown if key in record} for record in selected]
    if args.format == PARQUET_FORMAT:
        write_atomically(args.output, parquet_bytes(selected, f"--output {args.output}", shown))
        note(f"{len(selected)} record(s) written to {args.output}")
        return 0
    if args.format == "json":
        text = dumps_records(selected) + "\n"
    else:
        # A CSV is read by programs: full precision. A table is read by people: each
        # number at its precision (2 decimals from 1 up, 4 significant digits below).
        fmt, floatfmt = ("csv", "{!r}") if args.format == "csv" else ("text", None)
        assert shown is not None  # a table always has its columns
        text = "".join(f"{line}\n" for line in format_table(selected, shown, fmt=fmt,
                                                            floatfmt=floatfmt))
    if args.output:
        write_atomically(args.output, text.encode("utf-8"))
        note(f"{len(selected)} record(s) written to {args.output}")
    else:
        sys.stdout.write(text)
    return 0
