"""The node side of ``dlbench run --launcher slurm``: what one Slurm task runs.

submitit sends each task a :class:`NodeTask` and calls :func:`run_node_task` on its
node. The task runs the experiment's worker command there (:func:`node_command`: plain
``python -m dlbench.worker`` or torchrun, one node of a multi-node job made its own by
:func:`node_experiment`) under ``exp.timeout``, with its output appended to the
experiment's log, and returns how each worker process ended (:class:`NodeResult`).
The records are made on the submitting side (:mod:`dlbench.launch.slurm.launcher`), from the
logs, as the local launcher makes them. Slurm's SIGTERM and submitit's SIGUSR2 stop the
worker instead of requeueing the job.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from dlbench.config.run_params import repeat_count
from dlbench.launch.command import (
    LOG_FILE_ENV,
    note_worker_env,
    worker_argv,
    worker_env,
    write_input,
)
from dlbench.launch.local.process import kill_worker, start_worker

#: exp.rendezvous of a multi-node job unless the spec gives one: host ``auto`` is the
#: job's first node, port 0 is RENDEZVOUS_BASE_PORT plus the job id modulo
#: RENDEZVOUS_PORTS (so that two jobs sharing a first node do not collide). Neither is
#: known before the job starts; this value passes the plan's checks meanwhile.
AUTO_RENDEZVOUS = "auto:0"
RENDEZVOUS_BASE_PORT = 29500
RENDEZVOUS_PORTS = 1000


@dataclass(frozen=True)
class NodeTask:
    """What each task of an experiment's job runs (picklable: submitit sends it)."""

    experiment: dict[str, Any]
    python: str | None = None


@dataclass(frozen=True)
class ProcessResult:
    """How one worker process ended on one node."""

    returncode: int
    timed_out: bool  # killed after exp.timeout
    seconds: float
    stopped_by: str = ""  # the signal from Slurm that stopped it: SIGTERM, SIGUSR2


@dataclass(frozen=True)
class NodeResult:
    """What one task returns: its node and its worker processes (exp.repeat of them, or
    fewer when one did not end ok)."""

    node_rank: int
    host: str
    processes: tuple[ProcessResult, ...]
    stopped_by: str = ""  # a signal from Slurm that ended the task's work, if one did


def process_experiment(
    experiment: Mapping[str, Any], number: int, repeat: int
) -> tuple[dict[str, Any], str]:
    """Process ``number`` (from 1) of ``repeat``'s own parameters and input-file suffix:
    with exp.repeat, each process writes ``<exp.log_file>.<number>``, as locally."""
    if repeat <= 1:
        return dict(experiment), ""
    return {**experiment, "exp.log_file": f"{experiment['exp.log_file']}.{number}"}, f".{number}"


def rendezvous_port(job_id: str) -> int:
    """The rendezvous port of the multi-node job ``job_id`` (on its first node)."""
    digits = re.sub(r"\D", "", job_id)
    return RENDEZVOUS_BASE_PORT + int(digits or "0") % RENDEZVOUS_PORTS


def node_experiment(
    experiment: Mapping[str, Any], node_rank: int, hostnames: Sequence[str], job_id: str
) -> dict[str, Any]:
    """``experiment`` as node ``node_rank`` (``SLURM_NODEID``) of multi-node job
    ``job_id`` runs it: that node rank, and exp.rendezvous with host ``auto`` (or none)
    made the job's first node (``hostnames[0]``) and port 0 (or none) the job's port."""
    host, _, port = str(experiment.get("exp.rendezvous") or AUTO_RENDEZVOUS).rpartition(":")
    if host in ("", "auto"):
        host = hostnames[0]
    if port in ("", "0"):
        port = str(rendezvous_port(job_id))
    return {**experiment, "exp.node_rank": node_rank, "exp.rendezvous": f"{host}:{port}"}


def node_log_file(experiment: Mapping[str, Any], node_rank: int) -> str:
    """Node ``node_rank``'s log: ``exp.log_file`` on node 0, ``<exp.log_file>.node<k>``
    on the others (the run directory is shared; each node keeps its own figures)."""
    log = str(experiment["exp.log_file"])
    return log if node_rank == 0 else f"{log}.node{node_rank}"


