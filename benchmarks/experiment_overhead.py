"""What does one experiment cost beyond importing its framework? A sweep of
one-batch experiments against bare ``python -c "import torch"``.

Alternates (A B B A ...) three kinds of run, each ``--count`` processes long:

- ``bare``: ``python -c "import torch"``, the floor any PyTorch experiment pays;
- ``plain``: a hand-written script that builds the model and runs one training step
  (what the experiment itself needs: an optimizer's step also imports
  ``torch._dynamo``, which ``import torch`` does not);
- ``dlbench``: ``dlbench run`` of a sweep of ``--count`` such one-batch experiments
  (``pytorch.seed`` 1 to ``--count``: the same work, distinct experiments), each
  in a worker of its own as the local launcher starts it (forked by the fork server
  under the default ``exp.fork_server=auto``; ``-P exp.fork_server=never`` measures
  fresh interpreters).

Prints seconds per process of each (median over ``--rounds``) and, on the last line,
``ratio=<dlbench per experiment / bare import>``.

    python benchmarks/experiment_overhead.py --count 10 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN_STEP = r"""
import torch
from dlbench.config.catalog import MODELS, model_input_shape
from dlbench.models import build_pytorch_model
info = MODELS["toy"]
shape = model_input_shape(info, 0)
model = build_pytorch_model("toy", shape, info.num_classes)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss = torch.nn.functional.cross_entropy(model(torch.randn(32, *shape)),
                                         torch.randint(0, info.num_classes, (32,)))
loss.backward()
opt.step()
"""


def seconds(command: list[str], count: int) -> float:
    """Wall seconds per process of running ``command`` ``count`` times."""
    began = time.perf_counter()
    for _ in range(count):
        subprocess.run(command, check=True, capture_output=True)
    return (time.perf_counter() - began) / count


def sweep_seconds(args: argparse.Namespace, out: Path) -> float:
    """Wall seconds per experiment of a ``dlbench run`` of ``args.count`` experiments."""
    seeds = ",".join(str(seed) for seed in range(1, args.count + 1))
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dlbench", "run", "--out", str(out),
                    "-P", "exp.model=toy", "-P", f"exp.phase={args.phase}",
                    "-P", "exp.num_warmup_batches=0", "-P", "exp.num_batches=1",
                    "-V", f"pytorch.seed=[{seeds}]", "-P", "exp.rerun=always", *args.extra],
                   check=True, capture_output=True)
    return (time.perf_counter() - began) / args.count


def main() -> None:
    """Measure the three kinds alternately and print the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10, help="processes per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phase", default="training", choices=("training", "inference"))
    parser.add_argument("-P", dest="extra", action="append", default=[],
                        type=lambda p: f"-P{p}", help="another parameter of the dlbench side")
    args = parser.parse_args()
    kinds: dict[str, list[float]] = {"bare": [], "plain": [], "dlbench": []}
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(args.rounds):
            order = list(kinds) if number % 2 == 0 else list(reversed(kinds))
            for kind in order:
                if kind == "bare":
                    value = seconds([sys.executable, "-c", "import torch"], args.count)
                elif kind == "plain":
                    value = seconds([sys.executable, "-c", PLAIN_STEP], args.count)
                else:
                    value = sweep_seconds(args, Path(tmp) / f"run{number}")
                kinds[kind].append(value)
                print(f"round {number + 1} {kind:>7}: {value:.3f} s per process", flush=True)
    medians = {kind: statistics.median(values) for kind, values in kinds.items()}
    print(f"medians: bare {medians['bare']:.3f} s, plain one-step {medians['plain']:.3f} s, "
          f"dlbench {medians['dlbench']:.3f} s per experiment; "
          f"dlbench / plain {medians['dlbench'] / medians['plain']:.3f}")
    print(f"ratio={medians['dlbench'] / medians['bare']:.3f}")


if __name__ == "__main__":
    main()
