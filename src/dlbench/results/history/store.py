"""The history store: every imported record with its environment and time, for years.

Two backends behind one small interface (:class:`HistoryStore`):

- an SQLite file, for one person or one machine (``--store history.sqlite``; the
  default is :func:`default_store`);
- a PostgreSQL database, for a team whose machines and Slurm jobs all write to one
  history (``--store postgresql://user@host/db``; any libpq connection URI). The
  driver, psycopg 3, is imported only for such a store, so dlbench runs without it.

Both hold one table, ``history_records``, keyed by ``(run_id, exp_id)``: importing a
run again replaces its rows instead of adding them. A row has a column per key, as a
run's results store has (:mod:`dlbench.results.history.layout`). Each import is one transaction
that writes its rows in key order, so concurrent importers neither lose rows nor
deadlock (PostgreSQL's ``INSERT ... ON CONFLICT`` is atomic; SQLite takes its write
lock up front and waits up to a minute for another writer). The SQLite file is in
WAL mode, whose locking needs one machine's shared memory: it is not for a network
file system; several machines share a PostgreSQL store instead.

Format history (``history_meta.format_version``):

1. ``history_records(run_id, exp_id, run_time, record_time, config_key, status,
   revision, source, imported, config, environment, results)``; times are ISO 8601
   text in UTC; ``config``, ``environment`` and ``results`` are JSON (``jsonb`` in
   PostgreSQL, queryable there: ``results->>'results.throughput'``).
2. ``history_records(run_id, exp_id, run_time, record_time, config_key, status,
   revision, source, imported, shape, <a column per key>)``, ``history_keys(id,
   name, column_name, type)``, ``history_shapes(id, parts)``, ``history_exact(run_id,
   exp_id, key, value)`` (:mod:`dlbench.results.history.layout`). A writer converts a
   history of format 1 when it opens it, in one transaction
   (:mod:`dlbench.results.history.legacy`); a reader reads it as it is.

Example::

    with open_history("history.sqlite") as store:
        added, replaced = store.put(rows)
        rows = store.rows()
"""

from __future__ import annotations

import re
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from dlbench.config.home import dlbench_home
from dlbench.errors import ResultsError
from dlbench.results.history import legacy
from dlbench.results.history.layout import POSTGRES, SQLITE, Dialect, HistoryTable, schema
from dlbench.results.history.records import HistoryRow
from dlbench.results.sqlite_files import connect_read_only

#: The newest history format this code reads and writes (see the module's history).
FORMAT_VERSION = 2

#: The history file's name in the default directory.
DEFAULT_FILENAME = "history.sqlite"

#: How long a writer waits for another process's transaction before giving up.
_BUSY_TIMEOUT_S = 60.0

#: Any number, shared by every dlbench: the PostgreSQL lock that serialises creating
#: the tables, converting them and writing to them (a write may add a column, which
#: waits for every other transaction on the table: two such writers would deadlock).
_SCHEMA_LOCK = 0x646C62656E6368
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: A ``password=`` query parameter of a URL, or a libpq keyword, its value quoted
#: (``'it''s'`` or ``'a\\'b'``) or up to the next space, ``&`` or ``#``.
_PASSWORD_PARAM_RE = re.compile(
    r"(?P<key>(?:^|(?<=[\s?&;]))password\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.|'')*'?|[^\s&#]*)", re.IGNORECASE)
#: The start of a libpq keyword/value connection string (``host=... dbname=...``).
_KEYWORDS_RE = re.compile(
    r"^\s*(?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode)\s*=",
    re.IGNORECASE)
_POSTGRES_PREFIXES = ("postgresql://", "postgres://")
_ACCEPTED = "a file path (SQLite) or postgresql://[user[:password]@]host[:port]/database"


