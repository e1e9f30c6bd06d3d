"""The order in which a sweep runs its worker processes: :data:`SEQUENTIAL` (the
default) or :data:`INTERLEAVED` (``dlbench run --interleave``).

Sequential: each experiment's ``exp.repeat`` processes one after another, then the
next experiment; the launcher is given ``batch_size`` experiments at a time (one
locally, every one for a Slurm job array).

Interleaved: on a shared machine the speed drifts over minutes, so two
configurations measured an hour apart differ by the drift as well as by themselves.
Interleaved, pass k runs process k of every experiment of the sweep, in plan order,
before pass k+1: configurations A and B are measured A1 B1 A2 B2 ..., each pair
minutes apart at most, and a drift hits both alike. Each experiment's processes are
then combined exactly as without interleaving
(:func:`~dlbench.launch.records.combine_processes`); its record says
``results.repeat_order=interleaved``, which tells ``dlbench compare`` that process k
of A and process k of B ran side by side and may be compared pair by pair. Only a
:class:`~dlbench.launch.launchers.ProcessLauncher` (one that runs each process here)
can be told which process runs next.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dlbench.config.run_params import repeat_count
from dlbench.launch.launchers import (
    Finish,
    LaunchContext,
    Launcher,
    ProcessLauncher,
    RunProcess,
    failed_repeat,
)
from dlbench.launch.records import combine_processes, write_combined
from dlbench.results.keys.table import REPEAT_ORDER_INTERLEAVED

__all__ = ["INTERLEAVED", "REPEAT_ORDER_INTERLEAVED", "SEQUENTIAL", "Interleaved", "Order",
           "Sequential"]


class Order(ABC):
    """Which worker process of the sweep runs next, and how many experiments the
    launcher is given at once."""

    #: The order's name in messages.
    name: str

    def supports(self, launcher: Launcher) -> bool:
        """Whether ``launcher`` can run the sweep in this order."""
        return True

    @abstractmethod
    def batch_size(self, launcher: Launcher) -> int:
        """How many experiments are handed to the launcher at once."""

    @abstractmethod
    def launch(self, launcher: Launcher, batch: Sequence[tuple[int, Mapping[str, Any]]],
               finish: Finish, context: LaunchContext) -> bool:
        """Run the experiments of ``batch`` (index in the plan, experiment) with
        ``launcher``, handing each record to ``finish`` as it ends; True when the sweep
        was interrupted."""


class Sequential(Order):
    """Experiment after experiment, each one's processes in a row: as the launcher
    runs a batch."""

    name = "sequential"

    def batch_size(self, launcher: Launcher) -> int:
        """The launcher's own batch size."""
        return launcher.batch_size

    def launch(self, launcher: Launcher, batch: Sequence[tuple[int, Mapping[str, Any]]],
               finish: Finish, context: LaunchContext) -> bool:
        """The launcher's :meth:`~dlbench.launch.launchers.Launcher.launch`."""
        return launcher.launch(batch, finish, context)


class Interleaved(Order):
    """Process k of every experiment of the sweep before process k+1 of any."""

    name = "interleaved"

    def supports(self, launcher: Launcher) -> bool:
        """Only a launcher that runs each process here, when told."""
        return isinstance(launcher, ProcessLauncher)

    def batch_size(self, launcher: Launcher) -> int:
        """The whole sweep: its passes go over every experiment."""
        return 1 << 62

    def launch(self, launcher: Launcher, batch: Sequence[tuple[int, Mapping[str, Any]]],
               finish: Finish, context: LaunchContext) -> bool:
        """The processes of every experiment of ``batch``, in passes."""
        if not isinstance(launcher, ProcessLauncher):
            raise TypeError(f"{type(launcher).__name__} cannot run processes in passes")
        return run_interleaved(batch, launcher.process_runner(context), finish)


def run_interleaved(
    batch: Sequence[tuple[int, Mapping[str, Any]]], run: RunProcess, finish: Finish
) -> bool:
    """Run the processes of every experiment of ``batch`` (index in the plan,
    experiment) in passes with ``run``; hand each experiment's record to ``finish`` once
    its last process ended (or its first failure). True when the sweep was interrupted
    (the experiments not finished by then get no record, and a resumed run redoes
    them)."""
    processes: dict[int, list[dict[str, Any]]] = {index: [] for index, _ in batch}
    seconds: dict[int, float] = dict.fromkeys(processes, 0.0)
    done: set[int] = set()
    for number in range(1, max(repeat_count(e) for _, e in batch) + 1):
        for index, experiment in batch:
            repeat = repeat_count(experiment)
            if index in done or number > repeat:
                continue
            log_path = Path(experiment["exp.log_file"])
            own = experiment if repeat == 1 else {**experiment,
                                                  "exp.log_file": f"{log_path}.{number}"}
            started = time.monotonic()
            record, interrupted = run(
                own, Path(experiment["exp.out_dir"]), "" if repeat == 1 else f".{number}")
            seconds[index] += time.monotonic() - started
            if interrupted:
                return True
            if record["exp.status"] != "ok" or repeat == 1:
                if repeat > 1:
                    record = failed_repeat(record, log_path, number, repeat)
                done.add(index)
                finish(index, record, seconds[index])
                continue
            processes[index].append(record)
            if number == repeat:
                combined = combine_processes(experiment, processes[index])
                combined["results.repeat_order"] = REPEAT_ORDER_INTERLEAVED
                write_combined(log_path, combined)
                done.add(index)
                finish(index, combined, seconds[index])
    return False


#: The two orders (``dlbench run`` without and with ``--interleave``).
SEQUENTIAL: Order = Sequential()
INTERLEAVED: Order = Interleaved()
