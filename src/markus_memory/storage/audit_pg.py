"""The dream audit log in PostgreSQL: one dream history shared by every host of a database.

Used instead of :class:`~.audit.SqliteAuditLog` when a PostgreSQL URL is configured, so the
once-a-day trigger, ``dream_history``, ``dream_diff`` and ``undo_last_dream`` see the runs of
every host (the dream itself already holds an advisory lock per agent). It rides on the
episodic store's :class:`PostgresDatabase` (shared pool, timeouts, advisory-locked migrations)
with its own migration set ``"dream"``, applied on first use. Times are ``timestamptz``
(milliseconds, as on SQLite); ``changes`` and the file texts are stored as exact text.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from ..errors import StorageError
from .audit import RUN_COLUMNS, DreamRun, run_from_row, run_values
from .migrations import Migrations
from .postgres_conn import PostgresDatabase, from_db, to_utc

PG_MIGRATIONS: Migrations[Any] = Migrations("dream")


@PG_MIGRATIONS()
def m001_dream_runs(conn: Any) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS dream_runs ("
        " seq BIGINT GENERATED ALWAYS AS IDENTITY,"
        " run_id TEXT PRIMARY KEY,"
        " agent_id TEXT NOT NULL,"
        " started_at TIMESTAMPTZ NOT NULL,"
        " finished_at TIMESTAMPTZ NOT NULL,"
        " mode TEXT NOT NULL,"
        " status TEXT NOT NULL,"
        " error TEXT,"
        " changes TEXT NOT NULL,"
        " knowledge_before TEXT,"
        " knowledge_after TEXT,"
        " state_before TEXT,"
        " state_after TEXT,"
        " undone_at TIMESTAMPTZ)"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS dream_runs_agent"
        " ON dream_runs (agent_id, started_at DESC, seq DESC)"
    )


class PostgresAuditLog:
    """:class:`~.audit.AuditLog` in the ``dream_runs`` table of a PostgreSQL database.

    ``database`` stays its owner's (the agent's episodic store): closing it is not ours.
    """

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database
        self._migrated = False
        self._guard = threading.Lock()

    def _ensure_schema(self) -> None:
        with self._guard:
            if not self._migrated:
                self.database.migrate(PG_MIGRATIONS)
                self._migrated = True

    def record(self, run: DreamRun) -> None:
        self._ensure_schema()
        with self.database.write() as conn:
            conn.execute(
                f"INSERT INTO dream_runs ({RUN_COLUMNS})"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                run_values(run, to_utc),
            )

    def runs(self, agent_id: str, limit: int | None = None) -> list[DreamRun]:
        self._ensure_schema()
        sql = (
            f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE agent_id = %s"
            " ORDER BY started_at DESC, seq DESC"
        )
        params: tuple[Any, ...] = (agent_id,)
        if limit is not None:
            sql += " LIMIT %s"
            params += (limit,)
        with self.database.read() as conn:
            return [run_from_row(r, _time) for r in conn.execute(sql, params).fetchall()]

    def get(self, agent_id: str, run_id: str) -> DreamRun | None:
        self._ensure_schema()
        with self.database.read() as conn:
            row = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE agent_id = %s AND run_id = %s",
                (agent_id, run_id),
            ).fetchone()
        return run_from_row(row, _time) if row else None

    def mark_undone(self, agent_id: str, run_id: str, at: datetime) -> None:
        self._ensure_schema()
        with self.database.write() as conn:
            conn.execute(
                "UPDATE dream_runs SET status = 'undone', undone_at = %s"
                " WHERE agent_id = %s AND run_id = %s",
                (to_utc(at), agent_id, run_id),
            )


def _time(value: datetime | None) -> datetime:
    moment = from_db(value)
    if moment is None:
        raise StorageError("the dream audit log holds a run without a time")
    return moment
