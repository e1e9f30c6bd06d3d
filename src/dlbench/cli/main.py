"""``dlbench``: parse the command line, call the library, print.

Errors a user can cause (:class:`~dlbench.errors.DlbenchError`, argparse's own errors,
a file named on the command line that cannot be read or written) print as one line on
stderr with exit status 2; Ctrl-C ends with 130 and no traceback; anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from dlbench import __version__
from dlbench.cli import commands_help, commands_results, commands_run
from dlbench.cli.usage import Parser
from dlbench.errors import DlbenchError
from dlbench.formats import DATA_FORMATS, HTML_FORMAT, REPORT_FORMATS, subset
from dlbench.launch.launchers import launchers
from dlbench.report.types import report_types
from dlbench.textsafe import safe_text

#: Exit status after Ctrl-C: 128 + SIGINT, the shell's convention.
INTERRUPTED_EXIT_STATUS = 130


def _add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sweep spec (DLBS semantics; values are YAML flow)")
    group.add_argument("--config", action="append", default=[], metavar="FILE",
                       help="YAML or JSON spec file with parameters, variables, extensions; "
                            "several merge in order")
    group.add_argument("-P", dest="params", action="append", default=[], metavar="NAME=VALUE",
                       help="set a parameter, e.g. -P exp.phase=inference")
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
    group.add_argument("--out", metavar="DIR", default=None,
                       help="run directory (sets exp.out_dir; default dlbench-out); running "
                            "the same sweep into the same directory resumes it")
    group.add_argument("--max-experiments", type=int, default=100_000, metavar="N",
                       help="refuse a sweep of more than N experiments (default 100000)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    parser = Parser(
        prog="dlbench", allow_abbrev=False,
        description="Deep-learning benchmarks: describe a sweep, run it, read the numbers.")
    parser.add_argument("--version", action="version", version=f"dlbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser("run", allow_abbrev=False, help="run a sweep of experiments",
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
    run.set_defaults(handler=commands_run.run)

    plan = sub.add_parser("plan", allow_abbrev=False, help="print the experiments a sweep "
                          "would run", description="Expand, resolve and check a sweep; "
                          "run nothing.")
    _add_spec_arguments(plan)
    plan.add_argument("--format", choices=subset(DATA_FORMATS, "table", "json"),
                      default=DATA_FORMATS[0])
    plan.set_defaults(handler=commands_run.plan)

    helpp = sub.add_parser("help", allow_abbrev=False, help="parameters, frameworks, models",
                           description="Print from the parameter registry and the catalog.")
    helpp.add_argument("--params", metavar="REGEX", help="parameters whose name matches")
    helpp.add_argument("--text", metavar="REGEX", help="parameters whose description matches")
    helpp.add_argument("--frameworks", nargs="?", const="", metavar="NAME",
                       help="the frameworks, or one framework's parameters")
    helpp.add_argument("--models", action="store_true", help="the model zoo")
    helpp.add_argument("--suites", action="store_true", help="the named suites")
    helpp.add_argument("--results", nargs="?", const="", metavar="REGEX",
                       help="the result keys (results.*, sys.*, hw.*) whose name matches")
    helpp.set_defaults(handler=commands_help.show_help)

    parse = sub.add_parser("parse", allow_abbrev=False, help="turn logs into records",
                           description="Parse experiment logs into records.")
    parse.add_argument("paths", nargs="+", metavar="PATH", help="log files or directories")
    parse.add_argument("--recursive", action="store_true", help="search directories deeply")
    parse.add_argument("--output", metavar="FILE",
                       help="write .json, .json.gz, .jsonl or .csv (default: JSON on stdout)")
    parse.set_defaults(handler=commands_results.parse)

    query = sub.add_parser("query", allow_abbrev=False, help="select records from results",
                           description="Select records with DLBS's JSON query syntax.")
    query.add_argument("--input", nargs="+", required=True, metavar="SRC",
                       help="run directory, results.sqlite, or .json/.json.gz/.jsonl/.csv")
    query.add_argument("--where", default="{}", metavar="JSON",
                       help='e.g. \'{"exp.model": "resnet50"}\'')
    query.add_argument("--format", choices=DATA_FORMATS, default=DATA_FORMATS[0])
    query.add_argument("--columns", metavar="A,B,...",
                       help="columns of the table or csv (default: the ones that vary)")
    query.set_defaults(handler=commands_results.query)
    report = sub.add_parser("report", allow_abbrev=False, help="tables, scorecard, HTML",
                            description="Build a report from results.")
    types = report_types()
    report.add_argument("--type", dest="report_type", default=types[0].name,
                        choices=[e.name for e in types],
                        help="; ".join(f"{e.name}: {e.help}" for e in types))
    report.add_argument("--input", nargs="+", required=True, metavar="SRC",
                        help="run directories, results.sqlite, .json/.json.gz/.jsonl/.csv")
    report.add_argument("--query", default="{}", metavar="JSON",
                        help="select records first (DLBS query syntax)")
    report.add_argument("--target-variable", default="results.time", metavar="NAME",
                        help="the measured value the tables are built from")
    report.add_argument("--baseline", metavar="FILE",
                        help="targets of the scorecard (.json, .yaml or .csv)")
    report.add_argument("--format", choices=(*REPORT_FORMATS, HTML_FORMAT),
                        default=REPORT_FORMATS[0])
    report.add_argument("--output", metavar="FILE", help="write here instead of stdout")
    report.set_defaults(handler=_lazy("commands_report", "report"))

    baseline = sub.add_parser("baseline", allow_abbrev=False,
                              help="write a scorecard baseline from results",
                              description="Write a baseline file: one target per benchmark.")
    baseline.add_argument("--input", nargs="+", required=True, metavar="SRC")
    baseline.add_argument("--query", default="{}", metavar="JSON")
    baseline.add_argument("--metric", default="results.throughput", metavar="NAME")
    baseline.add_argument("--output", required=True, metavar="FILE",
                          help=".json, .yaml or .csv")
    baseline.set_defaults(handler=_lazy("commands_report", "baseline"))

    compare = sub.add_parser("compare", allow_abbrev=False, help="A/B comparison of two runs",
                             description="Compare configurations present in both A and B.")
    compare.add_argument("a", metavar="A", help="results source of the reference")
    compare.add_argument("b", metavar="B", help="results source compared with A")
    compare.add_argument("--metric", default="results.throughput", metavar="NAME")
    compare.add_argument("--threshold", default="5%", metavar="PERCENT",
                         help="smallest change that counts (default 5%%)")
    compare.add_argument("--fail-on-regression", action="store_true",
                         help="exit 1 when a significant slowdown beyond the threshold exists")
    compare.add_argument("--format", choices=REPORT_FORMATS, default=REPORT_FORMATS[0])
    compare.set_defaults(handler=_lazy("commands_compare", "compare"))

    plot = sub.add_parser("plot", allow_abbrev=False, help="a chart of results",
                          description="Plot a result against a parameter (matplotlib).")
    plot.add_argument("--input", nargs="+", required=True, metavar="SRC")
    plot.add_argument("--x", required=True, metavar="PARAM")
    plot.add_argument("--y", default="results.throughput", metavar="PARAM")
    plot.add_argument("--series", metavar="JSON",
                      help="a JSON list of queries, one line or bar group each")
    plot.add_argument("--aggregation", choices=("avg", "min", "max", "median"), default="avg")
    plot.add_argument("--chart", choices=("line", "bar"), default="line")
    plot.add_argument("--baseline-x", metavar="VALUE",
                      help="divide each series by its value at this x (speedup)")
    plot.add_argument("--title")
    plot.add_argument("--xlabel")
    plot.add_argument("--ylabel")
    plot.add_argument("--legend", nargs="+", metavar="NAME", help="one name per series")
    plot.add_argument("--output", required=True, metavar="FILE", help=".png, .svg or .pdf")
    plot.set_defaults(handler=_lazy("commands_plot", "plot"))
    sysinfo = sub.add_parser("sysinfo", allow_abbrev=False, help="this machine's environment",
                             description="Print the system information recorded with runs.")
    sysinfo.add_argument("--format", choices=subset(REPORT_FORMATS, "text", "json"),
                         default=REPORT_FORMATS[0])
    sysinfo.set_defaults(handler=_lazy("commands_host", "sysinfo"))

    peak = sub.add_parser("peak", allow_abbrev=False, help="measure this machine's peaks",
                          description="Measure dense matmul TFLOP/s per dtype and memory "
                                      "bandwidth, and store them for results.mfu.")
    peak.add_argument("--gpus", default=None, metavar="IDS",
                      help="GPUs in DLBS syntax ('0', '0,1'; '' for the CPU); default: every "
                           "visible GPU, else the CPU")
    peak.add_argument("--dtypes", metavar="LIST",
                      help="comma-separated: float32, tf32, float16, bfloat16 (default: "
                           "float32 on CPU; float32,float16,bfloat16 on GPU)")
    peak.add_argument("--seconds", type=float, default=2.0, metavar="S",
                      help="seconds of timed batches per measurement (default 2)")
    peak.add_argument("--size", type=int, default=None, metavar="N",
                      help="matmul size (default 2048 on CPU, 8192 on GPU)")
    peak.add_argument("--no-save", action="store_true",
                      help="print only; do not update the peaks file")
    peak.add_argument("--format", choices=subset(REPORT_FORMATS, "text", "json"),
                         default=REPORT_FORMATS[0])
    peak.set_defaults(handler=_lazy("commands_host", "peak"))

    return parser


def _lazy(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """A handler imported when its command runs: reports pull in matplotlib and scipy,
    which `dlbench run` does not need."""

    def handler(args: argparse.Namespace) -> int:
        imported = importlib.import_module(f"dlbench.cli.{module}")
        result: int = getattr(imported, function)(args)
        return result

    return handler


def _error(message: str) -> None:
    # One line whatever the message holds: newlines and escape sequences are escaped.
    print(f"dlbench: error: {safe_text(message)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help and --version print, then exit 0
            return done.code if isinstance(done.code, int) else 0
        status: int = args.handler(args)
    except DlbenchError as error:
        _error(str(error))
        return error.exit_status
    except BrokenPipeError:  # `dlbench query ... | head`
        return 0
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
