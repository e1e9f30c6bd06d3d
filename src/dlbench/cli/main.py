"""``dlbench``: parse the command line, call the library, print.

Errors a user can cause (:class:`~dlbench.errors.DlbenchError`, argparse's own errors,
a file named on the command line that cannot be read or written) print as one line on
stderr with exit status 2; Ctrl-C ends with 130 and no traceback; standard output
closed (``>&-``) or whose reader left (``| head -1``) ends with 1 and no traceback;
anything else is a bug and keeps its traceback. Text that standard output's or
standard error's encoding cannot hold (a lone surrogate, or any non-ASCII character
under ``PYTHONIOENCODING=ascii``) is written as its ``\\uXXXX`` escape
(:mod:`dlbench.textsafe`). Bare ``dlbench`` prints its usage and the commands on
stderr and exits 2, as ``git`` prints its own: it is a command line without a command.

Each command is one ``_add_<command>`` function, listed in :data:`COMMANDS`; its
options use the shared vocabulary of :mod:`dlbench.cli.usage` (``--where``,
``--format text``, help that shows every default).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeAlias

from dlbench import __version__
from dlbench.cli.commands import definitions as commands_definitions
from dlbench.cli.commands import help as commands_help
from dlbench.cli.commands import history as commands_history
from dlbench.cli.commands import results as commands_results
from dlbench.cli.commands import run as commands_run
from dlbench.cli.commands import store as commands_store
from dlbench.cli.usage import (
    Parser,
    add_fail_on_inconclusive,
    add_format,
    add_log_y,
    add_metric,
    add_where,
    format_choices,
    overview,
)
from dlbench.errors import DlbenchError
from dlbench.formats import DATA_FORMATS, HTML_FORMAT, PARQUET_FORMAT, REPORT_FORMATS
from dlbench.launch.launchers import launchers
from dlbench.report.registry import report_types
from dlbench.textsafe import UNICODE_ESCAPE, safe_text

#: Exit status after Ctrl-C: 128 + SIGINT, the shell's convention.
INTERRUPTED_EXIT_STATUS = 130

#: Exit status when standard output is closed or its reader has left (``| head``):
#: 1, a failure that is no usage error, as ``head``'s writer sees from other tools.
#: Not Python's own 120, which says only that flushing failed at the interpreter's exit.
STDOUT_GONE_EXIT_STATUS = 1

#: What ``add_subparsers`` returns: each command adds its parser to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"


def _add_spec_arguments(parser: argparse.ArgumentParser, out: bool = True) -> None:
    group = parser.add_argument_group("sweep spec (DLBS semantics; values are YAML flow)")
    group.add_argument("--config", action="append", default=[], metavar="FILE",
                       help="YAML or JSON spec file with parameters, variables, extensions; "
                            "several merge in order")
    group.add_argument("-P", dest="params", action="append", default=[], metavar="NAME=VALUE",
                       help="set a parameter, e.g. -P exp.phase=inference (a variable of the "
                            "same name wins, with a warning)")
    group.add_argument("-V", dest="variables", action="append", default=[],
                       metavar="NAME=VALUES",
                       help="a variable: its values expand to a Cartesian product, "
                            "e.g. -V 'exp.replica_batch=[16,32]'")
    group.add_argument("-E", dest="extensions", action="append", default=[], metavar="JSON",
                       help='an extension: {"condition": {...}, "parameters": {...}, '
                            '"cases": [...]}')
    group.add_argument("--suite", action="append", default=[], metavar="NAME",
                       help="a named suite shipped with dlbench (`dlbench help --suites`); "
                            "read like a --config file, before the --config files")
    if out:
        group.add_argument("--out", metavar="DIR", default=None,
                           help="run directory (sets exp.out_dir; default dlbench-out); "
                                "running the same sweep into the same directory resumes it")
    group.add_argument("--max-experiments", type=int, default=100_000, metavar="N",
                       help="refuse a sweep of more than N experiments")


def _input(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", nargs="+", required=True, metavar="SRC",
                        help="run directories, results.sqlite, or "
                             ".json/.json.gz/.jsonl/.csv/.parquet exports")


def _add_run(sub: Subparsers) -> None:
    run = sub.add_parser("run", help="run a sweep of experiments",
                         description="Run each experiment of the sweep in a fresh worker "
                                     "process and print the results table.")
    _add_spec_arguments(run)
    launch = run.add_argument_group("where the workers run (docs/slurm.md)")
    entries = launchers()
    launch.add_argument("--launcher", choices=[e.name for e in entries], default=entries[0].name,
                        help="; ".join(f"{e.name}: {e.help}" for e in entries))
    for entry in entries:
        for flag in entry.flags:
            if flag.repeat:
                launch.add_argument(f"--{flag.name}", metavar=flag.metavar, help=flag.help,
                                    action="append", default=[])
            else:
                launch.add_argument(f"--{flag.name}", metavar=flag.metavar, help=flag.help)
    run.add_argument("--interleave", action="store_true",
                     help="with exp.repeat=N, run process 1 of every experiment, then process "
                          "2 of every experiment, ... so that a drift of the machine's speed "
                          "hits every configuration alike (docs/measurement.md)")
    run.set_defaults(handler=commands_run.run)


def _add_plan(sub: Subparsers) -> None:
    plan = sub.add_parser("plan", help="print the experiments a sweep would run",
                          description="Expand, resolve and check a sweep; run nothing.")
    _add_spec_arguments(plan)
    add_format(plan, format_choices(DATA_FORMATS, "text", "json"),
               "the experiments as an aligned table (text) or as resolved parameters (json)")
    plan.set_defaults(handler=commands_run.plan)


def _add_status(sub: Subparsers) -> None:
    status = sub.add_parser(
        "status", help="what a run directory holds: done, failed, pending",
        description="List the experiments of a run directory: done (ok), failed, and "
                    "pending (started with no record yet; with the sweep's spec, also those "
                    "never started).")
    status.add_argument("--input", required=True, metavar="DIR",
                        help="the run directory (--out of dlbench run)")
    _add_spec_arguments(status, out=False)
    add_format(status, format_choices(DATA_FORMATS, "text", "json"),
               "a table and counts (text), or one JSON document")
    status.set_defaults(handler=_lazy("status", "status"))


def _add_help(sub: Subparsers) -> None:
    helpp = sub.add_parser("help", help="parameters, frameworks, models, suites, flags",
                           description="Print from the parameter registry, the catalog "
                                       "and the command line itself.")
    helpp.add_argument("--params", metavar="REGEX", help="parameters whose name matches")
    helpp.add_argument("--text", metavar="REGEX", help="parameters whose description matches")
    helpp.add_argument("--frameworks", nargs="?", const="", metavar="NAME",
                       help="the frameworks, or one framework's parameters")
    helpp.add_argument("--models", action="store_true", help="the model zoo")
    helpp.add_argument("--suites", action="store_true", help="the named suites")
    helpp.add_argument("--results", nargs="?", const="", metavar="REGEX",
                       help="the result keys (results.*, sys.*, hw.*) whose name matches")
    helpp.add_argument("--flags", action="store_true",
                       help="every command's options, each named once")
    helpp.set_defaults(handler=commands_help.show_help)


def _add_parse(sub: Subparsers) -> None:
    parse = sub.add_parser("parse", help="turn logs into records",
                           description="Parse experiment logs into records.")
    parse.add_argument("paths", nargs="+", metavar="PATH", help="log files or directories")
    parse.add_argument("--recursive", action="store_true", help="search directories deeply")
    parse.add_argument("--output", metavar="FILE",
                       help="write .json, .json.gz, .jsonl, .csv or .parquet (default: JSON "
                            "on stdout)")
    parse.set_defaults(handler=commands_results.parse)


def _add_query(sub: Subparsers) -> None:
    query = sub.add_parser("query", help="select records from results",
                           description="Select records with DLBS's JSON query syntax.")
    _input(query)
    add_where(query, "the records to print")
    add_format(query, (*format_choices(DATA_FORMATS), PARQUET_FORMAT),
               "an aligned table (text, numbers at their precision), JSON, CSV (full "
               "precision), or Parquet (a column per key; needs --output and pyarrow)")
    query.add_argument("--columns", metavar="A,B,...",
                       help="the keys shown, in this order, in every format (default: a "
                            "table or csv shows the ones that vary, json and parquet all)")
    query.add_argument("--output", metavar="FILE",
                       help="write to FILE instead of stdout (parquet: always)")
    query.set_defaults(handler=commands_results.query)


def _add_report(sub: Subparsers) -> None:
    report = sub.add_parser("report", help="tables, scorecard, HTML",
                            description="Build a report from results.")
    types = report_types()
    report.add_argument("--type", dest="report_type", default=types[0].name,
                        choices=[e.name for e in types],
                        help="; ".join(f"{e.name}: {e.help}" for e in types))
    _input(report)
    add_where(report)
    report.add_argument("--target-variable", default="results.time", metavar="NAME",
                        help="the measured value the tables are built from")
    report.add_argument("--baseline", metavar="FILE",
                        help="targets of the scorecard (.json, .yaml or .csv)")
    add_format(report, format_choices((*REPORT_FORMATS, HTML_FORMAT)),
               "text, markdown, csv or json on stdout; html needs --output")
    report.add_argument("--output", metavar="FILE",
                        help="write here (default: stdout)")
    gate = report.add_argument_group("CI gates (--type scorecard)")
    gate.add_argument("--fail-on-miss", action="store_true",
                      help="exit 1 when a benchmark misses its target: missing, failed or "
                           "outside its tolerance")
    gate.add_argument("--fail-on-verdict", action="store_true",
                      help="exit 1 when the overall verdict (Mila's three) is FAIL")
    report.set_defaults(handler=_lazy("report", "report"))


def _add_baseline(sub: Subparsers) -> None:
    baseline = sub.add_parser("baseline", help="write a scorecard baseline from results",
                              description="Write a baseline file: one target per benchmark.")
    _input(baseline)
    add_where(baseline)
    add_metric(baseline, "the result key each benchmark's target is taken from")
    baseline.add_argument("--output", required=True, metavar="FILE",
                          help=".json, .yaml or .csv")
    baseline.set_defaults(handler=_lazy("report", "baseline"))


def _add_compare(sub: Subparsers) -> None:
    compare = sub.add_parser("compare", help="A/B comparison of two runs",
                             description="Compare configurations present in both A and B.")
    compare.add_argument("a", metavar="A", help="results source of the reference")
    compare.add_argument("b", metavar="B", help="results source compared with A")
    add_metric(compare, "the result key compared")
    compare.add_argument("--threshold", default="5%", metavar="PERCENT",
                         help="smallest change that counts (default 5%%)")
    compare.add_argument("--fail-on-regression", action="store_true",
                         help="exit 1 when a conclusive slowdown beyond the threshold exists")
    add_fail_on_inconclusive(compare, "a configuration's change")
    add_format(compare, format_choices(REPORT_FORMATS),
               "text, markdown, csv or json on stdout")
    compare.set_defaults(handler=_lazy("compare", "compare"))


def _add_plot(sub: Subparsers) -> None:
    plot = sub.add_parser("plot", help="a chart of results",
                          description="Plot a result against a parameter (matplotlib).")
    _input(plot)
    plot.add_argument("--x", required=True, metavar="PARAM",
                      help="the parameter on the x axis, e.g. exp.replica_batch")
    plot.add_argument("--y", default="results.throughput", metavar="KEY",
                      help="the result on the y axis")
    plot.add_argument("--series", metavar="JSON",
                      help="a JSON list of queries, one line or bar group each (default: one "
                           "series of every record)")
    plot.add_argument("--aggregation", choices=("avg", "min", "max", "median"), default="avg",
                      help="how the records at one x combine into a point")
    plot.add_argument("--chart", choices=("line", "bar"), default="line",
                      help="lines, or groups of bars")
    add_log_y(plot)
    plot.add_argument("--baseline-x", metavar="VALUE",
                      help="divide each series by its value at this x (speedup)")
    plot.add_argument("--title", metavar="TEXT", help="the chart's title (default: none)")
    plot.add_argument("--xlabel", metavar="TEXT", help="the x axis label (default: the --x name)")
    plot.add_argument("--ylabel", metavar="TEXT", help="the y axis label (default: the --y name)")
    plot.add_argument("--legend", nargs="+", metavar="NAME",
                      help="one name per series (default: the series' queries)")
    plot.add_argument("--output", required=True, metavar="FILE", help=".png, .svg or .pdf")
    plot.set_defaults(handler=_lazy("plot", "plot"))


def _add_definitions(sub: Subparsers) -> None:
    definitions = sub.add_parser(
        "definitions", help="a serving run in vLLM's, SGLang's, aiperf's... definitions",
        description="Print each serving experiment's figures as vLLM, SGLang, aiperf, "
                    "GuideLLM, MLPerf LoadGen and inference-perf define them, from the "
                    "same stored request timestamps, beside dlbench's "
                    "(docs/serving-definitions.md).")
    commands_definitions.add_arguments(definitions)


def _add_sysinfo(sub: Subparsers) -> None:
    sysinfo = sub.add_parser("sysinfo", help="this machine's environment",
                             description="Print the system information recorded with runs.")
    add_format(sysinfo, format_choices(REPORT_FORMATS, "text", "json"),
               "key and value lines (text) or json")
    sysinfo.set_defaults(handler=_lazy("host", "sysinfo"))


def _add_peak(sub: Subparsers) -> None:
    peak = sub.add_parser("peak", help="measure this machine's peaks",
                          description="Measure dense matmul TFLOP/s per dtype and memory "
                                      "bandwidth, and store them for results.mfu.")
    peak.add_argument("--gpus", default=None, metavar="IDS",
                      help="GPUs in DLBS syntax ('0', '0,1'; '' for the CPU); default: every "
                           "visible GPU, else the CPU")
    peak.add_argument("--dtypes", metavar="LIST",
                      help="comma-separated: float32, tf32, float16, bfloat16 (default: "
                           "float32 on CPU; float32,float16,bfloat16 on GPU)")
    peak.add_argument("--seconds", type=float, default=2.0, metavar="S",
                      help="seconds of timed batches per measurement")
    peak.add_argument("--size", type=int, default=None, metavar="N",
                      help="matmul size (default 2048 on CPU, 8192 on GPU)")
    peak.add_argument("--no-save", action="store_true",
                      help="print only; do not update the peaks file")
    peak.add_argument("--force", action="store_true",
                      help="save even a peak that cannot be the device's: measured under CPU "
                           "contention, far below the one saved or the device's datasheet, or "
                           "of too small a --size")
    add_format(peak, format_choices(REPORT_FORMATS, "text", "json"),
               "lines per device (text) or json")
    peak.set_defaults(handler=_lazy("host", "peak"))


def _add_history(sub: Subparsers) -> None:
    history = sub.add_parser("history", help="results over time: import runs, find regressions",
                             description="A history of results across runs: import runs, find "
                                         "change points and new regressions (docs/history.md).")
    commands_history.add_arguments(history)


def _add_store(sub: Subparsers) -> None:
    store = sub.add_parser("store", help="a run's results store: upgrade an older format",
                           description="Work on a run directory's results store itself.")
    commands_store.add_arguments(store)


#: The commands, in the order ``dlbench`` lists them; a new command is one function
#: here.
COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    _add_run, _add_plan, _add_status, _add_help, _add_parse, _add_query, _add_report,
    _add_baseline, _add_compare, _add_plot, _add_definitions, _add_sysinfo, _add_peak,
    _add_history, _add_store,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = Parser(
        prog="dlbench",
        description="Deep-learning benchmarks: describe a sweep, run it, read the numbers.")
    parser.add_argument("--version", action="version", version=f"dlbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(sub)
    # `dlbench help --flags` lists this parser's options: handed over, not imported back.
    sub.choices["help"].set_defaults(root_parser=parser)
    return parser


def _lazy(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """A handler imported when its command runs: reports pull in matplotlib and scipy,
    which `dlbench run` does not need."""

    def handler(args: argparse.Namespace) -> int:
        imported = importlib.import_module(f"dlbench.cli.commands.{module}")
        result: int = getattr(imported, function)(args)
        return result

    return handler


def _error(message: str) -> None:
    # One line whatever the message holds: newlines and escape sequences are escaped.
    print(f"dlbench: error: {safe_text(message)}", file=sys.stderr)


class _ClosedStdout(io.TextIOBase):
    """Standard output when its descriptor was closed (``dlbench query >&-``): Python
    leaves ``sys.stdout`` None, where print() would drop the text unseen. Writing
    raises, so that the command fails instead of succeeding with its output lost."""

    def writable(self) -> bool:
        return True

    def write(self, text: str, /) -> int:
        raise _StdoutClosed(errno.EBADF, "standard output is closed")


class _StdoutClosed(OSError):
    """A write to a standard output that was closed before dlbench started."""


def _prepare_streams() -> None:
    """Standard output and error fit for any text: a closed one (descriptor 0, 1 or 2
    closed at start) gets ``/dev/null`` under its number, so that no file dlbench opens
    later takes that number and receives what a child prints; text the encoding cannot
    hold is written as its ``\\uXXXX`` escape instead of raising."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free number: ``fd``
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    if sys.stderr is None:  # what would go there cannot be shown anywhere
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):
        # Strict (and surrogateescape, which has only the surrogates of undecodable
        # bytes) raise UnicodeEncodeError on some text: a lone surrogate, or "±" on an
        # ASCII terminal.
        if isinstance(stream, io.TextIOWrapper) and stream.errors in (
                "strict", "surrogateescape"):
            stream.reconfigure(errors=UNICODE_ESCAPE)


