"""How much does dlbench's harness cost? dlbench against a plain PyTorch loop.

Runs the same model, batch and settings (a) through ``dlbench run`` and (b) through a
hand-written PyTorch training or inference loop, each in a fresh process, in the order
A B B A A B B A ... so that a drift of the machine's speed hits both sides alike.
Both sides keep every batch time; the throughput of each side is computed the same
way from its pooled batch times, by the median batch time (a shared machine's
hiccups move a mean, not a median) and, for reference, by the mean. The last line is
``ratio=<dlbench throughput / plain throughput>`` (median-based; 1.0 is no overhead).

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
import json, sys, time, torch
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
times = []
for _ in range(batches):
    start = time.perf_counter()
    step()
    times.append((time.perf_counter() - start) * 1000)
print(json.dumps(times))
"""


def plain_times(args: argparse.Namespace) -> list[float]:
    """Batch times (ms) of the hand-written loop, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", PLAIN_LOOP, args.model, args.phase, str(args.batch),
         str(args.image_size), str(args.warmup), str(args.batches), str(args.threads)],
        check=True, capture_output=True, text=True,
    )
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return times


def dlbench_times(args: argparse.Namespace, out_dir: Path) -> list[float]:
    """Batch times (ms) that ``dlbench run`` records for the same settings."""
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
    times: list[float] = json.loads(record)["results.time_data"]
    return times


def throughputs(batch: int, times: list[float]) -> tuple[float, float]:
    """Samples/s from the median and from the mean batch time."""
    return batch * 1000 / statistics.median(times), batch * 1000 / statistics.fmean(times)


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
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()

    plain: list[float] = []
    harness: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            order = ("plain", "dlbench") if i % 2 == 0 else ("dlbench", "plain")
            for side in order:
                if side == "plain":
                    times = plain_times(args)
                    plain += times
                else:
                    times = dlbench_times(args, Path(tmp) / "out")
                    harness += times
                median_tp, mean_tp = throughputs(args.batch, times)
                print(f"repeat {i + 1} {side:>7}: {median_tp:8.2f} samples/s by median, "
                      f"{mean_tp:8.2f} by mean", flush=True)
    print(f"settings: {args.model} {args.phase} batch={args.batch} "
          f"image_size={args.image_size or 'published'} batches={args.batches} "
          f"threads={args.threads or 'default'} repeats={args.repeats}")
    plain_median, plain_mean = throughputs(args.batch, plain)
    harness_median, harness_mean = throughputs(args.batch, harness)
    print(f"pooled, by mean batch time: plain={plain_mean:.2f} dlbench={harness_mean:.2f} "
          f"samples/s, ratio {harness_mean / plain_mean:.3f}")
    print(f"pooled, by median batch time: plain={plain_median:.2f} "
          f"dlbench={harness_median:.2f} samples/s")
    print(f"ratio={harness_median / plain_median:.3f}")


if __name__ == "__main__":
    main()
