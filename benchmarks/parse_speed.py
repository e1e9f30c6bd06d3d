"""How fast ``dlbench parse`` reads logs, against DLBS's own log parser on the same logs.

The logs are DLBS-format logs (the same ``__name__=<json>`` grammar): the lines of a
real ``dlbench run`` of the fake workload (500 timed batches, about 10 KB a log) with
a framework's chatter between them, one log per experiment, varied as a sweep's are
(model, batch size, id, times). Timed, each a fresh process, fastest of ``--repeats``
(wall time, and processor time of the process and its workers):

- ``dlbench parse DIR --output out.json``, the command (all cores);
- ``export.write_logs``, what the command calls, without the command line: worker
  processes read the logs and also encode the records as JSON (a list of numbers
  written as ``json.dumps`` writes it goes through as its text), streamed to the file;
- ``parse_logs(jobs=1)`` then ``write_records``, one process decoding and encoding
  every value (what the command did before it streamed);
- the previous line reader (``scan_stream`` on every file, one process), for what the
  new reader alone buys;
- DLBS's ``python/dlbs/logparser.py DIR --failed_benchmarks keep --output_file
  out.json``, run by this interpreter from a DLBS checkout given with ``--dlbs`` (the
  folder holding ``python/dlbs``). Without one, its line says why it was skipped.

Both outputs are then compared, record by record.

    python benchmarks/parse_speed.py --logs 10000 --dlbs ~/src/dlcookbook-dlbs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NOISE = [
    "dlbench: monitor: GPU monitoring skipped: NVML unavailable",
    "Epoch 1/1: 100%|##########| 500/500 [00:01<00:00, 412.3it/s]",
    "W1123 19:02:34.672 warnings.py:109] UserWarning: TypedStorage is deprecated",
    "step 250 loss=2.3026 lr=0.1",
]


def write_logs(template: dict[str, Any], directory: Path, count: int) -> int:
    """Write ``count`` logs into ``directory``; their total size in bytes."""
    from dlbench.results.log.file import format_line

    directory.mkdir(parents=True, exist_ok=True)
    models = ["resnet50", "resnet18", "alexnet", "vgg16", "googlenet", "inception3",
              "bert_base", "gpt2"]
    total = 0
    for i in range(count):
        record = dict(template)
        exp_id = f"{i:016x}"
        scale = 1.0 + (i % 97) / 100.0
        record.update({
            "exp.id": exp_id, "exp.model": models[i % 8],
            "exp.replica_batch": 2 ** (i % 7), "exp.log_file": f"logs/{exp_id}.log",
            "results.time": template["results.time"] * scale,
            "results.time_data": [round(t * scale, 6) for t in template["results.time_data"]],
        })
        lines = [format_line(key, value) for key, value in record.items()]
        for k, noise in enumerate(NOISE):  # the framework talks between the keys
            lines.insert(20 + 30 * k, noise + "\n")
        data = "".join(lines).encode()
        (directory / f"{exp_id}.log").write_bytes(data)
        total += len(data)
    return total


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall time of one command, and the processor time (user and system) of it and
    every process it started; its failure stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:4])}... failed:\n{done.stderr[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(repeats: int, argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Fastest wall time and least processor time of ``repeats`` runs (a shared machine
    only ever slows a run; on a busy one, processor time says more than wall time)."""
    runs = [timed(argv, env) for _ in range(repeats)]
    return min(wall for wall, _ in runs), min(cpu for _, cpu in runs)


STREAMED = ("import sys; from dlbench.results.export import write_logs; "
            "write_logs([sys.argv[1]], sys.argv[2], on_warning=print)")
ONE_WORKER = ("import sys; from dlbench.results.log.parser import parse_logs; "
              "from dlbench.results.export import write_records; "
              "records, _ = parse_logs([sys.argv[1]], jobs=1); write_records(records, sys.argv[2])")
OLD_READER = ("import sys, pathlib; from dlbench.results.log.scan import scan_stream; "
              "from dlbench.results.export import write_records; "
              "files = sorted(pathlib.Path(sys.argv[1]).glob('*.log')); "
              "records = [scan_stream(f.open('rb'), str(f))[0] for f in files]; "
              "write_records(records, sys.argv[2])")


def main() -> None:
    """Write the logs, time each parser, compare their records."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=int, default=10_000, help="how many logs (default 10000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--dlbs", help="a DLBS checkout (the folder holding python/dlbs)")
    parser.add_argument("--dir", help="where the logs go (default: a temporary directory)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from results_scale import real_record

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        template = real_record(work)
        logs = work / "logs"
        size = write_logs(template, logs, args.logs)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        print(f"{args.logs} logs, {size / 2**20:.0f} MB, {cores} cores; fastest of {args.repeats}")
        ours = work / "dlbench.json"
        figures = {
            "dlbench parse (all cores)": best(args.repeats, [
                sys.executable, "-m", "dlbench", "parse", str(logs), "--output", str(ours)]),
            "write_logs, streamed (all cores)": best(args.repeats, [
                sys.executable, "-c", STREAMED, str(logs), str(work / "streamed.json")]),
            "parse_logs + write_records, 1 process": best(args.repeats, [
                sys.executable, "-c", ONE_WORKER, str(logs), str(work / "one.json")]),
            "previous line reader, 1 process": best(args.repeats, [
                sys.executable, "-c", OLD_READER, str(logs), str(work / "old.json")]),
        }
        dlbs_python = Path(args.dlbs, "python") if args.dlbs else None
        if dlbs_python is None or not (dlbs_python / "dlbs" / "logparser.py").is_file():
            why = ("no --dlbs given" if dlbs_python is None
                   else f"no {dlbs_python}/dlbs/logparser.py")
            print(f"DLBS logparser.py: skipped ({why})")
        else:
            theirs = work / "dlbs.json"
            env = dict(os.environ, PYTHONPATH=str(dlbs_python))
            figures["DLBS logparser.py"] = best(args.repeats, [
                sys.executable, str(dlbs_python / "dlbs" / "logparser.py"), str(logs),
                "--failed_benchmarks", "keep", "--output_file", str(theirs), "--overwrite"], env)
            if (work / "streamed.json").read_bytes() != ours.read_bytes():
                print("write_logs and dlbench parse wrote DIFFERENT files")
            mine = json.loads(ours.read_text())["data"]
            dlbs = json.loads(theirs.read_text())["data"]
            same = sorted(mine, key=lambda r: str(r.get("exp.id"))) == sorted(
                dlbs, key=lambda r: str(r.get("exp.id")))
            print(f"records: dlbench {len(mine)}, DLBS {len(dlbs)}, "
                  f"{'the same' if same else 'DIFFERENT'}")
        reference = figures.get("DLBS logparser.py")
        for name, (seconds, cpu) in figures.items():
            versus = (f"  {reference[0] / seconds:5.1f}x DLBS's speed, "
                      f"{reference[1] / cpu:4.1f}x less processor time") if reference else ""
            print(f"{name:38s} {seconds:7.2f} s  {args.logs / seconds:7,.0f} logs/s  "
                  f"processor {cpu:6.2f} s{versus}")


if __name__ == "__main__":
    main()
