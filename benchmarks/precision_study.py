"""What reaches a stated precision of a batch time in the least wall time, here?

Strategies, measured side by side in one run (trials in rotating order, so that a
drift of the machine's speed hits them alike), each through ``dlbench run``:

- ``1 proc, CI of mean``: one process with adaptive stopping as ``exp.num_batches=auto``
  does it (the batch-means CI of the mean, checked every ``n // 20`` batches after
  ``exp.min_batches`` and ``exp.min_duration``);
- ``1 proc, CI of median``: the same rule on the batch-medians CI of the median
  (``dlbench.results.stats.median_ci95_half_width``);
- each of those with ``pytorch.num_threads=1`` (one thread: nothing to wait for when
  the other core is taken) and with PyTorch's default threads;
- ``K procs x B batches``: ``exp.repeat=K`` with ``B`` fixed batches per process; the
  interval is between processes, ``t(K-1) · sd(process medians) / √K``.

One-process rules are replayed on the batch times of one long run
(``exp.num_batches=auto`` with ``exp.target_ci=0``, so it runs ``--seconds``): the rule
is a function of the batch times, so replaying it on them gives the batch at which it
would have stopped; the wall time to the stop
is the run's start-up and warm-up (its wall time less its timed seconds) plus the
stopped prefix's batch times. A rule that never reaches ``--target`` within
``--seconds`` counts as not reached, with the width it had at the end.

Coverage: the share of trials whose interval holds the reference, the same statistic
over all the strategy's trials' batches pooled (for the K-process strategy, the
median of all its processes' medians); with few trials a coarse check, not a figure
to quote to two digits.

    python benchmarks/precision_study.py --batch 4 --image-size 32 --seconds 30
    python benchmarks/precision_study.py --model toy --phase training --batch 16 \
        --seconds 15 --k-batches 200
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.api import Store
from dlbench.results.stats import (
    ci95_half_width,
    mean,
    median_ci95_half_width,
    t_quantile_975,
)

MIN_BATCHES = 10  # exp.min_batches
MIN_SECONDS = 1.0  # exp.min_duration
CHECK_FRACTION = 20  # AutoStop.CHECK_FRACTION


@dataclass
class Outcome:
    """One trial of one strategy."""

    wall_s: float
    reached: bool
    ci_rel: float
    estimate: float
    half_width: float


def run_dlbench(args: argparse.Namespace, out_dir: Path, extra: list[str]) -> tuple[
        dict[str, Any], float]:
    """One ``dlbench run`` of the study's experiment; its record and wall seconds."""
    params = [f"exp.framework={args.framework}", f"exp.model={args.model}",
              f"exp.phase={args.phase}", f"exp.replica_batch={args.batch}",
              f"exp.image_size={args.image_size}",
              f"exp.num_warmup_batches={args.warmup}", "exp.rerun=always", *extra]
    command = [sys.executable, "-m", "dlbench", "run", "--out", str(out_dir)]
    for param in params:
        command += ["-P", param]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    keys = ["results.time_data", "results.timed_seconds", "results.repeat_num_batches",
            "exp.status", "exp.status_msg"]
    with Store.in_directory(out_dir, create=False) as store:
        (record,) = store.records(keys=keys)
    if record.get("exp.status") != "ok":
        raise SystemExit(f"dlbench run {extra} failed: {record.get('exp.status_msg')}")
    return record, wall


