"""``dlbench run --interleave``: the repeats of a sweep, round-robin.

With ``exp.repeat=N`` the runner measures an experiment by N processes one after
another, then moves to the next experiment. On a shared machine the speed drifts
over minutes, so two configurations measured an hour apart differ by the drift as
well as by themselves. Interleaved, pass k runs process k of every experiment of
the sweep, in plan order, before pass k+1: configurations A and B are measured
A1 B1 A2 B2 ..., each pair minutes apart at most, and a drift hits both alike.
Each experiment's processes are then combined exactly as without interleaving
(:func:`~dlbench.launch.records.combine_processes`); its record says
``results.repeat_order=interleaved``, which tells ``dlbench compare`` that process k
of A and process k of B ran side by side and may be compared pair by pair.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dlbench.launch.records import combine_processes, write_combined

__all__ = ["INTERLEAVED", "run_interleaved"]

#: ``results.repeat_order`` of an experiment whose processes were interleaved.
INTERLEAVED = "interleaved"

#: Runs one process of an experiment: (experiment, run directory, log suffix) →
#: (record, interrupted).
RunProcess = Callable[[Mapping[str, Any], Path, str], tuple[dict[str, Any], bool]]
Finish = Callable[[int, dict[str, Any], float], None]


def _repeats(experiment: Mapping[str, Any]) -> int:
    return int(experiment.get("exp.repeat", 1) or 1)


def run_interleaved(
    batch: Sequence[tuple[int, Mapping[str, Any]]],
    run_process: Callable[[Mapping[str, Any]], RunProcess],
    finish: Finish,
) -> bool:
    """Run the processes of every experiment of ``batch`` (index in the plan,
    experiment) in passes; hand each experiment's record to ``finish`` once its last
    process ended (or its first failure). True when the sweep was interrupted (the
    experiments not finished by then get no record, and a resumed run redoes them)."""
    processes: dict[int, list[dict[str, Any]]] = {index: [] for index, _ in batch}
    seconds: dict[int, float] = dict.fromkeys(processes, 0.0)
    done: set[int] = set()
    for number in range(1, max(_repeats(e) for _, e in batch) + 1):
        for index, experiment in batch:
            repeat = _repeats(experiment)
            if index in done or number > repeat:
                continue
            log_path = Path(experiment["exp.log_file"])
            own = experiment if repeat == 1 else {**experiment,
                                                  "exp.log_file": f"{log_path}.{number}"}
            started = time.monotonic()
            record, interrupted = run_process(experiment)(
                own, Path(experiment["exp.out_dir"]), "" if repeat == 1 else f".{number}")
            seconds[index] += time.monotonic() - started
            if interrupted:
                return True
            if record["exp.status"] != "ok" or repeat == 1:
                if repeat > 1:
                    record = {**record, "exp.log_file": str(log_path),
                              "exp.status_msg": f"process {number} of {repeat}: "
                                                f"{record['exp.status_msg']}"}
                    write_combined(log_path, record)
                done.add(index)
                finish(index, record, seconds[index])
                continue
            processes[index].append(record)
            if number == repeat:
                combined = combine_processes(experiment, processes[index])
                combined["results.repeat_order"] = INTERLEAVED
                write_combined(log_path, combined)
                done.add(index)
                finish(index, combined, seconds[index])
    return False
