"""``dlbench compare A B``: which configurations got faster or slower from A to B."""

from __future__ import annotations

import argparse

from dlbench.cli.usage import better_flag, read_warnings, warn
from dlbench.errors import CompareError, ResultsError
from dlbench.report.compare.compare import compare_records, parse_threshold
from dlbench.report.compare.formatting import format_comparison
from dlbench.results.io import load_records
from dlbench.results.keys.lookup import higher_is_better as declared_higher_is_better
from dlbench.results.log.parser import ParseWarning


def compare(args: argparse.Namespace) -> int:
    """Print the comparison; 1 with --fail-on-regression when something got slower."""
    if args.threshold.lstrip().startswith("-"):
        # A change counts by its size, faster or slower alike: a sign means nothing.
        raise CompareError(f"--threshold {args.threshold}: expected a positive percentage, "
                           "e.g. 5%")
    threshold = parse_threshold(args.threshold)
    # Which way the metric improves is settled before anything is read.
    better = declared_higher_is_better(args.metric, better_flag(args))
    parse_warnings: list[ParseWarning] = []
    sides = []
    # A failed read or comparison is one line: the read's warnings go into it.
    with read_warnings(parse_warnings):
        for name, source in (("A", args.a), ("B", args.b)):
            records = load_records([source], parse_warnings=parse_warnings)
            if not records:
                raise ResultsError(f"{name} ({source}) holds no records")
            sides.append(records)
        comparison = compare_records(sides[0], sides[1], metric=args.metric,
                                     threshold=threshold, higher_is_better=better)
    for message in comparison.warnings:
        warn(message)
    for line in format_comparison(comparison, args.format):
        print(line)
    return 1 if args.fail_on_regression and comparison.has_regression() else 0
