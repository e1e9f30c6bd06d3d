"""``dlbench plan`` and ``dlbench run``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dlbench.config import load_spec, plan_experiments
from dlbench.config.registry import varying_parameters
from dlbench.config.spec import Sourced
from dlbench.errors import ConfigError
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
    if getattr(args, "launcher", "local") == "slurm" and not (
            "exp.rendezvous" in spec.parameters or "exp.rendezvous" in spec.variables):
        # The nodes of a Slurm job meet on its first node, known once the job starts.
        from dlbench.launch.slurm_node import AUTO_RENDEZVOUS

        spec.parameters["exp.rendezvous"] = Sourced(AUTO_RENDEZVOUS, "--launcher slurm")
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


_SLURM_FLAGS = {"--slurm-partition": "slurm_partition", "--slurm-gres": "slurm_gres",
                "--slurm-time": "slurm_time", "--slurm-array-parallelism":
                "slurm_array_parallelism", "--slurm-account": "slurm_account",
                "--slurm-option": "slurm_option"}


def _report(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _runner(args: argparse.Namespace) -> Runner:
    """The runner of ``--launcher``, its flags checked."""
    if args.launcher == "slurm":
        from dlbench.launch.slurm import SlurmRunner, slurm_options

        options = slurm_options(args.slurm_partition, args.slurm_gres, args.slurm_time,
                                args.slurm_array_parallelism, args.slurm_account,
                                args.slurm_option)
        return SlurmRunner(options, report=_report)
    for flag, name in _SLURM_FLAGS.items():
        if getattr(args, name):
            raise ConfigError(f"{flag} needs --launcher slurm (the launcher is {args.launcher})")
    return Runner(report=_report)


def run(args: argparse.Namespace) -> int:
    """Run the sweep, then print the results table and where the files are.

    Exit status: 0 when every experiment is ok, 1 when one is not, 130 after Ctrl-C.
    """
    runner = _runner(args)
    experiments = _planned(args)
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
