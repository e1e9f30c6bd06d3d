"""How much does dlbench's harness cost per batch? dlbench against a plain loop.

For each case (framework x model x phase), runs the same model, batch and settings
(a) as dlbench's worker runs an experiment and (b) through a hand-written loop of the
same framework (plain_loops.py), alternating A B B A A B B A ... so that a drift of
the machine's speed hits both sides alike.

By default both sides run in ONE fresh interpreter per case (frameworks never share
a process), in blocks of timed batches after ``--warmup``, ``--repeats`` pairs of
blocks. A block lasts about ``--block-seconds`` (1 s; the batch count comes from the
plain loop's step time, probed first in a process of its own), as an experiment's
timed section lasts seconds: blocks of a few milliseconds measure mostly their edges
(on a GPU, toy training in 50-batch blocks read 0.84, in 400-batch blocks 1.01), or
exactly ``--batches``. The dlbench side is the real thing: an experiment planned from the
same ``-P`` parameters ``dlbench run`` gets, its backend loaded and set up as the
worker does, and per block the worker's timed section: its resource monitor and
progress thread running, ``measure.timing.run_batches(backend.step,
backend.synchronize, ...)`` with the worker's marks. The plain side times each step
and its sync with ``perf_counter``. Seconds apart in one process, the two sides see
the same machine: fresh processes of the same loop differ by far more than 1% on a
shared VM. ``--fresh`` runs each side in a fresh process per repeat instead
(``dlbench run`` against a plain loop's process), which includes what a process
costs (start, memory layout) but resolves only large differences.

Each block's figure is its median batch time (a shared machine's hiccups move a
mean, not a median); each pair's ratio is plain / dlbench (throughput: 1.0 is no
overhead), and the case's ratio is the median of its pairs, with their range as its
spread. The last line is ``ratio=<the smallest case's ratio>``.

    python benchmarks/harness_overhead.py --models toy,resnet18 --phases training,inference
    python benchmarks/harness_overhead.py --frameworks installed --threads 1 --repeats 8
    python benchmarks/harness_overhead.py --fresh --frameworks pytorch --models toy
    python benchmarks/harness_overhead.py --gpu 0 --models resnet18,resnet50 --batch 64

Plain loops exist for PyTorch, JAX, TensorFlow (with XLA, and ``tensorflow.xla=true``
on the dlbench side) and ONNX Runtime (inference only, its own export of the PyTorch
model). In one process, settings global to a framework (threads) are shared by both
sides. ``--gpu N`` runs both sides on CUDA GPU N (PyTorch and JAX; the plain loop
synchronises the device after each step, as dlbench does).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from dlbench.api import Store

# Beside this script: run as a script (and in its child processes), its folder is the
# first entry of the import path.
from plain_loops import GPU_LOOPS, PLAIN_LOOPS, plain_block

# What each framework's dlbench side is asked for, beyond the shared settings.
THREAD_PARAM = {"pytorch": "pytorch.num_threads", "jax": None,
                "tensorflow": "tensorflow.num_threads",
                "onnxruntime": "onnxruntime.intra_op_threads"}
# The plain TensorFlow loop compiles with XLA, as a user timing TensorFlow would.
EXTRA_PARAMS = {"pytorch": [], "jax": [], "tensorflow": ["tensorflow.xla=true"],
                "onnxruntime": []}
# ONNX Runtime runs inference only.
PHASES = {"onnxruntime": ("inference",)}
# --batches 0: blocks of about --block-seconds, within this many batches; --fresh runs
# this many batches per process.
MAX_BLOCK_BATCHES = 50_000
FRESH_BATCHES = 50
MODULES = {"pytorch": "torch", "jax": "jax", "tensorflow": "tensorflow",
           "onnxruntime": "onnxruntime"}


def dlbench_params(args: argparse.Namespace, case: tuple[str, str, str]) -> list[str]:
    """The ``-P`` parameters of the dlbench side of ``case``."""
    framework, model, phase = case
    params = [f"exp.framework={framework}", f"exp.model={model}", f"exp.phase={phase}",
              f"exp.replica_batch={args.batch}", f"exp.image_size={args.image_size}",
              f"exp.num_warmup_batches={args.warmup}", f"exp.num_batches={args.batches}",
              "exp.rerun=always"]
    if args.gpu is not None:
        params.append(f"exp.gpus={args.gpu}")
    if args.threads and THREAD_PARAM[framework]:
        params.append(f"{THREAD_PARAM[framework]}={args.threads}")
    return params + EXTRA_PARAMS[framework]


def _child(args: argparse.Namespace, kind: str, case: tuple[str, str, str], tmp: Path
           ) -> list[str]:
    """The command of a fresh interpreter running this script's ``kind`` side of ``case``."""
    return [sys.executable, __file__, "--child", kind, "--case", "/".join(case),
            "--tmp", str(tmp), "--batch", str(args.batch), "--image-size",
            str(args.image_size), "--warmup", str(args.warmup), "--batches",
            str(args.batches), "--threads", str(args.threads), "--repeats", str(args.repeats),
            *(["--gpu", str(args.gpu)] if args.gpu is not None else [])]