def node_command(
    experiment: Mapping[str, Any],
    exp_json: Path,
    python: str | None = None,
    base_env: Mapping[str, str] | None = None,
) -> tuple[list[str], dict[str, str], Path]:
    """The argument list, environment and log file of the worker that runs
    ``experiment`` (made for its node by :func:`node_experiment` when it has several)
    on this node, from its input ``exp_json``. The environment is the node's own
    (``base_env``, default ``os.environ``): Slurm sets the devices a job may use there."""
    node_rank = int(experiment["exp.node_rank"]) if int(experiment["exp.num_nodes"]) > 1 else 0
    log = Path(node_log_file(experiment, node_rank))
    env = worker_env(experiment, base_env)
    if node_rank > 0:
        env[LOG_FILE_ENV] = str(log)
    # The same environment builds a container's command: what it forwards and mounts.
    return worker_argv(experiment, exp_json, python, env), env, log


class _Stopped(Exception):
    """Slurm signalled the task while it waited for its worker."""


class _SlurmSignals:
    """While a task runs, Slurm's SIGTERM (the job cancelled, preempted or out of time)
    and submitit's warning before the time limit (SIGUSR2) stop the worker. These
    handlers replace submitit's, which would requeue the job: a benchmark is reported,
    not run again in another allocation."""

    SIGNALS = (signal.SIGTERM, signal.SIGUSR2)

    def __init__(self) -> None:
        self.received = ""
        self.waiting = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.received:
            self.received = signal.Signals(signum).name
        if self.waiting:
            self.waiting = False
            raise _Stopped

    def __enter__(self) -> _SlurmSignals:
        self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def _run_worker(
    argv: list[str], env: dict[str, str], log_path: Path, timeout: float | None,
    signals: _SlurmSignals,
) -> ProcessResult:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    timed_out = stopped = False
    with open(log_path, "ab") as log:
        note_worker_env(log, env)
        process = start_worker(argv, log, env)
        try:
            signals.waiting = True
            if signals.received:  # it came while the worker started
                raise _Stopped
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        except _Stopped:
            stopped = True
        finally:
            signals.waiting = False
            kill_worker(process)  # nothing left of it either way
    # Slurm may signal the worker too: then it ends before the task hears of it.
    stopped = stopped or bool(signals.received and process.returncode != 0)
    return ProcessResult(int(process.returncode), timed_out, time.monotonic() - started,
                         signals.received if stopped else "")


def _job_hostnames() -> list[str]:
    import submitit

    return list(submitit.JobEnvironment().hostnames)


def run_node_task(task: NodeTask) -> NodeResult:
    """Run ``task``'s experiment on this node of its Slurm job (called by submitit in
    each task): its worker processes one after another (exp.repeat), each under
    exp.timeout, stopping at the first that does not end ok."""
    experiment = task.experiment
    nodes = int(experiment["exp.num_nodes"])
    node_rank = int(os.environ.get("SLURM_NODEID", "0")) if nodes > 1 else 0
    hostnames = _job_hostnames() if nodes > 1 else []
    job_id = os.environ.get("SLURM_JOB_ID", "0")
    out_dir = Path(experiment["exp.out_dir"])
    timeout = float(experiment["exp.timeout"]) or None
    repeat = repeat_count(experiment)
    results: list[ProcessResult] = []
    with _SlurmSignals() as signals:
        for number in range(1, repeat + 1):
            if signals.received:
                break
            own, suffix = process_experiment(experiment, number, repeat)
            if nodes > 1:
                own = node_experiment(own, node_rank, hostnames, job_id)
                suffix += f".node{node_rank}"
            argv, env, log_path = node_command(own, write_input(own, out_dir, suffix),
                                               task.python)
            result = _run_worker(argv, env, log_path, timeout, signals)
            results.append(result)
            if result.returncode != 0 or result.timed_out or result.stopped_by:
                break
    return NodeResult(node_rank, socket.gethostname(), tuple(results), signals.received)
