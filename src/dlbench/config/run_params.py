"""The parameters of how an experiment runs, beside what it measures: the monitor,
data-parallel replicas across nodes, parallel copies on one node, and containers;
gathered with the others in :data:`dlbench.config.registry.REGISTRY`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dlbench.config.catalog import FRAMEWORKS
from dlbench.config.params import (
    MAX_BATCHES,
    MAX_REPLICA_BATCH,
    MAX_SECONDS,
    MAX_WORKER_SECONDS,
    Param,
    Shown,
)
from dlbench.errors import ConfigError

MONITOR_PARAMS = [
    Param("monitor.enabled", "bool", "$(${monitor.frequency} > 0)$",
          "Sample CPU, memory, GPU and power use in the worker while the experiment runs; "
          "derived: off when monitor.frequency is 0.", identity=False),
    Param("monitor.frequency", "float", 0.5,
          "Seconds between two samples of the monitor (at least 0.01); 0 turns the monitor "
          "off, as in DLBS.", identity=False, minimum=0, maximum=MAX_SECONDS),
]

# Data-parallel runs through torchrun, several nodes.
DISTRIBUTED_PARAMS = [
    Param("exp.rendezvous", "str", "",
          "HOST:PORT where the nodes of a multi-node run meet (torchrun's rendezvous "
          "endpoint, on the first node). Empty on one node, where torchrun picks a free port.",
          identity=False),
    Param("exp.rendezvous_backend", "str", "c10d",
          "torchrun's rendezvous: `c10d` (torchrun assigns node ranks itself) or `static` "
          "(each node takes exp.node_rank).", choices=("c10d", "static"), identity=False),
    Param("exp.node_rank", "int", 0,
          "This node's number, 0 to exp.num_nodes - 1: which node's view the record is, and "
          "the node's rank with exp.rendezvous_backend=static.", identity=False),
    Param("exp.dist_backend", "str", "auto",
          "Collective communication of data-parallel replicas: `nccl` across GPUs, `gloo` "
          "across CPU processes; `auto` picks by exp.device_type.",
          choices=("auto", "gloo", "nccl")),
    Param("exp.collective_timeout", "float", 300.0,
          "Seconds a replica waits in a collective (gradient all-reduce, rendezvous) before "
          "it fails, so a lost replica fails its experiment instead of hanging it.",
          identity=False, minimum=1, maximum=MAX_SECONDS),
]

#: ``exp.parallel_jobs=gpus``: one copy per GPU of ``exp.gpus``.
PER_GPU = "gpus"


def gpu_list(values: Mapping[str, Any]) -> list[str]:
    """The GPUs of ``exp.gpus``, in order."""
    return [g for g in str(values.get("exp.gpus", "")).split(",") if g]


def copy_count(values: Mapping[str, Any]) -> int:
    """How many copies ``exp.parallel_jobs`` asks for (1: the experiment runs alone);
    the runner starts that many, and a report reads a record's copies from it."""
    value = values.get("exp.parallel_jobs", 1)
    if value == PER_GPU:
        return len(gpu_list(values))
    return int(value or 1)


def repeat_count(values: Mapping[str, Any]) -> int:
    """How many worker processes measure an experiment one after another
    (``exp.repeat``; at least one)."""
    return max(1, int(values.get("exp.repeat", 1) or 1))


def check_one_process(values: Mapping[str, Any], shown: Shown, runs: str,
                      chosen_by: str) -> None:
    """Refuse ``exp.repeat`` or ``exp.parallel_jobs`` other than 1 for ``runs`` (e.g.
    ``generation runs``), the runs that the parameter ``chosen_by`` chose: repeats and
    copies are combined from batch times and throughputs, which such a run does not
    have. ``shown(name)`` names a parameter in the message."""
    for name in ("exp.repeat", "exp.parallel_jobs"):
        if values[name] != 1:
            raise ConfigError(f"{shown(name)}: {runs} are not combined across processes "
                              f"yet; use {name}=1 ({shown(chosen_by)})")


