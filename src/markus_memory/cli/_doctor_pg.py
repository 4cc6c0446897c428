"""doctor on PostgreSQL: the server answers, its schema is current, derived data is whole.

Read only. Opening a store would apply pending migrations, and a check changes nothing, so
the checks run on a plain connection in a read-only transaction.
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..errors import BackendUnavailableError, MarkusMemoryError
from ..storage._postgres.conn import CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_MS, conninfo_with_timeouts
from ..storage._postgres.diagnose import diagnose
from ..storage._postgres.health import POSTGRES_MIGRATIONS, pending_of
from ..storage.migrations import BOOKKEEPING_TABLE
from ._common import Check
from ._doctor_tables import POSTGRES_TABLES, missing_tables, tables_check
from ._maintain import derived_gaps

SUBJECT = "postgresql"
__all__ = ["POSTGRES_MIGRATIONS", "apply_pending", "postgres_checks", "why_not_open"]


def postgres_checks(settings: Settings) -> list[Check]:
    """The database of ``settings.database_url`` answers, every migration set it has started
    is current, and its derived tables are present and whole."""
    url = settings.database_url
    if url is None:
        return []
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


def why_not_open(checks: list[Check]) -> str | None:
    """Why the agents must not be opened, given :func:`postgres_checks`' findings (``None``:
    they may be). Opening an agent connects, and creates or migrates the schema: a server
    that does not answer or a schema that is missing or behind leaves the agents unchecked
    rather than changed."""
    found = {c.check: c for c in checks}
    if any(not found[name].ok for name in ("reachable", "readable") if name in found):
        return "not checked: the PostgreSQL database is not usable (see its line above)"
    if "schema current" in found and not found["schema current"].ok:
        return (
            "not checked: the PostgreSQL schema is behind and opening the agent would migrate "
            "it (doctor --fix applies the migrations, then checks the agent)"
        )
    if "tables present" in found and not found["tables present"].ok:
        return "not checked: tables of the PostgreSQL schema are missing (see its line above)"
    if "database" in found:
        return (
            "not checked: the PostgreSQL database holds no markus-memory schema yet, and "
            "opening the agent would create it (the first write through the API does)"
        )
    return None


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


def apply_pending(settings: Settings) -> str:
    """Apply the pending migrations of every set the database has started (the repair of
    "schema current"); what was applied."""
    from ..storage._postgres.conn import PostgresDatabase

    url = settings.database_url
    if url is None:
        return "nothing to do"
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
