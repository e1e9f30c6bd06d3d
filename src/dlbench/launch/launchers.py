"""The launchers of ``dlbench run --launcher``, registered in one place.

A launcher is a class with one entry point, :meth:`Launcher.run` (planned experiments
in, a :class:`~dlbench.launch.runner.SweepResult` out, every record committed to its
run directory's store), and one registration line at the end of this module: its
name, a line of help, where the class lives, and the command-line flags it alone
takes. The command line takes its ``--launcher`` choices, their help and those flags
from here without importing the classes; a class is imported when it runs a sweep.

Wrappers of the worker command (a container image, torchrun) are not launchers: they
change how one worker starts, under any launcher (:mod:`dlbench.launch.command`).

Adding a launcher::

    # dlbench/launch/dryrun.py
    class DryRun(Launcher):
        @classmethod
        def create(cls, options, report):
            return cls()

        def run(self, experiments):
            return SweepResult([Outcome({**e, "exp.status": "skipped"}, ran=False)
                                for e in experiments])

    # here
    register("dryrun", "run nothing", "dlbench.launch.dryrun:DryRun")
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlbench.launch.progress_bar import Reporter
from dlbench.plugins import PluginRegistry, load_class

if TYPE_CHECKING:
    from dlbench.launch.runner import SweepResult


class Launcher(ABC):
    """Runs a sweep's experiments somewhere, into their run directories' stores."""

    @classmethod
    @abstractmethod
    def create(cls, options: Mapping[str, Any], report: Reporter) -> Launcher:
        """A launcher set up from the values of its own flags (by ``dest``, None where not
        given); raise :class:`~dlbench.errors.DlbenchError` naming a bad flag."""

    def defaults(self) -> dict[str, Any]:
        """Parameters this launcher sets in a sweep that sets them neither as a parameter
        nor as a variable (``exp.rendezvous`` where nodes meet only once a job starts)."""
        return {}

    @abstractmethod
    def run(self, experiments: Sequence[Mapping[str, Any]]) -> SweepResult:
        """Run (or keep earlier results of, or skip) every experiment; outcomes in plan
        order."""

    def close(self) -> None:  # noqa: B027  (optional: nothing to release by default)
        """Release what the launcher holds open (stores)."""


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
         "dlbench.launch.runner:Runner")
register("slurm", "Slurm jobs through submitit (pip install dlbench[slurm])",
         "dlbench.launch.slurm.launcher:SlurmRunner", (
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
