"""System information: git commits read from .git, GPUs from a stand-in NVML."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dlbench.measure.sysinfo import git_commit, gpu_info, host_info, pytorch_info

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def test_commit_of_a_branch_a_packed_ref_and_a_detached_head(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(COMMIT + "\n")
    assert git_commit(tmp_path) == COMMIT
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{OTHER} refs/heads/main\n")
    assert git_commit(tmp_path) == OTHER
    (git / "HEAD").write_text(COMMIT + "\n")
    assert git_commit(tmp_path) == COMMIT


def test_commit_of_a_worktree(tmp_path: Path) -> None:
    # A worktree's .git is a file naming its git dir, whose refs live in the common dir.
    common = tmp_path / "repo.git"
    worktree_git = common / "worktrees" / "wt"
    worktree_git.mkdir(parents=True)
    (worktree_git / "HEAD").write_text("ref: refs/heads/feature\n")
    (worktree_git / "commondir").write_text("../..\n")
    (common / "refs" / "heads").mkdir(parents=True)
    (common / "refs" / "heads" / "feature").write_text(OTHER + "\n")
    checkout = tmp_path / "wt"
    checkout.mkdir()
    (checkout / ".git").write_text(f"gitdir: {worktree_git}\n")
    assert git_commit(checkout) == OTHER


def test_no_git_no_commit(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None


class FakeNvml:
    NVML_NVLINK_MAX_LINKS = 4

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return SimpleNamespace(total=80 * 2**30, used=0)

    def nvmlDeviceGetMaxClockInfo(self, handle: int, clock: int) -> int:
        return {1: 1980, 2: 2619}[clock]

    def nvmlDeviceGetPowerManagementLimit(self, handle: int) -> int:
        return 700_000

    def nvmlDeviceGetPciInfo(self, handle: int) -> Any:
        return SimpleNamespace(busId=f"00000000:{handle + 0x18:02X}:00.0".encode())

    def nvmlDeviceGetCudaComputeCapability(self, handle: int) -> tuple[int, int]:
        return (9, 0)

    def nvmlDeviceGetPersistenceMode(self, handle: int) -> int:
        raise RuntimeError("not supported")

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:
        return 1 if link < 3 else 0

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12040

    def nvmlDeviceGetTopologyCommonAncestor(self, a: int, b: int) -> int:
        return 30


def test_gpu_info_from_nvml() -> None:
    info = gpu_info(FakeNvml())
    assert info["hw.gpu_count"] == 2
    assert info["hw.gpu_driver"] == "550.54.15"
    assert info["sys.cuda_driver_version"] == "12.4"
    assert info["hw.gpu_topology"] == {"0-1": "PHB"}
    first = info["hw.gpus"][0]
    assert first == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gib": 80.0,
                     "max_sm_clock_mhz": 1980, "max_memory_clock_mhz": 2619,
                     "power_limit_w": 700.0, "pci_bus_id": "00000000:18:00.0",
                     "compute_capability": "9.0", "nvlink_active_links": 3}


def test_host_info_has_the_environment() -> None:
    info = host_info(gpus=False)
    assert info["hw.cpu_count"] == os.cpu_count()
    assert info["hw.cpu_cores"] >= 1
    assert info["hw.memory_gib"] > 0
    assert info["sys.python"].count(".") == 2
    assert isinstance(info["sys.env"], dict)
    assert "hw.gpus" not in info


def test_framework_info_names_the_build() -> None:
    info = pytorch_info()
    assert info["sys.framework"] == "pytorch"
    build = info["sys.framework_build"]
    assert {"cuda", "mkl", "mkldnn", "openmp", "num_threads"} <= set(build)
