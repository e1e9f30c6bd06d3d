"""The command line that runs one experiment's worker, built as an argument list.

One replica: ``python -m dlbench.worker EXP.json``. Several replicas of a framework
whose data parallelism is one process per replica (PyTorch's DistributedDataParallel):
the same worker under torchrun, PyTorch's elastic launcher, which starts
``exp.num_local_replicas`` processes on this node and meets the other nodes at the
rendezvous. Never a shell string: nothing in an experiment's parameters is ever
interpreted by a shell.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.launch.container import container_argv
from dlbench.measure.ncu import default_metrics
from dlbench.results.log.file import LOG_FILE_ENV

__all__ = ["LOG_FILE_ENV", "profiler_argv", "torchrun_arguments", "uses_torchrun", "worker_argv",
           "worker_env"]


def uses_torchrun(experiment: Mapping[str, Any]) -> bool:
    """True when the experiment's replicas are processes started by torchrun."""
    info = FRAMEWORKS[str(experiment["exp.framework"])]
    return info.data_parallel == "torchrun" and int(experiment["exp.num_replicas"]) > 1


def torchrun_arguments(experiment: Mapping[str, Any]) -> list[str]:
    """torchrun's options for ``experiment``: processes per node, nodes, rendezvous.

    On one node ``--standalone`` lets torchrun pick a free port for its own
    rendezvous, so two sweeps on one machine never collide. Across nodes every node
    runs the same command and meets at ``exp.rendezvous`` (``HOST:PORT``): with the
    ``c10d`` backend torchrun assigns ranks itself (sorted by node), with ``static``
    each node takes the rank ``exp.node_rank`` gives it. ``--max-restarts=0``: a
    benchmark that failed is reported, not retried into a different measurement.
    """
    nodes = int(experiment["exp.num_nodes"])
    args = [f"--nproc-per-node={int(experiment['exp.num_local_replicas'])}",
            "--max-restarts=0", "--monitor-interval=0.5"]
    if nodes == 1:
        return ["--standalone", "--nnodes=1", *args]
    backend = str(experiment["exp.rendezvous_backend"])
    args += [f"--nnodes={nodes}", f"--rdzv-backend={backend}",
             f"--rdzv-endpoint={experiment['exp.rendezvous']}",
             f"--rdzv-id={experiment['exp.id']}"]
    if backend == "static":
        args.append(f"--node-rank={int(experiment['exp.node_rank'])}")
    return args


def worker_argv(
    experiment: Mapping[str, Any], exp_json: Path, python: str | None = None
) -> list[str]:
    """The argument list that runs ``experiment``'s worker on this node from
    ``exp_json`` (its resolved parameters)."""
    python = python or sys.executable
    if uses_torchrun(experiment):
        argv = [python, "-m", "torch.distributed.run", *torchrun_arguments(experiment),
                "-m", "dlbench.worker", str(exp_json)]
    else:
        argv = [python, "-m", "dlbench.worker", str(exp_json)]
    argv = profiler_argv(experiment, argv)
    if experiment.get("exp.docker"):  # the same command, inside the experiment's image
        return container_argv(experiment, argv, worker_env(experiment),
                              Path(experiment["exp.out_dir"]))
    return argv


def profiler_argv(experiment: Mapping[str, Any], argv: list[str]) -> list[str]:
    """``argv`` under the NVIDIA tool of ``exp.profile`` (``nsys`` or ``ncu``), which
    captures only the window the worker opens with ``cudaProfilerStart``/``Stop``; the
    tool's output goes next to the log (``<log>.nsys-rep``, ``<log>.ncu.csv``). Any
    other ``exp.profile`` runs inside the worker: ``argv`` unchanged.

    >>> profiler_argv({"exp.profile": "nsys", "exp.log_file": "x.log"}, ["w"])[:3]
    ['nsys', 'profile', '--capture-range=cudaProfilerApi']
    """
    tool = str(experiment.get("exp.profile", "none"))
    log = str(experiment.get("exp.log_file", "dlbench"))
    if tool == "nsys":
        return ["nsys", "profile", "--capture-range=cudaProfilerApi",
                "--capture-range-end=stop", "--trace=cuda,nvtx,osrt,cudnn,cublas",
                "--force-overwrite=true", f"--output={log}.nsys-rep", *argv]
    if tool == "ncu":
        metrics = list(experiment.get("exp.ncu_metrics") or ()) or default_metrics()
        return ["ncu", "--profile-from-start=off", "--target-processes=all", "--csv",
                "--print-units=base", f"--log-file={log}.ncu.csv",
                f"--metrics={','.join(metrics)}", *argv]
    return argv


def worker_env(
    experiment: Mapping[str, Any], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The worker's environment: the parent's, unbuffered, so output lines reach the
    log in the order they were written. Under torchrun each process gets its share of
    this node's cores as its thread count (torchrun would otherwise set one thread)."""
    env = dict(os.environ if base is None else base)
    env["PYTHONUNBUFFERED"] = "1"
    if uses_torchrun(experiment) and "OMP_NUM_THREADS" not in env:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
        env["OMP_NUM_THREADS"] = str(max(1, cores // int(experiment["exp.num_local_replicas"])))
    return env