def _stdout_gone() -> int:
    """After standard output's reader left: send what is still buffered for it to
    ``/dev/null`` (Python's documented way, so that the interpreter's last flush does
    not fail again with a traceback) and return :data:`STDOUT_GONE_EXIT_STATUS`."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass
    return STDOUT_GONE_EXIT_STATUS


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    _prepare_streams()
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser()
        if not arguments:
            print("\n".join(overview(parser)), file=sys.stderr)
            return 2
        try:
            args = parser.parse_args(arguments)
        except SystemExit as done:  # --help and --version print, then exit 0
            sys.stdout.flush()
            return done.code if isinstance(done.code, int) else 0
        status: int = args.handler(args)
        # Here, not at the interpreter's exit: a reader that left is seen and handled.
        sys.stdout.flush()
    except DlbenchError as error:
        _error(str(error))
        return error.exit_status
    except BrokenPipeError:  # `dlbench query ... | head -1`: the reader had enough
        return _stdout_gone()
    except _StdoutClosed as error:  # `dlbench query ... >&-`
        _error(f"cannot write the output: {error.strerror}")
        return STDOUT_GONE_EXIT_STATUS
    except KeyboardInterrupt:  # Ctrl-C while planning, loading or writing
        print("dlbench: interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT_STATUS
    except OSError as error:
        # A file or directory named on the command line that cannot be read or
        # written, caught by no closer check: still the user's to fix, not a bug.
        where = f"{error.filename}: " if error.filename else ""
        _error(f"{where}{error.strerror or error}")
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
