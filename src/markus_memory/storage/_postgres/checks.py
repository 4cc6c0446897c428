"""doctor on PostgreSQL: the server answers, its schema is current, derived data is whole.

Read only. Opening a store would apply pending migrations, and a check changes nothing, so
the checks run on a plain connection in a read-only transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import BackendUnavailableError, MarkusMemoryError
from ..checks import POSTGRES_SUBJECT as SUBJECT
from ..checks import Check, derived_gaps, missing_tables, tables_check
from ..migrations import BOOKKEEPING_TABLE
from .conn import CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_MS, PostgresDatabase, conninfo_with_timeouts
from .diagnose import diagnose
from .health import POSTGRES_MIGRATIONS, pending_of

POSTGRES_TABLES: Mapping[str, tuple[str, ...]] = {
    "markus": (
        "activity_search",
        "agent_activities",
        "agent_activity_logs",
        "agent_decisions",
        "chat_messages",
        "chat_sessions",
        "conversations",
        "daily_log_entries",
        "mailbox_items",
        "recall_agents",
        "recall_postings",
        "recall_speakers",
        "recall_terms",
        "recall_vector_lists",
        "recall_vectors",
        "transcript_marks",
        "transcript_messages",
    ),
    "search-index": ("search_docs", "search_postings", "search_state", "search_vectors"),
    "langgraph": ("langgraph_items", "langgraph_postings", "langgraph_stats", "langgraph_terms"),
    "dream": ("dream_runs",),
    "documents": ("documents",),
}
"""The tables of each PostgreSQL migration set once it is current."""


def postgres_checks(url: str) -> list[Check]:
    """The database of ``url`` answers, every migration set it has started is current, and its
    tables, derived ones included, are present and whole."""
    try:
        import psycopg
    except ImportError as exc:
        return [Check(SUBJECT, "reachable", False, f"the [postgres] extra is missing: {exc}")]
    try:
        conn = psycopg.connect(
            conninfo_with_timeouts(url, CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_MS), autocommit=True
        )
    except psycopg.Error as exc:
        found = diagnose(url) or BackendUnavailableError(f"PostgreSQL: {exc}")
        return [Check(SUBJECT, "reachable", False, str(found))]
    try:
        with conn, conn.transaction():
            conn.execute("SET TRANSACTION READ ONLY")
            return [Check(SUBJECT, "reachable", True), *_schema_checks(conn)]
    except (psycopg.Error, MarkusMemoryError) as exc:
        return [Check(SUBJECT, "readable", False, str(exc))]


def _schema_checks(conn: Any) -> list[Check]:
    def exists(table: str) -> bool:
        return conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None

    if not exists(BOOKKEEPING_TABLE):
        return [Check(SUBJECT, "database", True, "not created yet")]
    applied: dict[str, set[str]] = {}
    for migration_set, name in conn.execute(
        f"SELECT migration_set, name FROM {BOOKKEEPING_TABLE}"
    ).fetchall():
        applied.setdefault(str(migration_set), set()).add(str(name))
    pending = pending_of(applied)
    checks = [Check(SUBJECT, "schema current", not pending, ", ".join(pending), fixable=True)]
    behind = {name.split("/")[0] for name in pending}
    checks.append(tables_check(SUBJECT, missing_tables(POSTGRES_TABLES, applied, behind, exists)))
    problems = derived_gaps(
        "postgres", applied, behind, exists, lambda sql: int(conn.execute(sql).fetchone()[0])
    )
    detail = "; ".join(problems) + " (fix: reindex)" if problems else ""
    checks.append(Check(SUBJECT, "derived data", not problems, detail, fixable=True))
    return checks


def apply_pending(url: str) -> str:
    """Apply the pending migrations of every set the database has started (the repair of
    "schema current"); what was applied."""
    database = PostgresDatabase(url)  # applies the markus set
    try:
        with database.read() as conn:
            started = {
                str(r[0])
                for r in conn.execute(f"SELECT DISTINCT migration_set FROM {BOOKKEEPING_TABLE}")
            }
        done = []
        for migrations in POSTGRES_MIGRATIONS:
            if migrations.name in started:
                done.extend(database.migrate(migrations))
    finally:
        database.close()
    return f"applied {', '.join(done)}" if done else "done"
