"""``dlbench status --input DIR``: what a run directory holds.

A run directory holds a record per finished experiment (``results.sqlite``) and the
input of every experiment the runner started (``experiments/<exp.id>.json``, written
just before its worker starts). From those, each experiment is:

- ``done``: its record says ``exp.status`` ok;
- ``failed``: its record says failure, timeout or interrupted;
- ``skipped``: not run, a smaller batch ran out of memory (its record says why);
- ``pending``: no record yet. Without a spec these are the experiments that were
  started and never recorded (the sweep was killed, or is running them now); given
  the sweep's spec (the same ``--config``/``--suite``/``-P``/``-V``/``-E`` as
  ``dlbench run``), the experiments of its plan never started are pending too.

Example::

    dlbench status --input runs/sweep --config sweep.yaml
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from dlbench.cli.commands.run import planned_experiments
from dlbench.cli.usage import warn
from dlbench.config.identity import varying_parameters
from dlbench.errors import PathError, ResultsError
from dlbench.results.jsontext import loads_json
from dlbench.results.store import STORE_FILENAME, Store
from dlbench.results.text_table import format_table

#: The states of an experiment, in the order the counts are printed.
STATES = ("done", "failed", "skipped", "pending")

#: The columns of the table besides the parameters that tell experiments apart.
_COLUMNS = ["state", "exp.status", "exp.status_msg"]

#: Characters of a failure's message shown in the table (all of it is in the record).
MESSAGE_WIDTH = 60


def _state(record: Mapping[str, Any] | None) -> str:
    if record is None:
        return "pending"
    status = record.get("exp.status")
    return "done" if status == "ok" else "skipped" if status == "skipped" else "failed"


def _started(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The inputs the runner wrote, by exp.id (a repeat's or a copy's input,
    ``<exp.id>.1.json``, counts as its experiment's); unreadable ones are skipped
    with a warning."""
    started: dict[str, dict[str, Any]] = {}
    for path in sorted((run_dir / "experiments").glob("*.json")):
        try:
            data = loads_json(path.read_text(encoding="utf-8"), str(path))
        except (OSError, ValueError, ResultsError) as error:
            warn(f"{path}: not an experiment's input ({error})")
            continue
        if isinstance(data, dict) and isinstance(data.get("exp.id"), str):
            started.setdefault(data["exp.id"], data)
    return started


def _has_spec(args: argparse.Namespace) -> bool:
    return any((args.config, args.suite, args.params, args.variables, args.extensions))


def experiment_states(
    run_dir: Path, planned: list[dict[str, Any]], series: bool | Collection[str] = True,
) -> list[dict[str, Any]]:
    """One row per experiment of ``run_dir`` (and of ``planned``, the sweep's plan
    when known): its parameters, ``state``, and for a recorded one its
    ``exp.status`` and ``exp.status_msg``. In plan order, then the store's, then
    started experiments without a record. ``series``: which list and dict values of
    the records are read (as :meth:`Store.records`)."""
    records: dict[str, dict[str, Any]] = {}
    if (run_dir / STORE_FILENAME).is_file():
        with Store.in_directory(run_dir, create=False) as store:
            # The table shows parameters and status only: the results' series (batch
            # times, monitor samples) stay in the store unless JSON output asks for them.
            records = {str(r.get("exp.id")): r for r in store.records(series=series)}
    started = _started(run_dir)
    if not records and not started and not planned:
        raise PathError(f"--input {run_dir}: no {STORE_FILENAME} and no experiments/ folder; "
                        f"give a run directory (the --out of dlbench run)")
    order = dict.fromkeys([*(str(e["exp.id"]) for e in planned), *records, *started])
    plan = {str(e["exp.id"]): e for e in planned}
    rows = []
    for exp_id in order:
        record = records.get(exp_id)
        params = record or plan.get(exp_id) or started[exp_id]
        row = {**params, "state": _state(record)}
        if record is None:
            row["exp.status"] = "started" if exp_id in started else "not started"
            row.pop("exp.status_msg", None)
        rows.append(row)
    return rows


def status(args: argparse.Namespace) -> int:
    """Print each experiment of the run directory with its state, then the counts."""
    run_dir = Path(args.input)
    if not run_dir.is_dir():
        raise PathError(f"--input {run_dir}: not a directory; give a run directory (the --out "
                        f"of dlbench run)")
    planned: list[dict[str, Any]] = []
    if _has_spec(args):
        args.out = str(run_dir)  # plan it as `dlbench run --out DIR` did
        planned = planned_experiments(args)
    rows = experiment_states(run_dir, planned,
                             series=True if args.format == "json" else ["exp.*", "user.*"])
    counts = {state: sum(row["state"] == state for row in rows) for state in STATES}
    if args.format == "json":
        print(json.dumps({"run_dir": str(run_dir), "counts": counts, "experiments": rows},
                         indent=1))
        return 0
    labels = varying_parameters(rows)
    columns = ["exp.id", "exp.model", *[c for c in labels if c not in ("exp.id", "exp.model")],
               *_COLUMNS]
    shown = [{**row, "exp.status_msg": _short(row.get("exp.status_msg"))} for row in rows]
    for line in format_table(shown, columns, [c.removeprefix("exp.") if c in _COLUMNS else c
                                              for c in columns]):
        print(line)
    print(", ".join(f"{counts[state]} {state}" for state in STATES))
    if not planned:
        print("(pending: started, no record; give the sweep's spec, --config, --suite, -P, -V, "
              "-E as for run, to list those never started too)")
    return 0


def _short(message: Any) -> Any:
    if not isinstance(message, str) or len(message) <= MESSAGE_WIDTH:
        return message or None
    return message[: MESSAGE_WIDTH - 1] + "…"
