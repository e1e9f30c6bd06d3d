"""The ``--slurm-*`` flags of ``dlbench run --launcher slurm``, checked, and the
submitit parameters of a job (:mod:`dlbench.launch.slurm.launcher`)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.config.run_params import repeat_count
from dlbench.errors import ConfigError
from dlbench.launch.deadline import timeout_bound

INSTALL_HINT = "pip install dlbench[slurm]"
#: Name of every job dlbench submits (``squeue --name dlbench``, ``scancel --name dlbench``).
JOB_NAME = "dlbench"
#: Without --slurm-time, a job may run its experiments' exp.timeout (its bound for
#: ``auto``) plus this, for start-up.
START_MARGIN_S = 300
#: sbatch options that dlbench sets itself or has a flag for: not for --slurm-option.
_OWN_OPTIONS = frozenset({"array", "output", "error", "open-mode", "job-name", "signal", "wrap",
                          "partition", "gres", "time", "account", "nodes", "ntasks",
                          "ntasks-per-node", "parsable"})
_NAME_RE = re.compile(r"^[\w.-]+$")
_GRES_RE = re.compile(r"^[A-Za-z][\w.-]*(?::[\w.-]+)*$")
_OPTION_RE = re.compile(r"^(?P<name>[a-z][a-z0-9-]*)(?:=(?P<value>.+))?$")
_TIME_RE = re.compile(r"^(?:(?P<days>\d+)-)?(?P<hours>\d+):(?P<minutes>\d\d):(?P<seconds>\d\d)$")




@dataclass(frozen=True)
class SlurmOptions:
    """Where and how the jobs run: the ``--slurm-*`` flags, checked."""

    partition: str | None = None
    gres: str | None = None
    time_minutes: int | None = None  # None: from the experiments' exp.timeout
    array_parallelism: int | None = None  # None: as many tasks at once as Slurm allows
    account: str | None = None
    sbatch: dict[str, str | bool] = field(default_factory=dict)  # --slurm-option


def parse_time_limit(text: str) -> int:
    """Minutes of a ``--slurm-time`` value: ``MINUTES``, ``HH:MM:SS`` or ``D-HH:MM:SS``
    (rounded up to whole minutes, as Slurm counts them).

    >>> parse_time_limit("90"), parse_time_limit("1:30:00"), parse_time_limit("1-00:00:30")
    (90, 90, 1441)
    """
    text = text.strip()
    match = _TIME_RE.match(text)
    if text.isdigit():
        minutes = int(text)
    elif match and int(match["minutes"]) < 60 and int(match["seconds"]) < 60:
        hours = int(match["days"] or 0) * 24 + int(match["hours"])
        minutes = math.ceil((hours * 3600 + int(match["minutes"]) * 60 + int(match["seconds"]))
                            / 60)
    else:
        raise ConfigError(f"--slurm-time {text!r}: expected MINUTES, HH:MM:SS or D-HH:MM:SS, "
                          "e.g. 90 or 1:30:00")
    if minutes < 1:
        raise ConfigError(f"--slurm-time {text!r}: the time limit must be at least 1 minute")
    return minutes


def slurm_options(
    partition: str | None = None,
    gres: str | None = None,
    time_limit: str | None = None,
    array_parallelism: str | None = None,
    account: str | None = None,
    sbatch_options: Sequence[str] = (),
) -> SlurmOptions:
    """Check the ``--slurm-*`` flags' values (as typed) into :class:`SlurmOptions`;
    a bad one raises :class:`~dlbench.errors.ConfigError` naming the flag."""
    if partition is not None and not all(_NAME_RE.match(p) for p in partition.split(",")):
        raise ConfigError(f"--slurm-partition {partition!r}: expected a partition name or a "
                          "comma-separated list of them (see `sinfo --summarize`)")
    if account is not None and not _NAME_RE.match(account):
        raise ConfigError(f"--slurm-account {account!r}: expected an account name "
                          "(see `sacctmgr show associations user=$USER`)")
    if gres is not None and not all(_GRES_RE.match(g) for g in gres.split(",")):
        raise ConfigError(f"--slurm-gres {gres!r}: expected NAME[:TYPE][:COUNT], several "
                          "separated by commas, e.g. gpu:1 or gpu:a100:2")
    parallelism = None
    if array_parallelism is not None:
        if not array_parallelism.strip().isdigit() or int(array_parallelism) < 1:
            raise ConfigError(f"--slurm-array-parallelism {array_parallelism!r}: expected a "
                              "whole number of array tasks that may run at once, 1 or more")
        parallelism = int(array_parallelism)
    sbatch: dict[str, str | bool] = {}
    for option in sbatch_options:
        match = _OPTION_RE.match(option)
        if match is None:
            raise ConfigError(f"--slurm-option {option!r}: expected an sbatch long option "
                              "without its dashes, NAME or NAME=VALUE, e.g. cpus-per-task=8")
        if match["name"] in _OWN_OPTIONS:
            raise ConfigError(f"--slurm-option {option!r}: dlbench sets --{match['name']} "
                              "itself or has a --slurm-* flag for it")
        sbatch[match["name"]] = match["value"] if match["value"] is not None else True
    minutes = None if time_limit is None else parse_time_limit(time_limit)
    return SlurmOptions(partition, gres, minutes, parallelism, account, sbatch)


def require_submitit() -> Any:
    """The submitit module, or a one-line error saying how to install it."""
    try:
        import submitit
    except ImportError as exc:
        raise ConfigError(f"--launcher slurm needs submitit: `{INSTALL_HINT}` ({exc})") from None
    return submitit


def check_slurm(options: SlurmOptions) -> None:
    """Raise :class:`~dlbench.errors.ConfigError` unless a Slurm controller answers here
    and has the partitions of ``--slurm-partition``."""
    missing = [cmd for cmd in ("sbatch", "squeue", "scancel", "sinfo", "srun")
               if shutil.which(cmd) is None]
    if missing:
        raise ConfigError(f"--launcher slurm: Slurm's commands ({', '.join(missing)}) are not "
                          "on PATH; run dlbench on a machine that submits to the cluster")
    try:
        proc = subprocess.run(["sinfo", "--noheader", "--format=%R"], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise ConfigError("--launcher slurm: no Slurm controller answers (sinfo got no "
                          "answer in 60 s)") from None
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise ConfigError(f"--launcher slurm: no Slurm controller answers (sinfo: {said})")
    partitions = sorted({line.strip() for line in proc.stdout.splitlines() if line.strip()})
    for name in (options.partition or "").split(","):
        if name and name not in partitions:
            raise ConfigError(f"--slurm-partition {name}: this cluster has no such partition; "
                              f"it has: {', '.join(partitions) or 'none'}")


def default_time_minutes(experiments: Sequence[Mapping[str, Any]]) -> int | None:
    """The time limit of a job that runs ``experiments``' workers one at a time: the
    longest exp.timeout times exp.repeat, plus START_MARGIN_S; None (the partition's
    default) when one experiment has no timeout. The limit is set before anything runs,
    so exp.timeout=auto counts as its bound (:func:`~dlbench.launch.deadline.timeout_bound`:
    2,100 s with the default batch counts)."""
    needs = [timeout_bound(e) * repeat_count(e) for e in experiments]
    if not needs or min(needs) <= 0:
        return None
    return math.ceil((max(needs) + START_MARGIN_S) / 60)


def executor_parameters(
    options: SlurmOptions, nodes: int, time_minutes: int | None
) -> dict[str, Any]:
    """submitit's ``SlurmExecutor`` parameters of a job (or array) of ``nodes`` nodes."""
    params: dict[str, Any] = {
        "job_name": JOB_NAME,
        "nodes": nodes,
        "ntasks_per_node": 1,
        "time": time_minutes,  # None: no --time line, the partition's default
        # submitit's warning signal (SIGUSR2) before the time limit; Slurm may send it up to
        # a minute early, so a short job gets a short warning.
        "signal_delay_s": 90 if time_minutes is None else min(90, max(10, time_minutes * 6)),
        # Since Slurm 22.05, srun inside a batch job no longer inherits --cpus-per-task.
        "setup": ['[ -n "${SLURM_CPUS_PER_TASK:-}" ] && '
                  'export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"'],
    }
    for key, value in (("partition", options.partition), ("gres", options.gres),
                       ("account", options.account),
                       ("array_parallelism", options.array_parallelism)):
        if value is not None:
            params[key] = value
    if options.sbatch:
        params["additional_parameters"] = dict(options.sbatch)
    return params
