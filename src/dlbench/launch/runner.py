"""Run a planned sweep: one fresh worker process per experiment, one after another.

For each experiment the runner writes the resolved parameters to
``<out>/experiments/<exp.id>.json``, starts the worker (forked by the fork server
where it suits: :mod:`dlbench.launch.forkserver.client`) with its output going to the
experiment's log, waits for it under ``exp.timeout``, turns the log into a record and
commits it to the run directory's store. Whatever happens to one worker (an
exception, a crash, a signal, a hang, a NaN loss) marks only its own experiment, and
the sweep goes on. Running the same sweep into the same run directory resumes it,
following ``exp.rerun``. Larger batches of a configuration that ran out of memory are
skipped (:mod:`dlbench.launch.oom_memo`); SIGUSR1 stops the sweep after the running
experiment, Ctrl-C and SIGTERM interrupt it (:mod:`dlbench.launch.signals`).

With ``exp.repeat=N`` the experiment is measured by N independent worker processes,
one after another (as pyperf does: a fresh process is a fresh draw of memory layout,
clocks and placement). Process k writes ``<exp.log_file>.k`` (outside the ``*.log``
pattern that ``dlbench parse`` reads in a directory); ``exp.log_file`` then gets the
one combined record (:func:`~dlbench.measure.stats.combine_repeats`) and the store
gets that record. The first process that does not end ok ends the experiment, with
its status and its reason.

With ``exp.parallel_jobs=N`` the experiment is N copies run at the same time, each
on its own share of the node (:mod:`dlbench.launch.copies.copies`); ``exp.log_file``
and the store get the one combined record, whose throughput is the copies' sum.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlbench.config.registry import varying_parameters
from dlbench.config.run_params import copy_count
from dlbench.launch.command import worker_argv, worker_env
from dlbench.launch.copies.copies import (
    copies_outcome,
    copy_env,
    copy_experiment,
    plan_shares,
)
from dlbench.launch.copies.limits import Limits
from dlbench.launch.deadline import AUTO, timeout_bound
from dlbench.launch.forkserver.client import ForkedWorker, Forks
from dlbench.launch.interleave import run_interleaved
from dlbench.launch.launchers import Launcher
from dlbench.launch.live import LiveStatus, Watch, plain_seconds
from dlbench.launch.local import WorkerProcess, kill_worker, start_worker
from dlbench.launch.oom_memo import OOM_QUERY, OutOfMemoryMemo, skipped_record
from dlbench.launch.progress_bar import Progress, Reporter, stability_note
from dlbench.launch.records import combine_processes, rank_logs, worker_record, write_combined
from dlbench.launch.rundir_lock import lock_run_directories
from dlbench.launch.signals import SignalState, hold_interrupts, sweep_signals
from dlbench.results.export import write_atomically
from dlbench.results.store import Store

__all__ = ["Finish", "Outcome", "Progress", "Reporter", "Runner", "SweepResult",
           "combine_processes", "rank_logs", "should_run", "stability_note",
           "write_combined", "write_input"]

#: What a launcher calls with each experiment's record as it ends: its index in the
#: plan, the record, and the seconds it ran.
Finish = Callable[[int, dict[str, Any], float], None]


@dataclass
class Outcome:
    """What became of one experiment of the sweep."""

    record: dict[str, Any]
    ran: bool  # False when an earlier result was kept (exp.rerun) or it was skipped
    seconds: float = 0.0
    skipped: bool = False  # not run: a smaller batch ran out of memory (launch.oom_memo)

    @property
    def status(self) -> str:
        """The experiment's ``exp.status``."""
        return str(self.record.get("exp.status", ""))


@dataclass
class SweepResult:
    """Every experiment's outcome, in plan order; ``interrupted`` after Ctrl-C/SIGTERM,
    ``stopped`` after SIGUSR1 (the experiments after the last one here never started)."""

    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False
    stopped: bool = False

    @property
    def failed(self) -> list[Outcome]:
        """Outcomes that did not end ok."""
        return [o for o in self.outcomes if o.status != "ok"]


