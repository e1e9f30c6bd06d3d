"""How much does dlbench's harness cost per batch? dlbench against a plain loop.

For each case (framework x model x phase), runs the same model, batch and settings
(a) through ``dlbench run`` and (b) through a hand-written loop of the same framework,
each in a fresh process, in the order A B B A A B B A ... so that a drift of the
machine's speed hits both sides alike. Each run's throughput is the batch over its
median batch time (a shared machine's hiccups move a mean, not a median); each
repeat pairs the two sides run next to each other, and the case's ratio is the
median of those paired ratios (dlbench / plain: 1.0 is no overhead), with their
range as its spread. The last line is ``ratio=<the smallest case's ratio>``.

    python benchmarks/harness_overhead.py --models toy,resnet18 --phases training,inference
    python benchmarks/harness_overhead.py --frameworks pytorch,jax,tensorflow,onnxruntime

Plain loops exist for PyTorch, JAX, TensorFlow and ONNX Runtime (inference only); each
uses dlbench's model definition (the model must be the same) and nothing else of it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from dlbench.results.store import Store

_COMMON = r"""
import json, sys, time
from dlbench.config.catalog import MODELS, model_input_shape
model_id, phase, batch, size, warmup, batches, threads = sys.argv[1:8]
batch, size, warmup, batches, threads = map(int, (batch, size, warmup, batches, threads))
info = MODELS[model_id]
shape = model_input_shape(info, size)
def run(step, sync):
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        step()
        sync()
        times.append((time.perf_counter() - start) * 1000)
    print(json.dumps(times))
"""

# What a person writes by hand to time a model, one per framework.
PLAIN_LOOPS = {
    "pytorch": _COMMON + r"""
import torch
from dlbench.models import build_pytorch_model
if threads:
    torch.set_num_threads(threads)
model = build_pytorch_model(model_id, shape, info.num_classes)
x = torch.randn(batch, *shape)
y = torch.randint(0, info.num_classes, (batch,))
if phase == "training":
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
else:
    model.eval()
    def step():
        with torch.inference_mode():
            model(x)
run(step, lambda: None)
""",
    "jax": _COMMON + r"""
import jax, jax.numpy as jnp, optax
from dlbench.models import jax as jax_models
module = jax_models.build(model_id, shape, info.num_classes)
x = jnp.asarray(jax.random.normal(jax.random.PRNGKey(0), (batch, *shape)))
y = jax.random.randint(jax.random.PRNGKey(1), (batch,), 0, info.num_classes)
variables = module.init(jax.random.PRNGKey(2), x, train=False)
if phase == "training":
    tx = optax.sgd(0.01, momentum=0.9)
    state = (variables, tx.init(variables["params"]))
    def train(state, x, y):
        variables, opt_state = state
        def loss_of(params):
            logits = module.apply({**variables, "params": params}, x, train=False)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        loss, grads = jax.value_and_grad(loss_of)(variables["params"])
        updates, opt_state = tx.update(grads, opt_state, variables["params"])
        params = optax.apply_updates(variables["params"], updates)
        return ({**variables, "params": params}, opt_state), loss
    compiled = jax.jit(train, donate_argnums=0)
    out = [state, None]
    def step():
        out[0], out[1] = compiled(out[0], x, y)
else:
    compiled = jax.jit(lambda v, x: module.apply(v, x, train=False))
    out = [None, None]
    def step():
        out[1] = compiled(variables, x)
run(step, lambda: jax.block_until_ready(out[1]))
""",
    "tensorflow": _COMMON + r"""
