"""The results store of a run directory: one SQLite file, one table ``results``. Every
record is a row of ``results``, a column per key, typed as the key is declared
(:mod:`dlbench.results.store.columns`), so that ``sqlite3``, pandas, DuckDB or any SQL
client reads a run without dlbench:: pandas.read_sql('SELECT "exp.model",
"results.throughput" FROM results', db) SQLite because a run can last days and be killed
at any moment: every ``put`` is one transaction, so the store holds each experiment
either whole or not at all, and WAL mode with a busy timeout lets several runner
processes (one per node, or a resumed run next to a report) share the file while readers
read. Beside ``results``, dlbench keeps what gives back each record exactly as it was
written: ``experiments`` (its position ``seq``, status, time written and *shape*: which
keys it has, in which order), ``keys`` (each key's column and type, and whether every
value stored under it is one value), ``shapes``, and ``exact`` (the values a column
does not hold exactly: NaN, ``1`` in a column of floats, a list where numbers are
expected). Format history (``meta.format_version``): 1. ``experiments(id TEXT PRIMARY
KEY, seq INTEGER UNIQUE, status TEXT, updated TEXT, record TEXT)``; ``seq`` keeps
first-insertion order, ``record`` is the JSON record. 2. ``experiments(seq INTEGER
PRIMARY KEY, id TEXT UNIQUE, status, updated, shape)``, ``keys(id, name, kinds, first,
constant)``, ``shapes(id, keys)`` (the JSON list of key ids in record order), and a
narrow table per key, ``v_<key id>(seq, v)`` and ``s_<key id>(seq, v)``: readable by
dlbench only. 3. One wide table ``results`` (``exp.id`` and a column per key),
``experiments(seq, id, status, updated, shape)``, ``keys(id, name, column_name,
type)``, ``shapes(id, keys)``, ``exact(seq, key, value)``. 4. As 3, but the columns
live in ``results_scalars(seq, "exp.id", ...)`` (scalars) and ``results_series(seq,
...)`` (lists and dicts), ``results`` being the view that joins them, so that a scan
of the scalars does not read the series' pages; ``keys`` gains ``single`` and
``first`` (:mod:`dlbench.results.store.write`). 5. As 4, with an index on the
columns of the keys queries name most (``exp.model``) and ``meta.writes``, the count
of write transactions (which tells two connections reading at once that they read one
state). Stores of formats 1 to 4 are converted when a writer opens them, in one
transaction (:mod:`dlbench.results.store.legacy`), or by ``dlbench store upgrade PATH``
(:mod:`dlbench.results.store.upgrade`), unless the store holds a trigger or a view
dlbench did not make; a reader (``create=False``) never writes: it opens the file
read-only (:mod:`dlbench.results.store.readonly`), reads format 4 as it is, and
refuses formats 1 to 3 in one line naming ``dlbench store upgrade PATH``.

Example::

    with Store.in_directory("runs/sweep1") as store:
        store.put({"exp.id": "a1b2", "exp.status": "ok", "results.time": 41.7})
        fast = store.records(where={"results.time": {"$lt": 50}}, series=False)
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from dlbench.errors import ResultsError
from dlbench.results.store import legacy
from dlbench.results.store.read import Reader, Survey
from dlbench.results.store.readonly import open_for_reading
from dlbench.results.store.where import register
from dlbench.results.store.write import SCHEMA, Writer, count_write

__all__ = ["FORMAT_VERSION", "STORE_FILENAME", "Store", "Survey"]

STORE_FILENAME = "results.sqlite"

#: The newest store format this code reads and writes (see the module's history).
FORMAT_VERSION = 5

#: The oldest format a reader reads as it is: format 4 lacks only what speeds up
#: reads and writes (the index, the count of writes), not what a read needs.
READ_AS_IS = 4

#: How long a writer waits for another process's transaction before giving up.
_BUSY_TIMEOUT_S = 60.0

#: Records of an older format converted per batch when a store is upgraded.
_MIGRATE_CHUNK = 5_000


def _make_tables(db: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        db.execute(statement)
    db.execute("INSERT INTO meta (key, value) VALUES ('format_version', ?)",
               (str(FORMAT_VERSION),))


def _create_whole(path: Path) -> None:
    """Make a new, empty store at ``path`` so that it appears whole: its tables are
    written to a file beside it, which then takes the store's name. A reader that
    opens the store at any moment (``dlbench status`` as a run starts) finds either no
    file or a store with its tables, never an SQLite file without them. Where the file
    system cannot link, or another runner made the store first, nothing is done here
    and the store is opened (and, if need be, made) in place as before."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        db = sqlite3.connect(str(temp), isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = WAL")  # a property of the file, kept
            db.execute("BEGIN IMMEDIATE")
            _make_tables(db)
            db.execute("COMMIT")
        finally:
            db.close()
        os.link(temp, path)  # never replaces: a store made meanwhile stands
    except (OSError, sqlite3.Error):
        pass
    finally:
        for leftover in (temp, temp.with_name(f"{temp.name}-wal"),
                         temp.with_name(f"{temp.name}-shm")):
            leftover.unlink(missing_ok=True)


