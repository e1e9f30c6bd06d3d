"""``dlbench status``: done, failed, skipped and pending experiments of a run directory,
on a run directory laid out as the runner leaves it (no worker runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlbench.cli.main import main
from dlbench.launch.command import write_input
from dlbench.results.store import Store

SPEC = ["-P", "exp.framework=fake", "-V", "exp.replica_batch=[1,2,4,8,16]"]


@pytest.fixture
def run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Five planned experiments: batch 1 ok, 2 failed, 4 skipped, 8 started and killed
    (an input, no record), 16 never started."""
    out = tmp_path / "run"
    assert main(["plan", *SPEC, "--out", str(out), "--format", "json"]) == 0
    planned: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["data"]
    outcomes = [("ok", ""), ("failure", "RuntimeError: " + "x" * 100), ("skipped", "oom")]
    with Store.in_directory(out) as store:
        for experiment, (status, message) in zip(planned, outcomes, strict=False):
            write_input(experiment, out)
            store.put({**experiment, "exp.status": status, "exp.status_msg": message})
    write_input(planned[3], out, ".1")  # the first process of a repeat, as the runner names it
    return out


def test_status_without_the_spec_lists_what_the_directory_holds(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--input", str(run_dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line.split()[1:5] for line in out[2:6]]
    assert rows == [["fake(resnet50)", "1", "done", "ok"], ["fake(resnet50)", "2", "failed",
                    "failure"], ["fake(resnet50)", "4", "skipped", "skipped"],
                    ["fake(resnet50)", "8", "pending", "started"]]
    assert out[3].endswith("xxx…")  # a long message is cut; the record has all of it
    assert out[6] == "1 done, 1 failed, 1 skipped, 1 pending"
    assert "give the sweep's spec" in out[7]


def test_status_with_the_spec_lists_the_experiments_never_started(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", "--input", str(run_dir), *SPEC, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["counts"] == {"done": 1, "failed": 1, "skipped": 1, "pending": 2}
    states = [(e["exp.replica_batch"], e["state"], e["exp.status"])
              for e in document["experiments"]]
    assert states == [(1, "done", "ok"), (2, "failed", "failure"), (4, "skipped", "skipped"),
                      (8, "pending", "started"), (16, "pending", "not started")]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "missing", "--input {path}: not a directory"),
        (lambda root: root, "--input {path}: no results.sqlite and no experiments/ folder"),
    ],
)
def test_status_of_what_is_not_a_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, message: str
) -> None:
    path = make(tmp_path)
    assert main(["status", "--input", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(path=path) in err
    assert list(tmp_path.iterdir()) == []  # nothing created
