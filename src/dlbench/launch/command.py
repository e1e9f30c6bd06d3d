"""The command line that runs one experiment's worker, built as an argument list.

One replica: ``python -m dlbench.worker EXP.json``. Several replicas of a framework
whose data parallelism is one process per replica (PyTorch's DistributedDataParallel):
the same worker under torchrun, PyTorch's elastic launcher, which starts
``exp.num_local_replicas`` processes on this node and meets the other nodes at the
rendezvous. Never a shell string: nothing in an experiment's parameters is ever
interpreted by a shell.

The worker's input is the experiment's resolved parameters, as JSON
(:func:`write_input`). Its environment is an allow-list of the parent's
(:func:`worker_env`, as pyperf does): what the worker, its framework and the tools that
wrap it read (paths, locale, temporary folder, the device, thread, compiler and
framework variables, dlbench's and Slurm's own), plus the names the user lists in
``DLBENCH_WORKER_ENV``, plus what dlbench sets for the experiment. Anything else set in
the parent (a token, a password) never reaches a worker, nor does any of dlbench's
internal variables (:data:`~dlbench.results.log.file.INTERNAL_ENV`), whatever lists it:
those are set by dlbench for its own children only. The names the worker got (never
their values) go in its log as ``sys.worker_env`` (:func:`note_worker_env`).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.config.command_words import is_rendezvous_endpoint
from dlbench.config.devices import usable_cores
from dlbench.errors import ConfigError
from dlbench.launch.container import container_argv
from dlbench.measure.ncu import default_metrics
from dlbench.results.export import write_atomically
from dlbench.results.log.file import INTERNAL_ENV, LOG_FILE_ENV, format_line

__all__ = ["EXTRA_ENV", "INTERNAL_ENV", "LOG_FILE_ENV", "WORKER_ENV_KEY", "WORKER_ENV_NAMES",
           "WORKER_ENV_PREFIXES", "note_worker_env", "passed_through", "profiler_argv",
           "torchrun_arguments", "uses_torchrun", "worker_argv", "worker_env", "write_input"]

#: Variables of the parent's environment the worker gets, by name: where programs and
#: libraries are, who the user is (torch.compile names its cache folder after it), the
#: locale, temporary files, the model caches, and what the container engines' clients
#: read (their daemon, their configuration and cache folders).
WORKER_ENV_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ",
    "TMPDIR", "TMP", "TEMP", "PYTHONPATH", "PYTHONHOME", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
    "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH", "LD_PRELOAD", "MALLOC_ARENA_MAX",
    "GPU_DEVICE_ORDINAL", "HF_HOME",
    "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
    "CONTAINER_HOST", "CONTAINER_CONNECTION", "DBUS_SESSION_BUS_ADDRESS",
    "APPTAINER_CACHEDIR", "APPTAINER_TMPDIR", "APPTAINER_BINDPATH",
    "SINGULARITY_CACHEDIR", "SINGULARITY_TMPDIR", "SINGULARITY_BINDPATH",
})
#: ... and by prefix: the locale; the GPU's visibility and libraries (CUDA, ROCm/HIP);
#: threads (OpenMP, MKL, OpenBLAS); the frameworks and their compilers (PyTorch,
#: Inductor, Triton, XLA/JAX, TensorFlow's own, ONNX Runtime, oneDNN); collectives;
#: model caches; the Nsight tools; XDG folders (caches, the rootless engines' runtime
#: folder); Slurm's job, where Slurm starts the worker; and dlbench's own (those a user
#: may set: never :data:`INTERNAL_ENV`, see :func:`passed_through`). Never a
#: prefix that also names credentials (``HF_TOKEN``, Terraform's ``TF_TOKEN_*`` and
#: ``TF_VAR_*``, ``APPTAINER_DOCKER_PASSWORD``): those reach a worker only when listed
#: in ``DLBENCH_WORKER_ENV``.
WORKER_ENV_PREFIXES = (
    "LC_", "CUDA_", "CUDNN_", "CUBLAS_", "CUBLASLT_", "NVIDIA_", "NVTE_", "ROCM_", "ROCR_",
    "HIP_", "HSA_", "MIOPEN_", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_",
    "TORCH_", "PYTORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "TRITON_", "XLA_", "JAX_",
    "TF_CPP_", "TF_ENABLE_", "TF_FORCE_", "TF_GPU_", "TF_XLA_", "TF_NUM_", "TF_CUDNN_",
    "TF_DETERMINISTIC_", "TF_USE_", "KERAS_", "ORT_", "ONEDNN_", "DNNL_",
    "NCCL_", "GLOO_", "UCX_", "HF_HUB_", "HF_DATASETS_", "TRANSFORMERS_",
    "NSYS_", "NCU_", "XDG_", "SLURM_", "DLBENCH_",
)
#: Where a user lists more variables to pass to the worker: names separated by commas
#: or spaces (``DLBENCH_WORKER_ENV="WANDB_MODE MY_LIB_FLAG"``).
EXTRA_ENV = "DLBENCH_WORKER_ENV"
#: The record's key of the names the worker got.
WORKER_ENV_KEY = "sys.worker_env"


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
    endpoint = str(experiment["exp.rendezvous"])
    # One argument, HOST:PORT and nothing else: never a line break, a space or an option.
    if not is_rendezvous_endpoint(endpoint):
        raise ConfigError(f"exp.rendezvous={endpoint!r}: a run on {nodes} nodes needs the "
                          "HOST:PORT where they meet, e.g. exp.rendezvous=node01:29500")
    if backend not in ("c10d", "static"):
        raise ConfigError(f"exp.rendezvous_backend={backend!r} is not one of 'c10d', 'static'")
    args += [f"--nnodes={nodes}", f"--rdzv-backend={backend}",
             f"--rdzv-endpoint={endpoint}", f"--rdzv-id={experiment['exp.id']}"]
    if backend == "static":
        args.append(f"--node-rank={int(experiment['exp.node_rank'])}")
    return args


def worker_argv(
    experiment: Mapping[str, Any], exp_json: Path, python: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """The argument list that runs ``experiment``'s worker on this node from
    ``exp_json`` (its resolved parameters). ``env`` is the environment it will start
    with (default :func:`worker_env`): a container gets its share of it."""
    python = python or sys.executable
    if uses_torchrun(experiment):
        argv = [python, "-m", "torch.distributed.run", *torchrun_arguments(experiment),
                "-m", "dlbench.worker", str(exp_json)]
    else:
        argv = [python, "-m", "dlbench.worker", str(exp_json)]
    argv = profiler_argv(experiment, argv)
    if experiment.get("exp.docker"):  # the same command, inside the experiment's image
        return container_argv(experiment, argv, worker_env(experiment) if env is None else env,
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
        metrics = [str(m) for m in experiment.get("exp.ncu_metrics") or ()] or default_metrics()
        for metric in metrics:  # each one item of ncu's comma-separated --metrics
            if not re.fullmatch(r"[^\s,\x00-\x1f\x7f-\x9f]+", metric):
                raise ConfigError(f"exp.ncu_metrics: {metric!r} is not a metric name: one "
                                  "word without commas, e.g. sm__throughput.avg.pct_of_peak_"
                                  "sustained_elapsed")
        return ["ncu", "--profile-from-start=off", "--target-processes=all", "--csv",
                "--print-units=base", f"--log-file={log}.ncu.csv",
                f"--metrics={','.join(metrics)}", *argv]
    return argv


def passed_through(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether the parent's variable ``name`` reaches the worker: on the allow-list, or
    among the ``extra`` names the user listed; never one of dlbench's internal ones
    (:data:`INTERNAL_ENV`), which dlbench sets for its children where it means them.

    >>> passed_through("CUDA_VISIBLE_DEVICES"), passed_through("AWS_SECRET_ACCESS_KEY")
    (True, False)
    >>> passed_through("DLBENCH_STRICT_KEYS"), passed_through("DLBENCH_LOG_FILE")
    (True, False)
    """
    if name in INTERNAL_ENV:
        return False
    return name in WORKER_ENV_NAMES or name.startswith(WORKER_ENV_PREFIXES) or name in extra


