"""Candidate layouts for the results store, measured side by side on the same records.

Builds N synthetic records shaped like a sweep's (``exp.*`` parameters, timing
results with 20 batch times, a few dozen ``sys.*``/``hw.*`` keys) and, for each
candidate, measures in one run: writing them (one transaction per 1,000 records, as a
parse does), the file's size, a GROUP BY aggregate like the exploration report's
(mean throughput per model × batch), a ``--where`` that selects 1 % of them, and the
peak memory of each step (``tracemalloc`` for Python, plus the process's resident
set growth for engines that allocate outside Python).

Candidates: SQLite with one wide table ``results`` (a column per key, lists as JSON
text); DuckDB with the same table; Parquet written and read through DuckDB; and
dlbench's store as :mod:`dlbench.results.store` writes it. A
candidate whose engine is not installed is skipped with a line saying so.

Usage::

    python benchmarks/store_candidates.py --records 100000 --out /tmp/candidates
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dlbench.results.store.columns import quoted

MODELS = ["resnet50", "vgg16", "bert_base", "gpt2", "alexnet", "inception_v3", "mlp", "lstm"]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
CHUNK = 1_000


def synthetic(count: int, seed: int = 1) -> Iterator[dict[str, Any]]:
    """``count`` records of a sweep: the same keys in the same order in each."""
    rng = random.Random(seed)
    env = {f"sys.key_{i:02d}": f"value-{i}" for i in range(24)}
    hw = {f"hw.key_{i:02d}": 1.5 * i for i in range(12)}
    for index in range(count):
        model = MODELS[index % len(MODELS)]
        batch = BATCHES[(index // len(MODELS)) % len(BATCHES)]
        times = [rng.uniform(10.0, 50.0) for _ in range(20)]
        mean = sum(times) / len(times)
        yield {
            "exp.id": f"e{index:08d}", "exp.status": "ok", "exp.framework": "pytorch",
            "exp.model": model, "exp.phase": "training", "exp.gpus": "0",
            "exp.device_type": "gpu", "exp.num_nodes": 1, "exp.num_local_replicas": 1,
            "exp.num_replicas": 1, "exp.replica_batch": batch, "exp.effective_batch": batch,
            "exp.num_warmup_batches": 5, "exp.num_batches": 20, "exp.dtype": "float32",
            "exp.repeat_index": index % 3, "pytorch.cudnn_benchmark": True,
            "results.time": mean, "results.time_std": 1.0, "results.time_p50": mean,
            "results.time_p90": mean * 1.1, "results.throughput": batch * 1000.0 / mean,
            "results.time_data": times, **env, **hw,
        }


def sql_type(value: Any) -> str:
    """The declared SQL type of a column holding values like ``value``."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    return "TEXT"


def as_row(record: dict[str, Any]) -> tuple[Any, ...]:
    """The record's values as a table row: lists and dicts as JSON text."""
    return tuple(json.dumps(v) if isinstance(v, (list, dict)) else v for v in record.values())


AGGREGATE = ('SELECT "exp.model", "exp.replica_batch", avg("results.throughput"), count(*) '
             'FROM {table} GROUP BY 1, 2 ORDER BY 1, 2')
#: 1 % of the records: one model of eight, one batch of ten, a repeat index... scaled
#: by picking exactly the ids ending in "00".
WHERE = 'SELECT * FROM {table} WHERE "exp.id" LIKE \'%00\''


class Measured:
    """Time and peak memory of one step.

    The time is taken without ``tracemalloc`` (which slows every allocation); a read
    step is then run again under it for its peak of Python memory. The resident set's
    growth covers what engines allocate outside Python (it only ever grows, so it is
    an upper bound of the step's own peak).
    """

    def __init__(self) -> None:
        self.figures: dict[str, str] = {}

    def step(self, name: str, action: Callable[[], Any], *, again: bool = True) -> Any:
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        result = action()
        elapsed = time.perf_counter() - start
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        python = ""
        if again:
            del result
            tracemalloc.start()
            result = action()
            python = f", py peak {tracemalloc.get_traced_memory()[1] / 2**20:6.1f} MiB"
            tracemalloc.stop()
        self.figures[name] = (f"{elapsed:7.3f} s{python}, "
                              f"rss +{(rss_after - rss_before) / 1024:6.1f} MiB")
        return result

    def queries(self, db: Any, table: str) -> None:
        """The aggregate and the 1 % selection, in plain SQL, on ``table`` of ``db``
        (an SQLite or DuckDB connection)."""
        rows = self.step("group by", lambda: db.execute(AGGREGATE.format(table=table)).fetchall())
        self.figures["groups"] = str(len(rows))
        found = self.step("where 1%", lambda: db.execute(WHERE.format(table=table)).fetchall())
        self.figures["selected"] = str(len(found))


