"""``dlbench compare A B``: which configurations got faster or slower from A to B."""

from __future__ import annotations

import argparse

from dlbench.cli.usage import (
    FAIL_ON_INCONCLUSIVE,
    better_flag,
    check_keys,
    fail_on_inconclusive,
    metric_direction,
    read_warnings,
    warn,
)
from dlbench.errors import CompareError, ResultsError
from dlbench.report.compare.compare import compare_records, parse_threshold
from dlbench.report.compare.formatting import format_comparison
from dlbench.results.io import load_records
from dlbench.results.log.parser import ParseWarning


def compare(args: argparse.Namespace) -> int:
    """Print the comparison; 1 with --fail-on-regression when something got
    conclusively slower, and with --fail-on-inconclusive when a change had no
    direction."""
    if args.threshold.lstrip().startswith("-"):
        # A change counts by its size, faster or slower alike: a sign means nothing.
        raise CompareError(f"--threshold {args.threshold}: expected a positive percentage, "
                           "e.g. 5%")
    threshold = parse_threshold(args.threshold)
    # Which way the metric improves is settled before anything is read.
    better = metric_direction("--metric", args.metric, better_flag(args))
    parse_warnings: list[ParseWarning] = []
    sides = []
    # A failed read or comparison is one line: the read's warnings go into it.
    with read_warnings(parse_warnings):
        for name, source in (("A", args.a), ("B", args.b)):
            records = load_records([source], parse_warnings=parse_warnings)
            if not records:
                raise ResultsError(f"{name} ({source}) holds no records")
            sides.append(records)
        check_keys("--metric", [args.metric], {k for side in sides for r in side for k in r},
                   sum(map(len, sides)))
        comparison = compare_records(sides[0], sides[1], metric=args.metric,
                                     threshold=threshold, higher_is_better=better)
    for message in comparison.warnings:
        warn(message)
    for line in format_comparison(comparison, args.format):
        print(line)
    if args.fail_on_regression and comparison.has_regression():
        return 1
    if fail_on_inconclusive(args) and comparison.has_inconclusive():
        warn(f"{FAIL_ON_INCONCLUSIVE}: {comparison.counts()['inconclusive']} "
             "configuration(s) inconclusive")
        return 1
    return 0