def replay(times: list[float], statistic: str, target: float) -> tuple[int, float, float]:
    """Where the stopping rule on ``statistic`` would stop on ``times``: the count, its
    estimate and the interval's half-width (the last check's when never reached)."""
    next_check, elapsed = 0, 0.0
    estimate, half = float("nan"), float("inf")
    for count in range(1, len(times) + 1):
        elapsed += times[count - 1] / 1000
        if count < MIN_BATCHES or elapsed < MIN_SECONDS or count < next_check:
            continue
        prefix = times[:count]
        if statistic == "mean":
            estimate, width = mean(prefix), ci95_half_width(prefix)
        else:
            estimate, width = statistics.median(prefix), median_ci95_half_width(prefix)
        half = width if width is not None else float("inf")
        if half / estimate <= target:
            return count, estimate, half
        next_check = count + max(1, count // CHECK_FRACTION)
    return len(times), estimate, half


def one_process(args: argparse.Namespace, out_dir: Path, threads: int
                ) -> tuple[dict[str, Outcome], list[float]]:
    """One long run, replayed for both statistics; the outcomes and the batch times."""
    record, wall = run_dlbench(args, out_dir, [
        f"pytorch.num_threads={threads}", "exp.num_batches=auto", "exp.target_ci=0",
        f"exp.max_duration={args.seconds}", f"exp.max_batches={args.max_batches}"])
    times: list[float] = record["results.time_data"]
    overhead = wall - float(record["results.timed_seconds"])
    outcomes = {}
    for statistic in ("mean", "median"):
        count, estimate, half = replay(times, statistic, args.target)
        rel = half / estimate
        outcomes[statistic] = Outcome(overhead + math.fsum(times[:count]) / 1000,
                                      rel <= args.target, rel, estimate, half)
    return outcomes, times


def k_processes(args: argparse.Namespace, out_dir: Path) -> tuple[Outcome, list[float]]:
    """``exp.repeat=K`` with fixed batches; the between-process interval of the median."""
    record, wall = run_dlbench(args, out_dir, [
        f"pytorch.num_threads={args.repeat_threads}", f"exp.repeat={args.k}",
        f"exp.num_batches={args.k_batches}"])
    times: list[float] = record["results.time_data"]
    counts = record.get("results.repeat_num_batches") or [args.k_batches] * args.k
    medians, at = [], 0
    for count in counts:
        medians.append(statistics.median(times[at:at + int(count)]))
        at += int(count)
    estimate = mean(medians)
    half = t_quantile_975(len(medians) - 1) * statistics.stdev(medians) / math.sqrt(len(medians))
    return Outcome(wall, half / estimate <= args.target, half / estimate, estimate, half), medians


def main() -> None:
    """Run every strategy ``--trials`` times, rotating their order; print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default="pytorch")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--phase", default="inference")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--target", type=float, default=0.02,
                        help="relative half-width of the 95%% CI to reach (0.02: ±2%%)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="length of each one-process run (its rule's time limit)")
    parser.add_argument("--max-batches", type=int, default=100_000)
    parser.add_argument("--threads", default="1,0",
                        help="pytorch.num_threads values of the one-process strategies")
    parser.add_argument("--k", type=int, default=5, help="processes of the K-process strategy")
    parser.add_argument("--k-batches", type=int, default=30, help="timed batches per process")
    parser.add_argument("--repeat-threads", type=int, default=1)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    if args.k < 2:
        parser.error("--k: at least 2 processes (the interval is between processes)")
    thread_values = [int(t) for t in args.threads.split(",")]
    print(f"settings: {args.framework} {args.model} {args.phase} batch={args.batch} "
          f"image_size={args.image_size} target=±{args.target:.1%} seconds={args.seconds:g} "
          f"K={args.k}x{args.k_batches} trials={args.trials}", flush=True)

    names = [f"1 proc, CI of {s}, threads={t or 'default'}"
             for t in thread_values for s in ("mean", "median")]
    k_name = f"{args.k} procs x {args.k_batches} batches, threads={args.repeat_threads}"
    outcomes: dict[str, list[Outcome]] = {name: [] for name in [*names, k_name]}
    pooled: dict[str, list[float]] = {name: [] for name in outcomes}
    jobs: list[Any] = [*thread_values, "k"]
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(args.trials):
            shift = trial % len(jobs)
            for job in jobs[shift:] + jobs[:shift]:
                out_dir = Path(tmp) / f"{job}-{trial}"
                if job == "k":
                    outcome, medians = k_processes(args, out_dir)
                    outcomes[k_name].append(outcome)
                    pooled[k_name] += medians
                    print(f"  trial {trial + 1} {k_name}: ±{outcome.ci_rel:.2%} "
                          f"in {outcome.wall_s:.1f} s", flush=True)
                    continue
                result, times = one_process(args, out_dir, job)
                for statistic, outcome in result.items():
                    name = f"1 proc, CI of {statistic}, threads={job or 'default'}"
                    outcomes[name].append(outcome)
                    pooled[name] += times
                    print(f"  trial {trial + 1} {name}: ±{outcome.ci_rel:.2%} in "
                          f"{outcome.wall_s:.1f} s{'' if outcome.reached else ' (not reached)'}",
                          flush=True)
    print(f"{'strategy':<44} {'reached':>8} {'wall s':>7} {'CI ±':>7} {'estimate':>9} "
          f"{'covers':>7}")
    for name, rows in outcomes.items():
        reference = (statistics.median(pooled[name]) if "median" in name or "procs" in name
                     else mean(pooled[name]))
        covered = sum(abs(o.estimate - reference) <= o.half_width for o in rows)
        print(f"{name:<44} {sum(o.reached for o in rows):>4}/{len(rows):<3} "
              f"{statistics.median(o.wall_s for o in rows):>7.1f} "
              f"{statistics.median(o.ci_rel for o in rows):>7.2%} "
              f"{statistics.median(o.estimate for o in rows):>9.3f} "
              f"{covered:>4}/{len(rows):<2}")


if __name__ == "__main__":
    main()
