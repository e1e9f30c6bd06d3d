"""``dlbench plan`` and ``dlbench run``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dlbench.config import load_spec, plan_experiments
from dlbench.config.registry import varying_parameters
from dlbench.launch.runner import Runner
from dlbench.results.table import format_table
from dlbench.suites import suite_path

#: Columns of the results table besides the parameters that vary.
RESULT_COLUMNS = [
    "exp.status", "results.time", "results.time_std", "results.throughput",
    "results.throughput_unit",
]
RESULT_HEADERS = {
    "exp.status": "status",
    "results.time": "time (ms)",
    "results.time_std": "sd (ms)",
    "results.throughput": "throughput",
    "results.throughput_unit": "unit",
}


def _planned(args: argparse.Namespace) -> list[dict[str, Any]]:
    overrides = {}
    if args.out is not None:
        overrides["exp.out_dir"] = (str(Path(args.out).resolve()), "--out flag")
    configs = [*(suite_path(name) for name in args.suite), *args.config]
    spec = load_spec(configs, args.params, args.variables, args.extensions, overrides)
    experiments = plan_experiments(spec)
    if args.out is None:
        # The default run directory is relative: pin it (and the logs under it) to where
        # the command was started, whatever the worker's working directory.
        for exp in experiments:
            for key in ("exp.out_dir", "exp.log_file"):
                exp[key] = str(Path(exp[key]).resolve())
    return experiments


def _parameter_columns(records: list[dict[str, Any]]) -> list[str]:
    """The model, then every parameter that varies in the sweep."""
    varying = varying_parameters(records)
    return ["exp.model", *[c for c in varying if c != "exp.model"]]


def plan(args: argparse.Namespace) -> int:
    """Print the experiments a sweep would run, and their count."""
    experiments = _planned(args)
    if args.format == "json":
        print(json.dumps({"data": experiments}, indent=1))
        return 0
    columns = ["exp.id", *[c for c in _parameter_columns(experiments) if c != "exp.id"]]
    for line in format_table(experiments, columns):
        print(line)
    print(f"{len(experiments)} experiment{'s' if len(experiments) != 1 else ''}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the sweep, then print the results table and where the files are.

    Exit status: 0 when every experiment is ok, 1 when one is not, 130 after Ctrl-C.
    """
    experiments = _planned(args)
    runner = Runner(report=lambda line: print(line, file=sys.stderr, flush=True))
    try:
        result = runner.run(experiments)
    finally:
        runner.close()
    records = [o.record for o in result.outcomes]
    columns = [*_parameter_columns(records), *RESULT_COLUMNS]
    headers = [RESULT_HEADERS.get(c, c) for c in columns]
    print()
    for line in format_table(records, columns, headers):
        print(line)
    out_dirs = sorted({str(r["exp.out_dir"]) for r in records})
    for out_dir in out_dirs:
        print(f"\nRun directory: {out_dir}")
        print(f"  logs:    {Path(out_dir) / 'logs'}")
        print(f"  results: {Path(out_dir) / 'results.sqlite'}  (dlbench query --input {out_dir})")
    if result.interrupted:
        print(f"Interrupted: {len(experiments) - len(records)} experiment(s) not run; run the "
              "same command again to resume.", file=sys.stderr)
        return 130
    if result.failed:
        print(f"{len(result.failed)} of {len(records)} experiment(s) did not end ok; see "
              "exp.status_msg and the logs.", file=sys.stderr)
        return 1
    return 0
