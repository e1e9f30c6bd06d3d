"""Run a planned sweep on a Slurm cluster, through submitit: ``dlbench run --launcher slurm``.

The contract is the local runner's (:class:`~dlbench.launch.runner.Runner`): the
experiments that :func:`~dlbench.launch.runner.should_run` are run, every record goes
into the run directory's store, one transaction per experiment, and a rerun resumes.
Only where the workers run differs. This process (on a login node) submits the one-node
experiments of a run directory as one job array, one array task per experiment, and each
multi-node experiment as one job of ``exp.num_nodes`` nodes with one task per node. A
task (:mod:`dlbench.launch.slurm_node`) runs the experiment's worker command on its node
under ``exp.timeout``, with its output appended to the experiment's log, and returns
exit statuses; this process polls for the results, turns each log into a record as the
local runner does and commits it. Ctrl-C (or SIGTERM) cancels the jobs and marks the
experiments that had started ``interrupted``. A job that Slurm ends before it returns
(cancelled, out of time, node failure) fails its experiment with Slurm's job state in
``exp.status_msg``; the sweep's other results stay.

The run directory must be on a file system that the compute nodes share with the
submitting machine: the tasks write the experiment inputs and logs there, and submitit's
job files (the pickled task and its result) live in ``<out>/slurm``.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlbench.config.registry import varying_parameters
from dlbench.errors import ConfigError
from dlbench.launch.partition import copy_count
from dlbench.launch.runner import (
    Outcome,
    Progress,
    Reporter,
    Runner,
    SweepResult,
    combine_processes,
    should_run,
    sigterm_as_interrupt,
    write_combined,
)
from dlbench.launch.slurm_node import (
    AUTO_RENDEZVOUS,
    NodeResult,
    NodeTask,
    node_log_file,
    process_experiment,
    repeat_count,
    run_node_task,
)
from dlbench.results.logfile import LogWriter
from dlbench.results.parser import parse_log

INSTALL_HINT = "pip install dlbench[slurm]"
#: Name of every job dlbench submits (``squeue --name dlbench``, ``scancel --name dlbench``).
JOB_NAME = "dlbench"
#: Without --slurm-time, a job may run its experiments' exp.timeout plus this, for start-up.
START_MARGIN_S = 300
#: Seconds a result file may lag behind Slurm's word that a job ended (a shared file
#: system's attribute cache), before the job counts as lost.
RESULT_GRACE_S = 15.0
#: Seconds to wait for Slurm's final state of a job whose worker it stopped, and for
#: cancelled jobs to stop after Ctrl-C.
STATE_WAIT_S = 10.0

#: States in which a job will not return a result: Slurm ended it.
LOST_STATES = frozenset({"CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
                         "DEADLINE", "OUT_OF_MEMORY", "REVOKED"})
#: States of a job that ended (with a result, unless lost).
ENDED_STATES = LOST_STATES | {"COMPLETED", "FAILED"}
#: Why a job may be pending that needs no word: it waits its turn.
ORDINARY_PENDING = frozenset({"None", "Priority", "Resources", "JobArrayTaskLimit", "BeginTime",
                              "Dependency", "Reservation", "Prolog", "Licenses"})
#: sbatch options that dlbench sets itself or has a flag for: not for --slurm-option.
_OWN_OPTIONS = frozenset({"array", "output", "error", "open-mode", "job-name", "signal", "wrap",
                          "partition", "gres", "time", "account", "nodes", "ntasks",
                          "ntasks-per-node", "parsable"})
_NAME_RE = re.compile(r"^[\w.-]+$")
_GRES_RE = re.compile(r"^[A-Za-z][\w.-]*(?::[\w.-]+)*$")
_OPTION_RE = re.compile(r"^(?P<name>[a-z][a-z0-9-]*)(?:=(?P<value>.+))?$")
_TIME_RE = re.compile(r"^(?:(?P<days>\d+)-)?(?P<hours>\d+):(?P<minutes>\d\d):(?P<seconds>\d\d)$")


# --- Options (the --slurm-* flags) --------------------------------------------------------


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
    default) when one experiment has no timeout."""
    needs = [float(e["exp.timeout"]) * repeat_count(e) for e in experiments]
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


# --- The parent side: submit, wait, record ----------------------------------------------