def _url_password(spec: str) -> tuple[int, int] | None:
    """Where the password of a URL's ``user:password@`` lies in ``spec`` (start, end),
    or None. The user information ends at the last ``@`` before the query: a password
    may hold ``/`` or ``@`` that its writer did not percent-encode."""
    scheme = _URL_RE.match(spec)
    if scheme is None:
        return None
    start = scheme.end()
    head_end = min((i for i in (spec.find("?", start), spec.find("#", start)) if i >= 0),
                   default=len(spec))
    at = spec.rfind("@", start, head_end)
    colon = spec.find(":", start, at) if at >= 0 else -1
    return (colon + 1, at) if colon >= 0 else None


def _passwords(spec: str) -> list[str]:
    """Every password ``spec`` carries: in a URL's user information, a URL's
    ``password=`` query parameter, or a libpq ``password=`` keyword."""
    found = []
    where = _url_password(spec)
    if where is not None:
        found.append(spec[where[0]:where[1]])
        # libpq ends the user information at the first "@" or "/" and may quote the
        # rest as a host or a port in its error: each piece is masked too (but for a
        # piece too short to give anything away).
        found += [piece for piece in re.split(r"[@/:]", found[0]) if len(piece) >= 3]
    found += [m.group("value") for m in _PASSWORD_PARAM_RE.finditer(spec)]
    return [secret for secret in found if secret]


def redact(text: str, spec: str | None = None) -> str:
    """``text`` with every password of ``spec`` (by default ``text`` itself, a store's
    URL or libpq keyword string) replaced by ``***``, for messages: a URL's
    ``user:password@``, its ``?password=`` parameter and a ``password=`` keyword,
    quoted or not. With ``spec``, a message about it (a driver's error quoting part
    of it) loses the same passwords wherever they appear in it."""
    secrets = _passwords(text if spec is None else spec)
    if spec is None:
        where = _url_password(text)
        if where is not None:
            text = text[:where[0]] + "***" + text[where[1]:]
        text = _PASSWORD_PARAM_RE.sub(lambda m: m.group("key") + "***", text)
    # Longest first: a password that holds another one is masked whole.
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def default_store() -> str:
    """``history.sqlite`` in dlbench's home (:func:`dlbench.config.home.dlbench_home`):
    one history per user across every run directory."""
    return str(dlbench_home() / DEFAULT_FILENAME)