def worker_env(
    experiment: Mapping[str, Any], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The worker's environment: the variables of the parent's (``base``, default
    ``os.environ``) that :func:`passed_through` allows (none of :data:`INTERNAL_ENV`:
    a launcher that means one sets it after), unbuffered, so output lines
    reach the log in the order they were written. Under torchrun each process gets its
    share of this node's cores as its thread count (torchrun would otherwise set one
    thread)."""
    parent = os.environ if base is None else base
    extra = frozenset(re.split(r"[\s,]+", parent.get(EXTRA_ENV, "").strip())) - {""}
    env = {name: value for name, value in parent.items() if passed_through(name, extra)}
    env["PYTHONUNBUFFERED"] = "1"
    if uses_torchrun(experiment) and "OMP_NUM_THREADS" not in env:
        cores = usable_cores()
        env["OMP_NUM_THREADS"] = str(max(1, cores // int(experiment["exp.num_local_replicas"])))
    return env


def note_worker_env(log: IO[bytes], env: Mapping[str, str]) -> None:
    """Write the names of ``env``, the environment a worker is about to start with,
    in its log as ``sys.worker_env`` (never the values: they may carry secrets). Called
    before the worker starts, so its own lines come after."""
    log.write(format_line(WORKER_ENV_KEY, sorted(env)).encode("utf-8"))
    log.flush()


def write_input(experiment: Mapping[str, Any], out_dir: Path, suffix: str = "") -> Path:
    """Write ``experiment`` atomically as the worker's input,
    ``<out_dir>/experiments/<exp.id><suffix>.json``, and return its path."""
    path = out_dir / "experiments" / f"{experiment['exp.id']}{suffix}.json"
    write_atomically(path, json.dumps(experiment, indent=1, sort_keys=True).encode("utf-8"))
    return path