def _run_slurm(command: list[str]) -> subprocess.CompletedProcess[str] | None:
    """A Slurm command's outcome, or None when it could not run or got no answer."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _run_quiet(command: list[str]) -> str | None:
    """stdout of a Slurm command, or None when it fails or cannot run."""
    proc = _run_slurm(command)
    return proc.stdout if proc is not None and proc.returncode == 0 else None


def queue_states(job_ids: Sequence[str]) -> dict[str, tuple[str, str]] | None:
    """Slurm's state (``RUNNING``, ``CANCELLED``...) and reason (why it is pending) of
    each job (``123``, or array task ``123_4``) that Slurm still knows: from squeue
    while the controller remembers the job, else from sacct where the cluster keeps
    accounting. None when squeue does not answer (a busy controller: ask again later)."""
    if not job_ids:
        return {}
    masters = sorted({job_id.split("_")[0] for job_id in job_ids})
    proc = _run_slurm(["squeue", "--noheader", "--array", "--states=all", "--format=%i|%T|%r",
                       f"--jobs={','.join(masters)}"])
    # squeue refuses a list of jobs that all left the controller's memory: not an error here.
    if proc is None or (proc.returncode != 0 and "Invalid job id" not in proc.stderr):
        return None
    states: dict[str, tuple[str, str]] = {}
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        job_id, state, reason = [*line.strip().split("|"), "", ""][:3]
        if state:
            states[job_id] = (state, reason)
    missing = [job_id for job_id in job_ids if job_id not in states]
    if missing:
        accounted = _run_quiet(["sacct", "--noheader", "--parsable2", "--format=JobID,State",
                                f"--jobs={','.join(missing)}"]) or ""
        for line in accounted.splitlines():
            job_id, _, state = line.strip().partition("|")
            if job_id in missing and state:
                states[job_id] = (state.split()[0], "")  # "CANCELLED by 1000"
    return states


def _mark(record: dict[str, Any], log_path: Path, status: str, message: str) -> dict[str, Any]:
    """``record`` with this status, also appended to its log (the last line wins), so
    that parsing the log gives the record the store holds."""
    with LogWriter(log_path) as log:
        log.write("exp.status", status)
        log.write("exp.status_msg", message)
    return {**record, "exp.status": status, "exp.status_msg": message}


def _log_files(experiment: Mapping[str, Any]) -> list[Path]:
    """Every log the experiment's tasks write: per process (exp.repeat) and per node."""
    repeat, nodes = repeat_count(experiment), int(experiment["exp.num_nodes"])
    files = [Path(experiment["exp.log_file"])]
    for number in range(1, repeat + 1):
        own, _ = process_experiment(experiment, number, repeat)
        files += [Path(node_log_file(own, node)) for node in range(nodes)]
    return sorted(set(files))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _traceback_line(error: str) -> str:
    """The exception line of the traceback that submitit's FailedJobError quotes between
    two rules of dashes."""
    parts = re.split(r"\n-{10,}\n", error)
    return _last_line(parts[1] if len(parts) > 2 else error)


@dataclass
class _Job:
    """One experiment's submitted job (an array task, or a multi-node job)."""

    index: int  # in the plan
    experiment: dict[str, Any]
    job: Any  # submitit.Job
    time_minutes: int | None
    submitted: float = field(default_factory=time.monotonic)
    results: list[NodeResult | str] | None = None  # per node; str: the task raised this
    results_seen: float = 0.0
    ended_seen: float | None = None  # when Slurm first said it ended without a result

    @property
    def job_id(self) -> str:
        return str(self.job.job_id)

    def collect(self) -> bool:
        """Read the tasks' results once every one has written its result file."""
        if self.results is not None:
            return True
        tasks = [self.job.task(k) for k in range(self.job.num_tasks)]
        if not all(t.paths.result_pickle.exists() for t in tasks):
            return False
        results: list[NodeResult | str] = []
        for task in tasks:
            try:
                results.append(task.result())
            except Exception as error:  # the task raised: the error quotes its traceback
                results.append(_traceback_line(str(error)))
        self.results = sorted(results, key=lambda r: r.node_rank if isinstance(r, NodeResult)
                              else -1)
        self.results_seen = time.monotonic()
        return True

    @property
    def stopped(self) -> str:
        """The signal by which Slurm stopped this job's work, if it did."""
        signals = [r.stopped_by for r in self.results or [] if isinstance(r, NodeResult)]
        return next((s for s in signals if s), "")

    def started(self) -> bool:
        """Whether a task began (it creates the log it appends to)."""
        return any(path.exists() for path in _log_files(self.experiment))

    def task_stderr(self) -> str:
        """The last line that the job's first task wrote to its submitit stderr file."""
        try:
            return _last_line(self.job.task(0).paths.stderr.read_text(errors="replace")[-4000:])
        except OSError:
            return ""