# N users per node: copies of an experiment run at once, each on its own share.
PARTITION_PARAMS = [
    Param("exp.parallel_jobs", "int", 1,
          "Copies of a one-replica experiment run at the same time on this node, as N users "
          "sharing it: copy k gets the k-th GPU of exp.gpus (none on the CPU), its own "
          "contiguous set of this node's cores and its share of memory. results.throughput "
          "is then the node's: the sum of the copies' throughputs (results.copy_throughput "
          "lists each; a scorecard compares each copy's with its one-GPU targets). `gpus`: "
          "one copy per GPU in exp.gpus.", special=("gpus",)),
    Param("exp.parallel_memory_mb", "int", 0,
          "With exp.parallel_jobs > 1, the memory each copy may use, MiB; 0: this node's "
          "memory divided by the number of copies."),
    Param("exp.copy", "int", 0,
          "Which copy of exp.parallel_jobs this process is, 1 to N (0: not a copy); written "
          "by dlbench into each copy's experiment file.", identity=False, settable=False),
    Param("exp.copy_cpus", "str", "",
          "The cores a copy was given (`0-3,8`); written by dlbench into each copy's "
          "experiment file.", identity=False, settable=False),
    Param("exp.copy_memory_mb", "int", 0,
          "The memory a copy was given, MiB; written by dlbench into each copy's experiment "
          "file.", identity=False, settable=False),
    Param("exp.copy_limits", "str", "",
          "What held a copy to its cores and memory: a cgroup v2, CPU affinity and "
          "RLIMIT_DATA (and why not a cgroup), or the container engine; written by dlbench "
          "into each copy's experiment file, so it is the first thing in the copy's log.",
          identity=False, settable=False),
    Param("exp.fork_server", "str", "auto",
          "How the local launcher starts a worker: `auto` forks it from a fork server that "
          "imported the framework once (a one-replica PyTorch experiment on the CPU, no "
          "container, copies, repeats or Nsight tool, on a machine with no GPU visible), else a "
          "fresh `python -m dlbench.worker`; `never`: always a fresh interpreter.",
          choices=("auto", "never"), identity=False),
]

# Running the worker inside a container.

#: The commands each exp.container_engine may be found as on PATH, preferred first.
CONTAINER_ENGINE_COMMANDS = {
    "docker": ("docker",),
    "podman": ("podman",),
    "apptainer": ("apptainer", "singularity"),
}


def container_image(experiment: Mapping[str, Any]) -> str:
    """The image of an experiment with exp.docker=true: exp.docker_image, else the
    framework's own image parameter (``pytorch.docker_image``, its docker_image knob);
    empty when neither is set."""
    image = str(experiment.get("exp.docker_image") or "")
    info = FRAMEWORKS.get(str(experiment.get("exp.framework", "")))
    own = info.knob_param("docker_image") if info is not None else None
    return image or (str(experiment.get(own) or "") if own else "")


