"""The TensorFlow backend end to end on the CPU: worker runs in this process (toy,
resnet18, GPT-2, mixed precision, XLA), the compile time kept out of batch times,
FLOPs against PyTorch's, the loss check, the refusals, MirroredStrategy over two
logical CPUs, and the command line once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

tf = pytest.importorskip("tensorflow", reason="exp.framework=tensorflow needs tensorflow")
pytest.importorskip("keras", reason="exp.framework=tensorflow needs keras")

import torch  # noqa: E402 - after the skip: without TensorFlow nothing here runs
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from dlbench.backends import tensorflow as tensorflow_backend  # noqa: E402
from dlbench.config.catalog import MODELS  # noqa: E402
from dlbench.errors import ConfigError  # noqa: E402
from dlbench.models import build_pytorch_model  # noqa: E402
from dlbench.models.pytorch.flops import flop_formulas  # noqa: E402
from dlbench.worker.experiment import backend_params  # noqa: E402
from tests.conftest import REPO, CliRunner  # noqa: E402
from tests.integration.worker import (  # noqa: E402
    TOY_FORWARD,
    TOY_TRAINING,
    ok,
    plan_one,
    run_in_process,
)


def _experiment(tmp_path: Path, *params: str) -> dict[str, Any]:
    return plan_one(tmp_path, "exp.framework=tensorflow", "monitor.enabled=false",
                    "exp.num_warmup_batches=1", "exp.num_batches=3", *params)


def _torch_training_flops(model_id: str, shape: tuple[int, ...]) -> int:
    """Forward and backward FLOPs of one sample in PyTorch, on the meta device (two
    samples: batch norm refuses one in training)."""
    info = MODELS[model_id]
    with torch.device("meta"):
        model = build_pytorch_model(model_id, shape, info.num_classes).train()
        with FlopCounterMode(display=False, custom_mapping=flop_formulas()) as counter:
            logits = model(torch.zeros(2, *shape))
            torch.nn.functional.cross_entropy(logits, torch.zeros(2, dtype=torch.long)).backward()
    return int(counter.get_total_flops()) // 2


@pytest.mark.parametrize(("phase", "flops"), [("training", TOY_TRAINING),
                                              ("inference", TOY_FORWARD)])
def test_toy_runs_with_pytorch_flops_and_compile_time_apart(
    tmp_path: Path, phase: str, flops: int
) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=toy", f"exp.phase={phase}", "exp.replica_batch=4",
        "exp.num_warmup_batches=0")))
    assert record["results.throughput_unit"] == "samples/s"
    assert record["results.flops_per_sample"] == flops
    assert record["sys.model_params"] == (64 * 128 + 128) + (128 * 10 + 10)
    assert record["sys.framework_version"] == record["sys.tensorflow_version"] == tf.__version__
    assert record["sys.tensorflow_xla"] is False
    assert record["hw.device_name"] == "cpu"
    # Tracing happened in set-up: without warm-up, the first timed batch is batch 0,
    # and it is a plain step.
    compile_time = record["results.compile_time"]
    assert compile_time > 0
    assert max(record["results.time_data"]) < compile_time * 1000 / 5
    assert ("results.loss_last" in record) == (phase == "training")
    if phase == "training":  # every step's loss (no warm-up here), the last the last
        assert len(record["results.loss_data"]) == record["results.num_batches"]
        assert record["results.loss_data"][-1] == record["results.loss_last"]


def test_mixed_float16_scales_the_loss(tmp_path: Path) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=toy", "exp.dtype=float16", "exp.replica_batch=4")))
    assert record["sys.framework_build"]["dtype_policy"] == "mixed_float16"
    assert 0 < record["results.loss_last"] < 10
    # The loss scaler's conditional update holds no product: the count is unchanged.
    assert record["results.flops_per_sample"] == TOY_TRAINING


def test_bfloat16_with_adam_and_xla(tmp_path: Path) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=toy", "exp.dtype=bfloat16", "tensorflow.optimizer=adam",
        "tensorflow.xla=true", "exp.replica_batch=4")))
    assert record["sys.framework_build"]["dtype_policy"] == "mixed_bfloat16"
    assert record["sys.tensorflow_xla"] is True
    assert record["results.flops_per_sample"] == TOY_TRAINING
    assert record["results.compile_time"] > 0


@pytest.mark.slow
def test_resnet18_training_at_a_small_size_counts_pytorch_flops(tmp_path: Path) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=resnet18", "exp.image_size=32", "exp.replica_batch=2",
        "exp.num_batches=2")))
    assert record["results.throughput_unit"] == "images/s"
    assert record["sys.model_params"] == 11_689_512
    assert record["results.flops_per_sample"] == _torch_training_flops("resnet18", (3, 32, 32))
    assert record["results.compile_time"] > max(record["results.time_data"]) / 1000


@pytest.mark.slow
def test_language_model_counts_tokens(tmp_path: Path) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=gpt2_small", "exp.phase=inference", "exp.seq_len=8",
        "exp.replica_batch=1", "exp.num_batches=2")))
    assert record["results.throughput_unit"] == "tokens/s"
    samples_per_second = 1000 / record["results.time"]
    assert record["results.throughput"] == pytest.approx(8 * samples_per_second)
    assert record["sys.model_params"] == 124_439_808


def test_nan_loss_names_its_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = tensorflow_backend.TensorFlowBackend._record_loss

    def poisoned(self: Any, index: int, loss: Any) -> None:
        original(self, index, loss * float("nan") if index == 2 else loss)

    monkeypatch.setattr(tensorflow_backend.TensorFlowBackend, "_record_loss", poisoned)
    record = run_in_process(_experiment(tmp_path, "exp.model=toy", "exp.replica_batch=2"))
    assert record["exp.status"] == "failure"
    assert record["exp.status_msg"] == "loss is NaN at batch 2"


@pytest.mark.parametrize(("params", "message"), [
    (("exp.gpus=0",), "exp.gpus='0' asks for a GPU but TensorFlow sees none here"),
    # This process has started TensorFlow's runtime (a worker has not at set-up).
    (("tensorflow.inter_op_threads=7",), "tensorflow.inter_op_threads=7: TensorFlow's "
                                         "runtime was already started"),
    (("exp.num_local_replicas=3",), "exp.num_local_replicas=3 on the CPU: TensorFlow's "
                                    "runtime was already started"),
])
def test_worker_refusals_name_the_parameter(
    tmp_path: Path, params: tuple[str, ...], message: str
) -> None:
    tf.zeros(1).numpy()  # starts TensorFlow's runtime here, whichever test ran first
    record = run_in_process(_experiment(tmp_path, "exp.model=toy", *params))
    assert record["exp.status"] == "failure"
    assert record["exp.status_msg"].startswith(message)


def test_plan_refuses_a_model_tensorflow_does_not_define(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"exp\.model='dcgan' .* is not defined for "
                                          r"framework tensorflow; defined: toy, deep_mnist"):
        _experiment(tmp_path, "exp.model=dcgan")


def test_plan_refuses_a_negative_thread_count(tmp_path: Path) -> None:
    # The shared threads knob's smallest value, checked by the plan before any worker.
    for name in ("tensorflow.num_threads", "tensorflow.inter_op_threads"):
        with pytest.raises(ConfigError, match=rf"^{name}=-1 \(from -P flag\) must be >= 0$"):
            _experiment(tmp_path, "exp.model=toy", f"{name}=-1")


def test_available_devices_lists_the_cpu() -> None:
    devices = tensorflow_backend.available_devices()
    assert devices[0] == "cpu"
    assert all(d.startswith("gpu:") for d in devices[1:])


# Run in a fresh interpreter, as a worker is: the CPU is split into logical devices
# before TensorFlow's runtime starts, which in this process it has. Two CPU replicas
# take the MirroredStrategy code path of two GPUs.
_MIRRORED = textwrap.dedent("""
    import json, sys
    import keras, numpy as np
    import tensorflow as tf
    from dlbench.backends import tensorflow as module
    answers = {}
    for phase in ("training", "inference"):
        params = dict(json.loads(sys.argv[1]), **{"exp.phase": phase})
        backend = module.TensorFlowBackend(params)
        backend.setup()  # runs one step: the traced call
        if phase == "training":
            after = [v.numpy() for v in backend.model.trainable_variables]
            local = backend.strategy.experimental_local_results
            inputs = np.concatenate([t.numpy() for t in local(backend.batch[0])])
            targets = np.concatenate([t.numpy() for t in local(backend.batch[1])])
            # The same step on one device, on the global batch, from the same weights:
            # SGD's first step with momentum is w - rate * gradient.
            keras.utils.set_random_seed(params["tensorflow.seed"])
            model = backend.workload.build()
            with tf.GradientTape() as tape:
                loss = backend.workload.loss(model(inputs, training=True), targets)
            grads = tape.gradient(loss, model.trainable_variables)
            expected = [v.numpy() - 0.01 * g.numpy()
                        for v, g in zip(model.trainable_variables, grads)]
            answers["max_difference"] = max(
                float(np.abs(a - e).max()) for a, e in zip(after, expected))
            answers["global_batch"] = len(inputs)

            # float16: an overflow on replica 1 alone makes both replicas skip the step.
            def overflow_on_replica_1():
                replica = tf.distribute.get_replica_context().replica_id_in_sync_group
                big = tf.ones(3) / (1.0 - tf.cast(replica, tf.float32))  # inf on replica 1
                return module._agree_on_overflow([big, tf.ones(1)])
            agreed = backend.strategy.run(tf.function(overflow_on_replica_1))
            answers["poisoned"] = [bool(np.isnan(t.numpy()).all())
                                   for t in backend.strategy.experimental_local_results(agreed[1])]
        for index in range(3):
            backend.step(index)
            backend.synchronize()
        answers[phase] = {"replicas": backend.num_replicas,
                          "flops": backend.flops_per_sample(), **backend.finish(3)}
        backend.teardown()
    print(json.dumps(answers))