class Store:
    """An open results store (an SQLite file). Usable as a context manager.

    ``create=False`` opens it for reading only: a path that does not exist is refused
    instead of made a store, nothing is written to the file or beside it, a store of
    format 4 is read as it is (:data:`READ_AS_IS`), and an older one is refused in one
    line naming ``dlbench store upgrade PATH``.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        #: Opened for reading only (``create=False``): nothing is ever written.
        self.read_only = not create
        if self.read_only:
            self._db = open_for_reading(self.path, _BUSY_TIMEOUT_S)
        else:
            if self.path.is_dir():
                raise ResultsError(
                    f"results store {self.path} is a directory, not an SQLite file")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                _create_whole(self.path)
            try:
                # isolation_level=None: we issue BEGIN/COMMIT ourselves so a put is
                # exactly one transaction, never merged with what the module would start.
                self._db = sqlite3.connect(
                    str(self.path), timeout=_BUSY_TIMEOUT_S, isolation_level=None
                )
            except sqlite3.Error as exc:
                raise ResultsError(f"cannot open results store {self.path}: {exc}") from exc
        self._writer = Writer(self._db)
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
        register(self._db)
        self._reader = Reader(self._db, self.path)

    @classmethod
    def in_directory(cls, run_dir: str | Path, *, create: bool = True) -> Store:
        """Open (or create) the store of a run directory, ``run_dir/results.sqlite``."""
        return cls(Path(run_dir) / STORE_FILENAME, create=create)

    # ------------------------------------------------------------ opening

    def _tables(self) -> set[str]:
        rows = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows}

    def _version(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise ResultsError(f"results store {self.path} has no format_version")
        return int(row[0])

    def _initialise(self) -> None:
        self._db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        # The selections of filtered reads are temporary tables: keep them in memory.
        self._db.execute("PRAGMA temp_store = MEMORY")
        tables = self._tables()
        if not tables and self.read_only:
            raise ResultsError(f"{self.path} is an SQLite database with no tables, not a "
                               "dlbench results store")
        if not tables:
            self._create_schema()
        elif "meta" not in tables or "experiments" not in tables:
            raise ResultsError(
                f"{self.path} is an SQLite database but not a dlbench results store "
                f"(it has tables {', '.join(sorted(tables))})"
            )
        version = self._version()
        if version > FORMAT_VERSION:
            raise ResultsError(
                f"results store {self.path} has format version {version}; this dlbench "
                f"reads versions up to {FORMAT_VERSION}: upgrade dlbench"
            )
        if version < FORMAT_VERSION and not self.read_only:
            self._migrate()
        elif version < READ_AS_IS:
            # A reader never converts the file (an older dlbench could no longer read
            # it, and a trigger planted in it would run), nor a copy of it in memory
            # (a store of millions of records would not fit).
            raise ResultsError(
                f"results store {self.path} has format version {version}, which this "
                "dlbench reads once converted (a dlbench older than this cannot read it "
                f"after): run dlbench store upgrade {self.path}")

    def _create_schema(self) -> None:
        # WAL is a property of the file, set once here. On file systems without
        # shared memory (some NFS) SQLite keeps its rollback journal: transactions
        # stay atomic, only readers and the writer wait for each other.
        self._db.execute("PRAGMA journal_mode = WAL")
        # IMMEDIATE takes the write lock first, so two runners creating the same
        # store at once do not both create it; the loser finds the tables made.
        with self._transaction():
            if not self._tables():
                self._make_tables()

    def _make_tables(self) -> None:
        _make_tables(self._db)

    def _migrate(self) -> None:
        """Convert a store of format 1 to 4 to this layout, in one transaction: a
        reader sees the old store or the new one, never half of each. The old records
        are read a chunk at a time, so memory stays bounded; format 3's and 4's are
        converted in SQL."""
        try:
            with self._transaction():
                version = self._version()
                if version == FORMAT_VERSION:
                    return  # another process converted it while we waited for the lock
                legacy.refuse_foreign(self.path, legacy.foreign_objects(self._db, version))
                if version in (3, 4):
                    if version == 3:
                        legacy.convert_format3(self._db)
                    legacy.convert_format4(self._db)
                    count_write(self._db)
                    self._db.execute("UPDATE meta SET value = ? WHERE key = 'format_version'",
                                     (str(FORMAT_VERSION),))
                    return
                for table in ("experiments", "keys", "shapes"):
                    if table in self._tables():
                        self._db.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
                self._db.execute("DROP TABLE meta")
                self._make_tables()
                if version == 1:
                    for rows in legacy.format1_records(self._db, "experiments_old",
                                                       _MIGRATE_CHUNK):
                        self._writer.write([self._v1_record(i, text) for i, _, text in rows],
                                           [updated for _, updated, _ in rows])
                else:
                    for chunk in legacy.format2_records(self._db, "_old", _MIGRATE_CHUNK):
                        self._writer.write([record for _, record in chunk],
                                           [updated for updated, _ in chunk])
                    for table in [*legacy.format2_tables(self._db), "keys_old", "shapes_old"]:
                        self._db.execute(f"DROP TABLE {table}")
                self._db.execute("DROP TABLE experiments_old")
        except sqlite3.OperationalError as exc:
            raise ResultsError(
                f"results store {self.path} has an older format and could not be converted "
                f"to version {FORMAT_VERSION} ({exc}); open it once where it is writable"
            ) from exc

    def _v1_record(self, exp_id: str, text: str) -> dict[str, Any]:
        try:
            record = json.loads(text)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            raise ResultsError(f"{self.path}: experiment {exp_id} has a corrupt record; the "
                               "store (format version 1) was left as it was")
        record["exp.id"] = exp_id  # the row's id is the one it was stored as
        return record

    # ------------------------------------------------------------ writing

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    def put(self, record: Mapping[str, Any]) -> None:
        """Insert or replace the experiment ``record["exp.id"]``, in one transaction.

        A replaced experiment keeps its original position in :meth:`records`.
        A record without a non-empty string ``exp.id`` raises ``ValueError`` (a bug).
        """
        self.put_many([record])

    def put_many(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Insert or replace several experiments in one transaction (all or none), as
        :meth:`put` would one by one; much faster than that for many records."""
        if self.read_only:
            raise ResultsError(f"results store {self.path} is open for reading only")
        latest: dict[str, Mapping[str, Any]] = {}
        for record in records:
            exp_id = record.get("exp.id")
            if not isinstance(exp_id, str) or not exp_id:
                raise ValueError(
                    f"a stored record needs a non-empty string exp.id, got {exp_id!r}")
            # Later wins, at the position of the first (what put() one by one does).
            latest[exp_id] = record
        if not latest:
            return
        first = next(iter(latest))
        try:
            with self._transaction():
                self._writer.write(list(latest.values()))
        except sqlite3.Error as exc:
            which = f"experiment {first}" if len(latest) == 1 else f"{len(latest)} experiments"
            raise ResultsError(f"cannot write {which} to {self.path}: {exc}") from exc

    # ------------------------------------------------------------ reading

    def get(self, exp_id: str) -> dict[str, Any] | None:
        """The record of experiment ``exp_id``, or ``None`` when it is not stored."""
        found = self._reader.records(exp_id=exp_id)
        return found[0] if found else None

    def statuses(self) -> dict[str, str]:
        """``exp.id → exp.status`` for every stored experiment that has a status.

        A record stored without ``exp.status`` (its worker was killed) is left out,
        so a resumed run treats it as not done.
        """
        rows = self._reader.query(
            "SELECT id, status FROM experiments WHERE status IS NOT NULL ORDER BY seq")
        return {exp_id: status for exp_id, status in rows}

    def records(
        self,
        *,
        where: Mapping[str, Any] | None = None,
        keys: Collection[str] | None = None,
        series: bool | Collection[str] = True,
    ) -> list[dict[str, Any]]:
        """The stored records, in the order experiments were first stored.

        ``where``: only the records matching this query (:func:`~dlbench.results.query.
        parse_query`), selected in SQL. ``keys``: only these keys of each record (all
        when None). ``series``: whether list and dict values (``results.time_data``,
        monitor series) come back: all (True), none (False), or only those named (a
        name ending in ``*`` names every key it starts: ``"exp.*"``). What is not
        asked for is not read.
        """
        return self._reader.records(where=where, keys=keys, series=series)

    def survey_records(
        self,
        *,
        where: Mapping[str, Any] | None = None,
        surveyed: Callable[[str], bool],
        choose: Callable[[Survey], Collection[str]],
    ) -> tuple[Survey, list[dict[str, Any]]]:
        """What a table of the records ``where`` selects needs, in one read: a
        :class:`~dlbench.results.store.read.Survey` of them (the keys they have, and
        which of those ``surveyed`` accepts vary, decided in SQL without building a
        record), and the records with only the keys ``choose(survey)`` names."""
        return self._reader.survey_records(where=where, surveyed=surveyed, choose=choose)

    def count(self, where: Mapping[str, Any] | None = None) -> int:
        """How many stored records match ``where`` (all of them when None)."""
        return self._reader.count(where)

    def keys(self) -> list[str]:
        """Every key some stored record has, in the order they were first stored."""
        return [row[0] for row in self._reader.query("SELECT name FROM keys ORDER BY id")]

    def __len__(self) -> int:
        return self.count()

    @property
    def connection(self) -> sqlite3.Connection:
        """The store's own connection, for a reader of its tables that reads what this
        store reads (:class:`~dlbench.results.store.arrays.StoreArrays`); closed with it."""
        return self._db

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


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back (and the store's caches of the
    catalogue dropped) when anything inside raises."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __enter__(self) -> None:
        self.store._db.execute("BEGIN IMMEDIATE")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        db = self.store._db
        if exc_type is None:
            db.execute("COMMIT")
            return
        if db.in_transaction:
            db.execute("ROLLBACK")
        self.store._writer.forget_caches()