def should_run(experiment: Mapping[str, Any], earlier: Mapping[str, Any] | None) -> bool:
    """Whether to run ``experiment`` given the record an earlier run left (or None),
    following its ``exp.rerun`` policy."""
    policy = experiment["exp.rerun"]
    if earlier is None or policy == "always":
        return True
    if policy == "never":
        return False
    return earlier.get("exp.status") != "ok"  # onfail


def write_input(experiment: Mapping[str, Any], out_dir: Path, suffix: str = "") -> Path:
    """Write ``experiment`` atomically as the worker's input,
    ``<out_dir>/experiments/<exp.id><suffix>.json``, and return its path."""
    path = out_dir / "experiments" / f"{experiment['exp.id']}{suffix}.json"
    write_atomically(path, json.dumps(experiment, indent=1, sort_keys=True).encode("utf-8"))
    return path


class Runner(Launcher):
    """Runs experiments one at a time into their run directories' stores: the
    ``local`` launcher."""

    def __init__(self, report: Reporter = print, python: str | None = None) -> None:
        self.report = report
        self.python = python
        self._stores: dict[Path, Store] = {}
        self._memos: dict[Path, OutOfMemoryMemo] = {}
        self._signals: SignalState | None = None
        # Checked here, when the launcher is made, before anything is planned or written.
        self._plain_seconds = plain_seconds(os.environ)
        self._live: LiveStatus | None = None  # the running experiment's status (run())
        self._progress: Progress | None = None  # the sweep's (run())
        #: ``--interleave``: the repeats of the sweep round-robin (launch.interleave).
        self.interleave = False
        self._forks = Forks(self.report)  # exp.fork_server=auto: launch.forkserver.client

    #: The record of a worker process from its log (kept as a method for subclasses).
    _record = staticmethod(worker_record)

    @classmethod
    def create(cls, options: Mapping[str, Any], report: Reporter) -> Runner:
        """The local runner: it takes no flags of its own."""
        return cls(report=report)

    def store(self, out_dir: Path) -> Store:
        """The store of run directory ``out_dir`` (opened once)."""
        if out_dir not in self._stores:
            out_dir.mkdir(parents=True, exist_ok=True)
            self._stores[out_dir] = Store.in_directory(out_dir)
        return self._stores[out_dir]

    def close(self) -> None:
        """Close every store opened, and stop the fork server."""
        self._forks.close()
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def memo(self, out_dir: Path) -> OutOfMemoryMemo:
        """The failed-batch memo of run directory ``out_dir``, from its store."""
        if out_dir not in self._memos:
            self._memos[out_dir] = OutOfMemoryMemo(self.store(out_dir).records(where=OOM_QUERY))
        return self._memos[out_dir]

    #: How many experiments :meth:`launch` is given at once: one, so that each starts
    #: after the one before it ended (and its out-of-memory failure can skip the next).
    batch_size = 1

    def run(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        """Run (or keep earlier results of, or skip) every experiment, in order, until
        the end, an interrupt, or a SIGUSR1 stop request. Each run directory has one
        runner at a time: PathError, before anything starts, when another holds one."""
        with lock_run_directories(Path(e["exp.out_dir"]) for e in experiments):
            return self._run_locked(experiments)

    def _run_locked(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        self.check(experiments)
        result = SweepResult()
        self._live = live = LiveStatus.for_stderr(self.report, self._plain_seconds)
        # The live status line is taken off the terminal before each finished line.
        progress = Progress(len(experiments), live.wrap(self.report),
                            varying_parameters(experiments))
        self._progress = progress
        outcomes: dict[int, Outcome] = {}

        def settle(index: int, outcome: Outcome) -> None:
            outcomes[index] = outcome
            progress.done(outcome)

        def finish(index: int, record: dict[str, Any], seconds: float) -> None:
            out_dir = Path(record["exp.out_dir"])
            self.store(out_dir).put(record)
            self.memo(out_dir).note(record)
            settle(index, Outcome(record, ran=True, seconds=seconds))

        queue = list(enumerate(experiments))
        with sweep_signals() as self._signals:
            try:
                while queue and not result.interrupted:
                    if self._signals.stop_requested:
                        result.stopped = True
                        break
                    batch: list[tuple[int, Mapping[str, Any]]] = []
                    size = len(queue) if self.interleave else self.batch_size
                    while queue and len(batch) < size:
                        index, experiment = queue.pop(0)
                        kept = self._kept_or_skipped(experiment)
                        if kept is None:
                            batch.append((index, self._timed(experiment)))
                        else:
                            settle(index, kept)
                    if batch:
                        result.interrupted = self.launch(batch, finish)
            finally:
                self._signals = None
        result.outcomes = [outcomes[i] for i in sorted(outcomes)]
        return result

    def check(self, experiments: Sequence[Mapping[str, Any]]) -> None:
        """Refuse, before anything runs, a sweep this launcher cannot run."""

    @property
    def watches_workers(self) -> bool:
        """Whether this launcher waits for the workers itself, reading their progress
        (this class's :meth:`launch`), so that exp.timeout=auto moves with it. One that
        runs them elsewhere (a Slurm job) needs a number up front."""
        return type(self).launch is Runner.launch

    def _timed(self, experiment: Mapping[str, Any]) -> Mapping[str, Any]:
        """``experiment`` as it is launched: exp.timeout=auto becomes its bound (a
        number of seconds, :func:`~dlbench.launch.deadline.timeout_bound`) for a launcher
        that cannot watch the workers."""
        if self.watches_workers or experiment.get("exp.timeout") != AUTO:
            return experiment
        return {**experiment, "exp.timeout": timeout_bound(experiment)}

    def _kept_or_skipped(self, experiment: Mapping[str, Any]) -> Outcome | None:
        """The outcome of an experiment that does not run (an earlier result is kept,
        following exp.rerun, or a smaller batch ran out of memory), else None."""
        out_dir = Path(experiment["exp.out_dir"])
        store = self.store(out_dir)
        earlier = store.get(str(experiment["exp.id"]))
        if not should_run(experiment, earlier):
            assert earlier is not None
            return Outcome(record=dict(earlier), ran=False)
        blocker = self.memo(out_dir).blocker(experiment)
        if blocker is None:
            return None
        record = skipped_record(experiment, blocker)
        write_combined(Path(experiment["exp.log_file"]), record)
        store.put(record)
        return Outcome(record, ran=False, skipped=True)

    def launch(self, batch: Sequence[tuple[int, Mapping[str, Any]]], finish: Finish) -> bool:
        """Start the experiments of ``batch`` (index in the plan, experiment), wait for
        them, and hand each one's record to ``finish`` as it ends; True when the sweep
        was interrupted. Here: the one experiment, as local worker processes (with
        ``--interleave``, the whole sweep)."""
        if self.interleave:
            return run_interleaved(batch, self._process_runner, finish)
        for index, experiment in batch:
            started = time.monotonic()
            record, interrupted = self._run_one(experiment, Path(experiment["exp.out_dir"]))
            finish(index, record, time.monotonic() - started)
            if interrupted:
                return True
        return False

    def _process_runner(
        self, experiment: Mapping[str, Any]
    ) -> Callable[..., tuple[dict[str, Any], bool]]:
        return self._run_copies if copy_count(experiment) > 1 else self._run_process

    def _run_one(self, experiment: Mapping[str, Any], out_dir: Path) -> tuple[dict[str, Any], bool]:
        repeat = int(experiment.get("exp.repeat", 1) or 1)
        run = self._process_runner(experiment)
        if repeat <= 1:
            return run(experiment, out_dir)
        log_path = Path(experiment["exp.log_file"])
        processes: list[dict[str, Any]] = []
        for number in range(1, repeat + 1):
            own = {**experiment, "exp.log_file": f"{log_path}.{number}"}
            record, interrupted = run(own, out_dir, f".{number}")
            if interrupted or record["exp.status"] != "ok":
                failed = {**record, "exp.log_file": str(log_path),
                          "exp.status_msg": f"process {number} of {repeat}: "
                                            f"{record['exp.status_msg']}"}
                write_combined(log_path, failed)
                return failed, interrupted
            processes.append(record)
        combined = combine_processes(experiment, processes)
        write_combined(log_path, combined)
        return combined, False

    def _run_process(
        self, experiment: Mapping[str, Any], out_dir: Path, suffix: str = ""
    ) -> tuple[dict[str, Any], bool]:
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
                watch = self._watch(experiment, [(experiment, log_path)])
                timed_out = watch.wait([process])[1]
                if timed_out:
                    kill_worker(process)
            except BaseException as error:
                interrupted = isinstance(error, KeyboardInterrupt)
                if interrupted:
                    hold_interrupts(self._signals)
                if process is not None:
                    kill_worker(process)
                if not interrupted:
                    raise
        if isinstance(process, ForkedWorker) and process.lost and not interrupted:
            # Its server died under it (and took it along): not the experiment's doing.
            self._forks.fail("the fork server died during an experiment")
            return self._run_process(experiment, out_dir, suffix)
        code = -2 if process is None or process.returncode is None else process.returncode
        return self._worker_record(experiment, log_path, code, timed_out, interrupted,
                                   watch.ran if watch is not None else 0.0), interrupted

    def _watch(self, experiment: Mapping[str, Any],
               workers: Sequence[tuple[Mapping[str, Any], Path]]) -> Watch:
        """A watch on the just started workers of ``experiment`` (each one's experiment
        and log): its live status, its silences and its exp.timeout."""
        live = self._live or LiveStatus(self.report, None, 0.0)  # outside run(): quiet
        title = (self._progress.title(experiment) if self._progress is not None
                 else str(experiment.get("exp.model")))
        return Watch(live, title, workers)

    def _worker_record(self, experiment: Mapping[str, Any], log_path: Path, returncode: int,
                       timed_out: bool, interrupted: bool, ran: float) -> dict[str, Any]:
        """The record of one worker process; out of an ``auto`` timeout, its message says
        how long (``ran`` seconds) the worker ran (the record keeps ``exp.timeout=auto``)."""
        shown = experiment
        if timed_out and experiment.get("exp.timeout") == AUTO:
            shown = {**experiment, "exp.timeout": round(ran)}
        record = self._record(shown, log_path, returncode, timed_out, interrupted)
        record["exp.timeout"] = experiment["exp.timeout"]
        return record

    def _run_copies(
        self, experiment: Mapping[str, Any], out_dir: Path, suffix: str = ""
    ) -> tuple[dict[str, Any], bool]:
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
                    try:
                        processes.append(start_worker(
                            worker_argv(copy, exp_json, self.python), log,
                            copy_env(worker_env(copy), share), limits.setup(share)))
                    except (OSError, subprocess.SubprocessError) as error:
                        log.write(f"dlbench: cannot start copy {share.number}: {error}\n".encode())
                        log.flush()
                        failed = len(processes)
                        break
                else:
                    watch = self._watch(experiment, [(copy, Path(copy["exp.log_file"]))
                                                     for copy in copies])
                    failed, timed_out = watch.wait(processes)
            except KeyboardInterrupt:
                interrupted = True
                hold_interrupts(self._signals)
            finally:
                for process in processes:
                    kill_worker(process)
            codes = [p.returncode for p in processes] + [1] * (len(copies) - len(processes))
            ran = watch.ran if watch is not None else 0.0
            records = [self._worker_record(copy, Path(copy["exp.log_file"]), code, timed_out,
                                           interrupted, ran)
                       for copy, code in zip(copies, codes, strict=True)]
            notes = [limits.out_of_memory(share, str(r["exp.status_msg"])) for share, r in
                     zip(shares, records, strict=True)]
        record = copies_outcome(experiment, records, failed, notes, limits.mechanism)
        write_combined(Path(experiment["exp.log_file"]), record)
        return record, interrupted
