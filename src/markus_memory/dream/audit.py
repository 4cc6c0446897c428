"""The dream audit log in ``<home>/data.db``: every run, what it changed, before/after text.

(With the documents in PostgreSQL the same records live there: :mod:`.audit_pg`.)

Its schema is the ``dream`` migration set of the storage registry. Full file texts are kept so
that ``undo`` restores knowledge.md and state.md byte for byte and the CLI can diff any run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from ..config import iso_ms, parse_iso
from ..errors import StorageError
from ..storage.migrations import Migrations, SqliteMigrationTarget

MIGRATIONS: Migrations[sqlite3.Connection] = Migrations("dream")


@MIGRATIONS()
def m001_dream_runs(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE dream_runs ("
        " run_id TEXT PRIMARY KEY,"
        " agent_id TEXT NOT NULL,"
        " started_at TEXT NOT NULL,"
        " finished_at TEXT NOT NULL,"
        " mode TEXT NOT NULL,"
        " status TEXT NOT NULL,"
        " error TEXT,"
        " changes TEXT NOT NULL,"
        " knowledge_before TEXT,"
        " knowledge_after TEXT,"
        " state_before TEXT,"
        " state_after TEXT,"
        " undone_at TEXT)"
    )
    conn.execute("CREATE INDEX dream_runs_agent ON dream_runs (agent_id, started_at)")


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


class SqliteAuditLog:
    """:class:`AuditLog` in an SQLite file (``<home>/data.db``), one short connection per call."""

    def __init__(self, path: Path, busy_timeout_ms: int = 5000) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._migrated = False

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open the dream audit log {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode = WAL")
            if not self._migrated:
                MIGRATIONS.apply(SqliteMigrationTarget(conn))
                self._migrated = True
            yield conn
        except sqlite3.Error as exc:
            raise StorageError(f"dream audit log {self.path}: {exc}") from exc
        finally:
            conn.close()

    def record(self, run: DreamRun) -> None:
        with self._connect() as conn:
            conn.execute(
                f"INSERT INTO dream_runs ({RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                run_values(run, iso_ms),
            )

    def runs(self, agent_id: str, limit: int | None = None) -> list[DreamRun]:
        sql = (
            f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE agent_id = ?"
            " ORDER BY started_at DESC, rowid DESC"
        )
        params: tuple[Any, ...] = (agent_id,)
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        with self._connect() as conn:
            return [run_from_row(r, _time) for r in conn.execute(sql, params).fetchall()]

    def get(self, agent_id: str, run_id: str) -> DreamRun | None:
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM dream_runs WHERE agent_id = ? AND run_id = ?",
                (agent_id, run_id),
            ).fetchone()
        return run_from_row(row, _time) if row else None

    def mark_undone(self, agent_id: str, run_id: str, at: datetime) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE dream_runs SET status = 'undone', undone_at = ?"
                " WHERE agent_id = ? AND run_id = ?",
                (iso_ms(at), agent_id, run_id),
            )


def _time(value: str) -> datetime:
    parsed = parse_iso(value)
    if parsed is None:
        raise StorageError(f"dream audit log holds an unreadable time {value!r}")
    return parsed
