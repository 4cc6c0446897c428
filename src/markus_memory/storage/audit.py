"""The dream audit log: every run, what it changed, before/after text.

Kept in ``<home>/data.db``, or in PostgreSQL when the documents live there (one dream history
shared by every host of a database, so the once-a-day trigger, ``dream_history``, ``dream_diff``
and ``undo_last_dream`` see the runs of every host); which one an agent uses is decided by
:class:`markus_memory.backend.Backend`. The records (:mod:`.dream_runs`), their SQL and their
mapping are written once over a :class:`~.dialect.Database`; the schema is the ``dream``
migration set of each backend. Full file texts are kept so that ``undo`` restores knowledge.md
and state.md byte for byte and the CLI can diff any run; times keep milliseconds on both
backends.

A run's row is also its journal (:mod:`.dream_journal`): it is written ``applying`` (or turned
``undoing``) with every text before a document changes, and finished after. On PostgreSQL the
log joins the documents' locked transaction (:class:`PostgresAuditLog` with ``documents``), so
the documents and their history change in one transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import StorageError
from ._postgres.dialect import POSTGRES
from ._sqlite.conn import SqliteDatabase, open_sqlite
from ._sqlite.dialect import SQLITE
from .dialect import Database, Dialect
from .dream_runs import PENDING, AuditLog, DreamRun, DreamStatus
from .migrations import Migrations

if TYPE_CHECKING:
    from ._postgres.conn import PostgresDatabase
    from ._postgres.documents import PostgresDocuments


def dream_migrations(dialect: Dialect) -> Migrations[Any]:
    """The ``dream`` migration set in ``dialect``."""
    migrations: Migrations[Any] = Migrations("dream")
    order = dialect.insertion_order("seq")

    @migrations()
    def m001_dream_runs(conn: Any) -> None:
        time = dialect.time_type
        conn.execute(
            "CREATE TABLE IF NOT EXISTS dream_runs ("
            f" {dialect.identity_ddl('seq')}"
            " run_id TEXT PRIMARY KEY,"
            " agent_id TEXT NOT NULL,"
            f" started_at {time} NOT NULL,"
            f" finished_at {time} NOT NULL,"
            " mode TEXT NOT NULL,"
            " status TEXT NOT NULL,"
            " error TEXT,"
            " changes TEXT NOT NULL,"
            " knowledge_before TEXT,"
            " knowledge_after TEXT,"
            " state_before TEXT,"
            " state_after TEXT,"
            f" undone_at {time})"
        )
        by_agent = "agent_id, started_at" + ("" if order == "rowid" else f" DESC, {order} DESC")
        conn.execute(f"CREATE INDEX IF NOT EXISTS dream_runs_agent ON dream_runs ({by_agent})")

    return migrations


MIGRATIONS = dream_migrations(SQLITE)
PG_MIGRATIONS = dream_migrations(POSTGRES)


RUN_COLUMNS = (
    "run_id, agent_id, started_at, finished_at, mode, status, error, changes,"
    " knowledge_before, knowledge_after, state_before, state_after, undone_at"
)


def run_values(run: DreamRun, write_time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """The values of ``run`` in :data:`RUN_COLUMNS` order; ``write_time`` stores a time."""
    return (
        run.run_id,
        run.agent_id,
        write_time(run.started_at),
        write_time(run.finished_at),
        run.mode,
        run.status,
        run.error,
        json.dumps(run.changes, ensure_ascii=False),
        run.knowledge_before,
        run.knowledge_after,
        run.state_before,
        run.state_after,
        None if run.undone_at is None else write_time(run.undone_at),
    )


def run_from_row(row: Sequence[Any], read_time: Callable[[Any], datetime]) -> DreamRun:
    """A run read back in :data:`RUN_COLUMNS` order; ``read_time`` reads a stored time (and
    raises :class:`StorageError` for one it cannot read)."""
    return DreamRun(
        run_id=row[0],
        agent_id=row[1],
        started_at=read_time(row[2]),
        finished_at=read_time(row[3]),
        mode=row[4],
        status=cast(DreamStatus, row[5]),
        error=row[6],
        changes=json.loads(row[7]),
        knowledge_before=row[8],
        knowledge_after=row[9],
        state_before=row[10],
        state_after=row[11],
        undone_at=read_time(row[12]) if row[12] else None,
    )


class StoredAuditLog:
    """:class:`AuditLog` in the ``dream_runs`` table of a database of either backend.

    ``open`` yields the database for one call (a short-lived handle on a SQLite file, or a
    PostgreSQL database that stays its owner's); ``migrations`` is the backend's ``dream`` set,
    applied on first use.
    """

    def __init__(
        self,
        open_database: Callable[[], AbstractContextManager[Database]],
        migrations: Migrations[Any],
    ) -> None:
        self._open = open_database
        self._migrations = migrations
        self._migrated = False
        self._guard = threading.Lock()

    @contextmanager
    def _database(self, *, migrate: bool = True) -> Iterator[tuple[Database, Dialect]]:
        with self._open() as database:
            with self._guard:
                if migrate and not self._migrated:
                    database.migrate(self._migrations)
                    self._migrated = True
            yield database, database.dialect

    @contextmanager
    def _write(self, durable: bool) -> Iterator[tuple[Any, Dialect]]:
        """One write transaction; ``durable`` on SQLite: synced to disk at its commit (the file
        otherwise syncs its log only at checkpoints: a power cut could lose a commit that a
        kill cannot)."""
        with self._database() as (db, dialect):
            if not (durable and dialect is SQLITE):
                with db.write() as conn:
                    yield conn, dialect
                return
            with db.read() as conn:
                conn.execute("PRAGMA synchronous = FULL")
            try:
                with db.write() as conn:
                    yield conn, dialect
            finally:
                with db.read() as conn:
                    conn.execute("PRAGMA synchronous = NORMAL")

    def record(self, run: DreamRun, *, durable: bool = False) -> None:
        with self._write(durable) as (conn, dialect):
            marks = ",".join("?" * len(RUN_COLUMNS.split(",")))
            conn.execute(
                dialect.sql(f"INSERT INTO dream_runs ({RUN_COLUMNS}) VALUES ({marks})"),
                run_values(run, dialect.time),
            )

    def set_status(
        self,
        agent_id: str,
        run_id: str,
        status: DreamStatus,
        *,
        error: str | None = None,
        durable: bool = False,
    ) -> None:
        with self._write(durable) as (conn, dialect):
            conn.execute(
                dialect.sql(
                    "UPDATE dream_runs SET status = ?, error = COALESCE(?, error)"
                    " WHERE agent_id = ? AND run_id = ?"
                ),
                (status, error, agent_id, run_id),
            )

    def pending(self, agent_id: str) -> list[DreamRun]:
        with self._database(migrate=False) as (db, dialect), db.read() as conn:
            exists = (
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dream_runs'"
                if dialect is SQLITE
                else "SELECT 1 WHERE to_regclass('dream_runs') IS NOT NULL"
            )
            if conn.execute(exists).fetchone() is None:
                return []
            rows = conn.execute(
                dialect.sql(
                    f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE agent_id = ?"
                    " AND status IN (?, ?)"
                    f" ORDER BY started_at, {dialect.insertion_order('seq')}"
                ),
                (agent_id, *PENDING),
            ).fetchall()
            return [run_from_row(r, _reader(dialect)) for r in rows]

    def runs(self, agent_id: str, limit: int | None = None) -> list[DreamRun]:
        with self._database() as (db, dialect):
            sql = (
                f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE agent_id = ?"
                f" ORDER BY started_at DESC, {dialect.insertion_order('seq')} DESC"
            )
            params: tuple[Any, ...] = (agent_id,)
            if limit is not None:
                sql += " LIMIT ?"
                params += (limit,)
            with db.read() as conn:
                rows = conn.execute(dialect.sql(sql), params).fetchall()
            return [run_from_row(r, _reader(dialect)) for r in rows]

    def get(self, agent_id: str, run_id: str) -> DreamRun | None:
        with self._database() as (db, dialect), db.read() as conn:
            row = conn.execute(
                dialect.sql(
                    f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE agent_id = ? AND run_id = ?"
                ),
                (agent_id, run_id),
            ).fetchone()
            return run_from_row(row, _reader(dialect)) if row else None

    def mark_undone(self, agent_id: str, run_id: str, at: datetime) -> None:
        with self._write(False) as (conn, dialect):
            conn.execute(
                dialect.sql(
                    "UPDATE dream_runs SET status = 'undone', undone_at = ?"
                    " WHERE agent_id = ? AND run_id = ?"
                ),
                (dialect.time(at), agent_id, run_id),
            )


def _reader(dialect: Dialect) -> Callable[[Any], datetime]:
    def read_time(value: Any) -> datetime:
        moment = dialect.read_time(value)
        if moment is None:
            raise StorageError(f"the dream audit log holds an unreadable time {value!r}")
        return moment

    return read_time


class SqliteAuditLog(StoredAuditLog):
    """The audit in an SQLite file (``<home>/data.db``), through a handle held for each call
    (it shares the connections of any store open on the same file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(lambda: closing(SqliteDatabase(path)), MIGRATIONS)


def pending_in_file(path: Path, agent_id: str) -> bool:
    """Whether the SQLite audit at ``path`` holds a run of ``agent_id`` left ``applying`` or
    ``undoing``: a read-only look (no migration, no write; False when it cannot be read), cheap
    enough for every open of an agent."""
    try:
        conn, _ = open_sqlite(path, writable=False)
    except sqlite3.Error:
        return False
    try:
        with closing(conn):
            if not conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dream_runs'"
            ).fetchone():
                return False
            row = conn.execute(
                "SELECT 1 FROM dream_runs WHERE agent_id = ? AND status IN (?, ?) LIMIT 1",
                (agent_id, *PENDING),
            ).fetchone()
            return row is not None
    except sqlite3.Error:
        return False


class PostgresAuditLog(StoredAuditLog):
    """The audit in a PostgreSQL database (the documents' own, which closes it).

    With ``documents`` (that database's store of one agent), a thread holding their lock
    reads and writes the log in the locked transaction: the history commits with the
    documents or not at all."""

    def __init__(
        self, database: PostgresDatabase, documents: PostgresDocuments | None = None
    ) -> None:
        self.database = database
        joined: Database = database if documents is None else _Joined(database, documents)
        super().__init__(lambda: nullcontext(joined), PG_MIGRATIONS)


class _Joined:
    """A PostgreSQL database whose reads and writes use the documents' locked transaction
    while this thread holds it (a :class:`~.dialect.Database`)."""

    def __init__(self, database: PostgresDatabase, documents: PostgresDocuments) -> None:
        self._database = database
        self._documents = documents

    @property
    def dialect(self) -> Dialect:
        return self._database.dialect

    @contextmanager
    def _use(self, fallback: Callable[[], AbstractContextManager[Any]]) -> Iterator[Any]:
        held = self._documents.held_connection()
        if held is not None:
            yield held
            return
        with fallback() as conn:
            yield conn

    def read(self) -> AbstractContextManager[Any]:
        return self._use(self._database.read)

    def write(self) -> AbstractContextManager[Any]:
        return self._use(self._database.write)

    def migrate(self, migrations: Migrations[Any]) -> list[str]:
        return self._database.migrate(migrations)

    def close(self) -> None:
        return None


def open_audit_log(
    where: Path | PostgresDatabase, documents: PostgresDocuments | None = None
) -> AuditLog:
    """The dream audit in ``where``: the SQLite file (``<home>/data.db``) or the PostgreSQL
    database of the agent's documents (joined to their transaction with ``documents``)."""
    if isinstance(where, Path):
        return SqliteAuditLog(where)
    return PostgresAuditLog(where, documents)