def parse_container_mount(text: str) -> tuple[str, str, bool]:
    """An item of exp.container_mounts, ``HOST[:CONTAINER[:ro|rw]]``, as (host,
    container, read_only); ValueError when it is none of these. A relative HOST is
    taken from the current directory; CONTAINER defaults to HOST.

    >>> parse_container_mount("/data:/mnt/data:ro")
    ('/data', '/mnt/data', True)
    """
    parts = text.split(":")
    if not 1 <= len(parts) <= 3 or not parts[0] or (
            len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise ValueError(f"{text!r} is not HOST[:CONTAINER[:ro]]")
    host = os.path.abspath(parts[0])
    inside = parts[1] if len(parts) > 1 and parts[1] else host
    if not inside.startswith("/"):
        raise ValueError(f"{text!r}: the folder inside the container must be absolute")
    return host, inside, len(parts) == 3 and parts[2] == "ro"


CONTAINER_PARAMS = [
    # The image and the engine define the measurement: the image holds the framework
    # build and its libraries; the engine decides the namespaces, the seccomp filter
    # (a cost on every system call under docker and podman, none under apptainer) and
    # the size of /dev/shm.
    Param("exp.docker", "bool", False,
          "Run the worker inside a container (exp.container_engine) of exp.docker_image."),
    Param("exp.docker_image", "str", "",
          "Container image of the worker; empty: the framework's own <framework>.docker_image "
          "(e.g. pytorch.docker_image). It needs the framework, psutil and PyYAML."),
    Param("exp.container_engine", "str", "docker",
          "What runs the container: `docker`, `podman` or `apptainer` (also found as "
          "`singularity`).", choices=("docker", "podman", "apptainer")),
    Param("exp.container_python", "str", "python",
          "The Python interpreter inside the image that runs the worker.", identity=False),
    Param("exp.container_mount_dlbench", "bool", True,
          "Mount this dlbench's own package into the container (read-only, on PYTHONPATH), "
          "so the worker is the same version as the runner and the image needs no dlbench.",
          identity=False),
    Param("exp.container_mounts", "list", [],
          "More folders to mount, each `HOST[:CONTAINER[:ro]]` (CONTAINER defaults to HOST). "
          "The run directory, the experiment files and exp.data_dir are always mounted.",
          identity=False),
    Param("exp.container_options", "list", [],
          "More options for the engine's run/exec command, one list item per argument "
          "(e.g. [\"--shm-size=8g\"])."),
]

# Where the time and memory go: a profiling window after the timed batches, the memory
# breakdown, and training to a target accuracy (docs/profiling.md).

#: exp.profile values: a framework's own profiler, or an NVIDIA tool that wraps the worker.
PROFILE_TOOLS = ("none", "torch", "jax", "tensorflow", "nsys", "ncu")
#: The tools that wrap the worker's command line (they must be on PATH at plan time).
WRAPPING_PROFILERS = ("nsys", "ncu")

PROFILE_PARAMS = [
    Param("exp.profile", "str", "none",
          "Profile a window of batches after the timed ones, so the timing stays clean: "
          "`torch` (torch.profiler, a Chrome/Perfetto trace next to the log), `nsys` or "
          "`ncu` (the worker runs under Nsight Systems or Nsight Compute, limited to the "
          "window); `jax`/`tensorflow` where the framework declares them. `none`: no "
          "profiling.", choices=PROFILE_TOOLS),
    Param("exp.profile_start", "int", 2,
          "Untimed batches run after the timed ones before the profiling window opens (as "
          "TBD's start_iteration), so the window sees steady state.", identity=False,
          minimum=0, maximum=MAX_BATCHES),
    Param("exp.profile_batches", "int", 3,
          "Batches inside the profiling window (TBD's profile_iteration).", identity=False,
          minimum=1, maximum=MAX_BATCHES),
    Param("exp.profile_top", "int", 15,
          "Operators listed in results.profile.top_ops, by self time.", identity=False,
          minimum=1, maximum=10_000),
    Param("exp.ncu_metrics", "list", [],
          "Metrics for exp.profile=ncu; empty: FMA, FP16, Tensor Core and SFU pipe "
          "utilisation and kernel duration (TBD's core utilisation).", identity=False),
    Param("exp.memory_breakdown", "bool", True,
          "After the timed batches, count the bytes of weights, gradients, optimizer state "
          "and activations saved for backward (one extra step), as results.memory.*.",
          identity=False),
]

ACCURACY_PARAMS = [
    Param("exp.target_accuracy", "float", 0.9,
          "With exp.phase=train_to_accuracy, the held-out accuracy (0 to 1) to reach.",
          minimum=0),
    Param("exp.max_epochs", "int", 20,
          "With exp.phase=train_to_accuracy, the most epochs before giving up.", minimum=1,
          maximum=100_000),
    Param("exp.max_train_seconds", "float", 600.0,
          "With exp.phase=train_to_accuracy, the most seconds of training before giving up "
          "(checked after each epoch).", minimum=0, maximum=MAX_WORKER_SECONDS),
    Param("exp.val_fraction", "float", 0.2,
          "With exp.phase=train_to_accuracy, the share of the data held out for validation "
          "(a seeded split).", minimum=0.01),
    Param("exp.dataset", "str", "digits",
          "With exp.phase=train_to_accuracy and no exp.data_dir: the built-in data set, "
          "`digits` (scikit-learn's 8x8 handwritten digits, no download).",
          choices=("digits",)),
]

AUTO_BATCH_PARAMS = [
    Param("exp.auto_batch_max", "int", 4096,
          "With exp.replica_batch=auto, the largest batch probed (doubling stops there); "
          "at most the largest exp.replica_batch.",
          identity=False, minimum=1, maximum=MAX_REPLICA_BATCH),
    Param("exp.auto_batch_steps", "int", 2,
          "With exp.replica_batch=auto, the steps each probe runs before it counts as "
          "fitting.", identity=False, minimum=1, maximum=10_000),
]
