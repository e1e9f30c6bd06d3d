"""The shipped suites: the smoke suite end to end, every model through real workers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dlbench.config.catalog import MODELS
from dlbench.suites import suite_names
from tests.conftest import CliRunner


@pytest.mark.slow
def test_smoke_suite_trains_every_model(dlbench: CliRunner, tmp_path: Path) -> None:
    # Training runs forward, loss and backward: inference of every model is covered by
    # the unit tests, and the full suite (both phases) is `dlbench run --suite smoke`.
    proc = dlbench("run", "--suite", "smoke", "-V", "exp.phase=[training]", "--out", "out",
                   timeout=900)
    with sqlite3.connect(tmp_path / "out" / "results.sqlite") as db:
        records = [json.loads(r[0]) for r in db.execute("SELECT record FROM experiments")]
    failed = {r["exp.model"]: r["exp.status_msg"] for r in records if r["exp.status"] != "ok"}
    assert failed == {}, failed
    assert proc.returncode == 0, proc.stderr[-2000:]
    models = {r["exp.model"] for r in records}
    assert models == set(MODELS) - {"loader"}
    for record in records:
        assert record["results.throughput"] > 0
        assert record["results.throughput_unit"] == MODELS[record["exp.model"]].unit or (
            record["exp.model"] == "cart")


@pytest.mark.parametrize("suite", ["dlbs", "mila", "smoke"])
def test_every_suite_plans(dlbench: CliRunner, suite: str) -> None:
    assert suite in suite_names()
    proc = dlbench("plan", "--suite", suite, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["data"]) > 1


def test_loader_and_real_data_run(dlbench: CliRunner, tmp_path: Path) -> None:
    from tests.integration.test_real_data import make_jpeg_folder

    images = make_jpeg_folder(tmp_path / "images")
    proc = dlbench("run", "-V", "exp.model=[loader, resnet18]", "-P", f"exp.data_dir={images}",
                   "-P", "exp.data_workers=1", "-P", "exp.image_size=32",
                   "-P", "exp.replica_batch=4", "-P", "exp.num_batches=3",
                   "-P", "exp.phase=training", "--out", "out")
    assert proc.returncode == 0, proc.stderr[-2000:]
    with sqlite3.connect(tmp_path / "out" / "results.sqlite") as db:
        records = {json.loads(r[0])["exp.model"]: json.loads(r[0])
                   for r in db.execute("SELECT record FROM experiments")}
    assert records["loader"]["results.throughput_unit"] == "images/s"
    assert records["loader"]["results.throughput"] > 0
    assert records["resnet18"]["exp.status"] == "ok"
    missing = dlbench("plan", "-P", "exp.model=loader")
    assert missing.returncode == 2 and "needs exp.data_dir" in missing.stderr
