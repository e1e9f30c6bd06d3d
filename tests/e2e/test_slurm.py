"""``dlbench run --launcher slurm`` end to end, against a real single-node Slurm.

The session fixture starts one with ``.ci/slurm-up`` when none answers (as root, where
Debian's slurm-wlm and munge are installed); without one the Slurm tests skip and say
why. The flag checks that need no cluster run everywhere.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlbench.launch.slurm.queue import queue_states
from dlbench.results.store import Store
from tests.conftest import REPO, CliRunner

SLURM_UP = REPO / ".ci" / "slurm-up"
FAKE = ["-P", "exp.framework=fake", "-P", "exp.num_warmup_batches=1",
        "-P", "exp.num_batches=3"]
TAKES_JOBS = {"idle", "mixed", "allocated", "completing"}


def _slurm_problem() -> str:
    """Why no Slurm here takes jobs, or empty."""
    if shutil.which("sinfo") is None:
        return "Slurm is not installed (no sinfo on PATH)"
    try:
        proc = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True,
                              text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "sinfo got no answer in 30 s"
    if proc.returncode != 0:
        return "no Slurm controller answers: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    states = {s.strip().rstrip("*~#!%$@^-") for s in proc.stdout.split()}
    return "" if states & TAKES_JOBS else f"no Slurm node takes jobs (sinfo: {states or 'none'})"


@pytest.fixture(scope="session")
def slurm() -> None:
    """A Slurm that takes jobs: the one here, or one that .ci/slurm-up starts."""
    problem = _slurm_problem()
    if problem and SLURM_UP.is_file() and os.geteuid() == 0:
        proc = subprocess.run([str(SLURM_UP)], capture_output=True, text=True, timeout=180)
        problem = _slurm_problem()
        if problem and proc.returncode != 0:
            problem = (proc.stderr.strip().splitlines() or [problem])[-1]
    if problem:
        pytest.skip(f"no Slurm to test against: {problem}")


def _store_rows(out: Path) -> dict[str, dict[str, object]]:
    with Store.in_directory(out, create=False) as store:
        return {str(r["exp.id"]): r for r in store.records()}


def _job_states(array_id: str) -> dict[str, str]:
    out = subprocess.run(["squeue", "--noheader", "--array", "--states=all", "--format=%i %T",
                          f"--jobs={array_id}"], capture_output=True, text=True).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """Background ``dlbench run`` processes of a test, stopped if the test fails."""
    processes: list[subprocess.Popen[str]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.communicate(timeout=60)


def _start(started: list[subprocess.Popen[str]], cwd: Path, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-m", "dlbench", "run", "--launcher", "slurm",
                                *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    started.append(process)
    return process


def _submitted_array(process: subprocess.Popen[str]) -> tuple[str, list[str]]:
    """The array id of the run's submission line, and the lines read until it."""
    assert process.stderr is not None
    lines: list[str] = []
    for line in process.stderr:
        lines.append(line)
        match = re.search(r"as Slurm job array (\d+)", line)
        if match:
            return match[1], lines
    raise AssertionError(f"no submission line: {''.join(lines)}")