""")


@pytest.mark.slow
def test_mirrored_strategy_over_two_devices_steps_the_global_batch(tmp_path: Path) -> None:
    params = backend_params(_experiment(tmp_path, "exp.model=toy", "exp.replica_batch=4",
                                        "exp.num_local_replicas=2"))
    assert params["exp.effective_batch"] == 8
    proc = subprocess.run([sys.executable, "-c", _MIRRORED, json.dumps(params)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answers["global_batch"] == 8
    assert answers["max_difference"] < 1e-6
    assert answers["poisoned"] == [True, True]
    assert answers["training"]["replicas"] == answers["inference"]["replicas"] == 2
    assert answers["training"]["flops"] == TOY_TRAINING
    assert answers["inference"]["flops"] == TOY_FORWARD
    assert 0 < answers["training"]["results.loss_last"] < 10


@pytest.mark.slow
def test_cli_runs_and_reports(dlbench: CliRunner, tmp_path: Path) -> None:
    # Two data-parallel replicas on the CPU, in one worker process.
    run = dlbench("run", "-P", "exp.framework=tensorflow", "-P", "exp.model=toy",
                  "-P", "exp.num_batches=5", "-P", "exp.replica_batch=8",
                  "-P", "exp.num_local_replicas=2", "-P", "tensorflow.num_threads=1",
                  "-P", "tensorflow.inter_op_threads=1", "--out", "out")
    assert run.returncode == 0, run.stderr
    assert "1/1 ok" in run.stderr
    report = dlbench("report", "--type", "exploration", "--input", "out")
    assert report.returncode == 0, report.stderr
    assert "Throughput, samples/s" in report.stdout
    rows = [line.split() for line in report.stdout.splitlines() if line.startswith("toy ")]
    # Batch time and throughput: 16 samples a step
    assert len(rows) == 2
    (time_ms,), (throughput,) = rows[0][1:], rows[1][1:]
    assert float(throughput) == pytest.approx(16 * 1000 / float(time_ms), rel=0.01)
    (log,) = (tmp_path / "out" / "logs").iterdir()
    build = next(line for line in log.read_text().splitlines()
                 if line.startswith("__sys.framework_build__="))
    build_info = json.loads(build.split("=", 1)[1])
    assert build_info["intra_op_threads"] == build_info["inter_op_threads"] == 1
    assert build_info["num_replicas"] == 2
    assert "__exp.effective_batch__=16" in log.read_text()
