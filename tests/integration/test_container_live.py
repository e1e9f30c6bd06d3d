"""exp.docker for real: the fake workload's worker inside a container.

Runs only where a container engine answers (``docker info``, ``podman info``,
``apptainer --version``); the image is ``DLBENCH_TEST_IMAGE`` (default
``python:3.12-slim``, pulled by the engine if it is not there). The worker needs
psutil and PyYAML besides dlbench: this test mounts the host's copies next to
dlbench's own package (psutil's extension is built for any CPython 3).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import yaml

from dlbench.results.store import Store
from tests.conftest import CliRunner

pytestmark = pytest.mark.slow

_PROBES = {"docker": ["docker", "info"], "podman": ["podman", "info"],
           "apptainer": ["apptainer", "--version"]}


def _answering_engine() -> tuple[str | None, str]:
    """The first engine that answers, or None and why none did."""
    why = []
    for engine, probe in _PROBES.items():
        if shutil.which(probe[0]) is None:
            why.append(f"no {probe[0]} on PATH")
            continue
        try:
            done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            why.append(f"`{' '.join(probe)}` did not answer in 20 s")
            continue
        if done.returncode == 0:
            return engine, ""
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        why.append(f"`{' '.join(probe)}` failed: {last}")
    return None, "; ".join(why)


ENGINE, WHY_NOT = _answering_engine()


@pytest.mark.skipif(ENGINE is None, reason=f"no container engine answers here: {WHY_NOT}")
def test_fake_workload_runs_inside_a_container(dlbench: CliRunner, tmp_path: Path) -> None:
    image = os.environ.get("DLBENCH_TEST_IMAGE", "python:3.12-slim")
    deps = [f"{Path(m.__file__).parent}:/opt/dlbench/{name}:ro"
            for name, m in (("psutil", psutil), ("yaml", yaml))]
    proc = dlbench("run", "-P", "exp.framework=fake", "-P", "exp.model=toy",
                   "-P", "fake.step_ms=5", "-P", "exp.num_batches=10",
                   "-P", "exp.docker=true", "-P", f"exp.container_engine={ENGINE}",
                   "-P", f"exp.docker_image={image}",
                   "-P", f"exp.container_mounts={json.dumps(deps)}",
                   "--out", "out", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.in_directory(tmp_path / "out", create=False) as store:
        (record,) = store.records()
    assert record["exp.status"] == "ok"
    assert record["results.time_p50"] == pytest.approx(5.0, rel=0.05)
    # Written inside the container, on the mounted run directory, as the user.
    log = Path(record["exp.log_file"])
    assert log.stat().st_uid == os.getuid()
    # The image's interpreter ran the worker, not this one.
    assert record["sys.python_executable"] != sys.executable
