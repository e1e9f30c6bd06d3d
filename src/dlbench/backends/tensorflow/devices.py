"""Where the TensorFlow backend runs: its thread pools and its replicas' devices.

TensorFlow fixes both when its runtime starts, at the first operation: a worker is a
fresh process, so :func:`set_threads` and :func:`select_devices` run before that, at
the backend's set-up. In a process whose runtime has started (the tests run several
experiments in one) what can no longer change is refused, naming the parameter.

Example::

    set_threads(intra=4, inter=0)                       # 0: TensorFlow's default
    select_devices("0,1", replicas=1, memory_growth=True)  # ['/device:GPU:0', ...]
    select_devices("", replicas=2, memory_growth=False)    # two logical CPUs
"""

from __future__ import annotations

import os

# TensorFlow reads its C++ log level once, when imported (the backend module sets the
# same default; whichever of the two is imported first applies it).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The imports below read that environment.
import contextlib

import tensorflow as tf

from dlbench.errors import WorkerError


def set_threads(intra: int, inter: int) -> None:
    """Size TensorFlow's thread pools; they can only be sized before its runtime starts
    (the worker is a fresh process, so it has not)."""
    for name, value, getter, setter in (
        ("tensorflow.num_threads", intra,
         tf.config.threading.get_intra_op_parallelism_threads,
         tf.config.threading.set_intra_op_parallelism_threads),
        ("tensorflow.inter_op_threads", inter,
         tf.config.threading.get_inter_op_parallelism_threads,
         tf.config.threading.set_inter_op_parallelism_threads),
    ):
        if value < 0:
            raise WorkerError(f"{name}={value}: use 0 (TensorFlow's default) or a count >= 1")
        if value == 0 or getter() == value:
            continue
        try:
            setter(value)
        except RuntimeError:
            raise WorkerError(
                f"{name}={value}: TensorFlow's runtime was already started in this process, "
                f"so its thread pools cannot be resized (run the experiment in its own worker)"
            ) from None


def _cpu_devices(replicas: int) -> list[str]:
    """The CPU as ``replicas`` logical devices (one replica each, sharing its cores and
    thread pools, as CPU worker processes would share them)."""
    if replicas == 1:
        return ["/device:CPU:0"]
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
        )
    except RuntimeError:
        if len(tf.config.list_logical_devices("CPU")) != replicas:
            raise WorkerError(
                f"exp.num_local_replicas={replicas} on the CPU: TensorFlow's runtime was "
                f"already started in this process, so the CPU cannot be split into "
                f"{replicas} devices (run the experiment in its own worker)"
            ) from None
    return [f"/device:CPU:{index}" for index in range(replicas)]


def select_devices(gpus: str, replicas: int, memory_growth: bool) -> list[str]:
    """The logical devices of the replicas: one per GPU of ``exp.gpus``, or the CPU
    (split into ``exp.num_local_replicas`` devices when there are several).

    The GPUs not asked for are hidden from TensorFlow, so that it neither places work
    on them nor reserves their memory; hiding is possible only before the runtime
    starts, and otherwise the devices are addressed by their physical index.
    """
    physical = tf.config.list_physical_devices("GPU")
    if not gpus:
        with contextlib.suppress(RuntimeError):
            tf.config.set_visible_devices([], "GPU")
        return _cpu_devices(replicas)
    if not physical:
        raise WorkerError(
            f"exp.gpus='{gpus}' asks for a GPU but TensorFlow sees none here (a CPU-only "
            f"build of TensorFlow, or no CUDA driver); use exp.gpus='' for the CPU"
        )
    indices = [int(index) for index in gpus.split(",")]
    for index in indices:
        if index >= len(physical):
            raise WorkerError(
                f"exp.gpus='{gpus}': GPU {index} does not exist ({len(physical)} visible)"
            )
    chosen = [physical[index] for index in indices]
    try:
        tf.config.set_visible_devices(chosen, "GPU")
        for gpu in chosen:
            tf.config.experimental.set_memory_growth(gpu, memory_growth)
    except RuntimeError:
        return [f"/device:GPU:{index}" for index in indices]
    # Visible GPUs are numbered in physical order.
    ordered = sorted(indices)
    return [f"/device:GPU:{ordered.index(index)}" for index in indices]
