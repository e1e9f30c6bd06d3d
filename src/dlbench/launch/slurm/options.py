"""The ``--slurm-*`` flags of ``dlbench run --launcher slurm``, checked, and the
submitit parameters of a job (:mod:`dlbench.launch.slurm.launcher`)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench.config.command_words import control_character
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
# Matched whole (fullmatch): `$` would also match before a trailing newline.
_NAME_RE = re.compile(r"[\w.-]+", re.ASCII)
_GRES_RE = re.compile(r"[A-Za-z][\w.-]*(?::[\w.-]+)*", re.ASCII)
_OPTION_RE = re.compile(r"(?P<name>[a-z][a-z0-9-]*)(?:=(?P<value>.+))?", re.DOTALL)
_MINUTES_RE = re.compile(r"[0-9]+")
_TIME_RE = re.compile(r"(?:(?P<days>[0-9]+)-)?(?P<hours>[0-9]+):(?P<minutes>[0-9][0-9]):"
                      r"(?P<seconds>[0-9][0-9])")

# What may go into the batch script that submitit writes (``_make_sbatch_string``): each
# value of a ``#SBATCH --NAME=VALUE`` line and the run directory's ``slurm`` folder (in the
# --output and --error lines, in srun's command line and in submitit's own) is one word,
# quoted for bash by submitit. sbatch reads the ``#SBATCH`` lines itself: one line each,
# a backslash escapes the next character even inside quotes (where bash keeps it), and a
# line that holds "hetjob" or "packjob" anywhere starts another component of a
# heterogeneous job. So no value may hold a line break or another control character, a
# backslash, or those words.

#: Words that make sbatch split a script into the components of a heterogeneous job.
_COMPONENT_WORDS = ("hetjob", "packjob")


def script_word_problem(text: str) -> str:
    """Why ``text`` cannot be one word of a ``#SBATCH`` line, or empty when it can."""
    char = control_character(text)
    if char:
        return f"it holds a control character ({char})"
    if "\\" in text:
        return "it holds a backslash, which sbatch reads as an escape"
    lowered = text.lower()
    for word in _COMPONENT_WORDS:
        if word in lowered:
            return f"it holds {word!r}, which sbatch reads as the start of another job component"
    return ""


def check_job_folder(out_dir: str) -> None:
    """Refuse a run directory whose ``slurm`` folder cannot be named in a batch script:
    besides :func:`script_word_problem`, a ``%``, which sbatch and srun read as a
    filename pattern (``%j``, ``%u``, ``%x``) in --output and --error and submitit
    replaces in its own paths (so ``%%`` would name a different folder there)."""
    problem = script_word_problem(out_dir)
    if not problem and "%" in out_dir:
        problem = "it holds a '%', which sbatch and srun read as a filename pattern (%j, %u)"
    if problem:
        raise ConfigError(f"exp.out_dir {out_dir!r} (--out): --launcher slurm names the run "
                          f"directory in the job script, and {problem}; give a run "
                          "directory without it")


def check_interpreter(python: str | None = None) -> None:
    """Refuse a Python interpreter whose path cannot go into a batch script's command
    line (submitit starts the job's Python by the path this one runs from)."""
    path = python or sys.executable
    char = control_character(path)
    if char:
        raise ConfigError(f"--launcher slurm: the Python interpreter's path {path!r} holds a "
                          f"control character ({char}) and cannot go into the job script; "
                          "run dlbench from an interpreter whose path has none")


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
    char = control_character(text)
    if char:
        raise ConfigError(f"--slurm-time {text!r}: holds a control character ({char}); "
                          "expected MINUTES, HH:MM:SS or D-HH:MM:SS, e.g. 90 or 1:30:00")
    text = text.strip()
    match = _TIME_RE.fullmatch(text)
    if _MINUTES_RE.fullmatch(text):
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
    if partition is not None and (script_word_problem(partition) or not all(
            _NAME_RE.fullmatch(p) for p in partition.split(","))):
        raise ConfigError(f"--slurm-partition {partition!r}: expected a partition name or a "
                          "comma-separated list of them (see `sinfo --summarize`)")
    if account is not None and (script_word_problem(account)
                                or not _NAME_RE.fullmatch(account)):
        raise ConfigError(f"--slurm-account {account!r}: expected an account name "
                          "(see `sacctmgr show associations user=$USER`)")
    if gres is not None and (script_word_problem(gres)
                             or not all(_GRES_RE.fullmatch(g) for g in gres.split(","))):
        raise ConfigError(f"--slurm-gres {gres!r}: expected NAME[:TYPE][:COUNT], several "
                          "separated by commas, e.g. gpu:1 or gpu:a100:2")
    parallelism = None
    if array_parallelism is not None:
        text = array_parallelism.strip()
        if (control_character(array_parallelism) or not _MINUTES_RE.fullmatch(text)
                or int(text) < 1):
            raise ConfigError(f"--slurm-array-parallelism {array_parallelism!r}: expected a "
                              "whole number of array tasks that may run at once, 1 or more")
        parallelism = int(text)
    sbatch: dict[str, str | bool] = {}
    for option in sbatch_options:
        match = _OPTION_RE.fullmatch(option)
        if match is None:
            raise ConfigError(f"--slurm-option {option!r}: expected an sbatch long option "
                              "without its dashes, NAME or NAME=VALUE, e.g. cpus-per-task=8")
        problem = script_word_problem(option)
        if problem:
            raise ConfigError(f"--slurm-option {option!r}: {problem}; expected NAME=VALUE "
                              "whose VALUE is one line of text without backslashes")
        # sbatch takes any unambiguous prefix of a long option (--outp is --output).
        own = sorted(o for o in _OWN_OPTIONS if o.startswith(match["name"]))
        if own:
            read = "" if own[0] == match["name"] else (
                f" (sbatch takes --{match['name']} as the start of --{own[0]})")
            raise ConfigError(f"--slurm-option {option!r}: dlbench sets --{own[0]} itself or "
                              f"has a --slurm-* flag for it{read}")
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
