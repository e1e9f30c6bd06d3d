"""How the results store scales: write, report and filtered query at 10k to 1M records.

The records are copies of one real record, taken from a ``dlbench run`` of the fake
workload (500 timed batches, so ``results.time_data`` and the monitor's series are
there, about 9 KB of JSON), varied as a long-lived store varies: 16 models, 8 replica
batch sizes, 2 phases, 2 precisions, a unique ``exp.id`` and log file, start and end
times, batch times and everything derived from them, one failure in 50.

Each measurement runs in a fresh interpreter (``spawn``), so that its peak resident
memory (``ru_maxrss``) is its own; it includes the interpreter and its imports
(printed as ``baseline``). What is timed:

- ``write``: ``Store.put_many`` of the records, 10,000 per transaction (generating
  them is not timed);
- ``report``: what ``dlbench report`` does (``table_report``, the one implementation
  of the exploration and scaling reports: the keys it uses read as arrays, grouped
  and averaged with NumPy), each of exploration, weak and strong scaling, rendered as
  text; then the same with ``--where`` Q2 below (1 record in 128); each with the
  store's file in the page cache, and cold (its pages dropped from the cache first,
  ``posix_fadvise(DONTNEED)``, that file only); with ``--dlbs``, also over a store
  of the same records without ``exp.num_nodes`` (as parsed from DLBS logs: the
  report fills it in);
- ``query``: what ``dlbench query --where Q`` does (``io.load_table``): select in the
  store, find which ``exp.*`` parameters vary among the selected records in SQL, load
  only the columns of the default table, format it (timed apart); then the command
  itself, interpreter start included, fastest of ``--repeats``. Q is ``{"exp.model":
  "resnet50"}`` (1 record in 16) and ``{"exp.model": "resnet50", "exp.replica_batch":
  32}`` (1 in 128);
- ``dlbench report``: the command itself, a fresh process (interpreter start and
  imports included), fastest of ``--repeats``, with its peak resident memory, beside
  the targets set for it (``TARGETS``); and the same with ``--where`` Q2;
- with ``--v1``, writing and queries on a format-1 store (a JSON document per record,
  read whole and filtered in Python), the layout before this one, for sizes up to
  ``--v1-max`` (not the report, which would convert the store to this format).

    python benchmarks/results_scale.py                      # 10k and 100k, about 2 minutes
    python benchmarks/results_scale.py --sizes 1000000 --v1-max 0
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MODELS = ["resnet50", "resnet18", "resnet101", "alexnet", "vgg16", "vgg19", "googlenet",
          "inception3", "mobilenet_v2", "densenet121", "squeezenet", "bert_base", "gpt2",
          "t5_small", "deep_mnist", "lstm"]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]
CHUNK = 10_000
DEFAULTS = ["exp.model", "exp.status", "results.time", "results.throughput"]
QUERIES = ({"exp.model": "resnet50"}, {"exp.model": "resnet50", "exp.replica_batch": 32})


def real_record(work: Path) -> dict[str, Any]:
    """One record of a real ``dlbench run`` of the fake workload."""
    out = work / "template-run"
    subprocess.run(
        [sys.executable, "-m", "dlbench", "run", "-P", "exp.framework=fake",
         "-P", "exp.num_warmup_batches=2", "-P", "exp.num_batches=500",
         "-P", "fake.step_ms=0.2", "-P", "monitor.frequency=0.02", "--out", str(out)],
        check=True, capture_output=True, text=True)
    from dlbench.api import Store

    with Store.in_directory(out, create=False) as store:
        (record,) = store.records()
    return record


def generate(template: dict[str, Any], start: int, count: int, dlbs: bool = False
             ) -> Iterator[dict[str, Any]]:
    """Records ``start`` to ``start + count`` of the benchmark's store, always the same;
    ``dlbs``: without ``exp.num_nodes``, as records parsed from DLBS logs are."""
    import numpy

    rng = numpy.random.default_rng(start)
    times = numpy.asarray(template["results.time_data"], dtype=float)
    base = float(numpy.mean(times))
    noise = rng.normal(1.0, 0.03, size=count)
    for offset in range(count):
        i = start + offset
        model, batch = MODELS[i % 16], BATCHES[(i // 16) % 8]
        phase = "training" if (i // 128) % 2 == 0 else "inference"
        dtype = "float32" if (i // 256) % 2 == 0 else "bfloat16"
        record = dict(template)
        exp_id = f"{i:016x}"
        scale = (1 + i % 16) * batch**0.8 * (0.5 if phase == "inference" else 1.0)
        data = (times * (scale * float(noise[offset]) / base)).round(6)
        mean = float(data.mean())
        record.update({
            "exp.id": exp_id, "exp.model": model, "exp.replica_batch": batch,
            "exp.effective_batch": batch, "exp.device_batch": batch, "exp.phase": phase,
            "exp.dtype": dtype, "exp.log_file": f"runs/big/logs/fake-{model}-{exp_id}.log",
            "results.start_time": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00",
            "results.end_time": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:01:00",
            "results.time": mean, "results.time_std": float(data.std(ddof=1)),
            "results.time_min": float(data.min()), "results.time_max": float(data.max()),
            "results.time_p50": float(numpy.median(data)),
            "results.throughput": batch * 1000.0 / mean, "results.time_data": data.tolist(),
        })
        if i % 50 == 49:
            record.update({"exp.status": "failure", "exp.status_msg": "worker exited with 1",
                           "results.failure_kind": "exit"})
        if dlbs:
            del record["exp.num_nodes"]
        yield record


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _write(path: str, n: int, template: dict[str, Any], v1: bool, dlbs: bool = False
           ) -> dict[str, float]:
    from dlbench.api import Store

    spent = 0.0
    if v1:
        db = sqlite3.connect(path, isolation_level=None)
        db.executescript(
            "PRAGMA journal_mode=WAL; CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
            "CREATE TABLE experiments (id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, "
            "status TEXT, updated TEXT NOT NULL, record TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('format_version', '1');")
    else:
        store = Store(path)
    for start in range(0, n, CHUNK):
        chunk = list(generate(template, start, min(CHUNK, n - start), dlbs))
        began = time.perf_counter()
        if v1:
            db.execute("BEGIN")
            db.executemany("INSERT INTO experiments VALUES (?, ?, ?, '', ?)", [
                (r["exp.id"], start + k, r["exp.status"], json.dumps(r))
                for k, r in enumerate(chunk)])
            db.execute("COMMIT")
        else:
            store.put_many(chunk)
        spent += time.perf_counter() - began
    return {"seconds": spent, "size_mb": Path(path).stat().st_size / 2**20}


def _v1_records(path: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(path)
    return [json.loads(text) for (text,) in db.execute("SELECT record FROM experiments "
                                                       "ORDER BY seq")]


def _drop_cached(path: str) -> None:
    """Drop the pages of the file at ``path`` from the page cache (that file only)."""
    import os

    for name in (path, path + "-wal"):
        if Path(name).is_file():
            fd = os.open(name, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _report(path: str, kind: str, where: dict[str, Any], cold: bool) -> dict[str, float]:
    from dlbench.report.render import render_report
    from dlbench.report.tables.columnar import table_report

    if cold:
        _drop_cached(path)
    began = time.perf_counter()
    report = table_report([path], where, "--where", kind)
    built = time.perf_counter()
    text = "\n".join(render_report(report, "text"))
    done = time.perf_counter()
    assert text.startswith(("Exploration", "Weak", "Strong")), text[:80]
    return {"seconds": done - began, "build": built - began, "render": done - built}


def _query(path: str, v1: bool, query: dict[str, Any]) -> dict[str, float]:
    from dlbench.results.io import load_table
    from dlbench.results.query import select_records
    from dlbench.results.text_table import choose_columns, format_table

    began = time.perf_counter()
    if v1:
        selected = select_records(_v1_records(path), query, "--where", path)
        loaded = time.perf_counter()
        columns = choose_columns(selected, DEFAULTS)
    else:
        # What dlbench query does: the columns chosen in SQL, only their values read.
        selected, columns = load_table([path], query, "--where", path, preferred=DEFAULTS)
        loaded = time.perf_counter()
    lines = format_table(selected, columns, fmt="text")
    done = time.perf_counter()
    return {"seconds": done - began, "select": loaded - began, "table": done - loaded,
            "records": float(len(lines) - 2)}


#: What a ``dlbench report`` command should take on this 2-core machine, idle, from a
#: fresh process: (records, store) → (seconds, peak MB); and a ``--where`` keeping
#: about 1 % (Q2), in seconds.
TARGETS: dict[tuple[int, str], tuple[float, float]] = {
    (1_000_000, "v2"): (1.0, 500.0), (100_000, "dlbs"): (0.3, 500.0)}
WHERE_TARGET = 0.1

#: Runs ``dlbench`` in this fresh interpreter, then prints its peak resident memory
#: (VmHWM: Linux carries a parent's ru_maxrss over into its child) on standard error.
_PEAK_WRAPPER = (
    "import sys\n"
    "from dlbench.cli.main import main\n"
    "code = 1\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "finally:\n"
    "    status = open('/proc/self/status').read().split('\\n')\n"
    "    peak = [line.split()[1] for line in status if line.startswith('VmHWM')]\n"
    "    print('peak_kb', peak[0], file=sys.stderr)\n"
    "sys.exit(code)\n")


def _report_command(path: str, where: dict[str, Any]) -> tuple[float, float]:
    """Wall time of ``dlbench report --input PATH [--where Q]`` printing its text (to
    /dev/null), interpreter start included, and its peak resident memory in MB."""
    argv = [sys.executable, "-c", _PEAK_WRAPPER, "report", "--input", path]
    if where:
        argv += ["--where", json.dumps(where)]
    began = time.perf_counter()
    done = subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - began
    peak = next(int(line.split()[1]) for line in done.stderr.splitlines()
                if line.startswith("peak_kb"))
    return wall, peak / 1024


def _against(figure: float, target: float | None) -> str:
    if target is None:
        return ""
    return f" (target {target:g}: {'met' if figure <= target else 'NOT met'})"


def _command(path: str, query: dict[str, Any]) -> float:
    """Wall time of the command itself, ``dlbench query --input PATH --where Q`` printing
    its default table (to /dev/null), interpreter start included."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dlbench", "query", "--input", path, "--where",
                    json.dumps(query)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def _child(job: Callable[..., dict[str, float]], *args: Any) -> dict[str, float]:
    result = job(*args)
    result["peak_mb"] = _peak_mb()
    return result


