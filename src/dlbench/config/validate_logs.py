"""Checks of where the experiments of a plan write their logs: logs cannot destroy data."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from dlbench.config.expand import RawExperiment
from dlbench.config.resolve import EXP_ID
from dlbench.config.spec import describe
from dlbench.errors import ConfigError

#: The file a runner holds locked while it runs in a run directory (one runner at a
#: time; the operating system releases the lock when the runner ends or dies).
RUN_LOCK_FILENAME = "dlbench.lock"

#: Files and folders dlbench itself writes in a run directory; no log may be one.
RUN_DIR_FILES = ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm",
                 "results.sqlite-journal", "experiments", "slurm", RUN_LOCK_FILENAME)


def check_log_files(experiments: list[dict[str, Any]], raws: list[RawExperiment]) -> None:
    """Logs cannot destroy data: each experiment's log file lies inside its run
    directory, is none of the files dlbench itself writes there (the results store,
    the experiment files), is no other experiment's, and is not an existing file
    other than an earlier log of the same experiment (which a resumed run replaces).

    Paths are taken as the runner takes them: a relative exp.log_file from the
    current directory; symbolic links are followed.
    """
    seen: dict[str, int] = {}
    for index, values in enumerate(experiments):
        log_file = str(values["exp.log_file"])
        shown = describe("exp.log_file", log_file, raws[index]["exp.log_file"].source)
        path = os.path.realpath(log_file)
        run_dir = os.path.realpath(str(values["exp.out_dir"]))
        if os.path.commonpath([run_dir, path]) != run_dir or path == run_dir:
            raise ConfigError(f"{shown} is outside the run directory {run_dir} (exp.out_dir); "
                              f"use a path under it, e.g. ${{exp.out_dir}}/logs/NAME.log")
        first = os.path.relpath(path, run_dir).split(os.sep)[0]
        if first in RUN_DIR_FILES:
            raise ConfigError(f"{shown} would overwrite {os.path.join(run_dir, first)}, which "
                              f"dlbench writes itself; use a path under ${{exp.out_dir}}/logs")
        if path in seen:
            raise ConfigError(_shared_log(shown, experiments, seen[path], index))
        seen[path] = index
        _check_existing_log(path, run_dir, values, shown)


#: Parameters that differ between any two experiments by nature; not worth naming.
_ALWAYS_DIFFERENT = frozenset({"exp.log_file", "exp.status_msg"})


def _shared_log(shown: str, experiments: list[dict[str, Any]], first: int, second: int) -> str:
    """Why experiments ``first`` and ``second`` (indices) share a log file, naming what
    they have in common: two exp.ids, or the one exp.id and the values that differ
    without defining the measurement (or that they are the same experiment)."""
    a, b = experiments[first], experiments[second]
    numbers = f"{first + 1} and {second + 1} of the sweep"
    if a[EXP_ID] != b[EXP_ID]:
        return (f"{shown} is the same for experiments {a[EXP_ID]} and {b[EXP_ID]} (numbers "
                f"{numbers}); "
                f"make an identity parameter or exp.log_file differ between them")
    differ = [f"{name} ({json.dumps(a.get(name))} and {json.dumps(b.get(name))})"
              for name in dict.fromkeys([*a, *b])
              if name not in _ALWAYS_DIFFERENT and a.get(name) != b.get(name)]
    if not differ:
        return (f"{shown} is written by identical experiments {numbers} (exp.id "
                f"{a[EXP_ID]}): every parameter has the same value in both; remove one")
    return (f"{shown} is written by experiments {numbers}, one measurement (exp.id "
            f"{a[EXP_ID]}): they differ only in {', '.join(differ[:3])}, which do not define "
            f"the measurement; make an identity parameter or exp.log_file differ between them")


def _check_existing_log(path: str, run_dir: str, values: Mapping[str, Any], shown: str) -> None:
    """An existing file at a log's path may only be an earlier log of the same
    experiment (or an empty file: nothing is lost)."""
    if not os.path.lexists(path):
        return
    if not os.path.isfile(path):
        raise ConfigError(f"{shown}: {path} exists and is not a file")
    if os.path.getsize(path) == 0 or _started_here(path, run_dir, values):
        return
    marker = f"__{EXP_ID}__={json.dumps(values[EXP_ID])}".encode()
    try:
        with open(path, "rb") as file:
            head = file.read(1 << 20)  # the parameters come first in a dlbench log
    except OSError as error:
        raise ConfigError(f"{shown}: {path} cannot be read: {error.strerror}") from None
    if marker not in head:
        raise ConfigError(f"{shown}: {path} exists and is not a log of this experiment "
                          f"(exp.id {values[EXP_ID]}); move it away or choose another "
                          f"exp.log_file")


def _started_here(path: str, run_dir: str, values: Mapping[str, Any]) -> bool:
    """Whether dlbench started this experiment into ``path`` before: the runner writes
    the worker's input (``experiments/<exp.id>.json``, naming the log) before the log
    is opened, so a worker killed before it wrote its parameters leaves a log that is
    still recognised as this experiment's."""
    started = os.path.join(run_dir, "experiments", f"{values[EXP_ID]}.json")
    try:
        with open(started, encoding="utf-8") as file:
            earlier = json.load(file)
    except (OSError, ValueError):
        return False
    log_file = earlier.get("exp.log_file") if isinstance(earlier, dict) else None
    return isinstance(log_file, str) and os.path.realpath(log_file) == path