def plain_times(args: argparse.Namespace, case: tuple[str, str, str], tmp: Path
                ) -> list[float]:
    """``--fresh``: batch times (ms) of the hand-written loop, in a fresh process."""
    out = subprocess.run(_child(args, "plain", case, tmp), capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{'/'.join(case)}: the plain loop failed:\n{out.stderr[-2000:]}")
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return times


def dlbench_times(args: argparse.Namespace, case: tuple[str, str, str], out_dir: Path
                  ) -> list[float]:
    """``--fresh``: batch times (ms) that ``dlbench run`` records for the same settings."""
    command = [sys.executable, "-m", "dlbench", "run", "--out", str(out_dir)]
    for param in dlbench_params(args, case):
        command += ["-P", param]
    subprocess.run(command, check=True, capture_output=True, text=True)
    with Store.in_directory(out_dir, create=False) as store:
        (record,) = store.records(keys=["results.time_data", "exp.status", "exp.status_msg"])
    if record.get("exp.status") != "ok":
        raise SystemExit(f"{case}: dlbench run failed: {record.get('exp.status_msg')}")
    times: list[float] = record["results.time_data"]
    return times


class DlbenchSide:
    """The worker's side of a case in this process: the backend a planned experiment
    loads, set up once; each block is the worker's timed section (its resource monitor
    and progress thread running, its timing loop around ``backend.step``)."""

    def __init__(self, args: argparse.Namespace, case: tuple[str, str, str], tmp: Path
                 ) -> None:
        from dlbench.backends.base import load_backend
        from dlbench.config import load_spec, plan_experiments
        from dlbench.results.log.file import LogWriter
        from dlbench.worker.experiment import backend_params

        # Every block's batches fit the experiment: buffers sized by the batch count
        # (the losses a training step keeps) hold the whole run, as in one experiment.
        total = args.repeats * (args.warmup + args.batches) - args.warmup
        spec = load_spec(params=[*dlbench_params(args, case), f"exp.num_batches={total}"],
                         overrides={"exp.out_dir": (str(tmp / "run"), "benchmark")})
        (self.params,) = plan_experiments(spec)
        self.log = LogWriter(self.params["exp.log_file"])
        self.backend = load_backend(backend_params(self.params))
        self.backend.setup()
        self.steps = 0

    def block(self, warmup: int, batches: int) -> list[float]:
        """One timed section as ``worker.experiment`` runs it; its batch times (ms)."""
        from dlbench.measure.monitor import ResourceMonitor
        from dlbench.worker.experiment import monitor_marker, timed_batches
        from dlbench.worker.heartbeat import ProgressWriter

        params, backend = self.params, self.backend
        monitor = (ResourceMonitor(float(params.get("monitor.frequency", 0.5)))
                   if params.get("monitor.enabled", True) else None)
        progress = ProgressWriter(self.log)
        progress.describe(params, backend)  # as the worker does once the backend is set up
        if monitor is not None:
            monitor.start()
        try:
            timing = timed_batches(backend, warmup, batches, progress,
                                   monitor_marker(progress, monitor))
        finally:
            if monitor is not None:
                monitor.stop()
        self.steps += timing.num_warmup + len(timing.times_ms)
        return timing.times_ms

    def close(self) -> None:
        """The backend's own end of run (a training run's losses checked), untimed."""
        try:
            self.backend.finish(self.steps)
        finally:
            self.backend.teardown()
            self.log.close()


def inprocess_child(args: argparse.Namespace, case: tuple[str, str, str], tmp: Path) -> None:
    """Both sides of ``case`` in this process, alternating in blocks (A B B A ...):
    one JSON line per pair with each side's median batch time (ms)."""
    framework, model, phase = case
    side = DlbenchSide(args, case, tmp)
    step, sync = PLAIN_LOOPS[framework](model, phase, args.batch, args.image_size,
                                        args.threads, tmp, args.gpu)
    try:
        for i in range(args.repeats):
            order = ("plain", "dlbench") if i % 2 == 0 else ("dlbench", "plain")
            medians = {}
            for name in order:
                times = (plain_block(step, sync, args.warmup, args.batches) if name == "plain"
                         else side.block(args.warmup, args.batches))
                medians[name] = statistics.median(times)
            print(json.dumps(medians), flush=True)
    finally:
        side.close()


def _report(case: tuple[str, str, str], i: int, medians: dict[str, float],
            ratios: list[float]) -> None:
    ratios.append(medians["plain"] / medians["dlbench"])  # throughput ratio
    print(f"  {'/'.join(case)} pair {i + 1}: plain {medians['plain']:.4f} ms, "
          f"dlbench {medians['dlbench']:.4f} ms, ratio {ratios[-1]:.3f}", flush=True)


def block_batches(args: argparse.Namespace, case: tuple[str, str, str], tmp: Path) -> int:
    """``--batches 0``: how many batches make a block of about ``--block-seconds``,
    from the plain loop's median step in a fresh process of its own. A block of a few
    milliseconds (50 steps of a toy model) is mostly its edges: the threads the worker
    starts and the samples it takes at the start of its timed section, where an
    experiment's timed section lasts seconds."""
    probe = argparse.Namespace(**{**vars(args), "batches": 20})
    out = subprocess.run(_child(probe, "plain", case, tmp), capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{'/'.join(case)}: the plain loop failed:\n{out.stderr[-2000:]}")
    step_ms = statistics.median(json.loads(out.stdout.strip().splitlines()[-1]))
    return max(20, min(MAX_BLOCK_BATCHES, round(args.block_seconds * 1000 / max(step_ms, 1e-3))))


def measure_inprocess(args: argparse.Namespace, case: tuple[str, str, str], tmp: Path
                      ) -> list[float]:
    """One fresh interpreter for ``case``, both sides in it; the pairs' ratios."""
    if not args.batches:
        args = argparse.Namespace(**{**vars(args), "batches": block_batches(args, case, tmp)})
        print(f"  {'/'.join(case)}: {args.batches} batches per block", flush=True)
    ratios: list[float] = []
    with open(tmp / f"{'-'.join(case)}.stderr", "w+") as errors:
        child = subprocess.Popen(_child(args, "inprocess", case, tmp), text=True,
                                 stdout=subprocess.PIPE, stderr=errors)
        assert child.stdout is not None
        for line in child.stdout:  # the framework may print lines of its own
            if line.startswith("{"):
                _report(case, len(ratios), json.loads(line), ratios)
        if child.wait():
            errors.seek(0)
            raise SystemExit(f"{'/'.join(case)}: the in-process run failed:\n"
                             f"{errors.read()[-2000:]}")
    return ratios


def measure_fresh(args: argparse.Namespace, case: tuple[str, str, str], tmp: Path
                  ) -> list[float]:
    """``--fresh``: each side in a fresh process per repeat, alternating; the ratios."""
    args = argparse.Namespace(**{**vars(args), "batches": args.batches or FRESH_BATCHES})
    ratios: list[float] = []
    for i in range(args.repeats):
        order = ("plain", "dlbench") if i % 2 == 0 else ("dlbench", "plain")
        medians = {}
        for side in order:
            times = (plain_times(args, case, tmp) if side == "plain"
                     else dlbench_times(args, case, tmp / f"{'-'.join(case)}-{i}"))
            medians[side] = statistics.median(times)
        _report(case, i, medians, ratios)
    return ratios


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--frameworks", default="pytorch",
                        help="comma list, or 'installed' for every installed one")
    parser.add_argument("--models", default="toy,resnet18")
    parser.add_argument("--phases", default="training,inference")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=64,
                        help="0 for the model's published size")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batches", type=int, default=0,
                        help="timed batches per block (--fresh: per run); 0: blocks of "
                             "about --block-seconds (--fresh: 50 batches)")
    parser.add_argument("--block-seconds", type=float, default=1.0,
                        help="with --batches 0, each block's length in seconds")
    parser.add_argument("--threads", type=int, default=0, help="0: the framework's default")
    parser.add_argument("--repeats", type=int, default=4, help="pairs of blocks (of runs)")
    parser.add_argument("--fresh", action="store_true",
                        help="each side in a fresh process per repeat (dlbench run against "
                             "a plain loop's process) instead of both sides in one process")
    parser.add_argument("--cpu", type=int, default=None,
                        help="run both sides on this one CPU (the benchmark's processes "
                             "inherit its affinity): a process moved between cores, or "
                             "sharing one with another, is what makes fresh processes differ")
    parser.add_argument("--gpu", type=int, default=None,
                        help="run both sides on this CUDA GPU (PyTorch and JAX)")
    # This script's own child processes: one side, or one case, in a fresh interpreter.
    parser.add_argument("--child", choices=("plain", "inprocess"), help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help=argparse.SUPPRESS)
    return parser