def sqlite_candidate(count: int, folder: Path) -> dict[str, str]:
    """SQLite, one wide table, WAL, one transaction per chunk."""
    path = folder / "wide.sqlite"
    measured = Measured()

    def write() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
        records = synthetic(count)
        first = next(records)
        columns = ", ".join(f"{quoted(k)} {sql_type(v).replace('BIGINT', 'INTEGER')}"
                            .replace("DOUBLE", "REAL") for k, v in first.items())
        db.execute(f"CREATE TABLE results ({columns})")
        db.execute('CREATE UNIQUE INDEX results_id ON results ("exp.id")')
        insert = f"INSERT INTO results VALUES ({', '.join('?' * len(first))})"
        chunk = [as_row(first)]
        for record in records:
            chunk.append(as_row(record))
            if len(chunk) == CHUNK:
                db.execute("BEGIN")
                db.executemany(insert, chunk)
                db.execute("COMMIT")
                chunk = []
        if chunk:
            db.execute("BEGIN")
            db.executemany(insert, chunk)
            db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()

    measured.step("write", write, again=False)
    measured.figures["size"] = f"{path.stat().st_size / 2**20:.1f} MiB"
    db = sqlite3.connect(path)
    measured.queries(db, "results")
    db.close()
    return measured.figures


def duckdb_candidate(count: int, folder: Path) -> dict[str, str]:
    """DuckDB's own file, one wide table, one transaction per chunk."""
    import duckdb  # optional: measured only where installed

    path = folder / "wide.duckdb"
    measured = Measured()

    def write() -> None:
        # executemany inserts row by row (about 550 records/s here); a chunk goes in
        # as one pandas frame instead, DuckDB's fast path from Python.
        import pandas  # optional, as duckdb

        db = duckdb.connect(str(path))
        records = synthetic(count)
        first = next(records)
        columns = ", ".join(f"{quoted(k)} {sql_type(v)}" for k, v in first.items())
        db.execute(f"CREATE TABLE results ({columns})")
        names = list(first)
        chunk = [as_row(first)]

        def flush() -> None:
            frame = pandas.DataFrame.from_records(chunk, columns=names)
            db.register("frame", frame)
            db.execute("BEGIN")
            db.execute("INSERT INTO results SELECT * FROM frame")
            db.execute("COMMIT")
            db.unregister("frame")

        for record in records:
            chunk.append(as_row(record))
            if len(chunk) == CHUNK:
                flush()
                chunk = []
        if chunk:
            flush()
        db.execute("CHECKPOINT")
        db.close()

    measured.step("write", write, again=False)
    measured.figures["size"] = f"{path.stat().st_size / 2**20:.1f} MiB"
    db = duckdb.connect(str(path), read_only=True)
    measured.queries(db, "results")
    db.close()
    return measured.figures


def parquet_candidate(count: int, folder: Path) -> dict[str, str]:
    """Parquet, written once from the wide SQLite table by DuckDB and read by it."""
    import duckdb  # optional: measured only where installed

    path = folder / "results.parquet"
    source = folder / "wide.duckdb"
    measured = Measured()

    def write() -> None:
        db = duckdb.connect(str(source), read_only=True)
        db.execute(f"COPY results TO '{path}' (FORMAT parquet, COMPRESSION zstd)")
        db.close()

    measured.step("write (from DuckDB)", write, again=False)
    measured.figures["size"] = f"{path.stat().st_size / 2**20:.1f} MiB"
    db = duckdb.connect()
    measured.queries(db, f"read_parquet('{path}')")
    db.close()
    return measured.figures


def dlbench_candidate(count: int, folder: Path) -> dict[str, str]:
    """dlbench's own store (one wide table ``results`` and its bookkeeping), written
    through :class:`~dlbench.results.store.Store`; the aggregate in plain SQL, the
    selection through ``Store.records(where=...)`` (SQL, then the query's own rule)."""
    from dlbench.results.store import Store

    path = folder / "dlbench.sqlite"
    measured = Measured()

    def write() -> None:
        with Store(path) as store:
            chunk: list[dict[str, Any]] = []
            for record in synthetic(count):
                chunk.append(record)
                if len(chunk) == CHUNK:
                    store.put_many(chunk)
                    chunk = []
            store.put_many(chunk)

    measured.step("write", write, again=False)
    measured.figures["size"] = f"{path.stat().st_size / 2**20:.1f} MiB"
    db = sqlite3.connect(path)
    rows = measured.step("group by", lambda: db.execute(
        AGGREGATE.format(table="results")).fetchall())
    measured.figures["groups"] = str(len(rows))
    db.close()
    with Store(path, create=False) as store:
        found = measured.step("where 1%", lambda: store.records(
            where={"exp.id": r"e\d{6}00"}))
        measured.figures["selected"] = str(len(found))
        every = measured.step("all records, no series", lambda: store.records(series=False))
        measured.figures["records"] = str(len(every))
    return measured.figures


def main() -> None:
    """Measure every candidate and print one block per candidate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--out", type=Path, required=True, help="an empty scratch folder")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    print(f"{args.records} records, load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    candidates: list[tuple[str, Callable[[int, Path], dict[str, str]]]] = [
        ("sqlite wide table", sqlite_candidate), ("duckdb table", duckdb_candidate),
        ("parquet via duckdb", parquet_candidate), ("dlbench store", dlbench_candidate)]
    for name, candidate in candidates:
        try:
            figures = candidate(args.records, args.out)
        except ImportError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        print(name)
        for what, figure in figures.items():
            print(f"  {what:20s} {figure}")
    shutil.rmtree(args.out)


if __name__ == "__main__":
    main()
