"""The JAX backend end to end on the CPU, through the worker's run_experiment: compile
time kept out of batch times, FLOPs (the architecture's, XLA's beside), throughput
units, mixed precision, the loss check, data parallelism over two CPU devices, errors,
and the CLI."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

jax = pytest.importorskip("jax", reason="exp.framework=jax needs the jax extra")
pytest.importorskip("flax", reason="exp.framework=jax needs the jax extra")
pytest.importorskip("optax", reason="exp.framework=jax needs the jax extra")

import jax.numpy as jnp  # noqa: E402 - after the skip: without JAX nothing here runs

from dlbench.backends import jax as jax_backend  # noqa: E402
from dlbench.errors import ConfigError, WorkerError  # noqa: E402
from dlbench.results.log.parser import parse_log  # noqa: E402
from tests.conftest import CliRunner  # noqa: E402
from tests.integration.worker import (  # noqa: E402
    TOY_FORWARD,
    TOY_TRAINING,
    ok,
    plan_one,
    run_in_process,
)

TOY_PARAMS = (64 * 128 + 128) + (128 * 10 + 10)  # the toy model's weights and biases


def _experiment(tmp_path: Path, *params: str) -> dict[str, Any]:
    return plan_one(tmp_path, "exp.framework=jax", "monitor.enabled=false",
                    "exp.num_warmup_batches=1", "exp.num_batches=3", *params)


def _check_compile_time(record: dict[str, Any], below: float = 10) -> None:
    """Compilation happened in set-up: reported, and in no timed or warm-up batch (each
    ``below`` times shorter than it, at least)."""
    compile_ms = record["results.compile_time"] * 1000
    assert compile_ms > 0
    batches = record["results.time_data"] + record.get("results.warmup_time_data", [])
    assert max(batches) < compile_ms / below


@pytest.mark.parametrize(("phase", "dtype", "matmul_flops"),
                         [("training", "float32", TOY_TRAINING),
                          ("inference", "float16", TOY_FORWARD)])
def test_toy_runs_and_reports_like_pytorch(tmp_path: Path, phase: str, dtype: str,
                                           matmul_flops: int) -> None:
    record = ok(run_in_process(_experiment(tmp_path, "exp.model=toy", f"exp.phase={phase}",
                                            f"exp.dtype={dtype}", "exp.replica_batch=16")))
    assert record["sys.model_params"] == TOY_PARAMS
    assert record["results.throughput_unit"] == "samples/s"
    _check_compile_time(record)
    # The architecture's count, PyTorch's; XLA's, the cross-check, counts the matrix
    # products as PyTorch does, plus the elementwise work (biases, ReLU, softmax, the
    # loss, the optimizer's update).
    assert record["results.flops_per_sample"] == matmul_flops
    assert record["results.flops_source"] == "architecture"
    assert matmul_flops <= record["results.flops_per_sample_framework"] < 1.25 * matmul_flops
    assert ("results.loss_last" in record) == (phase == "training")
    if phase == "training":
        assert 0 < record["results.loss_last"] < 10
        # Every step's loss, warm-up first (Mila's batch_loss), the last the last.
        losses = record["results.loss_data"]
        assert len(losses) == record["results.num_warmup_batches"] + record[
            "results.num_batches"]
        assert losses[-1] == record["results.loss_last"]
    assert record["hw.device_name"] == "cpu"
    assert record["sys.jax_platform"] == "cpu"
    assert record["sys.jax_devices"] == ["cpu:0"]
    for package in ("jax", "jaxlib", "flax", "optax"):
        assert record[f"sys.{package}_version"]
    assert record["sys.framework_version"] == jax.__version__


def test_adam_rbg_and_bfloat16_train_too(tmp_path: Path) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=toy", "exp.replica_batch=4", "jax.optimizer=adam",
        "jax.prng_impl=rbg", "exp.dtype=bfloat16")))
    assert math.isfinite(record["results.loss_last"])
    assert record["sys.framework_build"]["prng_impl"] == "rbg"
    _check_compile_time(record)


@pytest.mark.slow
def test_resnet18_small_images_bfloat16(tmp_path: Path) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=resnet18", "exp.image_size=32", "exp.replica_batch=2",
        "exp.dtype=bfloat16", "exp.phase=inference", "exp.num_batches=2")))
    assert record["sys.model_params"] == 11_689_512
    assert record["results.throughput_unit"] == "images/s"
    _check_compile_time(record, below=2)
    assert record["results.flops_per_sample"] > 0


@pytest.mark.slow
def test_gpt2_short_sequences_count_tokens(tmp_path: Path) -> None:
    record = ok(run_in_process(_experiment(
        tmp_path, "exp.model=gpt2_small", "exp.seq_len=8", "exp.replica_batch=1",
        "exp.phase=inference", "exp.num_batches=1")))
    assert record["sys.model_params"] == 124_439_808
    assert record["results.throughput_unit"] == "tokens/s"
    samples = record["exp.effective_batch"] * 1000 / record["results.time"]
    assert record["results.throughput"] == pytest.approx(samples * 8)


def test_nan_loss_names_its_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = jax_backend.record_loss

    def poisoned(losses: Any, index: Any, loss: Any) -> Any:
        return original(losses, index, jnp.where(index == 4, jnp.nan, loss))

    monkeypatch.setattr(jax_backend, "record_loss", poisoned)
    record = run_in_process(_experiment(tmp_path, "exp.model=toy", "exp.num_batches=6",
                                        "exp.replica_batch=2"))
    assert record["exp.status"] == "failure"
    assert record["exp.status_msg"] == "loss is NaN at batch 4"


def test_models_jax_does_not_define_are_refused_at_plan_time(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        _experiment(tmp_path, "exp.model=dcgan")
    message = str(error.value)
    assert message.startswith("exp.model='dcgan' (from -P flag) is not defined for "
                              "framework jax; defined: toy, deep_mnist")
    assert "gpt2_small" in message


def _backend(tmp_path: Path, **changes: Any) -> jax_backend.JaxBackend:
    params = {**_experiment(tmp_path, "exp.model=toy"), **changes}
    return jax_backend.JaxBackend(params)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"exp.gpus": "0"}, "exp.gpus='0' asks for a GPU but JAX sees none here"),
        ({"exp.gpus": "0,0", "exp.num_local_replicas": 2}, "names a GPU twice"),
        ({"exp.gpus": "0,1", "exp.num_local_replicas": 3}, "differs from the 2 GPU(s)"),
        ({"exp.num_nodes": 2}, "exp.num_nodes=2: the jax backend drives the devices of one"),
        ({"exp.num_local_replicas": 64}, "exp.num_local_replicas=64 on the CPU: JAX has"),
        ({"exp.data_dir": "/data/images"}, "the jax backend runs on synthetic data only"),
    ],
)
def test_set_up_refuses_what_it_cannot_run(tmp_path: Path, changes: dict[str, Any],
                                           says: str) -> None:
    jax.devices()  # started: a CPU device count asked for now can no longer apply
    with pytest.raises(WorkerError, match=says.replace("(", r"\(").replace(")", r"\)")):
        _backend(tmp_path, **changes).setup()


def test_available_devices_lists_the_cpu() -> None:
    assert jax_backend.available_devices()[0] == "cpu"


def test_a_cpu_experiment_keeps_jax_off_the_gpus() -> None:
    # With exp.gpus empty the worker limits JAX to the CPU before JAX starts its
    # clients: on a machine with GPUs, its GPU client would take 75% of each GPU's
    # memory and hold every array made without a device.
    before = jax.config.jax_platforms
    jax.config.update("jax_platforms", None)
    try:
        devices = jax_backend._select_devices("", 1, 1)
        assert jax.config.jax_platforms == "cpu"
        assert [d.platform for d in devices] == ["cpu"]
    finally:
        jax.config.update("jax_platforms", before)


@pytest.mark.slow
def test_cli_runs_data_parallel_on_two_cpu_devices(dlbench: CliRunner, tmp_path: Path) -> None:
    # Two CPU devices exist only in a process that asks for them before JAX starts: the
    # worker process does, for exp.num_local_replicas=2. On two devices, each with half
    # the batch, the steps are the same as on one with the whole batch, so the losses
    # must agree.
    common = ("exp.model=toy", "exp.num_warmup_batches=1", "exp.num_batches=3")
    out = tmp_path / "out"
    flags = [arg for param in common for arg in ("-P", param)]
    proc = dlbench("run", "-P", "exp.framework=jax", *flags, "-P", "exp.replica_batch=4",
                   "-P", "exp.num_local_replicas=2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "1/1 ok" in proc.stderr
    assert "samples/s" in proc.stdout
    (log,) = (out / "logs").glob("jax-toy-*.log")
    two, warnings = parse_log(log)
    assert warnings == []
    one = ok(run_in_process(_experiment(tmp_path / "one", *common, "exp.replica_batch=8")))
    assert ok(two)["sys.jax_devices"] == ["cpu:0", "cpu:1"]
    assert two["exp.effective_batch"] == one["exp.effective_batch"] == 8
    assert two["results.loss_last"] == pytest.approx(one["results.loss_last"], rel=1e-5)
    # The architecture's count, whatever the replicas; XLA's counts each device's
    # program, per sample of its half of the batch: the same work, plus the whole
    # optimizer update on each device.
    assert two["results.flops_per_sample"] == one["results.flops_per_sample"]
    framework = [r["results.flops_per_sample_framework"] for r in (two, one)]
    assert 1 <= framework[0] / framework[1] < 1.5

    refused = dlbench("run", "-P", "exp.framework=jax", "-P", "exp.model=dcgan",
                      "--out", str(out))
    assert refused.returncode == 2
    assert "is not defined for framework jax" in refused.stderr


def test_training_state_holds_the_dropout_key_as_raw_data(tmp_path: Path) -> None:
    # A typed key array among a compiled call's arguments costs microseconds of
    # dispatch in every step; the state carries the key's uint32 data instead.
    backend = _backend(tmp_path, **{"exp.phase": "training", "exp.replica_batch": 2})
    try:
        backend.setup()
        assert backend.state["rng"].dtype == jnp.uint32
        backend.step(0)
        backend.synchronize()
        assert int(backend.state["step"]) == 1
    finally:
        backend.teardown()
