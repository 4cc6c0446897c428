"""The dream audit log: every run, what it changed, before/after text.

Kept in ``<home>/data.db``, or in PostgreSQL when the documents live there (one dream history
shared by every host of a database, so the once-a-day trigger, ``dream_history``, ``dream_diff``
and ``undo_last_dream`` see the runs of every host); which one an agent uses is decided by
:class:`markus_memory.backend.Backend`. The records, their SQL and their mapping are written
once over a :class:`~.dialect.Database`; the schema is the ``dream`` migration set of each
backend. Full file texts are kept so that ``undo`` restores knowledge.md and state.md byte for
byte and the CLI can diff any run; times keep milliseconds on both backends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from ..errors import StorageError
from .dialect import POSTGRES, SQLITE, Database, Dialect
from .migrations import Migrations

if TYPE_CHECKING:
    from .postgres_conn import PostgresDatabase


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

DreamStatus = Literal["applied", "failed", "undone"]


@dataclass(frozen=True)
class DreamRun:
    """One recorded dream. ``status``: ``applied``, ``failed`` or ``undone``.

    ``changes`` is JSON-ready: ``removed``, ``merged``, ``promoted`` (each with the full
    content of the observations involved), ``rejections``, ``hygiene``, ``state_removed``.
    File texts are None when the file did not exist.
    """

    run_id: str
    agent_id: str
    started_at: datetime
    finished_at: datetime
    mode: str
    status: DreamStatus
    changes: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    knowledge_before: str | None = None
    knowledge_after: str | None = None
    state_before: str | None = None
    state_after: str | None = None
    undone_at: datetime | None = None


class AuditLog(Protocol):
    """Where dream runs are recorded (SQLite by default; any store with these four methods)."""

    def record(self, run: DreamRun) -> None: ...
    def runs(self, agent_id: str, limit: int | None = None) -> list[DreamRun]: ...
    def get(self, agent_id: str, run_id: str) -> DreamRun | None: ...
    def mark_undone(self, agent_id: str, run_id: str, at: datetime) -> None: ...


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
    def _database(self) -> Iterator[tuple[Database, Dialect]]:
        with self._open() as database:
            with self._guard:
                if not self._migrated:
                    database.migrate(self._migrations)
                    self._migrated = True
            yield database, database.dialect

    def record(self, run: DreamRun) -> None:
        with self._database() as (db, dialect), db.write() as conn:
            marks = ",".join("?" * len(RUN_COLUMNS.split(",")))
            conn.execute(
                dialect.sql(f"INSERT INTO dream_runs ({RUN_COLUMNS}) VALUES ({marks})"),
                run_values(run, dialect.time),
            )

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
        with self._database() as (db, dialect), db.write() as conn:
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
        from .sqlite_conn import SqliteDatabase

        self.path = path
        super().__init__(lambda: closing(SqliteDatabase(path)), MIGRATIONS)


class PostgresAuditLog(StoredAuditLog):
    """The audit in a PostgreSQL database (the documents' own, which closes it)."""

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database
        super().__init__(lambda: nullcontext(database), PG_MIGRATIONS)


def open_audit_log(where: Path | PostgresDatabase) -> AuditLog:
    """The dream audit in ``where``: the SQLite file (``<home>/data.db``) or the PostgreSQL
    database of the agent's documents."""
    if isinstance(where, Path):
        return SqliteAuditLog(where)
    return PostgresAuditLog(where)
