"""The results store of a run directory: one SQLite file, one row per experiment.

SQLite because a run can last days and be killed at any moment: every ``put`` is
one transaction, so the store holds each experiment either whole or not at all, and
WAL mode with a busy timeout lets several runner processes (one per node, or a
resumed run next to a report) share the file.

Format history (``meta.format_version``):

1. ``experiments(id TEXT PRIMARY KEY, seq INTEGER UNIQUE, status TEXT, updated TEXT,
   record TEXT)``; ``seq`` keeps first-insertion order, ``record`` is the JSON record.

Example::

    with Store.in_directory("runs/sweep1") as store:
        store.put({"exp.id": "a1b2", "exp.status": "ok", "results.time": 41.7})
        print(store.statuses())
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from dlbench.errors import ResultsError

STORE_FILENAME = "results.sqlite"

#: The newest store format this code reads and writes (see the module's history).
FORMAT_VERSION = 1

#: How long a writer waits for another process's transaction before giving up.
_BUSY_TIMEOUT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS experiments (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    status TEXT,
    updated TEXT NOT NULL,
    record TEXT NOT NULL
);
"""

# seq is explicit (not rowid) because VACUUM may renumber rowids; computing it inside
# the INSERT keeps it atomic with the row under SQLite's single-writer lock.
_UPSERT = """
INSERT INTO experiments (id, seq, status, updated, record)
VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM experiments), ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET
    status = excluded.status, updated = excluded.updated, record = excluded.record
"""


class Store:
    """An open results store (an SQLite file). Usable as a context manager.

    ``create=False`` refuses a path that does not exist instead of creating a store
    there, for readers that must not leave files behind.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise ResultsError(f"results store {self.path} does not exist")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif self.path.is_dir():
            raise ResultsError(f"results store {self.path} is a directory, not an SQLite file")
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves so a put is exactly
            # one transaction, never merged with whatever the module would start.
            self._db = sqlite3.connect(
                str(self.path), timeout=_BUSY_TIMEOUT_S, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise ResultsError(f"cannot open results store {self.path}: {exc}") from exc
        try:
            self._initialise()
        except sqlite3.OperationalError as exc:
            # Locked for longer than the busy timeout, read-only, disk full...
            self._db.close()
            raise ResultsError(f"cannot open results store {self.path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise ResultsError(
                f"{self.path} is not a dlbench results store (SQLite says: {exc})"
            ) from exc
        except ResultsError:
            self._db.close()
            raise

    @classmethod
    def in_directory(cls, run_dir: str | Path, *, create: bool = True) -> Store:
        """Open (or create) the store of a run directory, ``run_dir/results.sqlite``."""
        return cls(Path(run_dir) / STORE_FILENAME, create=create)

    def _tables(self) -> set[str]:
        rows = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows}

    def _initialise(self) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        tables = self._tables()
        if not tables:
            self._create_schema()
        elif "meta" not in tables or "experiments" not in tables:
            raise ResultsError(
                f"{self.path} is an SQLite database but not a dlbench results store "
                f"(it has tables {', '.join(sorted(tables))})"
            )
        row = self._db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        version = int(row[0]) if row is not None and str(row[0]).isdigit() else None
        if version is None:
            raise ResultsError(f"results store {self.path} has no format_version")
        if version > FORMAT_VERSION:
            raise ResultsError(
                f"results store {self.path} has format version {version}; this dlbench "
                f"reads versions up to {FORMAT_VERSION}: upgrade dlbench"
            )

    def _create_schema(self) -> None:
        # WAL is a property of the file, set once here. On file systems without
        # shared memory (some NFS) SQLite keeps its rollback journal: transactions
        # stay atomic, only readers and the writer wait for each other.
        self._db.execute("PRAGMA journal_mode = WAL")
        # IMMEDIATE takes the write lock first, so two runners creating the same
        # store at once do not both create it; the loser finds the tables made.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if not self._tables():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute(
                    "INSERT INTO meta (key, value) VALUES ('format_version', ?)",
                    (str(FORMAT_VERSION),),
                )
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def put(self, record: Mapping[str, Any]) -> None:
        """Insert or replace the experiment ``record["exp.id"]``, in one transaction.

        A replaced experiment keeps its original position in :meth:`records`.
        A record without a non-empty string ``exp.id`` raises ``ValueError`` (a bug).
        """
        exp_id = record.get("exp.id")
        if not isinstance(exp_id, str) or not exp_id:
            raise ValueError(f"a stored record needs a non-empty string exp.id, got {exp_id!r}")
        status = record.get("exp.status")
        text = json.dumps(dict(record))
        updated = datetime.now(timezone.utc).isoformat(timespec="seconds")
        try:
            # One statement in autocommit mode is one transaction: all of the row or none.
            self._db.execute(
                _UPSERT, (exp_id, None if status is None else str(status), updated, text)
            )
        except sqlite3.Error as exc:
            raise ResultsError(f"cannot write experiment {exp_id} to {self.path}: {exc}") from exc

    def _decode(self, exp_id: str, text: str) -> dict[str, Any]:
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise ResultsError(f"{self.path}: experiment {exp_id} has a corrupt record") from exc
        if not isinstance(record, dict):
            raise ResultsError(f"{self.path}: experiment {exp_id} has a corrupt record")
        return record

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise ResultsError(f"cannot read results store {self.path}: {exc}") from exc

    def get(self, exp_id: str) -> dict[str, Any] | None:
        """The record of experiment ``exp_id``, or ``None`` when it is not stored."""
        rows = self._query("SELECT record FROM experiments WHERE id = ?", (exp_id,))
        return self._decode(exp_id, rows[0][0]) if rows else None

    def statuses(self) -> dict[str, str]:
        """``exp.id → exp.status`` for every stored experiment that has a status.

        A record stored without ``exp.status`` (its worker was killed) is left out,
        so a resumed run treats it as not done.
        """
        rows = self._query(
            "SELECT id, status FROM experiments WHERE status IS NOT NULL ORDER BY seq"
        )
        return {exp_id: status for exp_id, status in rows}

    def records(self) -> list[dict[str, Any]]:
        """Every stored record, in the order experiments were first stored."""
        rows = self._query("SELECT id, record FROM experiments ORDER BY seq")
        return [self._decode(exp_id, text) for exp_id, text in rows]

    def __len__(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM experiments")[0][0])

    def close(self) -> None:
        """Close the connection; the file stays consistent whether or not this is called."""
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
