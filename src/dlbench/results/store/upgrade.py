"""Converting a results store of an older format to this one, in its file, on request.

Reads never convert a store (an older dlbench could no longer read it, and converting
writes, which would run a trigger planted in it): ``dlbench store upgrade PATH`` does,
and a writer that opens an older store (a sweep resumed into it) does the same. Both
first look for triggers and views dlbench did not make
(:func:`~dlbench.results.store.legacy.foreign_objects`) and leave a store holding any
as it is, whatever its format, with one line naming them. The conversion itself is the
store's own, in one transaction (:class:`~dlbench.results.store.Store`): a reader sees
the old store or the new one, a killed upgrade leaves the old one.

Example::

    before, after = upgrade(Path("runs/sweep1"))   # (4, 5); (5, 5): nothing to do
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dlbench.errors import ResultsError
from dlbench.results.store import FORMAT_VERSION, STORE_FILENAME, Store
from dlbench.results.store.legacy import foreign_objects, refuse_foreign
from dlbench.results.store.readonly import WHAT, open_for_reading

__all__ = ["store_file", "upgrade"]


def store_file(path: Path) -> Path:
    """The store file ``path`` names: itself, or a run directory's ``results.sqlite``."""
    return path / STORE_FILENAME if path.is_dir() else path


def _format_and_foreign(path: Path) -> tuple[int, list[str]]:
    """The format version of the store at ``path`` and what dlbench did not make in it,
    read without writing; ResultsError when it is not a dlbench results store."""
    db = open_for_reading(path)
    try:
        tables = {row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"meta", "experiments"} <= tables:
            raise ResultsError(f"{path} is an SQLite database but not a dlbench {WHAT}")
        row = db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise ResultsError(f"{WHAT} {path} has no format_version")
        version = int(row[0])
        return version, foreign_objects(db, version)
    except sqlite3.DatabaseError as error:
        raise ResultsError(f"cannot read {WHAT} {path}: {error}") from None
    finally:
        db.close()


def upgrade(path: Path) -> tuple[int, int]:
    """Convert the store at ``path`` (a file, or a run directory) to
    :data:`~dlbench.results.store.FORMAT_VERSION` in place: its format before and after.
    ResultsError, in one line, for what is not a store, a store of a newer format, or a
    store holding a trigger or view dlbench did not make (left as it was)."""
    path = store_file(path)
    version, planted = _format_and_foreign(path)
    if version > FORMAT_VERSION:
        raise ResultsError(f"{WHAT} {path} has format version {version}; this dlbench "
                           f"reads and writes versions up to {FORMAT_VERSION}: upgrade dlbench")
    refuse_foreign(path, planted)
    if version < FORMAT_VERSION:
        with Store(path):  # a writer converts the file, checking again in its transaction
            pass
    return version, FORMAT_VERSION
