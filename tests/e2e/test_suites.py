"""The shipped suites: the smoke suite end to end, each workload through real workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlbench.config.catalog import MODELS
from dlbench.results.store import Store
from dlbench.suites import suite_names
from tests.conftest import CliRunner

# One model of each workload (what a step does differs between them, so each goes
# through the worker once); every model's own training step and forward pass are
# unit-tested, and `dlbench run --suite smoke` runs all of them through the worker.
ONE_PER_WORKLOAD = ["deep_mnist", "gpt2_small", "bert_base", "translator", "dcgan", "vae",
                    "ncf", "espcn", "fast_style", "ssd_lite", "toy_reg", "toy_lstm", "cart"]


@pytest.mark.slow
def test_smoke_suite_trains_one_model_of_each_workload(
    dlbench: CliRunner, tmp_path: Path
) -> None:
    proc = dlbench("run", "--suite", "smoke", "-V", "exp.phase=[training]",
                   "-V", f"exp.model=[{', '.join(ONE_PER_WORKLOAD)}]", "--out", "out",
                   timeout=900)
    with Store.in_directory(tmp_path / "out", create=False) as store:
        records = store.records()
    failed = {r["exp.model"]: r["exp.status_msg"] for r in records if r["exp.status"] != "ok"}
    assert failed == {}, failed
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(r["exp.model"] for r in records) == sorted(ONE_PER_WORKLOAD)
    for record in records:
        assert record["results.throughput"] > 0
        assert record["results.throughput_unit"] == MODELS[record["exp.model"]].unit or (
            record["exp.model"] == "cart")


def test_one_per_workload_covers_every_workload() -> None:
    from dlbench.models.pytorch.workloads import WORKLOADS

    # WORKLOADS is keyed by a model's task: one workload class per task.
    kinds = {WORKLOADS[MODELS[m].task] for m in ONE_PER_WORKLOAD}
    every = {WORKLOADS[info.task] for m, info in MODELS.items() if m != "loader"}
    assert kinds == every and len(kinds) == len(ONE_PER_WORKLOAD)


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
    with Store.in_directory(tmp_path / "out", create=False) as store:
        records = {r["exp.model"]: r for r in store.records()}
    assert records["loader"]["results.throughput_unit"] == "images/s"
    assert records["loader"]["results.throughput"] > 0
    assert records["resnet18"]["exp.status"] == "ok"
    missing = dlbench("plan", "-P", "exp.model=loader")
    assert missing.returncode == 2 and "needs exp.data_dir" in missing.stderr


def test_a_size_that_does_not_apply_to_a_model_is_shown_as_missing(
    dlbench: CliRunner,
) -> None:
    # The smoke suite runs every model at 32 px (alexnet at 64) and the sequence lengths
    # given: BERT takes no image and ResNet no sequence, so their rows say "-" there.
    proc = dlbench("plan", "--suite", "smoke", "-V", "exp.model=[resnet18, alexnet, bert_base]",
                   "-V", "exp.phase=[training]", "-V", "exp.seq_len=[8, 16]")
    assert proc.returncode == 0, proc.stderr
    header, _, *rows = [line for line in proc.stdout.splitlines() if line.strip()][:8]
    assert header.split()[1:] == ["exp.model", "exp.seq_len", "exp.image_size"]
    cells = sorted(tuple(row.split()[1:]) for row in rows)
    assert cells == [("alexnet", "-", "64"), ("alexnet", "-", "64"),
                     ("bert_base", "16", "-"), ("bert_base", "8", "-"),
                     ("resnet18", "-", "32"), ("resnet18", "-", "32")]
