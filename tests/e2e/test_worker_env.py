"""The worker's environment is an allow-list: a variable the parent has outside it never
reaches the worker, one the user lists in DLBENCH_WORKER_ENV and those dlbench sets do;
the record names what the worker got, without the values."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.launch.command import EXTRA_ENV, WORKER_ENV_KEY
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.sweep import Sweep
from dlbench.results.log.parser import parse_log


def _interpreter_that_dumps_its_environment(tmp_path: Path) -> tuple[str, Path]:
    """A stand-in for the worker's python: it writes the environment it was started
    with to a file, then runs the real interpreter with the same arguments."""
    dump = tmp_path / "env.txt"
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nenv > '{dump}'\nexec '{sys.executable}' \"$@\"\n")
    script.chmod(0o755)
    return str(script), dump


def _plan(out: Path, *params: str) -> list[dict[str, Any]]:
    spec = load_spec(params=["exp.framework=fake", "fake.step_ms=1", "exp.num_batches=2",
                             "exp.num_warmup_batches=0", "monitor.enabled=false",
                             "exp.fork_server=never", f"exp.out_dir={out}", *params])
    return plan_experiments(spec)


def test_a_variable_off_the_list_stays_in_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWEEP_TEST_SECRET", "hush-1234")
    monkeypatch.setenv("SWEEP_TEST_KEPT", "kept-5678")
    monkeypatch.setenv(EXTRA_ENV, "SWEEP_TEST_KEPT")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # on the list
    python, dump = _interpreter_that_dumps_its_environment(tmp_path)
    sweep = Sweep(LocalLauncher(lambda line: None, python), report=lambda line: None)
    try:
        (outcome,) = sweep.run(_plan(tmp_path / "out")).outcomes
    finally:
        sweep.close()
    record = outcome.record
    assert record["exp.status"] == "ok", record["exp.status_msg"]
    got = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert "SWEEP_TEST_SECRET" not in got
    assert got["SWEEP_TEST_KEPT"] == "kept-5678"  # the user's, listed
    assert got["OMP_NUM_THREADS"] == "1"  # the allow-list's
    assert got["PYTHONUNBUFFERED"] == "1"  # dlbench's own
    assert "SWEEP_TEST_SECRET" in os.environ  # the parent keeps it
    # The record names what the worker got, and so does its log, never a value.
    names = record[WORKER_ENV_KEY]
    assert names == sorted(names) and set(names) <= set(got)
    assert {"SWEEP_TEST_KEPT", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", EXTRA_ENV} <= set(names)
    assert "SWEEP_TEST_SECRET" not in names
    log = Path(record["exp.log_file"])
    assert parse_log(log)[0][WORKER_ENV_KEY] == names
    assert "kept-5678" not in log.read_text() and "hush" not in log.read_text()
