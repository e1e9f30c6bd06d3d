"""Does an interleaved comparison hold on a noisy machine? Trials of ``dlbench run
--interleave`` + ``dlbench compare`` with known answers.

Each trial runs one interleaved sweep of two fake-workload configurations into two
run directories and compares them (paired by process, ``report.compare.paired``):

- ``same``: ``fake.step_ms`` 2.0 against 2.0 (under another ``fake.seed``, so that
  the two are distinct experiments), whose right verdict is ``unchanged``;
- ``5%``: 2.0 against 2.1, B 5% slower per batch, whose right verdict is ``slower``.

It prints each trial's ratio, p-value and verdict, how many of each kind were right,
and on the last line ``ratio=<right verdicts / trials>`` over both kinds (1.0: all).

    python benchmarks/interleave_trials.py --trials 20 --repeat 3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from dlbench.api import load_records
from dlbench.report.compare.compare import compare_records


def trial(args: argparse.Namespace, root: Path, b_step: str, b_seed: int) -> tuple[float, float,
                                                                                    str]:
    """One interleaved sweep of A (2.0 ms) and B; the comparison's ratio, p, verdict."""
    a_dir, b_dir = root / "a", root / "b"
    # One sweep holds both sides: user.side picks each one's step, seed and directory.
    command = [sys.executable, "-m", "dlbench", "run", "--interleave",
               "-P", "exp.framework=fake", "-P", f"exp.repeat={args.repeat}",
               "-P", f"exp.num_batches={args.batches}", "-P", "exp.num_warmup_batches=2",
               "-P", "fake.jitter_ms=0.1",
               "-V", "user.side=[a,b]",
               "-P", f"fake.step_ms=$('2.0' if '${{user.side}}' == 'a' else '{b_step}')$",
               "-P", f"fake.seed=$(0 if '${{user.side}}' == 'a' else {b_seed})$",
               "-P", f"exp.out_dir={root}/${{user.side}}"]
    subprocess.run(command, check=True, capture_output=True, text=True)
    comparison = compare_records(load_records([str(a_dir)]), load_records([str(b_dir)]),
                                 metric="results.throughput", threshold=args.threshold)
    (row,) = comparison.rows
    return row.ratio, row.p_value if row.p_value is not None else float("nan"), row.verdict


def main() -> None:
    """Run the trials and print how many verdicts were right."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="processes per configuration")
    parser.add_argument("--batches", type=int, default=20, help="timed batches per process")
    parser.add_argument("--threshold", type=float, default=0.02,
                        help="smallest change that counts (fraction)")
    args = parser.parse_args()
    right = {"same": 0, "5%": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(args.trials):
            for kind, b_step, expected in (("same", "2.0", "unchanged"), ("5%", "2.1", "slower")):
                root = Path(tmp) / f"{kind.strip('%')}{number}"
                ratio, p, verdict = trial(args, root, b_step, number + 1)
                right[kind] += verdict == expected
                print(f"trial {number + 1:2d} {kind:>4}: ratio {ratio:.4f} p {p:.3g} "
                      f"{verdict}", flush=True)
    for kind, count in right.items():
        print(f"{kind}: {count} of {args.trials} right")
    print(f"ratio={sum(right.values()) / (2 * args.trials):.3f}")


if __name__ == "__main__":
    main()
