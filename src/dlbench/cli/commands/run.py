"""``dlbench plan`` and ``dlbench run``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from dlbench.cli.usage import warn
from dlbench.config import load_spec, plan_experiments
from dlbench.config.catalog import model_info
from dlbench.config.external import hf_summary
from dlbench.config.identity import varying_parameters
from dlbench.config.spec import Sourced
from dlbench.errors import ConfigError, DlbenchError, PathError, UsageError
from dlbench.launch.launchers import Launcher, ProcessLauncher, launcher, launchers
from dlbench.launch.order import INTERLEAVED, SEQUENTIAL
from dlbench.launch.signals import SIGUSR1_EXIT_STATUS
from dlbench.launch.sweep import Sweep
from dlbench.results.outputs import resolved_path
from dlbench.results.text_table import format_table, is_simulated
from dlbench.suites import suite_path
from dlbench.textsafe import safe_text

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
    "results.time_to_target": "to target (s)",
    "results.accuracy_final": "accuracy",
}
#: Columns shown only when a record has them: exp.phase=train_to_accuracy has no
#: throughput, and is summed up by these.
OPTIONAL_RESULT_COLUMNS = ["results.time_to_target", "results.accuracy_final"]


def planned_experiments(
    args: argparse.Namespace, chosen: Launcher | None = None
) -> list[dict[str, Any]]:
    """The experiments of the sweep the spec arguments of ``args`` describe, resolved and
    checked (``chosen``: the launcher, whose defaults apply, and which refuses a GPU
    experiment on a machine without one when it runs the workers here); the spec's
    warnings go to stderr."""
    overrides = {}
    if args.out is not None and not args.out.strip():
        raise PathError("--out: empty path; give the run directory, e.g. --out runs/sweep")
    if args.out is not None:
        overrides["exp.out_dir"] = (str(resolved_path(args.out, "--out")), "--out flag")
    configs = [*(suite_path(name) for name in args.suite), *args.config]
    spec = load_spec(configs, args.params, args.variables, args.extensions, overrides)
    for warning in spec.warnings:
        warn(warning)
    # A launcher's own defaults (Slurm: the nodes of a job meet on its first node).
    for name, value in (chosen.defaults() if chosen is not None else {}).items():
        if name not in spec.parameters and name not in spec.variables:
            spec.parameters[name] = Sourced(value, f"--launcher {args.launcher}")
    # Workers this process starts and watches run here: a GPU they ask for must be here.
    runs_here = isinstance(chosen, ProcessLauncher)
    experiments = plan_experiments(spec, args.max_experiments, runs_here=runs_here)
    if args.out is None:
        # The default run directory is relative: pin it (and the logs under it) to where
        # the command was started, whatever the worker's working directory.
        for exp in experiments:
            for key in ("exp.out_dir", "exp.log_file"):
                exp[key] = str(resolved_path(exp[key], key))
    return experiments


def _check_directory(path: Path, what: str) -> None:
    """Raise a one-line PathError naming ``what`` (the flag or parameter ``path`` came
    from) unless ``path`` is a writable directory or can be created as one. Creates
    nothing."""
    for part in [path, *path.parents]:
        if not (part.exists() or part.is_symlink()):
            continue
        if not part.is_dir():
            kind = "is not a directory" if part == path else f"is under {part}, a file"
            raise PathError(f"{what} {path}: {kind}")
        if not os.access(part, os.W_OK | os.X_OK):
            where = "" if part == path else f" (in {part})"
            raise PathError(f"{what} {path}: not writable{where}")
        return


def _make_directory(path: Path, what: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise PathError(f"{what} {path}: cannot create it ({error.strerror})") from None


def check_run_paths(experiments: list[dict[str, Any]], out_flag: bool) -> None:
    """Before anything runs: every run directory and log folder can be created and
    written, and no log file is a directory; then create them. Raises PathError
    naming ``--out`` (when ``out_flag``) or the parameter, having created nothing
    when a check fails."""
    out_what = "--out" if out_flag else "exp.out_dir"
    folders: dict[Path, str] = {}
    for out_dir in sorted({str(exp["exp.out_dir"]) for exp in experiments}):
        if not out_dir.strip():
            raise PathError("exp.out_dir: empty path; give the run directory")
        folders[Path(out_dir)] = out_what
    for log_file in sorted({str(exp["exp.log_file"]) for exp in experiments}):
        path = Path(log_file)
        if not log_file.strip() or log_file.endswith(("/", os.sep)):
            raise PathError(f"exp.log_file {log_file!r}: not a file name")
        if path.is_dir():
            raise PathError(f"exp.log_file {path}: is a directory")
        folders.setdefault(path.parent, "exp.log_file's folder")
    for folder, what in folders.items():
        _check_directory(folder, what)
    for folder, what in folders.items():
        _make_directory(folder, what)


def _parameter_columns(records: list[dict[str, Any]]) -> list[str]:
    """The model, then every parameter that varies in the sweep."""
    varying = varying_parameters(records)
    return ["exp.model", *[c for c in varying if c != "exp.model"]]


def _as_shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` for a table: a size that does not apply to a row's model is left out
    (shown ``-``), so a sweep of vision and language models does not read as if BERT
    ran at 32 px: ``exp.image_size`` where the model takes no image, ``exp.seq_len``
    where it has no sequence (:class:`~dlbench.config.modelinfo.ModelInfo`)."""
    shown = []
    for row in rows:
        try:
            model = model_info(row)
        except (KeyError, DlbenchError):  # a model the catalog cannot say: as it is
            shown.append(row)
            continue
        drop = {"exp.image_size"} if not model.is_image else set()
        if model.seq_len is None:
            drop.add("exp.seq_len")
        shown.append({k: v for k, v in row.items() if k not in drop} if drop else row)
    return shown


