"""``dlbench history`` on an SQLite history: importing runs (a real fake-workload run
directory, DLBS results JSON, synthetic nightly runs), finding the regression injected
into a nightly series, and the one-line errors.

The command's parser is built here as ``dlbench`` builds it (``add_arguments`` on a
``history`` sub-command) and its handlers run in this process.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dlbench.cli.commands import history as commands_history
from dlbench.cli.usage import Parser
from dlbench.errors import DlbenchError
from dlbench.results.history.store import open_history

REPO = Path(__file__).resolve().parents[2]
DLBS_RESULTS = REPO / "tests" / "data" / "logs" / "dlbs" / "expected.json"
NIGHT0 = datetime(2024, 1, 1, 2, 0, tzinfo=timezone.utc)


def history_cli_main(argv: Sequence[str]) -> int:
    """Run ``dlbench history ARGV...`` and return its exit status, printing a user
    error as ``main`` does: one line, status 2."""
    parser = Parser(prog="dlbench")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands_history.add_arguments(sub.add_parser("history"))
    try:
        args = parser.parse_args(["history", *argv])
        return int(args.handler(args))
    except DlbenchError as error:
        print(f"dlbench: error: {error}", file=sys.stderr)
        return error.exit_status


def history_cli(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """:func:`history_cli_main` in this process: exit status, stdout, stderr."""
    status = history_cli_main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def nightly_record(model: str, night: int, throughput: float, version: str) -> dict[str, Any]:
    """A record as a nightly PyTorch run on an A100 would write it (the fields that count)."""
    return {
        "exp.framework": "pytorch", "exp.model": model, "exp.phase": "training",
        "exp.replica_batch": 32, "exp.gpus": "0", "exp.dtype": "float16",
        "exp.id": f"{model}-32-fp16", "exp.status": "ok",
        "results.throughput": throughput, "results.time": 32000.0 / throughput,
        "results.ci95_rel": 0.01, "results.time_data": [1.0, 2.0],
        "results.start_time": (NIGHT0 + timedelta(days=night)).isoformat(),
        "sys.hostname": "node1", "sys.framework_version": version,
        "hw.device_name": "NVIDIA A100", "hw.cpu_freq_mhz": {"current": 2000 + night},
    }


def write_nights(
    root: Path, nights: int = 60, *, step_at: int | None = None, step: float = -0.05,
    noise: float = 0.02, seed: int = 0, models: Sequence[str] = ("resnet50", "bert_base"),
) -> list[Path]:
    """One DLBS-style ``.json`` results file per night, each model a record; from
    ``step_at`` on, resnet50's throughput is ``1 + step`` times as high and every
    record names PyTorch 2.4.0 instead of 2.3.0."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for night in range(nights):
        after = step_at is not None and night >= step_at
        records = []
        for number, model in enumerate(models):
            value = (100.0 / (number + 1)) * (1.0 + noise * rng.standard_normal())
            if after and model == "resnet50":
                value *= 1.0 + step
            records.append(nightly_record(model, night, value, "2.4.0" if after else "2.3.0"))
        path = root / f"night{night:03d}.json"
        path.write_text(json.dumps({"data": records}))  # DLBS's results file
        paths.append(path)
    return paths


@pytest.fixture
def nightly_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """60 nights of two configurations, resnet50 5 % slower from night 52 on."""
    store = str(tmp_path / "h.sqlite")
    paths = write_nights(tmp_path / "runs", step_at=52)
    status, out, _ = history_cli(["import", *map(str, paths), "--store", store], capsys)
    assert status == 0 and out.endswith("h.sqlite: 120 records\n"), out
    return store