def _wait_for_log_with(logs: Path, text: str, timeout: float = 60) -> Path:
    """The log under ``logs`` that contains ``text``, once a worker has written it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in logs.glob("*.log") if logs.is_dir() else []:
            if text in log.read_text(errors="replace"):
                return log
        time.sleep(0.2)
    raise AssertionError(f"no log in {logs} contains {text!r}")


@pytest.mark.slow
def test_slurm_sweep_matches_local_and_resumes(
    slurm: None, dlbench: CliRunner, tmp_path: Path
) -> None:
    sweep = [*FAKE, "-V", "fake.step_ms=[2,4]", "-V", "exp.replica_batch=[1,2]"]
    proc = dlbench("run", "--launcher", "slurm", *sweep, "--out", "slurm-out")
    assert proc.returncode == 0, proc.stderr
    assert "submitted 4 experiment(s) as Slurm job array" in proc.stderr
    assert "4/4 ok" in proc.stderr and "samples/s" in proc.stdout
    on_slurm = _store_rows(tmp_path / "slurm-out")
    local = dlbench("run", *sweep, "--out", "local-out")
    assert local.returncode == 0, local.stderr
    assert ({i: r["exp.status"] for i, r in on_slurm.items()}
            == {i: r["exp.status"] for i, r in _store_rows(tmp_path / "local-out").items()})
    assert {r["exp.status"] for r in on_slurm.values()} == {"ok"}
    for record in on_slurm.values():
        assert len(record["results.time_data"]) == 3  # type: ignore[arg-type]
        assert float(record["results.time"]) >= float(record["fake.step_ms"])  # type: ignore[arg-type]
        assert Path(str(record["exp.log_file"])).is_file()
    assert list((tmp_path / "slurm-out" / "slurm").glob("*_result.pkl"))
    # Resume: everything is ok, so nothing is submitted and no log is touched.
    logs = sorted((tmp_path / "slurm-out" / "logs").iterdir())
    mtimes = [p.stat().st_mtime_ns for p in logs]
    again = dlbench("run", "--launcher", "slurm", *sweep, "--out", "slurm-out")
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("ok (kept)") == 4 and "submitted" not in again.stderr
    assert [p.stat().st_mtime_ns for p in logs] == mtimes


@pytest.mark.slow
def test_failed_experiment_fails_alone_and_reruns_onfail(
    slurm: None, dlbench: CliRunner, tmp_path: Path
) -> None:
    sweep = [*FAKE, "-P", "fake.step_ms=1", "-P", "fake.failure_batch=1",
             "-V", "fake.failure=[exception, none]", "-P", "exp.rerun=onfail", "--out", "out"]
    proc = dlbench("run", "--launcher", "slurm", *sweep)
    assert proc.returncode == 1, proc.stderr
    by_failure = {r["fake.failure"]: r for r in _store_rows(tmp_path / "out").values()}
    assert by_failure["none"]["exp.status"] == "ok"
    assert by_failure["exception"]["exp.status"] == "failure"
    assert "RuntimeError: fake failure at batch 1" in str(by_failure["exception"]["exp.status_msg"])
    failed_log = Path(str(by_failure["exception"]["exp.log_file"]))
    before = failed_log.stat().st_mtime_ns
    again = dlbench("run", "--launcher", "slurm", *sweep)
    assert again.returncode == 1, again.stderr
    assert "submitted 1 experiment(s) as Slurm job " in again.stderr
    assert again.stderr.count("ok (kept)") == 1
    assert failed_log.stat().st_mtime_ns > before
    rows = _store_rows(tmp_path / "out")
    assert sorted(str(r["exp.status"]) for r in rows.values()) == ["failure", "ok"]


@pytest.mark.slow
def test_repeats_and_timeouts_as_locally(
    slurm: None, dlbench: CliRunner, tmp_path: Path
) -> None:
    proc = dlbench("run", "--launcher", "slurm", *FAKE, "-P", "fake.step_ms=1",
                   "-P", "fake.failure_batch=1", "-P", "exp.repeat=2", "-P", "exp.timeout=4",
                   "-V", "fake.failure=[hang, none]", "--out", "out")
    assert proc.returncode == 1, proc.stderr
    by_failure = {r["fake.failure"]: r for r in _store_rows(tmp_path / "out").values()}
    hang, ok = by_failure["hang"], by_failure["none"]
    assert hang["exp.status"] == "timeout"
    # As a local run says it: the timeout, then where the worker was.
    assert str(hang["exp.status_msg"]).startswith("process 1 of 2: timed out after 4 s in ")
    assert ok["exp.status"] == "ok"
    log = str(ok["exp.log_file"])
    assert ok["results.repeat_log_files"] == [f"{log}.1", f"{log}.2"]
    assert len(ok["results.time_data"]) == 6  # type: ignore[arg-type]
    assert Path(log).is_file() and Path(f"{log}.2").is_file()


@pytest.mark.slow
def test_cancelled_job_is_a_failure_with_slurms_state(
    slurm: None, tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    process = _start(started, tmp_path, *FAKE, "-P", "fake.step_ms=1", "-P",
                     "fake.failure_batch=1", "-V", "fake.failure=[hang, none]", "--out", "out")
    array, _ = _submitted_array(process)
    _wait_for_log_with(tmp_path / "out" / "logs", '__fake.failure__="hang"')
    subprocess.run(["scancel", f"{array}_0"], check=True)  # the hanging one, first planned
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    by_failure = {r["fake.failure"]: r for r in _store_rows(tmp_path / "out").values()}
    assert by_failure["none"]["exp.status"] == "ok"
    assert by_failure["hang"]["exp.status"] == "failure"
    assert re.match(rf"Slurm job {array}_0 ended CANCELLED",
                    str(by_failure["hang"]["exp.status_msg"])), by_failure["hang"]
    assert _job_states(array)[f"{array}_0"] == "CANCELLED"


@pytest.mark.slow
def test_job_cancelled_while_pending_never_ran(
    slurm: None, tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    process = _start(started, tmp_path, *FAKE, "-P", "fake.step_ms=1", "-P",
                     "fake.failure_batch=1", "-V", "fake.failure=[hang, none]",
                     "--slurm-array-parallelism", "1", "--out", "out")
    array, _ = _submitted_array(process)
    _wait_for_log_with(tmp_path / "out" / "logs", '__fake.failure__="hang"')
    subprocess.run(["scancel", f"{array}_1"], check=True)  # still pending behind the first
    subprocess.run(["scancel", f"{array}_0"], check=True)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 1, err
    by_failure = {r["fake.failure"]: r for r in _store_rows(tmp_path / "out").values()}
    assert by_failure["none"]["exp.status_msg"] == (
        f"Slurm job {array}_1 ended CANCELLED before its worker finished")
    assert str(by_failure["hang"]["exp.status_msg"]).startswith(
        f"Slurm job {array}_0 ended CANCELLED")


def test_jobs_slurm_does_not_know_have_no_state(slurm: None) -> None:
    assert queue_states(["999999999", "999999998_3"]) == {}


@pytest.mark.slow
def test_interrupt_cancels_the_jobs_and_marks_started_ones(
    slurm: None, tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    # One task at a time: the second experiment is still pending at Ctrl-C.
    process = _start(started, tmp_path, *FAKE, "-P", "fake.step_ms=1", "-P",
                     "fake.failure_batch=1", "-V", "fake.failure=[hang, none]",
                     "--slurm-array-parallelism", "1", "--out", "out")
    array, _ = _submitted_array(process)
    _wait_for_log_with(tmp_path / "out" / "logs", '__fake.failure__="hang"')
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert f"interrupted: cancelled Slurm job(s) {array}" in err
    assert "Interrupted: 1 experiment(s) not run" in err
    (record,) = _store_rows(tmp_path / "out").values()
    assert record["fake.failure"] == "hang" and record["exp.status"] == "interrupted"
    assert set(_job_states(array).values()) == {"CANCELLED"}


def test_unknown_partition_is_refused_before_submitting(
    slurm: None, dlbench: CliRunner, tmp_path: Path
) -> None:
    proc = dlbench("run", "--launcher", "slurm", "--slurm-partition", "no-such-partition",
                   *FAKE, "--out", "out")
    assert proc.returncode == 2
    assert re.fullmatch(r"dlbench: error: --slurm-partition no-such-partition: this cluster "
                        r"has no such partition; it has: \S.*\n", proc.stderr), proc.stderr
    assert not (tmp_path / "out" / "slurm").exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--launcher", "slurm", "--slurm-time", "soon"], "--slurm-time 'soon': expected MINUTES"),
    (["--launcher", "slurm", "--slurm-array-parallelism", "0"], "--slurm-array-parallelism '0'"),
    (["--launcher", "slurm", "--slurm-gres", "gpu 1"], "--slurm-gres 'gpu 1': expected"),
    (["--launcher", "slurm", "--slurm-option", "array=1-3"], "--slurm-option 'array=1-3'"),
    (["--slurm-partition", "gpu"], "--slurm-partition needs --launcher slurm"),
    (["--launcher", "local", "--slurm-time", "10"], "--slurm-time needs --launcher slurm"),
])
def test_bad_flags_are_one_line_errors(
    dlbench: CliRunner, flags: list[str], message: str
) -> None:
    proc = dlbench("run", *flags, *FAKE, "--out", "out")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dlbench: error: {message}"), proc.stderr


def test_without_submitit_slurm_says_how_to_install(tmp_path: Path) -> None:
    blocker = tmp_path / "blocked" / "submitit"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('submitit blocked by the test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(blocker.parent), str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", "--launcher", "slurm", *FAKE],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("dlbench: error: --launcher slurm needs submitit: "
                                  "`pip install dlbench[slurm]`"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1


@pytest.mark.skipif(importlib.util.find_spec("submitit") is None,
                    reason="submitit (dlbench[slurm]) is checked before Slurm's commands")
def test_without_slurm_commands_says_so(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", "--launcher", "slurm", *FAKE],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert re.fullmatch(r"dlbench: error: --launcher slurm: Slurm's commands \(.*sinfo.*\) are "
                        r"not on PATH; .*\n", proc.stderr), proc.stderr


@pytest.mark.skipif(shutil.which("sinfo") is None, reason="Slurm's client is not installed")
def test_without_a_controller_says_so(tmp_path: Path) -> None:
    # A configuration whose controller is nowhere: sinfo cannot reach it.
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=none\nSlurmctldHost=localhost\nSlurmctldPort=6999\n"
                    "MessageTimeout=2\nNodeName=n1\nPartitionName=p Nodes=n1\n")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    proc = subprocess.run([sys.executable, "-m", "dlbench", "run", "--launcher", "slurm", *FAKE],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert re.fullmatch(r"dlbench: error: --launcher slurm: no Slurm controller answers "
                        r"\(sinfo: .+\)\n", proc.stderr), proc.stderr