def _baseline() -> dict[str, float]:
    # What every measurement imports, and nothing else.
    importlib.import_module("dlbench.report.tables.columnar")
    importlib.import_module("dlbench.results.io")
    return {"seconds": 0.0}


def measure(job: Callable[..., dict[str, float]], *args: Any) -> dict[str, float]:
    """Run ``job(*args)`` in a fresh interpreter; its figures and its peak memory."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_child, (job, *args))


def main() -> None:
    """Parse the flags, build the stores, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000",
                        help="record counts, comma-separated (default: 10000,100000)")
    parser.add_argument("--v1", action="store_true", help="also measure a format-1 store")
    parser.add_argument("--v1-max", type=int, default=100_000,
                        help="largest size measured with --v1 (default 100000)")
    parser.add_argument("--dir", help="where the stores go (default: a temporary directory)")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep the stores in DIR and reuse one already there instead of "
                             "writing it again (a million records take minutes to write)")
    parser.add_argument("--dlbs", action="store_true",
                        help="also report a store of records without exp.num_nodes")
    parser.add_argument("--no-report", action="store_true",
                        help="measure writing and queries only, not the report")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of the dlbench query command, each timed (default 3)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        kept = Path(args.keep) if args.keep else None
        if kept is not None:
            kept.mkdir(parents=True, exist_ok=True)
        template = real_record(work)
        print(f"template record: {len(template)} keys, {len(json.dumps(template))} bytes "
              f"of JSON, {len(template['results.time_data'])} batch times")
        print(f"baseline (interpreter and imports): {measure(_baseline)['peak_mb']:.0f} MB")
        for n in sizes:
            layouts = ["v2", *(["dlbs"] if args.dlbs else []),
                       *(["v1"] if args.v1 and n <= args.v1_max else [])]
            for name in layouts:
                v1, dlbs = name == "v1", name == "dlbs"
                path = str((kept or work) / f"{name}-{n}.sqlite")
                if kept is not None and Path(path).is_file():
                    print(f"{name} n={n:>8,} write  (reusing {path})")
                else:
                    w = measure(_write, path, n, template, v1, dlbs)
                    print(f"{name} n={n:>8,} write  {w['seconds']:8.2f} s  "
                          f"({n / w['seconds']:,.0f} records/s, file {w['size_mb']:,.0f} MB, "
                          f"peak {w['peak_mb']:,.0f} MB)")
                runs = [] if args.no_report or v1 else [
                    (kind, where, cold) for where in ({}, QUERIES[1])
                    for kind in ("exploration", "weak-scaling", "strong-scaling")
                    for cold in (True, False)]
                for kind, where, cold in runs:
                    r = measure(_report, path, kind, where, cold)
                    print(f"{name} n={n:>8,} report {r['seconds']:8.2f} s  ({kind}, "
                          f"{'cold' if cold else 'cached'}, built {r['build']:.2f} s, "
                          f"rendered {r['render']:.2f} s, peak {r['peak_mb']:,.0f} MB)"
                          + (f" --where {json.dumps(where)}" if where else ""))
                for where in [] if args.no_report or v1 else [{}, QUERIES[1]]:
                    timed = [_report_command(path, where) for _ in range(args.repeats)]
                    wall, peak = min(timed)
                    seconds, megabytes = TARGETS.get((n, name), (None, None))
                    if where:
                        seconds, megabytes = WHERE_TARGET, None
                    print(f"{name} n={n:>8,} dlbench report {wall:6.2f} s"
                          f"{_against(wall, seconds)}, peak {peak:,.0f} MB"
                          f"{_against(peak, megabytes)} (fastest of {args.repeats})"
                          + (f" --where {json.dumps(where)}" if where else ""))
                for query in [] if dlbs else QUERIES:
                    q = measure(_query, path, v1, query)
                    print(f"{name} n={n:>8,} query  {q['seconds']:8.2f} s  (select and load "
                          f"{q['select']:.2f} s, table {q['table']:.2f} s, "
                          f"{int(q['records']):,} records, peak {q['peak_mb']:,.0f} MB) "
                          f"{json.dumps(query)}")
                    if not v1:
                        times = [_command(path, query) for _ in range(args.repeats)]
                        print(f"{name} n={n:>8,} dlbench query {min(times):6.2f} s (fastest of "
                              f"{args.repeats}, median {sorted(times)[len(times) // 2]:.2f} s) "
                              f"{json.dumps(query)}")
                if kept is not None:
                    continue
                Path(path).unlink()
                for extra in ("-wal", "-shm"):
                    Path(path + extra).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