def test_check_flags_the_injected_regression_with_its_environment_change(
    nightly_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = history_cli(["check", "--store", nightly_store], capsys)
    assert status == 1, out
    lines = [line for line in out.splitlines() if "NEW REGRESSION" in line]
    assert len(lines) == 1 and "resnet50" in lines[0], out
    assert "sys.framework_version: 2.3.0 → 2.4.0" in lines[0]
    assert out.splitlines()[-1].startswith("results.throughput: 2 configurations")

    status, out, _ = history_cli(["check", "--store", nightly_store, "--format", "json"], capsys)
    document = json.loads(out)
    assert status == 1 and document["new_regressions"] == 1
    (change,) = document["changes"]
    assert abs(change["run #"] - 53) <= 2  # night 52 is the 53rd run
    assert -0.08 < change["change"] < -0.03 and change["p"] <= 0.01
    assert change["environment_change"]["sys.framework_version"]["after"] == "2.4.0"


def test_the_time_metric_regresses_upwards(
    nightly_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = history_cli(
        ["check", "--store", nightly_store, "--metric", "results.time"], capsys)
    assert status == 1 and "NEW REGRESSION" in out and "+5." in out


def test_an_old_regression_or_an_improvement_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_nights(tmp_path / "old", 40, step_at=20, seed=1)
    store = str(tmp_path / "old.sqlite")
    history_cli(["import", *map(str, old), "--store", store], capsys)
    status, out, _ = history_cli(["check", "--store", store], capsys)
    assert status == 0 and " regression " in out and "NEW" not in out, out
    status, out, _ = history_cli(["check", "--store", store, "--window", "25"], capsys)
    assert status == 1

    faster = write_nights(tmp_path / "up", 40, step_at=30, step=0.05, seed=2)
    store = str(tmp_path / "up.sqlite")
    history_cli(["import", *map(str, faster), "--store", store], capsys)
    status, out, _ = history_cli(["check", "--store", store, "--all"], capsys)
    assert status == 0 and " change " in out and "+" in out, out


def test_a_fake_run_directory_is_imported_once_wherever_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "dlbench", "run", "-P", "exp.framework=fake",
         "-P", "fake.step_ms=1", "-P", "exp.num_batches=3", "-V", "exp.replica_batch=[1,2]",
         "--out", str(run)],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    store = str(tmp_path / "h.sqlite")
    status, out, _ = history_cli(["import", str(run), "--store", store], capsys)
    assert status == 0 and "2 added, 0 replaced" in out, out
    shutil.copytree(run, tmp_path / "copy")
    status, out, _ = history_cli(["import", str(tmp_path / "copy"), "--store", store], capsys)
    assert status == 0 and "0 added, 2 replaced" in out and out.endswith(": 2 records\n")

    with open_history(store) as history:
        rows = history.rows()
    assert len({row.config_key for row in rows}) == 2
    row = rows[0]
    assert row.status == "ok" and row.config["exp.framework"] == "fake"
    assert row.config["hw.device_name"] == "fake" and "exp.replica_batch" in row.config
    assert "exp.log_file" not in row.config and "exp.id" not in row.config
    assert "results.throughput" in row.results
    # Series stay out of a history (the reasons of the stability verdict stay in,
    # for history check); the environment stays in.
    assert not any(isinstance(v, (list, dict)) for k, v in row.results.items()
                   if k != "results.unstable_reasons")
    assert isinstance(row.results["results.unstable_reasons"], list)
    assert "results.time_data" not in row.results and "sys.hostname" in row.environment
    assert row.record_time.startswith(row.run_time[:4])


def test_dlbs_results_json_imports_with_dlbs_times_and_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "h.sqlite")
    status, out, _ = history_cli(
        ["import", str(DLBS_RESULTS), "--store", store, "--revision", "abc123"], capsys)
    assert status == 0 and "4 added" in out, out
    with open_history(store) as history:
        rows = history.rows()
    tensorflow = [r for r in rows if r.config.get("exp.framework") == "tensorflow"]
    assert tensorflow and all(r.revision == "abc123" for r in rows)
    first = min(r.record_time for r in tensorflow)
    assert first == "2018-02-12T10:31:07.412000+00:00"
    assert tensorflow[0].environment["exp.framework_ver"] == "1.4.0"
    assert "exp.replica_batch" in tensorflow[0].config


