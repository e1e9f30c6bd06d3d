"""Plan one experiment and run it through the worker in this process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.config import load_spec, plan_experiments
from dlbench.results.logfile import LogWriter
from dlbench.results.parser import parse_log
from dlbench.worker.experiment import run_experiment


def plan_one(tmp_path: Path, *params: str) -> dict[str, Any]:
    """The single experiment of ``-P params``, with its run directory in ``tmp_path``."""
    spec = load_spec(params=list(params), overrides={"exp.out_dir": (str(tmp_path), "test")})
    (experiment,) = plan_experiments(spec)
    return experiment


def run_in_process(experiment: dict[str, Any]) -> dict[str, Any]:
    """Run ``experiment`` as the worker does and return the record its log parses to."""
    with LogWriter(experiment["exp.log_file"]) as log:
        run_experiment(experiment, log)
    record, warnings = parse_log(experiment["exp.log_file"])
    assert warnings == []
    return record
