"""What Slurm says of dlbench's jobs: their states, and each submitted experiment's job
with the results its tasks returned (:mod:`dlbench.launch.slurm.launcher`)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlbench.config.run_params import repeat_count
from dlbench.launch.slurm.node import NodeResult, node_log_file, process_experiment

#: States in which a job will not return a result: Slurm ended it.
LOST_STATES = frozenset({"CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
                         "DEADLINE", "OUT_OF_MEMORY", "REVOKED"})
#: States of a job that ended (with a result, unless lost).
ENDED_STATES = LOST_STATES | {"COMPLETED", "FAILED"}
#: Why a job may be pending that needs no word: it waits its turn.
ORDINARY_PENDING = frozenset({"None", "Priority", "Resources", "JobArrayTaskLimit", "BeginTime",
                              "Dependency", "Reservation", "Prolog", "Licenses"})



def run_slurm(command: list[str]) -> subprocess.CompletedProcess[str] | None:
    """A Slurm command's outcome, or None when it could not run or got no answer."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None


def run_quiet(command: list[str]) -> str | None:
    """stdout of a Slurm command, or None when it fails or cannot run."""
    proc = run_slurm(command)
    return proc.stdout if proc is not None and proc.returncode == 0 else None


def queue_states(job_ids: Sequence[str]) -> dict[str, tuple[str, str]] | None:
    """Slurm's state (``RUNNING``, ``CANCELLED``...) and reason (why it is pending) of
    each job (``123``, or array task ``123_4``) that Slurm still knows: from squeue
    while the controller remembers the job, else from sacct where the cluster keeps
    accounting. None when squeue does not answer (a busy controller: ask again later)."""
    if not job_ids:
        return {}
    masters = sorted({job_id.split("_")[0] for job_id in job_ids})
    proc = run_slurm(["squeue", "--noheader", "--array", "--states=all", "--format=%i|%T|%r",
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
        accounted = run_quiet(["sacct", "--noheader", "--parsable2", "--format=JobID,State",
                                f"--jobs={','.join(missing)}"]) or ""
        for line in accounted.splitlines():
            job_id, _, state = line.strip().partition("|")
            if job_id in missing and state:
                states[job_id] = (state.split()[0], "")  # "CANCELLED by 1000"
    return states

def log_files(experiment: Mapping[str, Any]) -> list[Path]:
    """Every log the experiment's tasks write: per process (exp.repeat) and per node."""
    repeat, nodes = repeat_count(experiment), int(experiment["exp.num_nodes"])
    files = [Path(experiment["exp.log_file"])]
    for number in range(1, repeat + 1):
        own, _ = process_experiment(experiment, number, repeat)
        files += [Path(node_log_file(own, node)) for node in range(nodes)]
    return sorted(set(files))


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def traceback_line(error: str) -> str:
    """The exception line of the traceback that submitit's FailedJobError quotes between
    two rules of dashes."""
    parts = re.split(r"\n-{10,}\n", error)
    return last_line(parts[1] if len(parts) > 2 else error)


@dataclass
class SlurmJob:
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
                results.append(traceback_line(str(error)))
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
        return any(path.exists() for path in log_files(self.experiment))

    def task_stderr(self) -> str:
        """The last line that the job's first task wrote to its submitit stderr file."""
        try:
            return last_line(self.job.task(0).paths.stderr.read_text(errors="replace")[-4000:])
        except OSError:
            return ""
