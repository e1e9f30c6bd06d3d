"""Running the worker inside a container: the engine's command around the worker's.

With ``exp.docker=true`` the worker's argument list (plain or under torchrun) runs
inside ``exp.docker_image`` through ``exp.container_engine``:

- ``docker run`` / ``podman run`` with ``--rm --init``, the caller's uid and gid,
  the run directory mounted at the same path, GPUs by ``--gpus`` (docker) or CDI
  devices (podman);
- ``apptainer exec --cleanenv`` with ``--nv`` for GPUs and the same mounts, started
  through ``env`` with each value to pass as ``APPTAINERENV_NAME=VALUE``: apptainer's
  ``--env`` splits its argument at commas (``OMP_NUM_THREADS=1,LD_PRELOAD=x`` would be
  two variables), its own environment is read as it is.

The image comes after ``--``, the end of the engine's options, and is a checked image
reference (:func:`~dlbench.config.command_words.check_container_image`); only the items of
exp.container_options are options the user gives. A mounted folder whose path holds
``,`` or ``:`` (the mount options' separators) or a control character is refused.

The worker inside writes its log on the mounted run directory, so the runner reads it
as it reads any other. This dlbench's own package is mounted read-only and put on
``PYTHONPATH`` (``exp.container_mount_dlbench``): the image needs the framework,
psutil and PyYAML, and the worker is the runner's version whatever the image holds.
Everything is an argument list: nothing passes through a shell.

Example (what the runner starts for one GPU, docker)::

    docker run --rm --init --user 1000:1000 --gpus "device=0" -e PYTHONUNBUFFERED ...
        -- pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime python -m dlbench.worker EXP.json
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dlbench
from dlbench.config.command_words import (
    APPTAINER_IMAGE_SUFFIXES,
    check_bind_path,
    check_container_image,
    check_container_option,
    check_container_python,
    is_image_reference,
)
from dlbench.config.registry import (
    CONTAINER_ENGINE_COMMANDS,
    container_image,
    parse_container_mount,
)
from dlbench.errors import ConfigError

#: Where this dlbench's package is mounted inside the container.
DLBENCH_MOUNT = "/opt/dlbench"

#: Variables passed into the container when the worker's environment has them: the
#: worker's own, and those that change performance. Never PATH, PYTHONPATH or
#: LD_LIBRARY_PATH, which name the host's files; never CUDA_VISIBLE_DEVICES, since
#: the engine's GPU options decide what the container sees.
FORWARDED = (
    "PYTHONUNBUFFERED", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "KMP_AFFINITY", "OMP_PROC_BIND", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUBLAS_WORKSPACE_CONFIG", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_CUDNN_V8_API_ENABLED",
    "TORCH_DISTRIBUTED_DEBUG", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TF_ENABLE_ONEDNN_OPTS",
    "TF_CPP_MIN_LOG_LEVEL", "XLA_FLAGS", "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    # Who the user is: torch.compile names its cache folder after getpass.getuser(),
    # which fails for a uid the image's /etc/passwd does not know.
    "USER", "LOGNAME",
)
#: Prefixes of more such variables: dlbench's own, NCCL's.
FORWARDED_PREFIXES = ("DLBENCH_", "NCCL_")


def engine_command(engine: str) -> str | None:
    """The name ``engine``'s command is found as on PATH, or None."""
    for name in CONTAINER_ENGINE_COMMANDS.get(engine, ()):
        if shutil.which(name):
            return name
    return None


def forwarded_names(env: Mapping[str, str]) -> list[str]:
    """The names in ``env`` that go into the container."""
    return sorted(name for name in env
                  if name in FORWARDED or name.startswith(FORWARDED_PREFIXES))


def _cpu_count(cpu_list: str) -> int:
    """Cores in a Linux cpu list (``0-3,8`` is 5)."""
    count = 0
    for part in filter(None, cpu_list.split(",")):
        first, _, last = part.partition("-")
        count += int(last or first) - int(first) + 1
    return count