def main() -> None:
    """Measure every case, alternating sides, and print the smallest ratio last."""
    parser = _parser()
    args = parser.parse_args()
    if args.child:
        framework, model, phase = args.case.split("/")
        if args.child == "plain":
            step, sync = PLAIN_LOOPS[framework](model, phase, args.batch, args.image_size,
                                                args.threads, Path(args.tmp), args.gpu)
            print(json.dumps(plain_block(step, sync, args.warmup, args.batches)))
        else:
            inprocess_child(args, (framework, model, phase), Path(args.tmp))
        return
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})

    frameworks = args.frameworks.split(",")
    if args.frameworks == "installed":
        frameworks = [f for f in PLAIN_LOOPS if importlib.util.find_spec(MODULES[f])]
    unknown = sorted(set(frameworks) - set(PLAIN_LOOPS))
    if unknown:
        parser.error(f"--frameworks: no plain loop for {', '.join(unknown)} "
                     f"(accepted: {', '.join(PLAIN_LOOPS)})")
    if args.gpu is not None and set(frameworks) - set(GPU_LOOPS):
        parser.error(f"--gpu: plain GPU loops exist for {', '.join(GPU_LOOPS)} only; "
                     f"use --frameworks {','.join(GPU_LOOPS)}")
    print(f"settings: mode={'fresh' if args.fresh else 'in-process'} batch={args.batch} "
          f"image_size={args.image_size or 'published'} warmup={args.warmup} "
          f"batches={args.batches or f'about {args.block_seconds:g} s'} "
          f"threads={args.threads or 'default'} repeats={args.repeats} "
          f"device={'cpu' if args.gpu is None else f'gpu {args.gpu}'}")
    measure = measure_fresh if args.fresh else measure_inprocess
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for framework in frameworks:
            for model in args.models.split(","):
                for phase in args.phases.split(","):
                    if phase not in PHASES.get(framework, (phase,)):
                        continue
                    case = (framework, model, phase)
                    ratios = measure(args, case, Path(tmp))
                    results[case] = statistics.median(ratios)
                    print(f"{'/'.join(case)}: ratio {results[case]:.3f} (pairs "
                          f"{min(ratios):.3f}..{max(ratios):.3f}, n={len(ratios)})",
                          flush=True)
    worst = min(results, key=lambda case: results[case])
    print(f"smallest: {'/'.join(worst)}")
    print(f"ratio={results[worst]:.3f}")


if __name__ == "__main__":
    main()
