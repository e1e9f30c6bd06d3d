"""Hand-written timing loops, one per framework, for benchmarks/harness_overhead.py.

What a person writes by hand to time a model: each function builds dlbench's model
definition (the model must be the same) and nothing else of dlbench, and returns the
step and the sync of the loop; :func:`plain_block` times them with ``perf_counter``.
Each does the same work as dlbench's step (JAX: batch-norm statistics updated in
training; TensorFlow: compiled with XLA, the training loss read back as the sync on
the CPU). Frameworks are imported inside the functions, so that importing this module
loads none.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlbench.config.catalog import MODELS, model_input_shape

Step = Callable[[], Any]


def _model(model_id: str, size: int) -> tuple[Any, tuple[int, ...]]:
    info = MODELS[model_id]
    return info, tuple(model_input_shape(info, size))


def plain_pytorch(model_id: str, phase: str, batch: int, size: int, threads: int,
                  tmp: Path, gpu: int | None = None) -> tuple[Step, Step]:
    """PyTorch by hand: SGD with momentum and cross-entropy, or an inference-mode call;
    on GPU ``gpu`` (cuDNN's benchmark mode on, as dlbench's default) synchronised."""
    import torch

    from dlbench.models import build_pytorch_model

    info, shape = _model(model_id, size)
    if threads:
        torch.set_num_threads(threads)
    device = torch.device("cpu") if gpu is None else torch.device("cuda", gpu)
    if gpu is not None:
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    model = build_pytorch_model(model_id, shape, info.num_classes).to(device)
    x = torch.randn(batch, *shape, device=device)
    y = torch.randint(0, info.num_classes, (batch,), device=device)
    if phase == "training":
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
    else:
        model.eval()

        def step() -> None:
            with torch.inference_mode():
                model(x)
    if gpu is not None:
        return step, lambda: torch.cuda.synchronize(device)
    return step, lambda: None


def plain_jax(model_id: str, phase: str, batch: int, size: int, threads: int,
              tmp: Path, gpu: int | None = None) -> tuple[Step, Step]:
    """JAX by hand: one jitted step (batch-norm statistics updated in training), on
    JAX's GPU ``gpu`` when given."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from dlbench.models.jax import build_jax_model, jax_sample_shape

    info, shape = _model(model_id, size)
    module = build_jax_model(model_id, shape, info.num_classes, jnp.float32)
    rng = np.random.default_rng(0)
    device = jax.devices("cpu" if gpu is None else "gpu")[gpu or 0]
    x = jax.device_put(rng.standard_normal(
        (batch, *jax_sample_shape(shape, info.is_image)), dtype=np.float32), device)
    y = jax.device_put(rng.integers(0, info.num_classes, (batch,), dtype=np.int32), device)
    variables = module.init(jax.random.key(2), x[:1], train=False)
    out: list[Any] = [None, None]
    if phase == "training":
        tx = optax.sgd(0.01, momentum=0.9)
        dropout = jax.random.key(3)

        def train(state: Any, x: Any, y: Any) -> Any:
            params, stats, opt_state = state

            def loss_of(params: Any) -> Any:
                logits, new = module.apply({"params": params, "batch_stats": stats}, x,
                                           train=True, rngs={"dropout": dropout},
                                           mutable=["batch_stats"])
                loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
                return loss, new
            (loss, new), grads = jax.value_and_grad(loss_of, has_aux=True)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            return (params, new.get("batch_stats", stats), opt_state), loss

        compiled = jax.jit(train, donate_argnums=0)
        params = variables["params"]
        out[0] = (params, variables.get("batch_stats", {}), tx.init(params))

        def step() -> None:
            out[0], out[1] = compiled(out[0], x, y)
    else:
        infer = jax.jit(lambda v, x: module.apply(v, x, train=False))

        def step() -> None:
            out[1] = infer(variables, x)
    return step, lambda: jax.block_until_ready(out[1])


def plain_tensorflow(model_id: str, phase: str, batch: int, size: int, threads: int,
                     tmp: Path, gpu: int | None = None) -> tuple[Step, Step]:
    """TensorFlow by hand, compiled with XLA; on the CPU the training loss read back
    (4 bytes) is the sync, as TensorFlow runs synchronously there."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras
    import tensorflow as tf

    from dlbench.models.tensorflow import build_tensorflow_model

    info, shape = _model(model_id, size)
    # In one process with dlbench's side, which set it first: setting it again after
    # TensorFlow started is an error, even to the same value.
    if threads and tf.config.threading.get_intra_op_parallelism_threads() != threads:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    model = build_tensorflow_model(model_id, shape, info.num_classes)
    nhwc = (shape[1], shape[2], shape[0]) if info.is_image and len(shape) == 3 else shape
    x = tf.random.normal((batch, *nhwc))
    y = tf.random.uniform((batch,), 0, info.num_classes, dtype=tf.int32)
    out: list[Any] = [None]
    if phase == "training":
        opt = keras.optimizers.SGD(0.01, momentum=0.9)
        opt.build(model.trainable_variables)

        @tf.function(jit_compile=True)  # type: ignore[misc,untyped-decorator,unused-ignore]
        def train(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables, strict=True))
            return loss

        def step() -> None:
            out[0] = train(x, y)
        return step, lambda: out[0].numpy()
    infer = tf.function(lambda x: model(x, training=False), jit_compile=True)

    def step_infer() -> None:
        infer(x)
    return step_infer, lambda: None


def plain_onnxruntime(model_id: str, phase: str, batch: int, size: int, threads: int,
                      tmp: Path, gpu: int | None = None) -> tuple[Step, Step]:
    """ONNX Runtime by hand: its own export of the PyTorch model (once per case, in
    ``tmp``, untimed), one session on the CPU."""
    import numpy as np
    import onnxruntime as ort
    import torch

    from dlbench.models import build_pytorch_model

    info, shape = _model(model_id, size)
    path = tmp / f"{model_id}-{batch}-{size}.onnx"
    if not path.exists():
        torch.manual_seed(0)
        model = build_pytorch_model(model_id, shape, info.num_classes).eval()
        torch.onnx.export(model, (torch.randn(batch, *shape),), str(path),
                          input_names=["input"], dynamo=True, external_data=False,
                          verbose=False)
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feed = {"input": np.random.default_rng(0).standard_normal((batch, *shape),
                                                              dtype=np.float32)}

    def step() -> None:
        session.run(None, feed)
    return step, lambda: None


# What a person writes by hand to time a model, one per framework: each returns the
# step and the sync of the plain loop (plain_block). PyTorch's and JAX's run on a GPU
# too (GPU_LOOPS); TensorFlow's and ONNX Runtime's on the CPU only.
PlainLoop = Callable[[str, str, int, int, int, Path, "int | None"], tuple[Step, Step]]
PLAIN_LOOPS: dict[str, PlainLoop] = {
    "pytorch": plain_pytorch, "jax": plain_jax, "tensorflow": plain_tensorflow,
    "onnxruntime": plain_onnxruntime,
}
GPU_LOOPS = ("pytorch", "jax")


def plain_block(step: Step, sync: Step, warmup: int, batches: int) -> list[float]:
    """The hand-written timing loop: ``warmup`` untimed steps, then each step and its
    sync timed with ``perf_counter``; the batch times in ms."""
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - start) * 1000)
    return times
