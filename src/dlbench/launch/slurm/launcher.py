"""Run a planned sweep on a Slurm cluster, through submitit: ``dlbench run --launcher slurm``.

A launcher of the sweep loop (:class:`~dlbench.launch.sweep.Sweep`), which keeps the
contract of every launcher: the experiments that :func:`~dlbench.launch.sweep.should_run`
are run, every record goes into the run directory's store, one transaction per
experiment, and a rerun resumes. Only where the workers run differs. This process (on a
login node) submits the one-node experiments of a run directory as one job array, one
array task per experiment, and each multi-node experiment as one job of ``exp.num_nodes``
nodes with one task per node. A
task (:mod:`dlbench.launch.slurm.node`) runs the experiment's worker command on its node
under ``exp.timeout``, with its output appended to the experiment's log, and returns
exit statuses; this process polls for the results, turns each log into a record as the
local launcher does; the sweep loop commits it. Ctrl-C (or SIGTERM) cancels the jobs and marks the
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
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dlbench.config.run_params import copy_count, repeat_count
from dlbench.errors import ConfigError
from dlbench.launch.launchers import Finish, LaunchContext, Launcher, failed_repeat
from dlbench.launch.progress_bar import Reporter
from dlbench.launch.records import combine_processes, worker_record, write_combined
from dlbench.launch.slurm.node import (
    AUTO_RENDEZVOUS,
    NodeResult,
    NodeTask,
    node_log_file,
    process_experiment,
    run_node_task,
)
from dlbench.launch.slurm.options import (
    SlurmOptions,
    check_interpreter,
    check_job_folder,
    check_slurm,
    default_time_minutes,
    executor_parameters,
    require_submitit,
    slurm_options,
)
from dlbench.launch.slurm.queue import (
    ENDED_STATES,
    LOST_STATES,
    ORDINARY_PENDING,
    SlurmJob,
    last_line,
    log_files,
    queue_states,
    run_quiet,
)
from dlbench.results.log.file import LogWriter
from dlbench.results.log.parser import parse_log
from dlbench.textsafe import safe_text

#: Seconds a result file may lag behind Slurm's word that a job ended (a shared file
#: system's attribute cache), before the job counts as lost.
RESULT_GRACE_S = 15.0
#: Seconds to wait for Slurm's final state of a job whose worker it stopped, and for
#: cancelled jobs to stop after Ctrl-C.
STATE_WAIT_S = 10.0


def _mark(record: dict[str, Any], log_path: Path, status: str, message: str) -> dict[str, Any]:
    """``record`` with this status, also appended to its log (the last line wins), so
    that parsing the log gives the record the store holds."""
    with LogWriter(log_path) as log:
        log.write("exp.status", status)
        log.write("exp.status_msg", message)
    return {**record, "exp.status": status, "exp.status_msg": message}

class SlurmLauncher(Launcher):
    """Runs experiments as Slurm jobs; the sweep loop commits their records."""

    def __init__(
        self, options: SlurmOptions, report: Reporter = print, python: str | None = None,
        poll_s: float = 0.5,
    ) -> None:
        self.report = report
        self.python = python
        self.options = options
        self.poll_s = poll_s
        self.submitit = require_submitit()
        self._pending_told: set[tuple[str, str]] = set()

    @classmethod
    def create(cls, options: Mapping[str, Any], report: Reporter) -> SlurmLauncher:
        """The Slurm launcher of the ``--slurm-*`` flags' values, checked."""
        return cls(slurm_options(options.get("slurm_partition"), options.get("slurm_gres"),
                                 options.get("slurm_time"),
                                 options.get("slurm_array_parallelism"),
                                 options.get("slurm_account"), options.get("slurm_option") or ()),
                   report=report)

    def defaults(self) -> dict[str, Any]:
        """The nodes of a Slurm job meet on its first node, known once the job starts."""
        return {"exp.rendezvous": AUTO_RENDEZVOUS}

    #: Every experiment to run goes to Slurm at once: the jobs queue there.
    batch_size = 1 << 62

    def check(self, experiments: Sequence[Mapping[str, Any]]) -> None:
        """One copy per job, run directories and an interpreter that the job script can
        name, then (only then: these need no cluster) a Slurm controller that answers,
        with the partitions."""
        check_interpreter(self.python)
        for out_dir in sorted({str(e["exp.out_dir"]) for e in experiments}):
            check_job_folder(out_dir)
        for experiment in experiments:
            if copy_count(experiment) > 1:
                raise ConfigError(f"exp.parallel_jobs={experiment['exp.parallel_jobs']}: "
                                  "--launcher slurm runs one copy of an experiment per job; "
                                  "use exp.parallel_jobs=1, or --launcher local inside an "
                                  "allocation (salloc)")
        check_slurm(self.options)

    def launch(self, batch: Sequence[tuple[int, Mapping[str, Any]]], finish: Finish,
               context: LaunchContext) -> bool:
        """Submit the experiments of ``batch`` as Slurm jobs, poll until every one has
        ended and hand each record to ``finish``; after Ctrl-C (or SIGTERM) cancel them
        and return True."""
        jobs: dict[int, SlurmJob] = {}
        try:
            self._submit([(i, _without_auto_rendezvous(e)) for i, e in batch], jobs)
            self._wait(jobs, finish)
        except KeyboardInterrupt:
            self._interrupt(jobs, finish)
            return True
        return False

    def _submit(self, planned: list[tuple[int, dict[str, Any]]], jobs: dict[int, SlurmJob]) -> None:
        """One job array per run directory for one-node experiments, one job per
        multi-node experiment; ``jobs`` fills as they are submitted."""
        groups: dict[tuple[str, int], list[tuple[int, dict[str, Any]]]] = {}
        for index, experiment in planned:
            nodes = int(experiment["exp.num_nodes"])
            key = (str(experiment["exp.out_dir"]), nodes if nodes == 1 else -index)
            groups.setdefault(key, []).append((index, experiment))
            for path in log_files(experiment):  # a rerun starts fresh logs
                path.unlink(missing_ok=True)
        for (out_dir, _), members in groups.items():
            check_job_folder(out_dir)  # as check() did: this text goes into the job script
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
                                  f"{last_line(str(error))}") from None
            for (index, experiment), job in zip(members, submitted, strict=True):
                jobs[index] = SlurmJob(index, experiment, job, minutes)
            first = str(submitted[0].job_id)
            what = (f"job array {first.split('_')[0]}" if len(submitted) > 1
                    else f"{nodes}-node job {first}" if nodes > 1 else f"job {first}")
            self.report(f"submitted {len(members)} experiment(s) as Slurm {safe_text(what)} "
                        f"(files: {safe_text(str(Path(out_dir) / 'slurm'))})")

    def _wait(self, jobs: dict[int, SlurmJob], finish: Finish) -> None:
        """Poll until every job has ended; record each as it does."""
        start = time.monotonic()
        next_check = start
        while jobs:
            for entry in list(jobs.values()):
                if entry.collect() and not entry.stopped:
                    self._finish(jobs, entry, self._record_results(entry), finish)
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
                        self._finish(jobs, entry, record, finish)
                # Ask the controller rarely: every 2 s at first, at most every 30 s.
                next_check = now + (1.0 if stopped else min(30.0, max(2.0, (now - start) / 4)))
            if jobs:
                time.sleep(self.poll_s)

    def _tell_pending(self, entry: SlurmJob, state: str, reason: str) -> None:
        """Say once why a job waits, unless it merely waits its turn: a reason such as
        PartitionNodeLimit or QOSMaxWallDurationPerJobLimit may keep it pending forever."""
        if state != "PENDING" or reason in ORDINARY_PENDING:
            return
        said = (entry.job_id.split("_")[0], reason)
        if said not in self._pending_told:
            self._pending_told.add(said)
            job = safe_text(said[0])
            self.report(f"Slurm job {job} is pending: {safe_text(reason)} (see `scontrol show "
                        f"job {job}`; Ctrl-C cancels it)")

    def _settle(self, entry: SlurmJob, state: str, now: float) -> dict[str, Any] | None:
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

    @staticmethod
    def _finish(jobs: dict[int, SlurmJob], entry: SlurmJob, record: dict[str, Any],
                finish: Finish) -> None:
        jobs.pop(entry.index, None)
        seconds = sum(p.seconds for r in (entry.results or [])[:1] if isinstance(r, NodeResult)
                      for p in r.processes) or time.monotonic() - entry.submitted
        finish(entry.index, record, seconds)

    def _stop_message(self, entry: SlurmJob, signal_name: str, state: str) -> str:
        if signal_name == "SIGUSR2":
            limit = f" (--slurm-time {entry.time_minutes} min)" if entry.time_minutes else ""
            return (f"Slurm job {entry.job_id} reached its time limit{limit}: the worker was "
                    "stopped at Slurm's warning (SIGUSR2)")
        ended = f"ended {state}" if state in ENDED_STATES else "was stopped by Slurm"
        return f"Slurm job {entry.job_id} {ended}: the worker got {signal_name}"

    def _record_results(self, entry: SlurmJob, state: str = "") -> dict[str, Any]:
        """The record of a job whose tasks returned, as the local launcher makes it."""
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
            record = worker_record(own, own_log, process.returncode, process.timed_out, False)
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
                return failed_repeat(record, log_path, number, repeat)
            records.append(record)
        if len(records) < repeat:  # a task that returned without running every process
            return self._lost(entry, f"Slurm job {entry.job_id}: {len(records)} of {repeat} "
                                     "processes ran")
        if repeat == 1:
            return records[0]
        combined = combine_processes(experiment, records)
        write_combined(log_path, combined)
        return combined

    def _lost(self, entry: SlurmJob, message: str, status: str = "failure") -> dict[str, Any]:
        """The record of an experiment whose job ended without its workers' verdict:
        what its log holds, with ``status`` and ``message``."""
        log_path = Path(entry.experiment["exp.log_file"])
        parsed = parse_log(log_path)[0] if log_path.is_file() else {}
        return _mark({**entry.experiment, **parsed}, log_path, status, message)

    def _cancel(self, entries: list[SlurmJob]) -> list[str]:
        """scancel the jobs of ``entries``: one call, naming each array once."""
        ids = sorted({entry.job_id.split("_")[0] for entry in entries})
        if ids:
            run_quiet(["scancel", *ids])
        return ids

    def _interrupt(self, jobs: dict[int, SlurmJob], finish: Finish) -> None:
        """After Ctrl-C: cancel the jobs, let their tasks stop their workers, then record
        those that had started as interrupted (the others are simply not run)."""
        ids = self._cancel(list(jobs.values()))
        if ids:
            self.report(f"interrupted: cancelled Slurm job(s) {safe_text(', '.join(ids))}")
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
                self._finish(jobs, entry, self._record_results(entry), finish)
            elif entry.started():
                record = self._lost(entry, "interrupted by the user (Ctrl-C or SIGTERM); "
                                           f"Slurm job {entry.job_id} cancelled", "interrupted")
                self._finish(jobs, entry, record, finish)


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
