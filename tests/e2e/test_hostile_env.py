"""dlbench's internal environment variables are never believed from the user's
environment: a stray ``DLBENCH_LOG_FILE`` does not move a worker's log, and a stray
``DLBENCH_WORKER_START`` does not change what the record says of how the worker
started, even when the user lists them in ``DLBENCH_WORKER_ENV``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dlbench.config import load_spec, plan_experiments
from dlbench.launch.command import EXTRA_ENV, WORKER_ENV_KEY, passed_through, worker_env
from dlbench.launch.forkserver import client as forkserver
from dlbench.launch.local.launcher import LocalLauncher
from dlbench.launch.sweep import Sweep
from dlbench.results.log.file import INTERNAL_ENV, LOG_FILE_ENV
from dlbench.results.store import Store
from tests.conftest import CliRunner

FAKE = ["-P", "exp.framework=fake", "-P", "fake.step_ms=1", "-P", "exp.num_batches=2",
        "-P", "exp.num_warmup_batches=0", "-P", "monitor.enabled=false"]


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's environment names a log outside the run and says workers were forked,
    and lists both to be passed on; returns the folder of the stray log."""
    outside = tmp_path / "outside"
    monkeypatch.setenv(LOG_FILE_ENV, str(outside / "x.log"))
    monkeypatch.setenv("DLBENCH_WORKER_START", "forked")
    monkeypatch.setenv(EXTRA_ENV, f"{LOG_FILE_ENV} DLBENCH_WORKER_START")
    return outside


def _records(run_dir: Path) -> list[dict[str, Any]]:
    with Store.in_directory(run_dir, create=False) as store:
        return store.records(series=[WORKER_ENV_KEY])


def test_internal_names_are_never_passed_on_whatever_lists_them() -> None:
    parent = {"DLBENCH_HOME": "/h", "DLBENCH_STRICT_KEYS": "1", "DLBENCH_PROGRESS_SECONDS": "5",
              LOG_FILE_ENV: "/elsewhere/x.log", "DLBENCH_WORKER_START": "forked",
              EXTRA_ENV: f"{LOG_FILE_ENV},DLBENCH_WORKER_START"}
    env = worker_env({"exp.framework": "fake", "exp.num_replicas": 1}, parent)
    assert not set(INTERNAL_ENV) & set(env)
    assert {"DLBENCH_HOME", "DLBENCH_STRICT_KEYS", "DLBENCH_PROGRESS_SECONDS"} <= set(env)
    assert not any(passed_through(name, frozenset(INTERNAL_ENV)) for name in INTERNAL_ENV)


def test_a_run_ignores_the_users_log_file_and_worker_start(
    dlbench: CliRunner, tmp_path: Path, hostile: Path
) -> None:
    out = tmp_path / "out"
    proc = dlbench("run", *FAKE, "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    [record] = _records(out)
    assert record["exp.status"] == "ok", record["exp.status_msg"]
    log = Path(str(record["exp.log_file"]))
    assert log.is_file() and log.resolve().is_relative_to(out.resolve())
    assert "__results.time__=" in log.read_text()  # the worker wrote its results there
    assert not hostile.exists()  # nothing written at the stray path
    assert record["sys.worker_start"] == "fresh"
    assert not set(INTERNAL_ENV) & set(record[WORKER_ENV_KEY])


def test_a_forked_worker_says_it_was_forked_whatever_the_environment_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hostile: Path
) -> None:
    # The fake framework counts as fork-safe here (it is: no threads, no device), so the
    # fork server serves it without importing a framework; no GPU is visible to it.
    monkeypatch.setattr(forkserver, "FORK_SAFE_MODULES",
                        forkserver.FORK_SAFE_MODULES | {"dlbench.backends.fake"})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("DLBENCH_WORKER_START", "fresh")
    spec = load_spec(params=["exp.framework=fake", "fake.step_ms=1", "exp.num_batches=2",
                             "exp.num_warmup_batches=0", "monitor.enabled=false",
                             f"exp.out_dir={tmp_path / 'out'}"])
    launcher = LocalLauncher(lambda line: None)
    sweep = Sweep(launcher, report=lambda line: None)
    try:
        (outcome,) = sweep.run(plan_experiments(spec)).outcomes
        assert launcher._forks.server is not None and not launcher._forks.broken
    finally:
        sweep.close()
    record = outcome.record
    assert record["exp.status"] == "ok", record["exp.status_msg"]
    assert record["sys.worker_start"] == "forked"
    log = Path(str(record["exp.log_file"]))
    assert log.is_file() and log.resolve().is_relative_to((tmp_path / "out").resolve())
    assert not hostile.exists()
