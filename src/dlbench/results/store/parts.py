"""Reading a large store's rows in parts at once: one range of ``seq`` per processor,
each read by its own connection in its own thread.

A scan of a million rows, or a million look-ups, is SQLite's work, which runs
without Python's lock: one thread keeps one processor busy (or, on a file not in the
page cache, one read waiting on the disk). Each part is read by its own read-only
connection, in its own read transaction. A part counts only when its connection read
the state of the store the caller reads: the same ``meta.writes``, the count of
write transactions every write adds one to (:mod:`dlbench.results.store.write`);
any other part is read again by the caller's connection, after. A store of a format
without the count, or records in memory, are read in one part.

Example::

    parts = split(db, path)                   # [(1, 500000), (500001, 1000000)]
    rows = in_parts(db, path, parts, "SELECT count(*) FROM results_scalars "
                    "WHERE seq BETWEEN ? AND ?", (), lambda cursor: cursor.fetchone())
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from dlbench.config.devices import usable_cores
from dlbench.errors import ResultsError
from dlbench.results.store.readonly import open_for_reading
from dlbench.results.store.where import register
from dlbench.results.store.write import WRITES

T = TypeVar("T")

#: Records below which a read is not split: a connection and a thread cost more than a
#: part this small saves.
PART_MIN = 100_000

#: A part: the first and the last ``seq`` of its rows.
Part = tuple[int, int]


def writes(db: sqlite3.Connection) -> Any:
    """The store's count of writes as ``db`` reads it (None before format 5); read
    inside a read transaction, the first read fixes the state it reads."""
    found = db.execute(f"SELECT value FROM meta WHERE key = '{WRITES}'").fetchone()
    return None if found is None else found[0]


#: Parts per processor for reads that look rows up (a ``--where``'s): from a file not
#: in the page cache each look-up waits on the disk, not the processor, and more
#: parts keep more reads waiting at once. A ``--where`` choosing 1 % of a million
#: records on 2 processors, cold: 3.8 s in 2 parts, 2.5 s in 4, 1.7 s in 8; cached,
#: 0.25 s in 2 or 4, 0.28 s in 8 (each part walks the whole index).
LOOKUPS_PER_PROCESSOR = 2

#: At most this many parts.
PARTS_MAX = 16


def split(db: sqlite3.Connection, path: Path, least: int | None = None,
          lookups: bool = False) -> list[Part]:
    """The parts of the experiments of the store at ``path`` that ``db`` reads (inside
    its read transaction): one per processor (:data:`LOOKUPS_PER_PROCESSOR` for
    ``lookups``), of ``least`` records (:data:`PART_MIN` when None) at least, or one
    part where they cannot be read apart (no file, no count of writes)."""
    least = PART_MIN if least is None else least
    # (MIN and MAX apart: each alone is one look-up in the table's tree, the two in
    # one SELECT a scan of it.)
    low, high = db.execute("SELECT (SELECT MIN(seq) FROM experiments), "
                           "(SELECT MAX(seq) FROM experiments)").fetchone()
    if low is None or high is None:
        return [(0, 0)]  # no records
    count = min(usable_cores() * (LOOKUPS_PER_PROCESSOR if lookups else 1), PARTS_MAX,
                (high - low + 1) // max(least, 1))
    if count <= 1 or writes(db) is None or not path.is_file():
        return [(low, high)]
    step = (high - low + 1) / count
    edges = [low + round(step * i) for i in range(count)] + [high + 1]
    return [(edges[i], edges[i + 1] - 1) for i in range(count)]


def in_parts(
    db: sqlite3.Connection, path: Path, parts: Sequence[Part], sql: str,
    params: Sequence[Any], fetch: Callable[[sqlite3.Cursor], T],
) -> list[T]:
    """``fetch`` of ``sql`` over each of ``parts``, in order: ``sql`` takes
    ``params`` and then a part's first and last ``seq``. The first part is read by
    ``db`` (inside its read transaction), the others by connections of their own
    where they read the state ``db`` reads, else by ``db`` after."""
    if len(parts) <= 1:
        return [fetch(db.execute(sql, (*params, *part))) for part in parts]
    state = writes(db)
    found: list[tuple[T] | None] = [None] * len(parts)

    def read(index: int) -> None:
        try:
            other = open_for_reading(path)
        except ResultsError:
            return
        try:
            register(other)  # the functions a query's SQL calls
            other.execute("BEGIN")
            if writes(other) == state:
                found[index] = (fetch(other.execute(sql, (*params, *parts[index]))),)
        except sqlite3.Error:
            pass  # read by db after
        finally:
            other.close()

    threads = [threading.Thread(target=read, args=(index,)) for index in range(1, len(parts))]
    for thread in threads:
        thread.start()
    try:
        found[0] = (fetch(db.execute(sql, (*params, *parts[0]))),)
    finally:
        for thread in threads:
            thread.join()
    return [done[0] if done is not None else fetch(db.execute(sql, (*params, *part)))
            for done, part in zip(found, parts, strict=True)]
