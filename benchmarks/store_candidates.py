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

With ``--engines``, the engines that could read the store instead of dlbench's own
reading code, each in a fresh interpreter (imports and peak resident memory
included), on one store of ``--records`` rows laid out as format 5's
``results_scalars`` (a column per key: 7 parameters and results, 40 text keys of the
environment): a report's read (5 columns, grouped by 4 with a mean and a count) and
a ``--where`` keeping 1 % (every column of those rows). Then what decides beside
speed: whether a second process can read while a writer has the file open, and what
a SIGKILL in the middle of writing one row per transaction leaves, and what opening
a DuckDB file per write costs. With ``--real STORE`` (a store of dlbench's own
records, e.g. one ``benchmarks/results_scale.py --keep DIR`` wrote), first what a
report reads of those records made a DuckDB file, ``--copies`` times over. The
engines are optional: one not installed is skipped with a line saying so.

Usage::

    python benchmarks/store_candidates.py --records 100000 --out /tmp/candidates
    python benchmarks/store_candidates.py --engines --records 1000000 --out /tmp/engines \
        --real /tmp/scale/v2-100000.sqlite --copies 10
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def quoted(name: str) -> str:
    """``name`` as an SQL identifier, quoted as the store quotes it (imported here, not
    at the top, so that the engines' fresh interpreters do not import dlbench)."""
    from dlbench.results.store.columns import quoted as store_quoted

    return store_quoted(name)

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
    from dlbench.api import Store

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


# ------------------------------------------------------------------ engines

#: The rows of the engines' store: what a report reads, and the environment's keys.
ENVIRONMENT_KEYS = 40
ENGINE_MODELS = [*MODELS, "resnet18", "resnet101", "vgg19", "googlenet", "densenet121",
                 "squeezenet", "t5_small", "deep_mnist"]
READ = ('SELECT "exp.model", "exp.replica_batch", "exp.phase", "exp.dtype", '
        '"results.time" FROM {table}')
GROUP = ('SELECT "exp.model", "exp.replica_batch", "exp.phase", "exp.dtype", '
         'avg("results.time"), count(*) FROM {table} GROUP BY 1, 2, 3, 4')
SELECT = "SELECT * FROM {table} WHERE \"exp.id\" LIKE '%00'"
GROUPED = ["exp.model", "exp.replica_batch", "exp.phase", "exp.dtype"]


