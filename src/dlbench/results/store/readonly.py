"""Opening a results store for reading only: a read creates no file and changes no byte.

Every command that only reads a store (``query``, ``report``, ``status``, ``plot``,
``compare``, ``history import``) opens it through :func:`open_for_reading`: SQLite's
``mode=ro`` (or ``immutable=1``, below), with ``trusted_schema`` off, so that a view or
trigger planted in the file cannot call a function with side effects. A store of an
older format is never converted by a read (an older dlbench could no longer read it,
and converting writes, which would run any trigger planted in it): format 4 is read
as it is, formats 1 to 3 are refused in one line naming ``dlbench store upgrade PATH``
(:class:`~dlbench.results.store.Store`).

How the file is opened so that a read writes nothing, WAL mode included, is
:func:`~dlbench.results.sqlite_files.connect_read_only`'s to decide.

Example::

    db = open_for_reading(Path("runs/sweep1/results.sqlite"))
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dlbench.results.sqlite_files import connect_read_only

__all__ = ["open_for_reading"]

#: What a store is called in errors.
WHAT = "results store"


def open_for_reading(path: Path, timeout: float = 60.0) -> sqlite3.Connection:
    """A connection that reads the store at ``path`` and never writes to it or beside
    it, in autocommit mode, with ``trusted_schema`` off; ResultsError, in one line
    naming the file, when it is not an SQLite database or cannot be read."""
    return connect_read_only(path, WHAT, timeout)
