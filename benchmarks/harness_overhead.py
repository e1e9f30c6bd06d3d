"""How much does dlbench's harness cost? dlbench against a plain PyTorch loop.

Runs the same model, batch and settings (a) through ``dlbench run`` and (b) through a
hand-written PyTorch training or inference loop, each in a fresh process, alternating
A/B several times so that drift of a noisy machine hits both alike. Prints every
measurement, the medians, and as its last line ``ratio=<dlbench / plain>``
(throughput; 1.0 means no overhead).

    python benchmarks/harness_overhead.py --model resnet18 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# The plain loop: what a person writes by hand to time a model. It uses dlbench's
# model definition (the model must be the same) and nothing else of dlbench.
PLAIN_LOOP = r"""
import sys, time, torch
from dlbench.config.catalog import MODELS, model_input_shape
from dlbench.models import build_pytorch_model

model_id, phase, batch, size, warmup, batches, threads = sys.argv[1:8]
batch, size, warmup, batches, threads = map(int, (batch, size, warmup, batches, threads))
if threads:
    torch.set_num_threads(threads)
info = MODELS[model_id]
shape = model_input_shape(info, size)
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
for _ in range(warmup):
    step()
start = time.perf_counter()
for _ in range(batches):
    step()
elapsed = time.perf_counter() - start
print(batch * batches / elapsed)
"""


def plain_throughput(args: argparse.Namespace) -> float:
    """Samples/s of the hand-written loop, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", PLAIN_LOOP, args.model, args.phase, str(args.batch),
         str(args.image_size), str(args.warmup), str(args.batches), str(args.threads)],
        check=True, capture_output=True, text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def dlbench_throughput(args: argparse.Namespace, out_dir: Path) -> float:
    """Samples/s that ``dlbench run`` reports for the same settings."""
    subprocess.run(
        [sys.executable, "-m", "dlbench", "run", "-P", f"exp.model={args.model}",
         "-P", f"exp.phase={args.phase}", "-P", f"exp.replica_batch={args.batch}",
         "-P", f"exp.image_size={args.image_size}", "-P", f"exp.num_warmup_batches={args.warmup}",
         "-P", f"exp.num_batches={args.batches}", "-P", f"pytorch.num_threads={args.threads}",
         "-P", "exp.rerun=always", "--out", str(out_dir)],
        check=True, capture_output=True, text=True,
    )
    with sqlite3.connect(out_dir / "results.sqlite") as db:
        (record,) = db.execute("SELECT record FROM experiments").fetchone()
    return float(json.loads(record)["results.throughput"])


def main() -> None:
    """Measure both ways, alternating, and print the ratio of the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--phase", default="training", choices=("training", "inference"))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=112,
                        help="0 for the model's published size")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="0: PyTorch's default")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    plain: list[float] = []
    harness: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            plain.append(plain_throughput(args))
            harness.append(dlbench_throughput(args, Path(tmp) / "out"))
            print(f"repeat {i + 1}: plain {plain[-1]:.2f} samples/s, "
                  f"dlbench {harness[-1]:.2f} samples/s", flush=True)
    print(f"settings: {args.model} {args.phase} batch={args.batch} "
          f"image_size={args.image_size or 'published'} batches={args.batches} "
          f"threads={args.threads or 'default'}")
    print(f"median plain={statistics.median(plain):.2f} "
          f"dlbench={statistics.median(harness):.2f} samples/s")
    print(f"ratio={statistics.median(harness) / statistics.median(plain):.3f}")


if __name__ == "__main__":
    main()
