"""The launchers of ``dlbench run --launcher``, registered in one place.

A launcher decides where the workers of a sweep run; the sweep loop
(:class:`~dlbench.launch.sweep.Sweep`) is given one when it is made, with an order
(:mod:`dlbench.launch.order`), and does the rest the same way for every launcher:
resume, the out-of-memory memo, signals, progress and the store. A launcher is a
class with one entry point, :meth:`Launcher.launch` (a batch of experiments in, each
one's record handed to ``finish`` as it ends), and one registration line at the end of
this module: its name, a line of help, where the class lives, and the command-line
flags it alone takes. The command line takes its ``--launcher`` choices, their help
and those flags from here without importing the classes; a class is imported when it
runs a sweep.

A :class:`ProcessLauncher` runs each worker process here and waits for it (the local
launcher): the sweep's order may then choose which process runs next (``--interleave``).
One that runs them elsewhere (a Slurm job) is a plain :class:`Launcher` and is given
``batch_size`` experiments at once.

Wrappers of the worker command (a container image, torchrun) are not launchers: they
change how one worker starts, under any launcher (:mod:`dlbench.launch.command`).

Adding a launcher::

    # dlbench/launch/dryrun.py
    class DryRun(Launcher):
        @classmethod
        def create(cls, options, report):
            return cls()

        def launch(self, batch, finish, context):
            for index, experiment in batch:
                finish(index, {**experiment, "exp.status": "skipped"}, 0.0)
            return False

    # here
    register("dryrun", "run nothing", "dlbench.launch.dryrun:DryRun")
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.config.run_params import repeat_count
from dlbench.launch.live import LiveStatus, Watch
from dlbench.launch.progress_bar import Progress, Reporter
from dlbench.launch.records import combine_processes, write_combined
from dlbench.launch.signals import SignalState
from dlbench.plugins import PluginRegistry, load_class

#: What a launcher calls with each experiment's record as it ends: its index in the
#: plan, the record, and the seconds it ran.
Finish = Callable[[int, dict[str, Any], float], None]
#: Runs one worker process of an experiment: (experiment, run directory, suffix of its
#: input file) -> (record, whether the sweep was interrupted).
RunProcess = Callable[[Mapping[str, Any], Path, str], tuple[dict[str, Any], bool]]


@dataclass(frozen=True)
class LaunchContext:
    """What a launcher gets of the sweep that runs it: the live status line, the
    sweep's progress (its titles of experiments) and its signal state (a launcher
    that catches Ctrl-C holds the next one off while it records)."""

    live: LiveStatus
    progress: Progress | None = None
    signals: SignalState | None = None

    @classmethod
    def quiet(cls, report: Reporter) -> LaunchContext:
        """A context outside a sweep: no live status, no progress, no signals."""
        return cls(LiveStatus(report, None, 0.0))

    def watch(self, experiment: Mapping[str, Any],
              workers: Sequence[tuple[Mapping[str, Any], Path]]) -> Watch:
        """A watch on the just started workers of ``experiment`` (each one's experiment
        and log): its live status, its silences and its exp.timeout."""
        title = (self.progress.title(experiment) if self.progress is not None
                 else str(experiment.get("exp.model")))
        return Watch(self.live, title, workers)


class Launcher(ABC):
    """Starts a sweep's experiments somewhere and waits for them."""

    #: How many experiments :meth:`launch` is given at once: one, so that each starts
    #: after the one before it ended (and its out-of-memory failure can skip the next);
    #: a launcher whose jobs queue elsewhere takes them all.
    batch_size: int = 1
    #: Whether the launcher waits for the workers itself, reading their progress, so
    #: that exp.timeout=auto moves with it. One that runs them elsewhere (a Slurm job)
    #: needs a number up front (:func:`~dlbench.launch.deadline.timeout_bound`).
    watches_workers: bool = False

    @classmethod
    @abstractmethod
    def create(cls, options: Mapping[str, Any], report: Reporter) -> Launcher:
        """A launcher set up from the values of its own flags (by ``dest``, None where not
        given); raise :class:`~dlbench.errors.DlbenchError` naming a bad flag."""

    def defaults(self) -> dict[str, Any]:
        """Parameters this launcher sets in a sweep that sets them neither as a parameter
        nor as a variable (``exp.rendezvous`` where nodes meet only once a job starts)."""
        return {}

    def check(self, experiments: Sequence[Mapping[str, Any]]) -> None:  # noqa: B027
        """Refuse, before anything runs, a sweep this launcher cannot run (nothing by
        default)."""

    @abstractmethod
    def launch(self, batch: Sequence[tuple[int, Mapping[str, Any]]], finish: Finish,
               context: LaunchContext) -> bool:
        """Start the experiments of ``batch`` (index in the plan, experiment), wait for
        them, and hand each one's record to ``finish`` as it ends; True when the sweep
        was interrupted."""

    def close(self) -> None:  # noqa: B027  (optional: nothing to release by default)
        """Release what the launcher holds open (a fork server)."""


