"""SQLite files opened for reading only: a reader never changes what it reads.

``sqlite3.connect(path)`` creates a database where there is none and turns an empty
file into one; a report, a query or a history check must do neither. Readers of a
results store or a history open it with :func:`connect_read_only`, which first checks
that the file is there, is not empty and starts as an SQLite database does (one line
naming it otherwise), then opens it so that the read creates no file and changes no
byte, with ``trusted_schema`` off, so that a view or trigger planted in the file cannot
call a function with side effects.

Which way the file is opened, as measured with SQLite 3.40: ``mode=ro`` on a WAL
database whose ``-wal`` or ``-shm`` is missing creates both beside it, and leaves them
after closing, wherever the folder is writable. dlbench's stores are in WAL mode, and a
writer that closed its store removes both, so a finished run directory would gain two
files at each read. Hence:

- not in WAL mode (a rollback journal: some network file systems), or both ``-wal``
  and ``-shm`` there (a writer may be connected: its locks keep the read consistent):
  ``mode=ro``, which creates nothing then;
- in WAL mode, with no ``-wal`` or an empty one: every commit is in the file itself and
  no writer is connected (a connected one keeps both files): ``immutable=1``, which
  takes no locks and creates nothing. A writer that starts meanwhile writes its
  ``-wal`` and changes the file itself only when it checkpoints (every thousand pages,
  or when it closes): a read that long could fail, never write;
- a ``-wal`` holding commits but no ``-shm`` (a copy that left it out): ``mode=ro``,
  which must make the ``-shm`` index to read those commits, the one file a read may
  leave behind, rather than read the database without them; where the folder cannot
  be written, ``immutable=1`` (nothing can write there either).

Example::

    db = connect_read_only(Path("runs/sweep1/results.sqlite"), "results store")
"""

from __future__ import annotations

import os
import sqlite3
import stat
import urllib.parse
from pathlib import Path

from dlbench.errors import ResultsError

#: The first bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: Offset in an SQLite file's header of its write version: 2 when in WAL mode.
_WRITE_VERSION_OFFSET = 18
_WAL_VERSION = 2


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of ``path`` when it is a regular file, else ``b""``.

    Opened without blocking and checked once open: a FIFO put there since would
    otherwise wait for a writer, and a device would be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def is_sqlite_file(path: Path) -> bool:
    """Whether ``path`` is an existing regular file that starts as an SQLite database
    does (:func:`read_head`: nothing else is read)."""
    return read_head(path, len(SQLITE_HEADER)) == SQLITE_HEADER


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


def _in_wal_mode(path: Path) -> bool:
    with open(path, "rb") as file:
        header = file.read(_WRITE_VERSION_OFFSET + 1)
    return (header.startswith(SQLITE_HEADER) and len(header) > _WRITE_VERSION_OFFSET
            and header[_WRITE_VERSION_OFFSET] == _WAL_VERSION)


def _at_rest(path: Path) -> bool:
    """Whether the WAL-mode database at ``path`` holds every commit in its own file,
    with no writer connected: no ``-wal``, or an empty one (see the module's notes)."""
    wal = path.with_name(f"{path.name}-wal")
    shm = path.with_name(f"{path.name}-shm")
    if wal.exists() and shm.exists():
        return False  # a writer may be connected: read under its locks
    return not wal.exists() or wal.stat().st_size == 0


def connect_read_only(path: Path, what: str, timeout: float = 60.0) -> sqlite3.Connection:
    """A connection that reads the SQLite file ``path`` (checked first, see
    :func:`check_sqlite_file`) and never writes to it or beside it (see the module's
    notes), in autocommit mode (transactions are the caller's), with ``trusted_schema``
    off. ResultsError, in one line naming the file, when it cannot be opened."""
    check_sqlite_file(path, what)
    try:
        at_rest = _in_wal_mode(path) and _at_rest(path)
    except OSError as error:
        raise ResultsError(f"{what} {path}: cannot read it ({error.strerror})") from None
    uri = "file:" + urllib.parse.quote(str(path.resolve()))
    if at_rest:
        attempts = ["mode=ro&immutable=1"]
    elif os.access(path.parent, os.W_OK):
        attempts = ["mode=ro"]
    else:  # no -shm and no way to make one; nothing can write here either
        attempts = ["mode=ro", "mode=ro&immutable=1"]
    failure: sqlite3.Error | None = None
    for options in attempts:
        try:
            db = sqlite3.connect(f"{uri}?{options}", uri=True, timeout=timeout,
                                 isolation_level=None)
        except sqlite3.Error as error:
            failure = error
            continue
        try:
            db.execute("PRAGMA trusted_schema = OFF")
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
