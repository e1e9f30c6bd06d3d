"""Nsight Compute: the metrics dlbench asks for, and TBD's core utilisation from its CSV.

``ncu --csv`` (the default "details" page) writes one row per kernel launch and
metric, with the columns ``"ID"``, ``"Kernel Name"``, ``"Metric Name"``, ``"Metric
Unit"`` and ``"Metric Value"`` among others; numbers may carry thousands separators.
TBD's ``coreutil.py`` averages each pipe's utilisation over the profiled kernels,
weighted by each kernel's duration, and so does :func:`core_utilization`.

Untested on hardware here: the parser is tested on a recorded sample of that format
(``tests/data/ncu/core_util.csv``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path

__all__ = ["DURATION_METRIC", "UTILIZATION_METRICS", "core_utilization", "default_metrics",
           "read_ncu_csv"]

#: Each core's utilisation metric, as TBD measured FMA, FP16, Tensor Core and SFU (XU).
UTILIZATION_METRICS: dict[str, str] = {
    "fma": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "fp16": "sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_active",
    "tensor": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sfu": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
}
#: A kernel's duration: the weight of its utilisations.
DURATION_METRIC = "gpu__time_duration.sum"

#: Nanoseconds per unit of the duration metric, as ncu names the units.
_NS_PER_UNIT = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6,
                "ms": 1e6, "second": 1e9, "s": 1e9}


def default_metrics() -> list[str]:
    """The metrics ``exp.profile=ncu`` collects when ``exp.ncu_metrics`` is empty."""
    return [*UTILIZATION_METRICS.values(), DURATION_METRIC]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None  # "n/a" for a metric this GPU does not have


def read_ncu_csv(text: str) -> dict[str, dict[str, tuple[float, str]]]:
    """Every kernel launch of ncu's CSV: launch ID -> metric name -> (value, unit).
    Lines before the header (ncu's own ``==PROF==`` messages) are skipped; ValueError
    when there is no header."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line starting with \"ID\")")
    kernels: dict[str, dict[str, tuple[float, str]]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        value = _number(row.get("Metric Value") or "")
        if value is None or not row.get("Metric Name"):
            continue
        metrics = kernels.setdefault(row["ID"], {})
        metrics[row["Metric Name"]] = (value, (row.get("Metric Unit") or "").strip())
    return kernels


def core_utilization(kernels: Mapping[str, Mapping[str, tuple[float, str]]]) -> dict[str, float]:
    """TBD's core utilisation: for each of :data:`UTILIZATION_METRICS`, the mean of its
    percentage over the kernels that report it, weighted by their durations; plus
    ``kernels`` (how many launches) and ``duration_ms`` (their total)."""
    result: dict[str, float] = {"kernels": float(len(kernels))}
    total_ns = 0.0
    weighted = dict.fromkeys(UTILIZATION_METRICS, 0.0)
    weights = dict.fromkeys(UTILIZATION_METRICS, 0.0)
    for metrics in kernels.values():
        if DURATION_METRIC not in metrics:
            continue
        value, unit = metrics[DURATION_METRIC]
        duration = value * _NS_PER_UNIT.get(unit, 1.0)
        total_ns += duration
        for core, name in UTILIZATION_METRICS.items():
            if name in metrics:
                weighted[core] += metrics[name][0] * duration
                weights[core] += duration
    for core in UTILIZATION_METRICS:
        if weights[core] > 0:
            result[core] = weighted[core] / weights[core]
    result["duration_ms"] = total_ns / 1e6
    return result


def summarize_ncu_file(path: str | Path) -> dict[str, float]:
    """:func:`core_utilization` of the CSV ncu wrote to ``path``."""
    return core_utilization(read_ncu_csv(Path(path).read_text(encoding="utf-8")))