def _absolute(path: str | Path) -> str:
    return os.path.abspath(os.fspath(path))


def mounts(
    experiment: Mapping[str, Any], argv: Sequence[str], env: Mapping[str, str], run_dir: Path
) -> list[tuple[str, str, bool]]:
    """(host, container, read_only) folders to mount: the run directory, the folders of
    the experiment file (the worker's last argument), the log and exp.data_dir at the
    same paths; dlbench's package; then exp.container_mounts."""
    same_path = [_absolute(run_dir), os.path.dirname(_absolute(argv[-1])),
                 os.path.dirname(_absolute(experiment["exp.log_file"]))]
    if env.get("DLBENCH_LOG_FILE"):
        same_path.append(os.path.dirname(_absolute(env["DLBENCH_LOG_FILE"])))
    found: dict[str, tuple[str, str, bool]] = {}
    for path in same_path:
        # A folder under one already mounted is there already.
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in found):
            found[path] = (path, path, False)
    data_dir = str(experiment.get("exp.data_dir") or "")
    if data_dir:
        host = _absolute(data_dir)
        found.setdefault(host, (host, host, True))
    if experiment.get("exp.container_mount_dlbench", True):
        package = str(Path(dlbench.__file__).resolve().parent)
        found[package] = (package, f"{DLBENCH_MOUNT}/dlbench", True)
    for text in experiment.get("exp.container_mounts") or []:
        try:
            host, inside, read_only = parse_container_mount(str(text))
        except ValueError as error:
            raise ConfigError(f"exp.container_mounts: {error}") from None
        found[f"{host}->{inside}"] = (host, inside, read_only)
    for host, inside, _ in found.values():
        for path in (host, inside):
            try:
                check_bind_path(path)
            except ValueError as error:
                raise ConfigError(f"exp.docker: a folder to mount into the container, "
                                  f"{error}") from None
    return list(found.values())


def _checked(name: str, value: str, check: Callable[[str], None]) -> str:
    """``value`` of parameter ``name`` once ``check`` accepts it (the plan checked it
    already; this keeps a hand-made experiment from reaching an option position)."""
    try:
        check(value)
    except ValueError as error:
        raise ConfigError(f"{name}={value!r}: {error}") from None
    return value


def gpu_indices(experiment: Mapping[str, Any]) -> list[int]:
    """The GPUs the container sees: every GPU up to the highest one of exp.gpus.

    The worker picks its GPU by its index on the host (``exp.gpus=2``: ``cuda:2``),
    and an engine numbers the GPUs it passes from 0 in host order; passing GPUs 0 to
    the highest one named keeps the host's numbers inside the container.
    """
    named = [int(g) for g in str(experiment.get("exp.gpus", "")).split(",") if g]
    return list(range(max(named) + 1)) if named else []