class HistoryStore(ABC):
    """An open history. Usable as a context manager; :meth:`close` when done."""

    #: ``sqlite`` or ``postgresql``.
    kind = ""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    @abstractmethod
    def put(self, rows: Sequence[HistoryRow]) -> tuple[int, int]:
        """Write ``rows`` in one transaction; ``(added, replaced)`` counts. A row whose
        ``(run_id, exp_id)`` is there already replaces it."""

    @abstractmethod
    def rows(self) -> list[HistoryRow]:
        """Every row, ordered by configuration, then run time, record time, exp_id."""

    @abstractmethod
    def count(self) -> int:
        """How many rows the history holds."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _check_version(self, version: str | None) -> None:
        if version is not None and not version.isdigit():
            raise ResultsError(f"history store {redact(self.spec)} is damaged: its "
                               f"format_version is {version!r}")
        if version is not None and int(version) > FORMAT_VERSION:
            raise ResultsError(
                f"history store {redact(self.spec)} has format {version}; this dlbench "
                f"reads up to {FORMAT_VERSION}: upgrade dlbench")


def _ordered(rows: Iterable[HistoryRow]) -> list[HistoryRow]:
    # One key order in every writer: concurrent transactions then lock rows in the
    # same order and cannot deadlock; duplicates within one import keep the last.
    unique = {(row.run_id, row.exp_id): row for row in rows}
    return [unique[key] for key in sorted(unique)]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class SqliteHistory(HistoryStore):
    """A history in one SQLite file."""

    kind = "sqlite"

    def __init__(self, spec: str, *, create: bool = True) -> None:
        super().__init__(spec)
        path = Path(spec).expanduser()
        if path.is_dir():
            raise ResultsError(f"history store {redact(spec)} is a directory, not an SQLite file")
        if not create:
            if not path.exists():
                raise ResultsError(f"history store {redact(spec)} does not exist; import runs "
                                   "into it first (dlbench history import)")
            # A reader opens it read-only: an empty or foreign file stays as it is.
            self._db = connect_read_only(path, "history store", _BUSY_TIMEOUT_S)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                # isolation_level=None: transactions are ours (BEGIN IMMEDIATE below).
                self._db = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S,
                                           isolation_level=None)
            except sqlite3.Error as exc:
                raise ResultsError(f"history store {redact(spec)}: cannot open ({exc})") from exc
        try:
            found = self._prepare() if create else self._read_version()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise ResultsError(
                f"history store {redact(spec)}: not a usable SQLite file ({exc})") from exc
        except ValueError as exc:  # a format-1 row that cannot be converted
            self._db.close()
            raise ResultsError(f"history store {redact(spec)} has format 1 and could not be "
                               f"converted, so it was left as it was: {exc}") from None
        except BaseException:
            self._db.close()
            raise
        self._check_version(None if found is None else str(found[0]))
        #: The format of the rows: 1 only for a format-1 history opened for reading.
        self._format = int(found[0]) if found is not None else FORMAT_VERSION

    def _prepare(self) -> tuple[str] | None:
        """Check the file, create the tables if need be; the format_version row."""
        self._refuse_foreign()  # before anything is written to the file
        # WAL: readers do not block the writer. synchronous=NORMAL: a commit does not
        # wait for the disk; a power cut may lose the last imports, never corrupt the
        # file, and importing a run again is harmless.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            found = _prepare_tables(self._db, SQLITE, "?")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return found

    def _read_version(self) -> tuple[str] | None:
        """Check a history opened for reading; its format_version row."""
        tables = self._tables()
        if "history_meta" not in tables or "history_records" not in tables:
            raise ResultsError(
                f"history store {redact(self.spec)}: an SQLite file but not a dlbench history "
                f"(tables: {', '.join(sorted(tables)[:5]) or 'none'})")
        found: tuple[str] | None = self._db.execute(
            "SELECT value FROM history_meta WHERE key = 'format_version'").fetchone()
        return found

    def _tables(self) -> set[str]:
        return {name for (name,) in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _refuse_foreign(self) -> None:
        """ResultsError for an SQLite file that holds tables but no history (a run's
        results.sqlite given by mistake): a history's tables are not added to it."""
        tables = self._tables()
        if tables and "history_meta" not in tables:
            raise ResultsError(
                f"--store {redact(self.spec)}: an SQLite file but not a dlbench history (tables: "
                f"{', '.join(sorted(tables)[:5])}); name a new file or an existing history")

    def put(self, rows: Sequence[HistoryRow]) -> tuple[int, int]:
        ordered = _ordered(rows)
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                added, replaced = HistoryTable(self._db, SQLITE).write(
                    ordered, [_now()] * len(ordered))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise ResultsError(f"history store {redact(self.spec)}: cannot write ({exc})") from exc
        return added, replaced

    def rows(self) -> list[HistoryRow]:
        try:
            if self._format == 1:
                return legacy.format1_rows(self._db)
            return HistoryTable(self._db, SQLITE).read()
        except (sqlite3.DatabaseError, ValueError, KeyError, ResultsError) as exc:
            # A malformed page, text that is not UTF-8, a JSON column that is not JSON.
            raise ResultsError(f"history store {redact(self.spec)} is damaged: {exc}") from None

    def count(self) -> int:
        try:
            return int(self._db.execute("SELECT COUNT(*) FROM history_records").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise ResultsError(f"history store {redact(self.spec)} is damaged: {exc}") from None

    def close(self) -> None:
        self._db.close()


class PostgresHistory(HistoryStore):
    """A history in a PostgreSQL database (psycopg 3, imported here)."""

    kind = "postgresql"

    def __init__(self, spec: str) -> None:
        super().__init__(spec)
        try:
            import psycopg
        except ImportError:
            raise ResultsError(
                f"history store {redact(spec)}: PostgreSQL needs the psycopg package "
                "(pip install 'psycopg[binary]')") from None
        self._errors = psycopg.Error
        try:
            self._db = psycopg.connect(spec)
        except psycopg.Error as exc:
            raise ResultsError(
                f"history store {redact(spec)}: cannot connect "
                f"({redact(_first_line(exc), spec)})") from None
        try:
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                found = _prepare_tables(self._db, POSTGRES, "%s")
        except psycopg.Error as exc:
            self._db.close()
            raise ResultsError(
                f"history store {redact(spec)}: cannot create or convert its tables "
                f"({redact(_first_line(exc), spec)})") from None
        except ValueError as exc:  # a format-1 row that cannot be converted
            self._db.close()
            raise ResultsError(f"history store {redact(spec)} has format 1 and could not be "
                               f"converted, so it was left as it was: {exc}") from None
        self._check_version(None if found is None else str(found[0]))

    def put(self, rows: Sequence[HistoryRow]) -> tuple[int, int]:
        ordered = _ordered(rows)
        try:
            with self._db.transaction():
                # One writer at a time (see _SCHEMA_LOCK), taken before any row is.
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                added, replaced = HistoryTable(self._db, POSTGRES).write(
                    ordered, [_now()] * len(ordered))
        except self._errors as exc:
            why = redact(_first_line(exc), self.spec)
            raise ResultsError(f"history store {redact(self.spec)}: cannot write ({why})"
                               ) from None
        return added, replaced

    def rows(self) -> list[HistoryRow]:
        with self._db.transaction():
            return HistoryTable(self._db, POSTGRES).read()

    def count(self) -> int:
        with self._db.transaction():
            found = self._db.execute("SELECT COUNT(*) FROM history_records").fetchone()
        return int(found[0]) if found else 0

    def close(self) -> None:
        self._db.close()


def _prepare_tables(db: Any, dialect: Dialect, mark: str) -> tuple[str] | None:
    """In the caller's transaction: create a new history's tables, or convert one of
    format 1 (ValueError when a row of it cannot be); the format_version row found."""
    db.execute("CREATE TABLE IF NOT EXISTS history_meta "
               "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    found: tuple[str] | None = db.execute(
        "SELECT value FROM history_meta WHERE key = 'format_version'").fetchone()
    if found is None:
        for statement in schema(dialect):
            db.execute(statement)
        db.execute(f"INSERT INTO history_meta VALUES ('format_version', {mark})",
                   (str(FORMAT_VERSION),))
    elif str(found[0]) == "1":
        legacy.convert(db, dialect)
        db.execute(f"UPDATE history_meta SET value = {mark} WHERE key = 'format_version'",
                   (str(FORMAT_VERSION),))
        found = (str(FORMAT_VERSION),)
    return found


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def check_store(spec: str) -> None:
    """ResultsError, naming ``--store``, unless ``spec`` is a PostgreSQL URI or a path."""
    if spec.startswith(_POSTGRES_PREFIXES):
        return
    if _URL_RE.match(spec):
        raise ResultsError(f"--store {redact(spec)}: unknown kind of store; accepted: {_ACCEPTED}")
    if _KEYWORDS_RE.match(spec):
        # Not a file name to create: a libpq connection string, which the URI says too.
        raise ResultsError(f"--store {redact(spec)}: a libpq keyword string; give its URI, "
                           f"{_ACCEPTED.split(' or ')[1]}")
    if not spec.strip():
        raise ResultsError(f"--store is empty; accepted: {_ACCEPTED}")


def open_history(spec: str, *, create: bool = True) -> HistoryStore:
    """Open the history ``spec`` names: a ``postgresql://`` (or ``postgres://``) URI,
    else an SQLite file path (created with its directory unless ``create`` is
    false). ResultsError for another URL scheme, a store that cannot be opened, or
    one written by a newer dlbench."""
    check_store(spec)
    if spec.startswith(_POSTGRES_PREFIXES):
        return PostgresHistory(spec)
    return SqliteHistory(spec, create=create)