class ProcessLauncher(Launcher):
    """A launcher that runs each worker process of an experiment here, one at a time,
    and waits for it: the sweep's order decides which process runs next."""

    watches_workers = True

    @abstractmethod
    def run_process(self, experiment: Mapping[str, Any], out_dir: Path, suffix: str,
                    context: LaunchContext) -> tuple[dict[str, Any], bool]:
        """Run one worker process of ``experiment`` (its input file named with
        ``suffix``, its log ``exp.log_file``) and return its record, and True when the
        sweep was interrupted meanwhile."""

    def process_runner(self, context: LaunchContext) -> RunProcess:
        """:meth:`run_process` within ``context``."""
        return lambda experiment, out_dir, suffix: self.run_process(
            experiment, out_dir, suffix, context)

    def launch(self, batch: Sequence[tuple[int, Mapping[str, Any]]], finish: Finish,
               context: LaunchContext) -> bool:
        """Each experiment in turn, its ``exp.repeat`` processes one after another."""
        run = self.process_runner(context)
        for index, experiment in batch:
            started = time.monotonic()
            record, interrupted = run_repeats(experiment, run)
            finish(index, record, time.monotonic() - started)
            if interrupted:
                return True
        return False


def run_repeats(experiment: Mapping[str, Any], run: RunProcess) -> tuple[dict[str, Any], bool]:
    """``experiment`` measured by its ``exp.repeat`` processes one after another, each
    with its own log ``<exp.log_file>.k``; ``exp.log_file`` gets the combined record. The
    first process that does not end ok ends the experiment, with its status and reason."""
    out_dir = Path(experiment["exp.out_dir"])
    repeat = repeat_count(experiment)
    if repeat <= 1:
        return run(experiment, out_dir, "")
    log_path = Path(experiment["exp.log_file"])
    processes: list[dict[str, Any]] = []
    for number in range(1, repeat + 1):
        own = {**experiment, "exp.log_file": f"{log_path}.{number}"}
        record, interrupted = run(own, out_dir, f".{number}")
        if interrupted or record["exp.status"] != "ok":
            failed = failed_repeat(record, log_path, number, repeat)
            return failed, interrupted
        processes.append(record)
    combined = combine_processes(experiment, processes)
    write_combined(log_path, combined)
    return combined, False


def failed_repeat(record: Mapping[str, Any], log_path: Path, number: int,
                  repeat: int) -> dict[str, Any]:
    """The experiment's record when its process ``number`` of ``repeat`` failed: that
    process's, under the experiment's log (written there), its message saying which."""
    failed = {**record, "exp.log_file": str(log_path),
              "exp.status_msg": f"process {number} of {repeat}: {record['exp.status_msg']}"}
    write_combined(log_path, failed)
    return failed


@dataclass(frozen=True)
class Flag:
    """A command-line flag that belongs to one launcher: ``--<name>`` with its
    ``metavar`` and help; ``repeat``: the flag may be given several times."""

    name: str
    metavar: str
    help: str
    repeat: bool = False

    @property
    def dest(self) -> str:
        """The attribute argparse stores the flag's value in."""
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class LauncherEntry:
    """A registered launcher: its name, a line of help, its class (or where to import
    it from, ``"package.module:Class"``), and the flags it alone takes."""

    name: str
    help: str
    implementation: str | type[Launcher]
    flags: tuple[Flag, ...] = ()

    def create(self, options: Mapping[str, Any], report: Reporter) -> Launcher:
        """The launcher, set up from its flags' values (see :meth:`Launcher.create`)."""
        return load_class(self.implementation, Launcher).create(options, report)


_REGISTRY: PluginRegistry[LauncherEntry] = PluginRegistry("launcher")


def register(
    name: str, help: str, implementation: str | type[Launcher], flags: Sequence[Flag] = ()
) -> LauncherEntry:
    """Add a launcher; ``ValueError`` when ``name`` or one of its flags is taken."""
    taken = {flag.name for entry in _REGISTRY.entries() for flag in entry.flags}
    # A taken name is the registry's to refuse, and is refused before taken flags.
    if name not in _REGISTRY and taken & {flag.name for flag in flags}:
        raise ValueError(f"launcher {name!r}: flags {sorted(taken)} are taken")
    return _REGISTRY.add(name, LauncherEntry(name, help, implementation, tuple(flags)))


def unregister(name: str) -> None:
    """Remove a launcher (a test's own, once the test is done)."""
    _REGISTRY.remove(name)


def launchers() -> list[LauncherEntry]:
    """Every registered launcher, in registration order (the first is the default)."""
    return _REGISTRY.entries()


def launcher(name: str) -> LauncherEntry:
    """The registered launcher ``name``; ``ValueError`` for an unknown one."""
    return _REGISTRY.get(name)


register("local", "one worker after another on this machine (default)",
         "dlbench.launch.local.launcher:LocalLauncher")
register("slurm", "Slurm jobs through submitit (pip install dlbench[slurm])",
         "dlbench.launch.slurm.launcher:SlurmLauncher", (
             Flag("slurm-partition", "P", "partition of the jobs"),
             Flag("slurm-gres", "G", "generic resources per node, e.g. gpu:1"),
             Flag("slurm-time", "TIME", "time limit of a job, MINUTES or HH:MM:SS (default: "
                  "the longest exp.timeout x exp.repeat plus 5 minutes)"),
             Flag("slurm-array-parallelism", "K",
                  "at most K experiments of the job array at once"),
             Flag("slurm-account", "A", "account charged for the jobs"),
             Flag("slurm-option", "NAME[=VALUE]",
                  "any other sbatch option, e.g. cpus-per-task=8 or exclusive", repeat=True),
         ))