def container_argv(
    experiment: Mapping[str, Any], argv: Sequence[str], env: Mapping[str, str], run_dir: Path
) -> list[str]:
    """``argv`` (the worker's command on the host, its interpreter first and its
    experiment file last) as the command that runs it inside the experiment's
    container. ``env`` is the worker's environment: what it has of
    :data:`FORWARDED` goes in (by name for docker and podman, whose command reads
    the values from its own environment, the one the runner starts it with)."""
    engine = str(experiment.get("exp.container_engine", "docker"))
    command = engine_command(engine) or CONTAINER_ENGINE_COMMANDS[engine][0]
    image = _checked("exp.docker_image", container_image(experiment),
                     lambda text: check_container_image(text, engine))
    python = _checked("exp.container_python",
                      str(experiment.get("exp.container_python") or "python"),
                      check_container_python)
    inside = [python, *argv[1:]]
    folders = mounts(experiment, argv, env, run_dir)
    names = forwarded_names(env)
    values: dict[str, str] = {}
    if experiment.get("exp.container_mount_dlbench", True):
        values["PYTHONPATH"] = DLBENCH_MOUNT
    copy_cpus = str(experiment.get("exp.copy_cpus") or "")
    if copy_cpus:  # a parallel copy: the runner sets its thread count after this is built
        values["OMP_NUM_THREADS"] = str(_cpu_count(copy_cpus))
    options = [_checked("exp.container_options", str(o), check_container_option)
               for o in experiment.get("exp.container_options") or []]
    if engine == "apptainer":
        passed = {**{name: env[name] for name in names if name not in values}, **values}
        return ["env", *[f"{_apptainer_prefix(command)}{name}={value}"
                         for name, value in passed.items()],
                command, "exec", "--cleanenv", *(["--nv"] if gpu_indices(experiment) else []),
                "--pwd", os.getcwd(),
                *[arg for host, ctr, ro in folders
                  for arg in ("--bind", f"{host}:{ctr}{':ro' if ro else ''}")],
                *options, "--", _apptainer_image(image), *inside]
    return [command, "run", *_run_options(engine, experiment, copy_cpus),
            "--workdir", os.getcwd(),
            *[arg for host, ctr, ro in folders
              for arg in ("--volume", f"{host}:{ctr}{':ro' if ro else ''}")],
            *[arg for name in names if name not in values for arg in ("-e", name)],
            *[arg for name, value in values.items() for arg in ("-e", f"{name}={value}")],
            *options, "--", image, *inside]


def _apptainer_prefix(command: str) -> str:
    """The prefix of the variables that ``command`` (apptainer, or singularity, which may
    be SingularityCE) sets inside the container, even with --cleanenv."""
    return "SINGULARITYENV_" if command == "singularity" else "APPTAINERENV_"


def _run_options(engine: str, experiment: Mapping[str, Any], copy_cpus: str) -> list[str]:
    """docker's and podman's options besides mounts and environment."""
    # --init: the worker is not PID 1, which ignores SIGTERM without a handler; the
    # init process passes on the SIGTERM the client gets from a timeout or Ctrl-C.
    # No -i: the worker's stdin is empty, by design.
    options = ["--rm", "--init", "--user", f"{os.getuid()}:{os.getgid()}",
               # A home the user can write, whatever the image's /etc/passwd says.
               "-e", "HOME=/tmp"]
    if engine == "podman" and os.geteuid() != 0:
        options.append("--userns=keep-id")  # rootless: files written keep the user's ids
    gpus = gpu_indices(experiment)
    if gpus and engine == "docker":
        # Quoted: docker reads the value as CSV, where a bare 0,1 would be two fields.
        options += ["--gpus", f'"device={",".join(map(str, gpus))}"']
    elif gpus:
        options += [arg for g in gpus for arg in ("--device", f"nvidia.com/gpu={g}")]
    if int(experiment.get("exp.num_replicas", 1)) > 1:
        # Replicas meet at a rendezvous port and exchange gradients over the host's
        # interfaces, which other nodes must reach; NCCL's shared-memory transport
        # between the replica processes needs more than the 64 MB private /dev/shm.
        options += ["--network", "host", "--ipc", "host"]
    elif experiment.get("exp.data_dir"):
        options += ["--ipc", "host"]  # data-loader workers hand batches over in /dev/shm
    if copy_cpus:
        # A parallel copy: the container is the engine's child, not the client's, so
        # the engine holds it to the copy's share.
        memory = int(experiment.get("exp.copy_memory_mb") or 0)
        options += ["--cpuset-cpus", copy_cpus]
        if memory:
            options += ["--memory", f"{memory}m", "--memory-swap", f"{memory}m"]
    return options


def _apptainer_image(image: str) -> str:
    """An image file (``.sif``) or a URI as given; a registry name as ``docker://NAME``,
    the same image docker would run."""
    if ("://" in image or image.endswith(APPTAINER_IMAGE_SUFFIXES) or os.path.isfile(image)
            or not is_image_reference(image)):  # docker-archive:FILE, oci:FOLDER...
        return image
    return f"docker://{image}"
