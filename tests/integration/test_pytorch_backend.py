"""The PyTorch backend end to end on CPU, through the worker's run_experiment:
throughput units, FLOPs with known answers, the loss check, real data."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from PIL import Image
from torch.utils.flop_counter import FlopCounterMode

from dlbench.backends import pytorch as pytorch_backend
from dlbench.models.pytorch.flops import flop_formulas
from tests.integration.worker import (
    TOY_FORWARD,
    TOY_TRAINING,
    plan_one,
    run_in_process,
)


def _experiment(tmp_path: Path, *params: str) -> dict[str, Any]:
    return plan_one(tmp_path, "exp.framework=pytorch", "monitor.enabled=false",
                    "exp.num_warmup_batches=1", "exp.num_batches=3", *params)


def _run(experiment: dict[str, Any]) -> dict[str, Any]:
    return run_in_process(experiment)


def _samples_per_second(record: dict[str, Any]) -> float:
    return float(record["exp.effective_batch"]) * 1000 / float(record["results.time"])


def _check_throughput(record: dict[str, Any], unit: str, per_sample: float) -> None:
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    assert record["results.throughput_unit"] == unit
    samples = _samples_per_second(record)
    assert record["results.throughput"] == pytest.approx(samples * per_sample)
    assert record["results.flops_per_sample"] > 0
    assert record["results.tflops"] == pytest.approx(
        record["results.flops_per_sample"] * samples / 1e12
    )


@pytest.mark.parametrize(("phase", "flops"), [("training", TOY_TRAINING),
                                              ("inference", TOY_FORWARD)])
def test_classifier_flops_are_the_known_answer(tmp_path: Path, phase: str, flops: int) -> None:
    record = _run(_experiment(tmp_path, "exp.model=toy", f"exp.phase={phase}",
                              "exp.replica_batch=4"))
    _check_throughput(record, "samples/s", 1)
    assert record["results.flops_per_sample"] == flops
    assert record["sys.model_params"] == (64 * 128 + 128) + (128 * 10 + 10)
    assert "sys.layout" not in record  # no image input: no layout to choose
    assert ("results.loss_last" in record) == (phase == "training")
    assert ("results.loss_data" in record) == (phase == "training")
    if phase == "training":  # every step's loss, warm-up first, the last the last
        losses = record["results.loss_data"]
        assert len(losses) == record["results.num_warmup_batches"] + record[
            "results.num_batches"]
        assert losses[-1] == record["results.loss_last"]
        assert all(isinstance(x, float) and math.isfinite(x) for x in losses)


def test_token_model_counts_tokens(tmp_path: Path) -> None:
    record = _run(_experiment(tmp_path, "exp.model=wlm", "exp.seq_len=8",
                              "exp.replica_batch=2", "exp.num_batches=2"))
    _check_throughput(record, "tokens/s", 8)
    assert record["sys.model_params"] == 50_065_078


def test_cart_counts_environment_steps(tmp_path: Path) -> None:
    record = _run(_experiment(tmp_path, "exp.model=cart", "exp.seq_len=8",
                              "exp.replica_batch=4"))
    _check_throughput(record, "steps/s", 8)
    # per environment and step: 8 policy evaluations (2*(4*128 + 128*2) each) and
    # their backward (first layer: weights only; second: input and weights)
    assert record["results.flops_per_sample"] == 8 * (2 * (4 * 128 + 128 * 2)
                                                      + 2 * 4 * 128 + 2 * 2 * 128 * 2)


def test_depthwise_convolutions_are_not_overcounted(tmp_path: Path) -> None:
    # PyTorch's formula multiplies a depthwise weight gradient by the groups; with
    # ours, training is about three forwards, as for any convolutional network.
    common = ("exp.model=ssd_lite", "exp.image_size=32", "exp.replica_batch=2",
              "exp.num_batches=1")
    train = _run(_experiment(tmp_path / "t", *common, "exp.phase=training"))
    infer = _run(_experiment(tmp_path / "i", *common, "exp.phase=inference"))
    ratio = train["results.flops_per_sample"] / infer["results.flops_per_sample"]
    assert 2.5 < ratio <= 3.0
    # pytorch.channels_last=auto on the CPU: PyTorch's default layout.
    assert train["pytorch.channels_last"] == "auto"
    assert train["sys.layout"] == infer["sys.layout"] == "NCHW"


def test_attention_is_counted_on_cpu_too() -> None:
    # CUDA's attention kernels have formulas in PyTorch, the CPU's flash attention
    # has ours: Q K^T and P V, 2 * batch * heads * queries * keys * depth each.
    query = torch.randn(1, 2, 8, 16, requires_grad=True)
    with FlopCounterMode(display=False, custom_mapping=flop_formulas()) as fc:
        out = torch.nn.functional.scaled_dot_product_attention(query, query, query)
    forward = 2 * (2 * 1 * 2 * 8 * 8 * 16)
    assert fc.get_total_flops() == forward
    with FlopCounterMode(display=False, custom_mapping=flop_formulas()) as fc:
        out.sum().backward()
    assert fc.get_total_flops() == 2 * forward


def test_auto_batches_grow_the_loss_buffer(tmp_path: Path) -> None:
    record = _run(_experiment(
        tmp_path, "exp.model=toy", "exp.replica_batch=2", "exp.num_batches=auto",
        "exp.min_batches=300", "exp.min_duration=0.05", "exp.target_ci=1.0",
    ))
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    assert record["results.num_batches"] >= 300  # past the first chunk of 256 losses
    assert record["results.loss_last"] > 0


def test_nan_loss_names_the_batch_past_the_first_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dlbench.models.pytorch.workload_base import Workload

    original = Workload.loss
    calls = itertools.count()

    def poisoned(self: Any, model: Any, inputs: torch.Tensor, targets: torch.Tensor
                 ) -> torch.Tensor:
        loss = original(self, model, inputs, targets)
        # Call 0 counts the FLOPs; call 1 + k is batch k.
        return loss * float("nan") if next(calls) == 271 else loss

    monkeypatch.setattr(Workload, "loss", poisoned)
    record = _run(_experiment(tmp_path, "exp.model=toy", "exp.num_warmup_batches=0",
                              "exp.num_batches=300", "exp.replica_batch=2"))
    assert record["exp.status"] == "failure"
    assert record["exp.status_msg"] == "loss is NaN at batch 270"


def _jpeg_folder(root: Path) -> Path:
    for label in range(2):
        (root / f"c{label}").mkdir(parents=True)
        for index in range(3):
            Image.new("RGB", (40 + 9 * index, 30), (90 * label, 40 * index, 7)).save(
                root / f"c{label}" / f"{index}.jpg"
            )
    return root


def test_loader_times_the_input_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dlbench.backends.pytorch.data import ImageFolder

    # Every sample the loader decodes, caught as it leaves the dataset (the loader runs
    # in this process with exp.data_workers=0).
    decoded: list[tuple[Path, torch.Tensor, int]] = []
    original = ImageFolder.__getitem__

    def spy(self: ImageFolder, index: int) -> tuple[torch.Tensor, int]:
        tensor, label = original(self, index)
        decoded.append((self.files[index][0], tensor, label))
        return tensor, label

    monkeypatch.setattr(ImageFolder, "__getitem__", spy)
    root = _jpeg_folder(tmp_path / "images")
    record = _run(_experiment(tmp_path, "exp.model=loader", f"exp.data_dir={root}",
                              "exp.data_workers=0", "exp.image_size=32", "exp.replica_batch=4"))
    assert record["exp.status"] == "ok", record.get("exp.status_msg")
    assert record["results.throughput_unit"] == "images/s"
    assert record["sys.model_params"] == 0
    assert "results.flops_per_sample" not in record
    # A step is one batch read from the folder: 4 images for each untimed and timed one.
    steps = int(record["exp.num_warmup_batches"]) + int(record["exp.num_batches"])
    assert len(decoded) == steps * 4
    for path, tensor, label in decoded:
        # The file's own pixels, resized to exp.image_size and scaled to [-1, 1]: each
        # file is one flat colour, (90 * class, 40 * index, 7), give or take JPEG's loss.
        assert path.parent.parent == root and tensor.shape == (3, 32, 32)
        assert label == int(path.parent.name[1:])
        colour = torch.tensor([90.0 * label, 40.0 * int(path.stem), 7.0]) / 127.5 - 1
        assert torch.allclose(tensor.mean(dim=(1, 2)), colour, atol=4 / 127.5), path


def test_language_model_reads_a_text_file(tmp_path: Path) -> None:
    text = tmp_path / "corpus.txt"
    text.write_text("a small corpus of words for the masked language model " * 20)
    backend = pytorch_backend.PyTorchBackend(_experiment(
        tmp_path, "exp.model=bert_base", "exp.seq_len=8", f"exp.data_dir={text}",
        "exp.data_workers=0", "exp.replica_batch=2", "exp.phase=inference",
    ))
    backend.setup()
    try:
        inputs, targets = backend._next_batch()
        assert inputs.shape == targets.shape == (2, 8)
        # one masked position per sequence of 8 (15 %), the rest ignored by the loss
        assert ((targets != -100).sum(1) == 1).all()
        backend.step(0)
        assert backend.throughput_unit() == ("tokens/s", 8.0)
    finally:
        backend.teardown()
