"""SQLite files opened for reading only: a reader never changes what it reads.

``sqlite3.connect(path)`` creates a database where there is none and turns an empty
file into one; a report, a query or a history check must do neither. Readers of a
results store or a history open it with :func:`connect_read_only`, which first checks
that the file is there, is not empty and starts as an SQLite database does (one line
naming it otherwise), then opens it with SQLite's ``mode=ro``.

A store in WAL mode is read through its ``-shm`` index, which SQLite creates beside
the file when it is missing; where it cannot (a read-only file system, a folder the
reader may not write), the file is opened ``immutable=1`` instead: no locks and no
index, which is sound because nothing can write there either.

Example::

    db = connect_read_only(Path("runs/sweep1/results.sqlite"), "results store")
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
from pathlib import Path

from dlbench.errors import ResultsError

#: The first bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    """Whether ``path`` is an existing file that starts as an SQLite database does."""
    try:
        with open(path, "rb") as file:
            return file.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def check_sqlite_file(path: Path, what: str) -> None:
    """ResultsError, in one line naming ``what`` and ``path``, unless ``path`` is an
    existing, non-empty file with an SQLite header."""
    if not path.exists():
        raise ResultsError(f"{what} {path} does not exist")
    if path.is_dir():
        raise ResultsError(f"{what} {path} is a directory, not an SQLite file")
    try:
        size = path.stat().st_size
    except OSError as error:
        raise ResultsError(f"{what} {path}: cannot read it ({error.strerror})") from None
    if size == 0:
        raise ResultsError(f"{what} {path} is an empty file (0 bytes), not an SQLite database")
    if not is_sqlite_file(path):
        raise ResultsError(f"{what} {path} is not an SQLite database (its first bytes are "
                           "not SQLite's)")


def connect_read_only(path: Path, what: str, timeout: float = 60.0) -> sqlite3.Connection:
    """A read-only connection to the SQLite file ``path`` (checked first, see
    :func:`check_sqlite_file`), in autocommit mode (transactions are the caller's).
    ResultsError when it cannot be opened."""
    check_sqlite_file(path, what)
    uri = "file:" + urllib.parse.quote(str(path.resolve()))
    # immutable=1 only where no one can write: elsewhere it would skip the locks that
    # keep a read consistent while a runner commits.
    writable = os.access(path.parent, os.W_OK)
    attempts = ["mode=ro"] if writable else ["mode=ro", "mode=ro&immutable=1"]
    failure: sqlite3.Error | None = None
    for options in attempts:
        try:
            db = sqlite3.connect(f"{uri}?{options}", uri=True, timeout=timeout,
                                 isolation_level=None)
        except sqlite3.Error as error:
            failure = error
            continue
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as error:  # no -shm and no way to make one
            db.close()
            failure = error
            continue
        except sqlite3.DatabaseError as error:
            db.close()
            raise ResultsError(f"{what} {path} is damaged (SQLite says: {error})") from None
        return db
    raise ResultsError(f"{what} {path}: cannot open it for reading ({failure})")