import tensorflow as tf
from dlbench.models import tensorflow as tf_models
if threads:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
model = tf_models.build(model_id, shape, info.num_classes)
x = tf.random.normal((batch, *shape))
y = tf.random.uniform((batch,), 0, info.num_classes, dtype=tf.int32)
if phase == "training":
    opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    @tf.function(jit_compile=True)
    def train(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        return loss
    fn = lambda: train(x, y)
else:
    fn = tf.function(lambda x: model(x, training=False), jit_compile=True)
    fn = (lambda f: (lambda: f(x)))(fn)
out = [None]
def step():
    out[0] = fn()
run(step, lambda: out[0].numpy() if hasattr(out[0], "numpy") else None)
""",
}

# What each framework's dlbench side is asked for, beyond the shared settings.
THREAD_PARAM = {"pytorch": "pytorch.num_threads", "jax": None, "tensorflow": None,
                "onnxruntime": None}
MODULES = {"pytorch": "torch", "jax": "jax", "tensorflow": "tensorflow",
           "onnxruntime": "onnxruntime"}


def plain_times(args: argparse.Namespace, case: tuple[str, str, str]) -> list[float]:
    """Batch times (ms) of the hand-written loop, in a fresh process."""
    framework, model, phase = case
    out = subprocess.run(
        [sys.executable, "-c", PLAIN_LOOPS[framework], model, phase, str(args.batch),
         str(args.image_size), str(args.warmup), str(args.batches), str(args.threads)],
        check=True, capture_output=True, text=True,
    )
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return times


def dlbench_times(args: argparse.Namespace, case: tuple[str, str, str], out_dir: Path
                  ) -> list[float]:
    """Batch times (ms) that ``dlbench run`` records for the same settings."""
    framework, model, phase = case
    params = [f"exp.framework={framework}", f"exp.model={model}", f"exp.phase={phase}",
              f"exp.replica_batch={args.batch}", f"exp.image_size={args.image_size}",
              f"exp.num_warmup_batches={args.warmup}", f"exp.num_batches={args.batches}",
              "exp.rerun=always"]
    if args.threads and THREAD_PARAM[framework]:
        params.append(f"{THREAD_PARAM[framework]}={args.threads}")
    command = [sys.executable, "-m", "dlbench", "run", "--out", str(out_dir)]
    for param in params:
        command += ["-P", param]
    subprocess.run(command, check=True, capture_output=True, text=True)
    with Store.in_directory(out_dir, create=False) as store:
        (record,) = store.records(keys=["results.time_data", "exp.status", "exp.status_msg"])
    if record.get("exp.status") != "ok":
        raise SystemExit(f"{case}: dlbench run failed: {record.get('exp.status_msg')}")
    times: list[float] = record["results.time_data"]
    return times


def measure_case(args: argparse.Namespace, case: tuple[str, str, str], tmp: Path) -> float:
    """Alternate the two sides ``args.repeats`` times; print and return the ratio."""
    ratios = []
    for i in range(args.repeats):
        order = ("plain", "dlbench") if i % 2 == 0 else ("dlbench", "plain")
        medians = {}
        for side in order:
            times = (plain_times(args, case) if side == "plain"
                     else dlbench_times(args, case, tmp / f"{'-'.join(case)}-{i}"))
            medians[side] = statistics.median(times)
        ratios.append(medians["plain"] / medians["dlbench"])  # throughput ratio
        print(f"  {'/'.join(case)} repeat {i + 1}: plain {medians['plain']:.4f} ms, "
              f"dlbench {medians['dlbench']:.4f} ms, ratio {ratios[-1]:.3f}", flush=True)
    ratio = statistics.median(ratios)
    print(f"{'/'.join(case)}: ratio {ratio:.3f} (paired repeats {min(ratios):.3f}.."
          f"{max(ratios):.3f}, n={len(ratios)})", flush=True)
    return ratio


def main() -> None:
    """Measure every case, alternating sides, and print the smallest ratio last."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default="pytorch",
                        help="comma list, or 'installed' for every installed one")
    parser.add_argument("--models", default="toy,resnet18")
    parser.add_argument("--phases", default="training,inference")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=64,
                        help="0 for the model's published size")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0, help="0: the framework's default")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()

    frameworks = args.frameworks.split(",")
    if args.frameworks == "installed":
        frameworks = [f for f in PLAIN_LOOPS if importlib.util.find_spec(MODULES[f])]
    unknown = sorted(set(frameworks) - set(PLAIN_LOOPS))
    if unknown:
        parser.error(f"--frameworks: no plain loop for {', '.join(unknown)} "
                     f"(accepted: {', '.join(PLAIN_LOOPS)})")
    print(f"settings: batch={args.batch} image_size={args.image_size or 'published'} "
          f"warmup={args.warmup} batches={args.batches} "
          f"threads={args.threads or 'default'} repeats={args.repeats}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for framework in frameworks:
            for model in args.models.split(","):
                for phase in args.phases.split(","):
                    case = (framework, model, phase)
                    results[case] = measure_case(args, case, Path(tmp))
    worst = min(results, key=lambda case: results[case])
    print(f"smallest: {'/'.join(worst)}")
    print(f"ratio={results[worst]:.3f}")


if __name__ == "__main__":
    main()