def _library_models(experiments: list[dict[str, Any]]) -> list[str]:
    """One line per Hugging Face model of the plan at its sizes: its shape and its
    parameter count, from its configuration."""
    lines: dict[str, None] = {}
    for experiment in experiments:
        model = model_info(experiment)
        if model.source == "hf":
            lines[f"{model.id}: {hf_summary(model.source_config)}"] = None
    return list(lines)


def plan(args: argparse.Namespace) -> int:
    """Print the experiments a sweep would run, and their count."""
    experiments = planned_experiments(args)
    if args.format == "json":
        print(json.dumps({"data": experiments}, indent=1))
        return 0
    columns = ["exp.id", *[c for c in _parameter_columns(experiments) if c != "exp.id"]]
    for line in format_table(_as_shown(experiments), columns):
        print(line)
    simulated = sorted({str(e["exp.framework"]) for e in experiments
                        if is_simulated(e.get("exp.framework"))})
    for framework in simulated:
        print(f"{framework}(MODEL): simulated steps; the {framework} framework runs no model")
    for line in _library_models(experiments):
        print(line)
    print(f"{len(experiments)} experiment{'s' if len(experiments) != 1 else ''}")
    return 0


def _report(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _launcher(args: argparse.Namespace) -> Launcher:
    """The launcher of ``--launcher``, its flags checked; a flag of another launcher is
    refused."""
    chosen = launcher(args.launcher)
    for entry in launchers():
        for flag in entry.flags if entry is not chosen else ():
            if getattr(args, flag.dest, None):
                raise ConfigError(f"--{flag.name} needs --launcher {entry.name} (the launcher "
                                  f"is {args.launcher})")
    options = {flag.dest: getattr(args, flag.dest, None) for flag in chosen.flags}
    return chosen.create(options, _report)


def _as_given(out_dir: str, out_flag: str | None) -> str:
    """``out_dir`` as the user typed it: a relative ``--out`` is shown relative (the
    paths printed then work from where the command was started, as the user wrote
    them); anything else absolute."""
    if (out_flag and not Path(out_flag).is_absolute()
            and str(resolved_path(out_flag, "--out")) == out_dir):
        return os.path.normpath(out_flag)
    return out_dir


def run(args: argparse.Namespace) -> int:
    """Run the sweep, then print the results table and where the files are.

    Exit status: 0 when every experiment is ok or skipped (out of memory at a smaller
    batch, which is itself a failure), 1 when one failed, 130 after Ctrl-C or SIGTERM,
    138 (128 + SIGUSR1) after a SIGUSR1 stop; 2 for a mistake in the command.
    """
    chosen = _launcher(args)
    order = INTERLEAVED if getattr(args, "interleave", False) else SEQUENTIAL
    if not order.supports(chosen):
        raise UsageError(f"--interleave: only with --launcher local (the launcher is "
                         f"{args.launcher})")
    sweep = Sweep(chosen, order, _report)
    experiments = planned_experiments(args, chosen)
    # The launcher's refusals first (a run directory a Slurm job script cannot name),
    # so that a refused sweep creates no folder; the sweep checks again, for callers
    # of the library.
    chosen.check(experiments)
    check_run_paths(experiments, args.out is not None)
    try:
        result = sweep.run(experiments)
    finally:
        sweep.close()
    records = [o.record for o in result.outcomes]
    if records:  # stopped before any experiment ended: no table, not an empty one
        optional = [c for c in OPTIONAL_RESULT_COLUMNS
                    if any(r.get(c) is not None for r in records)]
        columns = [*_parameter_columns(records), *RESULT_COLUMNS, *optional]
        headers = [RESULT_HEADERS.get(c, c) for c in columns]
        print()
        for line in format_table(_as_shown(records), columns, headers):
            print(line)
    out_dirs = sorted({str(r["exp.out_dir"]) for r in records})
    for out_dir in (safe_text(_as_given(d, args.out)) for d in out_dirs):
        print(f"\nRun directory: {out_dir}")
        print(f"  logs:    {Path(out_dir) / 'logs'}")
        print(f"  results: {Path(out_dir) / 'results.sqlite'}  (dlbench query --input {out_dir})")
    not_run = len(experiments) - len(records)
    if result.interrupted:
        print(f"Interrupted: {not_run} experiment(s) not run; run the same command again to "
              "resume.", file=sys.stderr)
        return 130
    if result.stopped:
        print(f"Stopped on SIGUSR1 after the current experiment: {not_run} experiment(s) not "
              "started; run the same command again to resume.", file=sys.stderr)
        return SIGUSR1_EXIT_STATUS
    failed = [o for o in result.failed if o.status != "skipped"]
    skipped = len(result.failed) - len(failed)
    if skipped:
        print(f"{skipped} experiment(s) skipped; exp.status_msg says why.", file=sys.stderr)
    if failed:
        print(f"{len(failed)} of {len(records)} experiment(s) did not end ok; see "
              "exp.status_msg and the logs.", file=sys.stderr)
        return 1
    return 0