def test_backfilled_runs_take_their_timestamp_and_revision_changes_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_nights(tmp_path, 24, step_at=16, step=-0.1, noise=0.01, models=["resnet50"])
    store = str(tmp_path / "h.sqlite")
    for night, path in enumerate(paths):
        when = (NIGHT0 + timedelta(days=400 - night)).isoformat()  # reversed on purpose
        revision = "r2" if night >= 16 else "r1"
        status, _, err = history_cli(
            ["import", str(path), "--store", store, "--timestamp", when,
             "--revision", revision, "--run-id", f"night-{night}"], capsys)
        assert status == 0, err
    with open_history(store) as history:
        rows = history.rows()
    assert [r.run_id for r in rows[:2]] == ["night-23", "night-22"]  # time order
    status, out, _ = history_cli(["check", "--store", store, "--all", "--window", "24"], capsys)
    # In time order the slow runs come first: throughput rose, at revision r2 -> r1.
    assert status == 0 and "revision: r2 → r1" in out, out


def test_key_splits_and_ignore_merges_configurations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_nights(tmp_path, 4, models=["resnet50"])
    store = str(tmp_path / "h.sqlite")
    history_cli(["import", *map(str, paths[:2]), "--store", store, "--key", "sys.hostname",
                 "--ignore", "exp.dtype"], capsys)
    history_cli(["import", *map(str, paths[2:]), "--store", store], capsys)
    with open_history(store) as history:
        configs = [r.config for r in history.rows()]
    assert sum("sys.hostname" in c and "exp.dtype" not in c for c in configs) == 2
    assert sum("sys.hostname" not in c and c["exp.dtype"] == "float16" for c in configs) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["import", "x.json", "--store", "ftp://host/h"], "--store ftp://host/h: unknown kind"),
        (["check", "--store", "{tmp}/none.sqlite"], "does not exist"),
        (["import", "{run}", "--store", "{tmp}/h.sqlite", "--timestamp", "yesterday"],
         "--timestamp 'yesterday': expected an ISO 8601 time"),
        (["import", "{run}", "{run}", "--store", "{tmp}/h.sqlite", "--run-id", "x"],
         "--run-id names one run"),
        (["check", "--store", "{tmp}/full.sqlite", "--metric", "results.latency_p99"],
         "--metric results.latency_p99: no ok record"),
        (["check", "--store", "{tmp}/full.sqlite", "--metric", "results.nothing"],
         "--metric results.nothing: is not a declared result key"),
        (["check", "--store", "{tmp}/full.sqlite", "--threshold", "5"], "--threshold '5'"),
        (["check", "--store", "{tmp}/full.sqlite", "--p-value", "2"], "--p-value 2.0"),
        (["html", "--store", "{tmp}/full.sqlite"], "--output is required"),
        (["import", "{tmp}/missing", "--store", "{tmp}/h.sqlite"], "does not exist"),
        (["import", "{run}", "--store", "{tmp}/run.sqlite"],
         "--store {tmp}/run.sqlite: an SQLite file but not a dlbench history"),
    ],
)
def test_errors_are_one_line_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (run,) = write_nights(tmp_path, 1, models=["resnet50"])
    history_cli(["import", str(run), "--store", str(tmp_path / "full.sqlite")], capsys)
    with sqlite3.connect(tmp_path / "run.sqlite") as other:  # say, a run's results store
        other.execute("CREATE TABLE experiments (id TEXT)")
    argv = [a.format(tmp=tmp_path, run=run) for a in argv]
    status, _, err = history_cli(argv, capsys)
    assert status == 2, err
    assert err.count("\n") == 1 and message.format(tmp=tmp_path) in err, err


def test_the_parser_defaults_are_the_library_defaults() -> None:
    from dlbench.report.history import changepoint
    from dlbench.report.history import changes as history_changes

    assert commands_history._P_VALUE == changepoint.DEFAULT_P_THRESHOLD
    assert commands_history._PERMUTATIONS == changepoint.DEFAULT_PERMUTATIONS
    assert commands_history._MIN_SIZE == changepoint.DEFAULT_MIN_SIZE
    assert commands_history._WINDOW == history_changes.DEFAULT_WINDOW
    assert commands_history._LAST == history_changes.DEFAULT_LAST
    assert float(commands_history._THRESHOLD.rstrip("%")) / 100 == pytest.approx(
        history_changes.DEFAULT_THRESHOLD)
