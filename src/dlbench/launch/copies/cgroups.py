"""Where this process sits in the cgroup hierarchies, read from ``/proc``: the
runner's own cgroup bounds what its copies may be given (:mod:`dlbench.launch.copies.copies`)
and is where their own cgroups are made (:mod:`dlbench.launch.copies.limits`)."""

from __future__ import annotations

from pathlib import Path


def _own_cgroup_path(controller: str) -> str | None:
    """This process's cgroup in the cgroup v1 hierarchy of ``controller``, or in the
    cgroup v2 hierarchy when ``controller`` is empty."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if controller and controller in controllers.split(","):
            return path
        if not controller and hierarchy == "0" and not controllers:
            return path
    return None


def _mount_point(fstype: str, option: str | None = None) -> Path | None:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = right.split()
        if fields and fields[0] == fstype and (option is None or option in fields[-1].split(",")):
            return Path(left.split()[4])
    return None


def own_cgroup2_dir() -> Path | None:
    """The runner's own cgroup v2 directory, or None without cgroup v2."""
    mount, own = _mount_point("cgroup2"), _own_cgroup_path("")
    return None if mount is None or own is None else mount / own.lstrip("/")


def own_cgroup1_memory_dir() -> Path | None:
    """The runner's own cgroup v1 memory-controller directory, or None."""
    mount, own = _mount_point("cgroup", "memory"), _own_cgroup_path("memory")
    return None if mount is None or own is None else mount / own.lstrip("/")