class SlurmRunner(Runner):
    """Runs experiments as Slurm jobs, into their run directories' stores."""

    def __init__(
        self, options: SlurmOptions, report: Reporter = print, python: str | None = None,
        poll_s: float = 0.5,
    ) -> None:
        super().__init__(report=report, python=python)
        self.options = options
        self.poll_s = poll_s
        self.submitit = require_submitit()
        self._pending_told: set[tuple[str, str]] = set()

    def run(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        """Run (or keep earlier results of) every experiment; outcomes in plan order."""
        for experiment in experiments:
            if copy_count(experiment) > 1:
                raise ConfigError(f"exp.parallel_jobs={experiment['exp.parallel_jobs']}: "
                                  "--launcher slurm runs one copy of an experiment per job; "
                                  "use exp.parallel_jobs=1, or --launcher local inside an "
                                  "allocation (salloc)")
        check_slurm(self.options)
        progress = Progress(len(experiments), self.report, varying_parameters(experiments))
        outcomes: dict[int, Outcome] = {}
        to_run: list[int] = []
        for index, experiment in enumerate(experiments):
            earlier = self.store(Path(experiment["exp.out_dir"])).get(str(experiment["exp.id"]))
            if should_run(experiment, earlier):
                to_run.append(index)
            else:
                assert earlier is not None
                outcomes[index] = Outcome(record=dict(earlier), ran=False)
                progress.done(outcomes[index])
        jobs: dict[int, _Job] = {}
        interrupted = False
        with sigterm_as_interrupt():
            try:
                self._submit([(i, _without_auto_rendezvous(experiments[i])) for i in to_run],
                             jobs)
                self._wait(jobs, outcomes, progress)
            except KeyboardInterrupt:
                interrupted = True
                self._interrupt(jobs, outcomes, progress)
        return SweepResult([outcomes[i] for i in sorted(outcomes)], interrupted)

    def _submit(self, planned: list[tuple[int, dict[str, Any]]], jobs: dict[int, _Job]) -> None:
        """One job array per run directory for one-node experiments, one job per
        multi-node experiment; ``jobs`` fills as they are submitted."""
        groups: dict[tuple[str, int], list[tuple[int, dict[str, Any]]]] = {}
        for index, experiment in planned:
            nodes = int(experiment["exp.num_nodes"])
            key = (str(experiment["exp.out_dir"]), nodes if nodes == 1 else -index)
            groups.setdefault(key, []).append((index, experiment))
            for path in _log_files(experiment):  # a rerun starts fresh logs
                path.unlink(missing_ok=True)
        for (out_dir, _), members in groups.items():
            nodes = int(members[0][1]["exp.num_nodes"])
            minutes = self.options.time_minutes or default_time_minutes([e for _, e in members])
            executor = self.submitit.SlurmExecutor(folder=Path(out_dir) / "slurm")
            executor.update_parameters(**executor_parameters(self.options, nodes, minutes))
            try:  # submitit prints sbatch's complaint too: one line (ours) is enough
                with contextlib.redirect_stderr(io.StringIO()), executor.batch():
                    submitted = [executor.submit(run_node_task, NodeTask(e, self.python))
                                 for _, e in members]
            except self.submitit.core.utils.FailedJobError as error:
                self._cancel(list(jobs.values()))
                raise ConfigError(f"--launcher slurm: sbatch refused the job: "
                                  f"{_last_line(str(error))}") from None
            for (index, experiment), job in zip(members, submitted, strict=True):
                jobs[index] = _Job(index, experiment, job, minutes)
            first = str(submitted[0].job_id)
            what = (f"job array {first.split('_')[0]}" if len(submitted) > 1
                    else f"{nodes}-node job {first}" if nodes > 1 else f"job {first}")
            self.report(f"submitted {len(members)} experiment(s) as Slurm {what} "
                        f"(files: {Path(out_dir) / 'slurm'})")

    def _wait(self, jobs: dict[int, _Job], outcomes: dict[int, Outcome],
              progress: Progress) -> None:
        """Poll until every job has ended; record each as it does."""
        start = time.monotonic()
        next_check = start
        while jobs:
            for entry in list(jobs.values()):
                if entry.collect() and not entry.stopped:
                    self._finish(jobs, entry, self._record_results(entry), outcomes, progress)
            now = time.monotonic()
            stopped = any(e.results is not None for e in jobs.values())
            if jobs and now >= next_check:
                states = queue_states([e.job_id for e in jobs.values()])
                for entry in list(jobs.values()):
                    if states is None:  # the controller did not answer: ask again later
                        break
                    state, reason = states.get(entry.job_id, ("", ""))
                    self._tell_pending(entry, state, reason)
                    record = self._settle(entry, state, now)
                    if record is not None:
                        self._finish(jobs, entry, record, outcomes, progress)
                # Ask the controller rarely: every 2 s at first, at most every 30 s.
                next_check = now + (1.0 if stopped else min(30.0, max(2.0, (now - start) / 4)))
            if jobs:
                time.sleep(self.poll_s)

    def _tell_pending(self, entry: _Job, state: str, reason: str) -> None:
        """Say once why a job waits, unless it merely waits its turn: a reason such as
        PartitionNodeLimit or QOSMaxWallDurationPerJobLimit may keep it pending forever."""
        if state != "PENDING" or reason in ORDINARY_PENDING:
            return
        said = (entry.job_id.split("_")[0], reason)
        if said not in self._pending_told:
            self._pending_told.add(said)
            self.report(f"Slurm job {said[0]} is pending: {reason} (see `scontrol show job "
                        f"{said[0]}`; Ctrl-C cancels it)")

    def _settle(self, entry: _Job, state: str, now: float) -> dict[str, Any] | None:
        """The record of a job that Slurm says ended, or stopped, else None (not yet)."""
        if entry.results is not None:  # Slurm stopped a worker: say how, once it knows
            if state in ENDED_STATES or now - entry.results_seen > STATE_WAIT_S:
                return self._record_results(entry, state)
            return None
        if state in LOST_STATES:
            return self._lost(entry, f"Slurm job {entry.job_id} ended {state} before its "
                                     "worker finished")
        if state in ENDED_STATES or not state:  # ended (or forgotten) without a result yet
            entry.ended_seen = entry.ended_seen or now
            if now - entry.ended_seen > RESULT_GRACE_S:
                ended = f"ended {state}" if state else "left the queue"
                said = entry.task_stderr()
                return self._lost(entry, f"Slurm job {entry.job_id} {ended} without a result"
                                         + (f": {said}" if said else ""))
        else:
            entry.ended_seen = None
        return None

    def _finish(self, jobs: dict[int, _Job], entry: _Job, record: dict[str, Any],
                outcomes: dict[int, Outcome], progress: Progress) -> None:
        jobs.pop(entry.index, None)
        self.store(Path(record["exp.out_dir"])).put(record)
        seconds = sum(p.seconds for r in (entry.results or [])[:1] if isinstance(r, NodeResult)
                      for p in r.processes) or time.monotonic() - entry.submitted
        outcomes[entry.index] = Outcome(record, ran=True, seconds=seconds)
        progress.done(outcomes[entry.index])

    def _stop_message(self, entry: _Job, signal_name: str, state: str) -> str:
        if signal_name == "SIGUSR2":
            limit = f" (--slurm-time {entry.time_minutes} min)" if entry.time_minutes else ""
            return (f"Slurm job {entry.job_id} reached its time limit{limit}: the worker was "
                    "stopped at Slurm's warning (SIGUSR2)")
        ended = f"ended {state}" if state in ENDED_STATES else "was stopped by Slurm"
        return f"Slurm job {entry.job_id} {ended}: the worker got {signal_name}"

    def _record_results(self, entry: _Job, state: str = "") -> dict[str, Any]:
        """The record of a job whose tasks returned, as the local runner makes it."""
        experiment = entry.experiment
        assert entry.results is not None
        failed = [r for r in entry.results if isinstance(r, str)]
        if failed:
            return self._lost(entry, f"Slurm job {entry.job_id}: its task failed: {failed[0]}")
        nodes = [r for r in entry.results if isinstance(r, NodeResult)]
        if not nodes[0].processes:  # stopped before its first worker started
            return self._lost(entry, self._stop_message(entry, entry.stopped or "?", state))
        repeat = repeat_count(experiment)
        log_path = Path(experiment["exp.log_file"])
        records: list[dict[str, Any]] = []
        for number, process in enumerate(nodes[0].processes, 1):
            own, _ = process_experiment(experiment, number, repeat)
            own_log = Path(own["exp.log_file"])
            record = self._record(own, own_log, process.returncode, process.timed_out, False)
            if process.stopped_by:
                record = _mark(record, own_log, "failure",
                               self._stop_message(entry, process.stopped_by, state))
            elif record["exp.status"] == "ok":
                note = _other_node_failure(own, nodes, number)
                if note:
                    record = _mark(record, own_log, "failure", note)
            if record["exp.status"] != "ok":
                if repeat == 1:
                    return record
                failed_record = {**record, "exp.log_file": str(log_path),
                                 "exp.status_msg": f"process {number} of {repeat}: "
                                                   f"{record['exp.status_msg']}"}
                write_combined(log_path, failed_record)
                return failed_record
            records.append(record)
        if len(records) < repeat:  # a task that returned without running every process
            return self._lost(entry, f"Slurm job {entry.job_id}: {len(records)} of {repeat} "
                                     "processes ran")
        if repeat == 1:
            return records[0]
        combined = combine_processes(experiment, records)
        write_combined(log_path, combined)
        return combined

    def _lost(self, entry: _Job, message: str, status: str = "failure") -> dict[str, Any]:
        """The record of an experiment whose job ended without its workers' verdict:
        what its log holds, with ``status`` and ``message``."""
        log_path = Path(entry.experiment["exp.log_file"])
        parsed = parse_log(log_path)[0] if log_path.is_file() else {}
        return _mark({**entry.experiment, **parsed}, log_path, status, message)

    def _cancel(self, entries: list[_Job]) -> list[str]:
        """scancel the jobs of ``entries``: one call, naming each array once."""
        ids = sorted({entry.job_id.split("_")[0] for entry in entries})
        if ids:
            _run_quiet(["scancel", *ids])
        return ids

    def _interrupt(self, jobs: dict[int, _Job], outcomes: dict[int, Outcome],
                   progress: Progress) -> None:
        """After Ctrl-C: cancel the jobs, let their tasks stop their workers, then record
        those that had started as interrupted (the others are simply not run)."""
        ids = self._cancel(list(jobs.values()))
        if ids:
            self.report(f"interrupted: cancelled Slurm job(s) {', '.join(ids)}")
        deadline = time.monotonic() + STATE_WAIT_S
        try:
            while jobs and time.monotonic() < deadline:
                states = queue_states([e.job_id for e in jobs.values()])
                if states is not None and all(states.get(e.job_id, ("", ""))[0]
                                              in ENDED_STATES | {""} for e in jobs.values()):
                    break
                time.sleep(self.poll_s)
        except KeyboardInterrupt:  # a second Ctrl-C: record now
            pass
        for entry in list(jobs.values()):
            if entry.collect() and not entry.stopped:  # it ended before the cancel
                self._finish(jobs, entry, self._record_results(entry), outcomes, progress)
            elif entry.started():
                record = self._lost(entry, "interrupted by the user (Ctrl-C or SIGTERM); "
                                           f"Slurm job {entry.job_id} cancelled", "interrupted")
                self._finish(jobs, entry, record, outcomes, progress)


def _without_auto_rendezvous(experiment: Mapping[str, Any]) -> dict[str, Any]:
    """A one-node experiment has no rendezvous: its record says so, as a local run's does."""
    own = dict(experiment)
    if int(own["exp.num_nodes"]) == 1 and own.get("exp.rendezvous") == AUTO_RENDEZVOUS:
        own["exp.rendezvous"] = ""
    return own


def _other_node_failure(
    experiment: Mapping[str, Any], nodes: Sequence[NodeResult], number: int
) -> str:
    """Why process ``number`` failed on a node other than the first, or empty."""
    for node in nodes[1:]:
        if len(node.processes) < number:
            return f"node {node.node_rank} ({node.host}) did not run process {number}"
        process = node.processes[number - 1]
        if process.returncode != 0 or process.timed_out or process.stopped_by:
            how = ("timed out" if process.timed_out else f"got {process.stopped_by}"
                   if process.stopped_by else f"exited with status {process.returncode}")
            return (f"node {node.node_rank} ({node.host}): the worker {how}; see "
                    f"{node_log_file(experiment, node.node_rank)}")
    return ""
