"""Opening a results store for reading only: a read creates no file and changes no byte.

Every command that only reads a store (``query``, ``report``, ``status``, ``plot``,
``compare``, ``history import``) opens it through :func:`open_for_reading`: SQLite's
``mode=ro`` (or ``immutable=1``, below), with ``trusted_schema`` off, so that a view or
trigger planted in the file cannot call a function with side effects. A store of an
older format is not converted in its file (an older dlbench could no longer read it,
and converting writes, which would fire any trigger planted in it): it is copied into
memory (:func:`copy_in_memory`), every trigger and view is dropped from the copy
(dlbench makes no trigger, and remakes its one view, ``results``, after converting),
and the copy is converted and read.

How the file is opened so that a read writes nothing, WAL mode included, is
:func:`~dlbench.results.sqlite_files.connect_read_only`'s to decide.

Example::

    db = open_for_reading(Path("runs/sweep1/results.sqlite"))
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dlbench.results.sqlite_files import connect_read_only

__all__ = ["copy_in_memory", "open_for_reading"]

#: What a store is called in errors.
WHAT = "results store"


def open_for_reading(path: Path, timeout: float = 60.0) -> sqlite3.Connection:
    """A connection that reads the store at ``path`` and never writes to it or beside
    it, in autocommit mode, with ``trusted_schema`` off; ResultsError, in one line
    naming the file, when it is not an SQLite database or cannot be read."""
    return connect_read_only(path, WHAT, timeout)


def copy_in_memory(db: sqlite3.Connection) -> sqlite3.Connection:
    """A copy in memory of the database ``db`` reads, without its triggers and views:
    what may be converted and read without writing to the file. ``db`` is left open."""
    memory = sqlite3.connect(":memory:", isolation_level=None)
    try:
        db.backup(memory)
        memory.execute("PRAGMA trusted_schema = OFF")
        planted = memory.execute(
            "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view')").fetchall()
        for kind, name in planted:
            quoted = '"' + str(name).replace('"', '""') + '"'
            memory.execute(f"DROP {'TRIGGER' if kind == 'trigger' else 'VIEW'} IF EXISTS {quoted}")
    except BaseException:
        memory.close()
        raise
    return memory
