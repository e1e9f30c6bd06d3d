"""Run a planned sweep: the loop over its experiments, whatever the launcher.

A :class:`Sweep` is made with a launcher (:mod:`dlbench.launch.launchers`: where the
workers run, one fresh worker process per experiment) and an order
(:mod:`dlbench.launch.order`: which process runs next). For each experiment it keeps
an earlier result (following ``exp.rerun``: running the same sweep into the same run
directory resumes it) or skips a larger batch of a configuration that ran out of memory
(:mod:`dlbench.launch.oom_memo`); it hands the others to the launcher, and commits each
record to its run directory's store as it ends. Whatever happens to one worker (an
exception, a crash, a signal, a hang, a NaN loss) marks only its own experiment, and the
sweep goes on. SIGUSR1 stops the sweep after the running experiment, Ctrl-C and SIGTERM
interrupt it (:mod:`dlbench.launch.signals`); one sweep at a time holds a run directory
(:mod:`dlbench.launch.rundir_lock`).

Usage::

    sweep = Sweep(LocalLauncher(report), SEQUENTIAL, report)
    try:
        result = sweep.run(experiments)
    finally:
        sweep.close()
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dlbench.config.identity import varying_parameters
from dlbench.launch.deadline import AUTO, timeout_bound
from dlbench.launch.launchers import LaunchContext, Launcher
from dlbench.launch.live import LiveStatus, plain_seconds
from dlbench.launch.oom_memo import OOM_QUERY, OutOfMemoryMemo, skipped_record
from dlbench.launch.order import SEQUENTIAL, Order
from dlbench.launch.outcome import Outcome, SweepResult
from dlbench.launch.progress_bar import Progress, Reporter
from dlbench.launch.records import write_combined
from dlbench.launch.rundir_lock import lock_run_directories
from dlbench.launch.signals import sweep_signals
from dlbench.results.store import Store

__all__ = ["Outcome", "Sweep", "SweepResult", "should_run"]


def should_run(experiment: Mapping[str, Any], earlier: Mapping[str, Any] | None) -> bool:
    """Whether to run ``experiment`` given the record an earlier run left (or None),
    following its ``exp.rerun`` policy."""
    policy = experiment["exp.rerun"]
    if earlier is None or policy == "always":
        return True
    if policy == "never":
        return False
    return earlier.get("exp.status") != "ok"  # onfail


class Sweep:
    """Runs a sweep's experiments with ``launcher``, in ``order``, into their run
    directories' stores; ``report`` gets the progress lines. The sweep owns the launcher:
    :meth:`close` closes it."""

    def __init__(self, launcher: Launcher, order: Order = SEQUENTIAL,
                 report: Reporter = print) -> None:
        if not order.supports(launcher):
            raise ValueError(f"{type(launcher).__name__} cannot run a sweep in the "
                             f"{order.name} order")
        self.launcher = launcher
        self.order = order
        self.report = report
        self._stores: dict[Path, Store] = {}
        self._memos: dict[Path, OutOfMemoryMemo] = {}
        # Checked here, when the sweep is made, before anything is planned or written.
        self._plain_seconds = plain_seconds(os.environ)

    def store(self, out_dir: Path) -> Store:
        """The store of run directory ``out_dir`` (opened once)."""
        if out_dir not in self._stores:
            out_dir.mkdir(parents=True, exist_ok=True)
            self._stores[out_dir] = Store.in_directory(out_dir)
        return self._stores[out_dir]

    def close(self) -> None:
        """Close every store opened, and the launcher."""
        self.launcher.close()
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def memo(self, out_dir: Path) -> OutOfMemoryMemo:
        """The failed-batch memo of run directory ``out_dir``, from its store."""
        if out_dir not in self._memos:
            self._memos[out_dir] = OutOfMemoryMemo(self.store(out_dir).records(where=OOM_QUERY))
        return self._memos[out_dir]

    def run(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        """Run (or keep earlier results of, or skip) every experiment, in order, until
        the end, an interrupt, or a SIGUSR1 stop request. Each run directory has one
        sweep at a time: PathError, before anything starts, when another holds one."""
        with lock_run_directories(Path(e["exp.out_dir"]) for e in experiments):
            return self._run_locked(experiments)

    def _run_locked(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        self.launcher.check(experiments)
        result = SweepResult()
        live = LiveStatus.for_stderr(self.report, self._plain_seconds)
        # The live status line is taken off the terminal before each finished line.
        progress = Progress(len(experiments), live.wrap(self.report),
                            varying_parameters(experiments))
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
        size = self.order.batch_size(self.launcher)
        with sweep_signals() as signals:
            context = LaunchContext(live, progress, signals)
            while queue and not result.interrupted:
                if signals.stop_requested:
                    result.stopped = True
                    break
                batch: list[tuple[int, Mapping[str, Any]]] = []
                while queue and len(batch) < size:
                    index, experiment = queue.pop(0)
                    kept = self._kept_or_skipped(experiment)
                    if kept is None:
                        batch.append((index, self._timed(experiment)))
                    else:
                        settle(index, kept)
                if batch:
                    result.interrupted = self.order.launch(self.launcher, batch, finish,
                                                           context)
        result.outcomes = [outcomes[i] for i in sorted(outcomes)]
        return result

    def _timed(self, experiment: Mapping[str, Any]) -> Mapping[str, Any]:
        """``experiment`` as it is launched: exp.timeout=auto becomes its bound (a
        number of seconds, :func:`~dlbench.launch.deadline.timeout_bound`) for a launcher
        that cannot watch the workers."""
        if self.launcher.watches_workers or experiment.get("exp.timeout") != AUTO:
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