def make_scalars(path: Path, count: int) -> None:
    """An SQLite file (WAL) of ``count`` rows laid out as format 5's
    ``results_scalars``, made in SQL (a million rows in seconds)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    environment = ", ".join(f'"sys.key_{i:02d}" TEXT' for i in range(ENVIRONMENT_KEYS))
    db.execute('CREATE TABLE results_scalars (seq INTEGER PRIMARY KEY, "exp.id" TEXT, '
               '"exp.model" TEXT, "exp.replica_batch" INTEGER, "exp.phase" TEXT, '
               f'"exp.dtype" TEXT, "results.time" REAL, {environment})')
    db.execute("CREATE TEMP TABLE models (i INTEGER PRIMARY KEY, name TEXT)")
    db.executemany("INSERT INTO models VALUES (?, ?)", list(enumerate(ENGINE_MODELS)))
    values = ", ".join(f"'value-{i}'" for i in range(ENVIRONMENT_KEYS))
    db.execute("BEGIN")
    db.execute(
        f"WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < {count - 1}) "
        "INSERT INTO results_scalars SELECT x, printf('e%08d', x), "
        f"(SELECT name FROM models WHERE i = x % {len(ENGINE_MODELS)}), "
        f"1 << ((x / {len(ENGINE_MODELS)}) % 8), "
        "CASE (x / 128) % 2 WHEN 0 THEN 'training' ELSE 'inference' END, "
        "CASE (x / 256) % 2 WHEN 0 THEN 'float32' ELSE 'float16' END, "
        f"10.0 + (abs(random()) % 100000) / 1000.0, {values} FROM n")
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def make_duckdb(sqlite_path: Path, path: Path) -> None:
    """The same rows in a DuckDB file (through Arrow: DuckDB's ``sqlite`` extension
    is downloaded at run time, which an offline machine cannot do)."""
    import adbc_driver_sqlite.dbapi as adbc
    import duckdb

    with adbc.connect(f"file:{sqlite_path}?mode=ro") as source, source.cursor() as cursor:
        cursor.execute("SELECT * FROM results_scalars")
        rows = cursor.fetch_arrow_table()  # noqa: F841  (DuckDB reads it by its name)
        db = duckdb.connect(str(path))
        db.execute("CREATE TABLE results AS SELECT * FROM rows")
        db.close()


def engine_child(engine: str, step: str, sqlite_path: str, duckdb_path: str) -> None:
    """One ``step`` (``report`` or ``where``) of ``engine``, in this fresh interpreter;
    prints what it found, its laps and its peak resident memory as JSON."""
    start = time.perf_counter()
    laps: dict[str, float] = {}
    found = 0

    def lap(what: str) -> None:
        laps[what] = round(time.perf_counter() - start, 3)

    table = "results_scalars"
    if engine == "sqlite3":
        db = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)
        sql = GROUP if step == "report" else SELECT
        found = len(db.execute(sql.format(table=table)).fetchall())
    elif engine.startswith("adbc"):
        import adbc_driver_sqlite.dbapi as adbc

        lap("import")
        with adbc.connect(f"file:{sqlite_path}?mode=ro") as db, db.cursor() as cursor:
            cursor.execute((READ if step == "report" else SELECT).format(table=table))
            rows = cursor.fetch_arrow_table()
            lap("fetch")
            found = rows.num_rows
            if step == "report" and engine.endswith("duckdb"):
                import duckdb

                found = len(duckdb.sql(GROUP.format(table="rows")).fetchall())
            elif step == "report" and engine.endswith("pyarrow"):
                found = rows.group_by(GROUPED).aggregate(
                    [("results.time", "mean"), ("results.time", "count")]).num_rows
            elif step == "report" and engine.endswith("polars"):
                import polars

                found = len(polars.from_arrow(rows).group_by(GROUPED, maintain_order=True)
                            .agg(polars.col("results.time").mean()))
    elif engine == "polars read_database":
        import polars

        lap("import")
        sql = (READ if step == "report" else SELECT).format(table=table)
        frame = polars.read_database(sql, sqlite3.connect(f"file:{sqlite_path}?mode=ro",
                                                          uri=True))
        lap("fetch")
        found = len(frame if step == "where" else frame.group_by(GROUPED).agg(
            polars.col("results.time").mean()))
    elif engine == "duckdb file":
        import duckdb

        lap("import")
        db = duckdb.connect(duckdb_path, read_only=True)
        sql = GROUP if step == "report" else SELECT
        found = len(db.execute(sql.format(table="results")).fetchall())
    lap("done")
    # VmHWM, not ru_maxrss: Linux carries a parent's ru_maxrss over into its child.
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    print(json.dumps({"found": found, "laps": laps, "peak_mib": round(peak)}))


ENGINES = ["sqlite3", "adbc+duckdb", "adbc+pyarrow", "adbc+polars", "polars read_database",
           "duckdb file"]


def writer_child(kind: str, path: str, hold: bool) -> None:
    """Write one row per transaction to ``path`` (``sqlite`` in WAL mode, or
    ``duckdb``), printing each count committed, until killed; ``hold``: open the file
    for writing, say so, and sleep."""
    if kind == "duckdb":
        import duckdb

        db: Any = duckdb.connect(path)
    else:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE IF NOT EXISTS rows (n BIGINT, payload TEXT)")
    if hold:
        db.execute("INSERT INTO rows VALUES (0, 'held')")
        print("open", flush=True)
        time.sleep(60)
    for number in range(1, 10**9):
        db.execute("BEGIN")
        db.execute("INSERT INTO rows VALUES (?, ?)", (number, "x" * 200))
        db.execute("COMMIT")
        print(number, flush=True)


def reader_count(kind: str, path: str) -> str:
    """Open ``path`` for reading only and count its rows, in this process; the error's
    first line when it cannot."""
    try:
        if kind == "duckdb":
            import duckdb

            db: Any = duckdb.connect(path, read_only=True)
        else:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        return str(db.execute("SELECT count(*), max(n) FROM rows").fetchone())
    except Exception as error:  # what each engine says when it refuses is the figure
        return "refused: " + str(error).splitlines()[0][:90]


def durability(kind: str, folder: Path) -> dict[str, str]:
    """A reader beside a writer that holds the file, and a writer SIGKILLed between
    and during its commits: what is left, and whether it opens."""
    if kind == "duckdb":
        import duckdb  # noqa: F401  (optional: ImportError skips this candidate)
    figures: dict[str, str] = {}
    suffix = "duckdb" if kind == "duckdb" else "sqlite"
    path = str(folder / f"durability.{suffix}")
    me = [sys.executable, __file__, "--writer-child", kind, path]
    holder = subprocess.Popen([*me, "hold"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    holder.stdout.readline()
    figures["reader beside writer"] = reader_count(kind, path)
    holder.kill()
    holder.wait()
    killed = subprocess.Popen([*me, "write"], stdout=subprocess.PIPE, text=True)
    assert killed.stdout is not None
    time.sleep(2.0)
    killed.send_signal(signal.SIGKILL)
    printed = killed.stdout.read().split()
    killed.wait()
    figures["committed before SIGKILL"] = printed[-1] if printed else "none"
    figures["read after SIGKILL (count, last)"] = reader_count(kind, path)
    return figures


#: SQLite's declared types of a store's columns, as DuckDB's.
DUCKDB_TYPES = {"INTEGER": "BIGINT", "REAL": "DOUBLE", "TEXT": "VARCHAR", "BOOLEAN": "BOOLEAN"}
#: The 1 % selection of ``benchmarks/results_scale.py`` (its Q2: 1 record in 128).
REAL_WHERE = "\"exp.model\" = 'resnet50' AND \"exp.replica_batch\" = 32"


def real_shape(store: Path, folder: Path, copies: int) -> None:
    """dlbench's own store (format 5: ``benchmarks/results_scale.py --keep DIR`` leaves
    one) as a DuckDB file: its scalar columns, ``copies`` times over (each copy's
    ``seq`` shifted); then, in a fresh interpreter, what a report reads of it: which of
    the report's keys vary (least, greatest and count of each, in one scan) and the
    mean of ``results.time`` grouped by those that do, over every record and over Q2."""
    import duckdb
    import pandas

    from dlbench.report.aggregate import table_report_keys

    source = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    declared = [(row[1], str(row[2]).upper()) for row in
                source.execute("PRAGMA table_info(results_scalars)")]
    path = folder / "real.duckdb"
    db = duckdb.connect(str(path))
    db.execute("CREATE TABLE results (" + ", ".join(
        f"{quoted(name)} {DUCKDB_TYPES.get(kind, 'VARCHAR')}" for name, kind in declared) + ")")
    cursor = source.execute("SELECT * FROM results_scalars ORDER BY seq")
    names = [name for name, _ in declared]
    began = time.perf_counter()
    # A value its column's type cannot hold (dlbench keeps it exactly in ``exact``) is
    # NULL here: what is timed reads the columns only.
    cast = ", ".join(f"TRY_CAST({quoted(name)} AS {DUCKDB_TYPES.get(kind, 'VARCHAR')})"
                     for name, kind in declared)
    while rows := cursor.fetchmany(20_000):
        frame = pandas.DataFrame.from_records(rows, columns=names)  # noqa: F841
        db.execute(f"INSERT INTO results SELECT {cast} FROM frame")
    (count,) = db.execute("SELECT max(seq) FROM results").fetchone()
    for copy in range(1, copies):
        db.execute(f"INSERT INTO results SELECT * REPLACE (seq + {copy * count} AS seq) "
                   f"FROM results WHERE seq <= {count}")
    db.close()
    (rows_in,) = duckdb.connect(str(path), read_only=True).execute(
        "SELECT count(*) FROM results").fetchone()
    print(f"real shape: {rows_in:,} records of {len(names)} scalar columns as DuckDB, "
          f"{path.stat().st_size / 2**20:.0f} MiB, made in {time.perf_counter() - began:.0f} s")
    keys = [k for k in table_report_keys("results.time") if k in names]
    for where in ("", REAL_WHERE):
        begin = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--real-child", str(path),
                               json.dumps(keys), where], capture_output=True, text=True,
                              check=True)
        wall = time.perf_counter() - begin
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"real shape report read {wall:5.2f} s from a fresh process, peak "
              f"{result['peak_mib']} MiB: {result['varying']} of {len(keys)} keys vary, "
              f"{result['groups']} groups; laps {result['laps']}"
              + (f" WHERE {where}" if where else ""))


def real_child(path: str, keys_json: str, where: str) -> None:
    """What :func:`real_shape` times, in this fresh interpreter; prints JSON."""
    start = time.perf_counter()
    import duckdb

    laps = {"import": round(time.perf_counter() - start, 3)}
    keys = json.loads(keys_json)
    db = duckdb.connect(path, read_only=True)
    selected = f"FROM results WHERE {where}" if where else "FROM results"
    # One value: least equal to greatest, and held by every record or by none (what
    # dlbench's survey asks; cheaper than counting distinct values).
    one = [f"(min({q}) IS NOT DISTINCT FROM max({q}) AND count({q}) IN (0, count(*)))"
           for q in map(quoted_plain, keys)]
    single = db.execute(f"SELECT {', '.join(one)} {selected}").fetchone()
    laps["survey"] = round(time.perf_counter() - start, 3)
    varying = [quoted_plain(k) for k, n in zip(keys, single, strict=True)
               if not n and k not in ("exp.id", "exp.log_file", "results.time")
               and not k.startswith("results.")]
    groups = db.execute(f"SELECT {', '.join(varying) or '1'}, avg(\"results.time\"), "
                        f"count(*) {selected} GROUP BY ALL").fetchall()
    laps["grouped"] = round(time.perf_counter() - start, 3)
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    print(json.dumps({"varying": len(varying), "groups": len(groups), "laps": laps,
                      "peak_mib": round(peak)}))


def quoted_plain(name: str) -> str:
    """``name`` as an SQL identifier, without importing dlbench (for a fresh child)."""
    return '"' + name.replace('"', '""') + '"'


def reopened(path: Path, times: int = 5) -> list[float]:
    """Seconds of each of ``times`` writes to the DuckDB file ``path`` as a store
    opened per write would make them: open, insert one row, close."""
    import duckdb

    spent = []
    for _ in range(times):
        began = time.perf_counter()
        db = duckdb.connect(str(path))
        db.execute("INSERT INTO results SELECT * FROM results LIMIT 1")
        db.close()
        spent.append(time.perf_counter() - began)
    return spent


def engines(count: int, folder: Path) -> None:
    """Every engine, each step in a fresh interpreter, then the durability checks."""
    sqlite_path, duckdb_path = folder / "scalars.sqlite", folder / "scalars.duckdb"
    start = time.perf_counter()
    make_scalars(sqlite_path, count)
    print(f"SQLite store made in {time.perf_counter() - start:.1f} s, "
          f"{sqlite_path.stat().st_size / 2**20:.0f} MiB")
    try:
        start = time.perf_counter()
        make_duckdb(sqlite_path, duckdb_path)
        print(f"DuckDB file made in {time.perf_counter() - start:.1f} s, "
              f"{duckdb_path.stat().st_size / 2**20:.0f} MiB")
    except ImportError as exc:
        print(f"no DuckDB file ({exc})")
    for engine in ENGINES:
        for step in ("report", "where"):
            begin = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--engine-child", engine, step,
                                   str(sqlite_path), str(duckdb_path)],
                                  capture_output=True, text=True)
            wall = time.perf_counter() - begin
            if done.returncode:
                last = (done.stderr.strip().splitlines() or ["?"])[-1]
                print(f"{engine:22s} {step:7s} skipped ({last[:80]})")
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{engine:22s} {step:7s} {wall:6.2f} s from a fresh process, peak "
                  f"{result['peak_mib']:5d} MiB, {result['found']} rows; laps {result['laps']}")
    try:
        print(f"duckdb  open, insert a row, close, at {count} rows: "
              + ", ".join(f"{t * 1000:.0f} ms" for t in reopened(duckdb_path)))
    except ImportError as exc:
        print(f"duckdb: skipped ({exc})")
    for kind in ("sqlite", "duckdb"):
        try:
            for what, figure in durability(kind, folder).items():
                print(f"{kind:7s} {what:34s} {figure}")
        except ImportError as exc:
            print(f"{kind}: skipped ({exc})")


def main() -> None:
    """Measure every candidate and print one block per candidate."""
    if sys.argv[1:2] == ["--engine-child"]:
        engine_child(*sys.argv[2:6])
        return
    if sys.argv[1:2] == ["--real-child"]:
        real_child(*sys.argv[2:5])
        return
    if sys.argv[1:2] == ["--writer-child"]:
        writer_child(sys.argv[2], sys.argv[3], sys.argv[4] == "hold")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--out", type=Path, required=True, help="an empty scratch folder")
    parser.add_argument("--engines", action="store_true",
                        help="compare the engines that could read the store instead")
    parser.add_argument("--real", type=Path, metavar="STORE",
                        help="with --engines: also a report's read of this dlbench store "
                             "(format 5) made a DuckDB file, --copies times over")
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    print(f"{args.records} records, load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores")
    if args.engines and args.real:
        try:
            real_shape(args.real, args.out, args.copies)
        except ImportError as exc:
            print(f"real shape: skipped ({exc})")
    if args.engines:
        engines(args.records, args.out)
        shutil.rmtree(args.out)
        return
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
