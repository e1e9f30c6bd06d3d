"""Plan one experiment and run it through the worker in this process; the toy model's
known FLOP counts, which every framework's backend must report."""

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


# toy: Linear(64, 128), ReLU, Linear(128, 10). FLOPs at 2*m*n*k per matrix product, as
# PyTorch's FlopCounterMode counts them. Forward: 2*64*128 + 2*128*10 per sample.
TOY_FORWARD = 2 * 64 * 128 + 2 * 128 * 10  # 18,944
# Backward: the first layer's weight gradient only (its input needs no gradient),
# the second layer's input and weight gradients; bias gradients are sums, not counted.
TOY_BACKWARD = 2 * 64 * 128 + 2 * (2 * 128 * 10)  # 21,504, not 2 x forward
TOY_TRAINING = TOY_FORWARD + TOY_BACKWARD  # 40,448


def ok(record: dict[str, Any]) -> dict[str, Any]:
    """``record``, after checking that its experiment ended ok (else its message)."""
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    return record
