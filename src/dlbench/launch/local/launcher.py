"""The local launcher: each worker process on this machine, one at a time.

For each process the launcher writes the experiment's resolved parameters to
``<out>/experiments/<exp.id>.json``, starts the worker (forked by the fork server
where it suits: :mod:`dlbench.launch.forkserver.client`) with its output going to the
experiment's log, waits for it under ``exp.timeout`` while showing its progress, and
turns the log into a record. The sweep loop (:class:`~dlbench.launch.sweep.Sweep`)
decides which process runs next and commits the records.

With ``exp.repeat=N`` the experiment is measured by N independent worker processes
(as pyperf does: a fresh process is a fresh draw of memory layout, clocks and
placement). Process k writes ``<exp.log_file>.k`` (outside the ``*.log`` pattern that
``dlbench parse`` reads in a directory); ``exp.log_file`` then gets the one combined
record (:func:`~dlbench.measure.combine.combine_repeats`) and the store gets that
record (:func:`~dlbench.launch.launchers.run_repeats`).

With ``exp.parallel_jobs=N`` the experiment is N copies run at the same time, each
on its own share of the node (:mod:`dlbench.launch.copies.copies`); ``exp.log_file``
and the store get the one combined record, whose throughput is the copies' sum.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from dlbench.config.run_params import copy_count
from dlbench.launch.command import note_worker_env, worker_argv, worker_env, write_input
from dlbench.launch.copies.copies import (
    copies_outcome,
    copy_env,
    copy_experiment,
    plan_shares,
)
from dlbench.launch.copies.limits import Limits
from dlbench.launch.deadline import AUTO
from dlbench.launch.forkserver.client import ForkedWorker, Forks
from dlbench.launch.launchers import LaunchContext, ProcessLauncher
from dlbench.launch.live import Watch
from dlbench.launch.local.process import WorkerProcess, kill_worker, start_worker
from dlbench.launch.progress_bar import Reporter
from dlbench.launch.records import rank_logs, worker_record, write_combined
from dlbench.launch.signals import hold_interrupts

__all__ = ["LocalLauncher"]


class LocalLauncher(ProcessLauncher):
    """Runs each worker process on this machine and waits for it; ``python``: the
    interpreter of the workers (default: this one's)."""

    def __init__(self, report: Reporter = print, python: str | None = None) -> None:
        self.report = report
        self.python = python
        self._forks = Forks(report)  # exp.fork_server=auto: launch.forkserver.client

    @classmethod
    def create(cls, options: Mapping[str, Any], report: Reporter) -> LocalLauncher:
        """The local launcher: it takes no flags of its own."""
        return cls(report=report)

    def close(self) -> None:
        """Stop the fork server, if one runs."""
        self._forks.close()

    def run_process(self, experiment: Mapping[str, Any], out_dir: Path, suffix: str,
                    context: LaunchContext) -> tuple[dict[str, Any], bool]:
        """One worker process, or with ``exp.parallel_jobs``, its copies at once."""
        if copy_count(experiment) > 1:
            return self._run_copies(experiment, out_dir, suffix, context)
        return self._run_single(experiment, out_dir, suffix, context)

    def _run_single(self, experiment: Mapping[str, Any], out_dir: Path, suffix: str,
                    context: LaunchContext) -> tuple[dict[str, Any], bool]:
        exp_json = write_input(experiment, out_dir, suffix)
        log_path = Path(experiment["exp.log_file"])
        log_path.parent.mkdir(parents=True, exist_ok=True)
        for stale in rank_logs(log_path):  # an earlier run's replicas
            stale.unlink()
        interrupted = timed_out = False
        log_path.unlink(missing_ok=True)  # a rerun starts a fresh log
        process: WorkerProcess | None = None
        watch: Watch | None = None
        # Appending: with a plain write handle the worker's output would go at the
        # handle's own offset, over the lines its log writer appended.
        with open(log_path, "ab") as log:
            try:
                process = self._forks.start_worker(experiment, exp_json, log, self.python)
                watch = context.watch(experiment, [(experiment, log_path)])
                timed_out = watch.wait([process])[1]
                if timed_out:
                    kill_worker(process)
            except BaseException as error:
                interrupted = isinstance(error, KeyboardInterrupt)
                if interrupted:
                    hold_interrupts(context.signals)
                if process is not None:
                    kill_worker(process)
                if not interrupted:
                    raise
        if isinstance(process, ForkedWorker) and process.lost and not interrupted:
            # Its server died under it (and took it along): not the experiment's doing.
            self._forks.fail("the fork server died during an experiment")
            return self._run_single(experiment, out_dir, suffix, context)
        code = -2 if process is None or process.returncode is None else process.returncode
        return _worker_record(experiment, log_path, code, timed_out, interrupted,
                              watch.ran if watch is not None else 0.0), interrupted

    def _run_copies(self, experiment: Mapping[str, Any], out_dir: Path, suffix: str,
                    context: LaunchContext) -> tuple[dict[str, Any], bool]:
        """``exp.parallel_jobs``: every copy at once, each held to its share of the node
        (:mod:`dlbench.launch.copies.copies`); the first copy that fails stops the others."""
        shares = plan_shares(experiment)
        processes: list[subprocess.Popen[bytes]] = []
        failed: int | None = None
        watch: Watch | None = None
        interrupted = timed_out = False
        with Limits(experiment, shares) as limits, ExitStack() as logs:
            copies = [copy_experiment(experiment, share, limits.note(share))
                      for share in shares]
            try:
                for share, copy in zip(shares, copies, strict=True):
                    exp_json = write_input(copy, out_dir, f"{suffix}.copy{share.number}")
                    copy_log = Path(copy["exp.log_file"])
                    copy_log.parent.mkdir(parents=True, exist_ok=True)
                    copy_log.unlink(missing_ok=True)
                    # Appending: the worker's output and its log lines share the file.
                    log = logs.enter_context(open(copy_log, "ab"))
                    env = copy_env(worker_env(copy), share)
                    note_worker_env(log, env)
                    try:
                        processes.append(start_worker(
                            worker_argv(copy, exp_json, self.python), log, env,
                            limits.setup(share)))
                    except (OSError, subprocess.SubprocessError) as error:
                        log.write(f"dlbench: cannot start copy {share.number}: {error}\n".encode())
                        log.flush()
                        failed = len(processes)
                        break
                else:
                    watch = context.watch(experiment, [(copy, Path(copy["exp.log_file"]))
                                                       for copy in copies])
                    failed, timed_out = watch.wait(processes)
            except KeyboardInterrupt:
                interrupted = True
                hold_interrupts(context.signals)
            finally:
                for process in processes:
                    kill_worker(process)
            codes = [p.returncode for p in processes] + [1] * (len(copies) - len(processes))
            ran = watch.ran if watch is not None else 0.0
            records = [_worker_record(copy, Path(copy["exp.log_file"]), code, timed_out,
                                      interrupted, ran)
                       for copy, code in zip(copies, codes, strict=True)]
            notes = [limits.out_of_memory(share, str(r["exp.status_msg"])) for share, r in
                     zip(shares, records, strict=True)]
        record = copies_outcome(experiment, records, failed, notes, limits.mechanism)
        write_combined(Path(experiment["exp.log_file"]), record)
        return record, interrupted


def _worker_record(experiment: Mapping[str, Any], log_path: Path, returncode: int,
                   timed_out: bool, interrupted: bool, ran: float) -> dict[str, Any]:
    """The record of one worker process; out of an ``auto`` timeout, its message says
    how long (``ran`` seconds) the worker ran (the record keeps ``exp.timeout=auto``)."""
    shown = experiment
    if timed_out and experiment.get("exp.timeout") == AUTO:
        shown = {**experiment, "exp.timeout": round(ran)}
    record = worker_record(shown, log_path, returncode, timed_out, interrupted)
    record["exp.timeout"] = experiment["exp.timeout"]
    return record
