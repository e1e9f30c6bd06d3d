"""Shared fixtures: run the real command line in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Writing an undeclared results.*, sys.* or hw.* key fails under test, in this process
# and in every worker it starts (dlbench.results.keys.check_key).
os.environ["DLBENCH_STRICT_KEYS"] = "1"

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def dlbench(tmp_path: Path) -> CliRunner:
    """Run ``python -m dlbench ARGS...`` in ``tmp_path``; returns the completed process."""

    def run(
        *args: str, timeout: float = 300, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dlbench", *args],
            cwd=cwd or tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Tests that run models in this process use one thread: at test sizes a second
    buys nothing, and when other processes share the two cores, threads that wait for
    each other make a step many times slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
