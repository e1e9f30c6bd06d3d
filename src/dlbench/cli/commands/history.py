"""``dlbench history``: import runs into a history, find regressions, draw the history.

- ``dlbench history import SRC... [--store S]``: each SRC (a run directory, a DLBS
  ``.json`` results file, any source ``dlbench query`` reads) is one run; its records
  join the history, an import of the same run again replaces them;
- ``dlbench history check [--store S]``: change points of every configuration's
  series; exit status 1 when one is a new regression (for CI), and with
  ``--fail-on-inconclusive`` also when a verdict could not be reached (a series too
  short for the detector, a regression among unstable runs);
- ``dlbench history html --output FILE [--store S]``: one page, a chart per
  configuration.

This module is imported when the command line starts, so it imports only the
standard library at the top; what a command needs (NumPy, the store, psycopg for a
PostgreSQL store) is imported when that command runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlbench.cli.usage import (
    FAIL_ON_INCONCLUSIVE,
    add_fail_on_inconclusive,
    add_format,
    add_metric,
    better_flag,
    fail_on_inconclusive,
    format_choices,
    metric_direction,
    read_warnings,
    warn,
)
from dlbench.errors import ResultsError, UsageError
from dlbench.formats import REPORT_FORMATS
from dlbench.textsafe import safe_text

if TYPE_CHECKING:
    from dlbench.report.history.changes import HistoryAnalysis
    from dlbench.results.history.records import HistoryRow
    from dlbench.results.log.parser import ParseWarning

# The library's defaults (report.history.changes, report.history.changepoint), spelled here
# so that building the parser imports neither NumPy nor the store.
_WINDOW, _THRESHOLD, _P_VALUE, _PERMUTATIONS, _MIN_SIZE, _LAST = 10, "2%", 0.01, 199, 4, 250
_MAX_PERMUTATIONS = 100_000


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", metavar="STORE", default=None,
                        help="the history: an SQLite file, or postgresql://user@host/db for a "
                             "team's (default: $DLBENCH_HOME/history.sqlite, else "
                             "~/.dlbench/history.sqlite)")


def _add_analysis(parser: argparse.ArgumentParser) -> None:
    add_metric(parser, "the result whose series are analysed")
    parser.add_argument("--window", type=int, default=_WINDOW, metavar="K",
                        help="a regression is new when it falls in the newest K runs of "
                             "its configuration")
    parser.add_argument("--threshold", default=_THRESHOLD, metavar="PERCENT",
                        help="smallest change the bad way that counts as a regression")
    parser.add_argument("--p-value", type=float, default=_P_VALUE, metavar="P",
                        help="largest permutation-test p-value of a change point")
    parser.add_argument("--permutations", type=int, default=_PERMUTATIONS, metavar="N",
                        help="permutations of each significance test")
    parser.add_argument("--min-size", type=int, default=_MIN_SIZE, metavar="N",
                        help="fewest runs between change points (a change is found N runs "
                             "after it at the earliest)")
    parser.add_argument("--last", type=int, default=_LAST, metavar="N",
                        help="analyse the newest N runs of each configuration; 0: all")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of the permutations (the same history gives the same "
                             "answer)")


def add_arguments(history: argparse.ArgumentParser) -> None:
    """The sub-commands of ``dlbench history`` and their options, on its parser."""
    sub = history.add_subparsers(dest="history_command", metavar="ACTION", required=True,
                                help="import, check or html")
    imp = sub.add_parser("import", help="add runs to the history",
                         description="Add each SRC, one run, to the history; importing a run "
                                     "again replaces its records.")
    imp.add_argument("sources", nargs="+", metavar="SRC",
                     help="run directories, results.sqlite, DLBS .json results, or "
                          ".json.gz/.jsonl/.csv/.parquet exports")
    _add_store(imp)
    imp.add_argument("--revision", metavar="REV",
                     help="the commit (or any label) of the code under test, shown where a "
                          "change coincides with it")
    imp.add_argument("--timestamp", metavar="ISO",
                     help="the run's time, for back-filling (default: its first "
                          "results.start_time)")
    imp.add_argument("--run-id", metavar="ID",
                     help="the run's id, with one SRC (default: a hash of its first start "
                          "time and host)")
    imp.add_argument("--key", action="append", default=[], metavar="NAME",
                     help="also a part of the configuration (e.g. sys.hostname: one series "
                          "per host); repeatable")
    imp.add_argument("--ignore", action="append", default=[], metavar="NAME",
                     help="not a part of the configuration (e.g. a parameter that names "
                          "each nightly build); repeatable")
    imp.set_defaults(handler=history_import)

    check = sub.add_parser("check", help="find change points; exit 1 on a new regression",
                           description="Change points of each configuration's series; exit "
                                       "status 1 when one is a new regression.")
    _add_store(check)
    _add_analysis(check)
    check.add_argument("--all", action="store_true",
                       help="list every change point, not only regressions")
    add_fail_on_inconclusive(check, "a configuration's verdict")
    add_format(check, format_choices(REPORT_FORMATS, "text", "json"),
               "a table (text) or a JSON document on stdout")
    check.set_defaults(handler=history_check)

    page = sub.add_parser("html", help="one HTML page: a chart per configuration",
                          description="Write the history as one self-contained HTML page.")
    _add_store(page)
    _add_analysis(page)
    page.add_argument("--output", required=True, metavar="FILE", help="the .html file")
    page.set_defaults(handler=history_html)


def _store_spec(args: argparse.Namespace) -> str:
    from dlbench.results.history.store import default_store

    return str(args.store) if args.store is not None else default_store()


def _run_rows(source: str, args: argparse.Namespace,
              warnings: list[ParseWarning]) -> list[HistoryRow]:
    """The history rows of one source, one run."""
    from dlbench.results.history.records import (
        config_key,
        configuration,
        history_row,
        iso_utc,
        parse_time,
        run_identity,
    )
    from dlbench.results.io import load_records

    records = load_records([source], parse_warnings=warnings)
    path = Path(source).resolve()
    run_id, started = run_identity(records, str(path))
    override = None
    if args.timestamp is not None:
        override = parse_time(args.timestamp)
        if override is None:
            raise UsageError(f"--timestamp {args.timestamp!r}: expected an ISO 8601 time such "
                             "as 2024-05-01T02:00:00+00:00")
    moment = override or started
    if moment is None:  # no record says when it ran: the source's modification time
        from datetime import datetime, timezone

        moment = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    run_time = iso_utc(moment)
    run_id = args.run_id or run_id
    rows = []
    for number, record in enumerate(records):
        exp_id = record.get("exp.id")
        if exp_id is None:  # not a dlbench record: its configuration and position
            key = config_key(configuration(record, extra=args.key, ignore=args.ignore))
            exp_id = f"{key}#{number}"
        rows.append(history_row(
            record, run_id=run_id, run_time=run_time, exp_id=str(exp_id), source=str(path),
            revision=args.revision, time_override=override is not None,
            extra=args.key, ignore=args.ignore))
    return rows


def history_import(args: argparse.Namespace) -> int:
    """Import each source as one run; print what each added or replaced."""
    from dlbench.results.history.store import check_store, open_history, redact

    if args.run_id is not None and len(args.sources) != 1:
        raise UsageError(f"--run-id names one run: give one SRC, not {len(args.sources)}")
    spec = _store_spec(args)
    check_store(spec)  # before reading every source
    warnings: list[ParseWarning] = []
    with read_warnings(warnings):  # a failed read is one line: the warnings go into it
        runs = [(source, _run_rows(source, args, warnings)) for source in args.sources]
        if not any(rows for _, rows in runs):
            # Nothing to add: the history is neither created nor touched.
            raise ResultsError(f"{' and '.join(args.sources)} "
                               f"hold{'s' if len(args.sources) == 1 else ''} no records; "
                               f"nothing imported into {redact(spec)}")
    with open_history(spec) as store:
        for source, rows in runs:
            if not rows:
                warn(f"{source} holds no records; nothing imported")
                continue
            added, replaced = store.put(rows)
            print(f"{safe_text(source)}: run {safe_text(rows[0].run_id)} "
                  f"({safe_text(rows[0].run_time[:19])} UTC): {added} added, {replaced} replaced")
        total = store.count()
    print(f"{safe_text(redact(spec))}: {total} records")
    return 0


def _analysis(args: argparse.Namespace) -> tuple[HistoryAnalysis, str]:
    from dlbench.report.compare.compare import parse_threshold
    from dlbench.report.history.changes import analyse_history
    from dlbench.results.history.store import open_history, redact

    for flag, value, low in (("--window", args.window, 1), ("--min-size", args.min_size, 2),
                             ("--permutations", args.permutations, 1), ("--last", args.last, 0)):
        if value < low:
            raise UsageError(f"{flag} {value}: expected a whole number of at least {low}")
    if args.permutations > _MAX_PERMUTATIONS:
        raise UsageError(f"--permutations {args.permutations}: at most {_MAX_PERMUTATIONS}")
    if not 0.0 < args.p_value < 1.0:
        raise UsageError(f"--p-value {args.p_value}: expected a probability between 0 and 1, "
                         "such as 0.01")
    threshold = parse_threshold(args.threshold)
    higher = metric_direction("--metric", args.metric, better_flag(args))
    spec = _store_spec(args)
    with open_history(spec, create=False) as store:
        rows = store.rows()
    analysis = analyse_history(
        rows, metric=args.metric, higher_is_better=higher, window=args.window,
        threshold=threshold,
        p_threshold=args.p_value, permutations=args.permutations, min_size=args.min_size,
        last=args.last, seed=args.seed)
    if not analysis.series:
        found = sorted({k for row in rows for k, v in row.results.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)})
        shown = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "")
        raise ResultsError(f"--metric {args.metric}: no ok record in {redact(spec)} has it; "
                           f"numeric results there: {shown or 'none'}")
    return analysis, redact(spec)


def _change_rows(analysis: HistoryAnalysis, every: bool) -> list[dict[str, Any]]:
    from dlbench.report.history.page import environment_words

    rows = []
    for series in analysis.series:
        for change in series.changes:
            if not (every or change.regression):
                continue
            verdict = "change"
            if change.inconclusive:
                verdict = "INCONCLUSIVE" if change.new else "inconclusive"
            elif change.regression:
                verdict = "NEW REGRESSION" if change.new else "regression"
            rows.append({
                "configuration": series.label, "key": series.key,
                "run #": change.index + series.skipped + 1,
                "runs": len(series.points) + series.skipped,
                "time": change.row.record_time[:19], "run": change.row.run_id,
                "revision": change.row.revision,
                "before": change.point.mean_before, "after": change.point.mean_after,
                "change": change.point.change, "p": change.point.p_value,
                "verdict": verdict, "environment": environment_words(change),
                "doubts": list(change.doubts),
                "environment_change": {
                    k: {"before": v.before, "after": v.after,
                        "run #": v.index + series.skipped + 1}
                    for k, v in change.environment.items()},
            })
    return rows


def _check_status(new: int, inconclusive: int, args: argparse.Namespace) -> int:
    """1 on a new conclusive regression, or on an inconclusive verdict with
    --fail-on-inconclusive; else 0."""
    if new:
        return 1
    if inconclusive and fail_on_inconclusive(args):
        warn(f"{FAIL_ON_INCONCLUSIVE}: {inconclusive} verdict(s) inconclusive")
        return 1
    return 0


def history_check(args: argparse.Namespace) -> int:
    """Print the regressions (every change with --all) and the verdicts that could not
    be reached; 1 when a regression is new (or, with --fail-on-inconclusive, when a
    verdict is inconclusive)."""
    from dlbench.report.history.changepoint import fewest_values
    from dlbench.results.text_table import format_table

    analysis, source = _analysis(args)
    rows = _change_rows(analysis, args.all)
    new = len(analysis.regressions())
    inconclusive = analysis.inconclusive()
    if args.format == "json":
        document = {"metric": analysis.metric, "store": source, "window": analysis.window,
                    "threshold": analysis.threshold, "p_threshold": analysis.p_threshold,
                    "min_runs": fewest_values(analysis.min_size),
                    "configurations": len(analysis.series), "new_regressions": new,
                    "inconclusive": [{"configuration": series.label, "key": series.key,
                                      "why": why} for series, why in inconclusive],
                    "changes": rows}
        print(json.dumps(document, indent=1, ensure_ascii=False))
        return _check_status(new, len(inconclusive), args)
    columns = ["configuration", "run #", "time", "change", "p", "verdict", "environment"]
    shown = [{**row, "change": f"{row['change']:+.1%}", "p": f"{row['p']:.3g}",
              "run #": f"{row['run #']}/{row['runs']}"} for row in rows]
    if shown:
        for line in format_table(shown, columns, headers=[*columns[:4], "p-value",
                                                           *columns[5:]]):
            print(line)
        print()
    for series, why in inconclusive:
        print(f"inconclusive: {safe_text(series.label)}: {safe_text(why)}")
    if inconclusive:
        print()
    kinds = "change points" if args.all else "regressions"
    undecided = f", {len(inconclusive)} inconclusive" if inconclusive else ""
    print(f"{safe_text(analysis.metric)}: {len(analysis.series)} configurations from "
          f"{safe_text(source)}, "
          f"{len(rows)} {kinds}, {new} new (in the last {analysis.window} runs){undecided}")
    return _check_status(new, len(inconclusive), args)


def history_html(args: argparse.Namespace) -> int:
    """Write the page; print where and what it holds."""
    from dlbench.report.history.page import write_history_page
    from dlbench.results.history.store import default_store
    from dlbench.results.outputs import check_output

    check_output(args.output, [_store_spec(args)], history=default_store())
    analysis, source = _analysis(args)
    write_history_page(analysis, Path(args.output), source=source)
    print(f"{safe_text(args.output)}: {len(analysis.series)} configurations, "
          f"{len(analysis.regressions())} new regressions")
    return 0
