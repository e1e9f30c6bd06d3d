"""What several end-to-end tests share: a small finished run directory, made once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.heap import frozen_heap

__all__ = ["FAKE", "frozen_heap", "pristine"]  # frozen_heap: autouse, for every module here

#: Two fake experiments, quick and without the resource monitor.
FAKE = ["-P", "exp.framework=fake", "-P", "fake.step_ms=1", "-P", "exp.num_batches=2",
        "-P", "exp.num_warmup_batches=0", "-P", "monitor.enabled=false",
        "-V", "exp.replica_batch=[1,2]"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of two fake experiments, made once."""
    out = tmp_path_factory.mktemp("pristine") / "run"
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", *FAKE, "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out
