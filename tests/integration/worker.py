"""Plan one experiment and run it through the worker in this process; the known FLOP
counts of the toy model and of ResNet-18, which every framework must report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlbench.config import load_spec, plan_experiments
from dlbench.results.log.file import LogWriter
from dlbench.results.log.parser import parse_log
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


def _conv_macs(c_in: int, c_out: int, kernel: int, side: int) -> int:
    """Multiply-adds of a square convolution with a ``side`` x ``side`` output."""
    return c_in * c_out * kernel * kernel * side * side


def resnet18_macs(size: int) -> tuple[int, int]:
    """ResNet-18's multiply-adds on one ``size`` px image (a multiple of 32), and those of
    its first convolution. The 7x7 stride-2 convolution and the stride-2 max pool halve
    the side twice; each stage after the first halves it again and opens with a 3x3
    stride-2 convolution beside a 1x1 shortcut; four 3x3 convolutions per stage; a
    512 x 1000 classifier."""
    first = _conv_macs(3, 64, 7, size // 2)
    side = size // 4
    total = first + 4 * _conv_macs(64, 64, 3, side)
    for channels in (128, 256, 512):
        side //= 2
        total += (_conv_macs(channels // 2, channels, 3, side)
                  + 3 * _conv_macs(channels, channels, 3, side)
                  + _conv_macs(channels // 2, channels, 1, side))
    return total + 512 * 1000, first


def ok(record: dict[str, Any]) -> dict[str, Any]:
    """``record``, after checking that its experiment ended ok (else its message)."""
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    return record
