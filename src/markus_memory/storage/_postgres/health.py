"""Whether a PostgreSQL database can serve now: the server answers and the schema is current.

What a load balancer's health check asks (``GET /healthz`` of ``markus-memory serve --http``)
and what ``doctor`` reports in more detail. One fresh connection in a read-only transaction
per probe: it changes nothing, and it answers even when every pooled connection is busy. The
answer names no host, database, user or migration: the endpoint is open to anyone who can
reach the port.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import knowledge_schema, kv
from ..audit import PG_MIGRATIONS as DREAM_MIGRATIONS
from ..migrations import BOOKKEEPING_TABLE, Migrations
from . import schema as postgres_schema
from .conn import STATEMENT_TIMEOUT_MS, conninfo_with_timeouts
from .documents import documents_migrations

PROBE_TIMEOUT_S = 2.0
"""Connect timeout of one probe: a load balancer polls every few seconds."""

POSTGRES_MIGRATIONS: tuple[Migrations[Any], ...] = (
    postgres_schema.migrations,
    knowledge_schema.postgres_migrations,
    kv.postgres_migrations,
    DREAM_MIGRATIONS,
    documents_migrations,
)
"""Every migration set a PostgreSQL database of markus-memory can hold."""


def pending_of(applied: Mapping[str, set[str]]) -> list[str]:
    """``set/migration`` names not applied, of every set the database has started."""
    return [
        f"{m.name}/{name}"
        for m in POSTGRES_MIGRATIONS
        if m.name in applied
        for name in (migration.name for migration in m.migrations)
        if name not in applied[m.name]
    ]


@dataclass(frozen=True)
class Health:
    """One probe's answer: ``database`` is ``reachable``, ``unreachable`` or ``local`` (no
    PostgreSQL configured); ``schema`` is ``current``, ``behind``, ``missing`` or ``unknown``."""

    database: str
    schema: str
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.database in ("reachable", "local") and self.schema == "current"

    def as_json(self) -> dict[str, str]:
        body = {
            "status": "ok" if self.ok else "unavailable",
            "database": self.database,
            "schema": self.schema,
        }
        if self.reason:
            body["reason"] = self.reason
        return body


LOCAL = Health("local", "current")
"""No PostgreSQL: the agent's data is on this host (SQLite and files)."""


def probe(url: str, *, timeout: float = PROBE_TIMEOUT_S) -> Health:
    """Connect to ``url`` once and read the migration bookkeeping (read only)."""
    import psycopg

    try:
        conn = psycopg.connect(
            conninfo_with_timeouts(url, timeout, STATEMENT_TIMEOUT_MS), autocommit=True
        )
    except psycopg.Error:
        return Health("unreachable", "unknown", "the PostgreSQL server did not answer")
    try:
        with conn, conn.transaction():
            conn.execute("SET TRANSACTION READ ONLY")
            if conn.execute("SELECT to_regclass(%s)", (BOOKKEEPING_TABLE,)).fetchone() in (
                None,
                (None,),
            ):
                return Health("reachable", "missing", "the markus-memory schema is missing")
            applied: dict[str, set[str]] = {}
            for migration_set, name in conn.execute(
                f"SELECT migration_set, name FROM {BOOKKEEPING_TABLE}"
            ).fetchall():
                applied.setdefault(str(migration_set), set()).add(str(name))
    except psycopg.Error:
        return Health("unreachable", "unknown", "the PostgreSQL server failed the probe")
    if postgres_schema.migrations.name not in applied:
        return Health("reachable", "missing", "the markus-memory schema is missing")
    if pending_of(applied):
        return Health("reachable", "behind", "the schema is behind: run markus-memory doctor --fix")
    return Health("reachable", "current")
