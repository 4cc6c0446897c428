"""What ``doctor`` checks in ``data.db`` and what ``reindex`` rebuilds there.

``data.db`` is intact (``PRAGMA quick_check``; a damaged file is marked, :mod:`.damage`), every
migration set it has started is current (:data:`DATA_DB_MIGRATIONS`, the one registry) and has
every table (found by applying each set to an empty in-memory database, so the list follows
the migrations), and the derived data is present and whole (FTS5 integrity included).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from functools import cache
from pathlib import Path

from ...errors import MarkusMemoryError
from .. import knowledge_schema, kv
from ..audit import MIGRATIONS as dream_migrations
from ..checks import Check, derived_gaps, missing_tables, tables_check
from ..migrations import BOOKKEEPING_TABLE, Migrations, SqliteMigrationTarget
from . import schema as sqlite_schema
from .conn import close_leaving_wal, damaged, open_sqlite, sqlite_error
from .damage import NOTE_SUFFIX, is_damage, remember_damage
from .store import SqliteStore

DATA_DB_MIGRATIONS: tuple[Migrations[sqlite3.Connection], ...] = (
    sqlite_schema.migrations,
    knowledge_schema.sqlite_migrations,
    dream_migrations,
    kv.sqlite_migrations,
)
"""The one registry of the migration sets that live in ``<home>/data.db`` (the episodic
store, the knowledge search index, the dream audit, the LangGraph items): ``doctor`` checks
every one."""
FTS_TABLES = ("activity_fts",)


@cache
def sqlite_tables() -> dict[str, tuple[str, ...]]:
    """The tables of each ``data.db`` migration set once it is current (FTS5 shadow tables
    included: one missing is damage too)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        found: dict[str, tuple[str, ...]] = {}
        before = {BOOKKEEPING_TABLE, "sqlite_sequence"}
        for migrations in DATA_DB_MIGRATIONS:
            migrations.apply(SqliteMigrationTarget(conn))
            now = {
                str(r[0])
                for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            found[migrations.name] = tuple(sorted(now - before))
            before |= now
        return found
    finally:
        conn.close()


def pending_migrations(target: SqliteMigrationTarget) -> list[str]:
    """Migrations missing from a set data.db has started; a set never started is created on
    first use (activities open one, the first search the other), so it is not behind."""
    pending: list[str] = []
    for migrations in DATA_DB_MIGRATIONS:
        names = migrations.pending(target)
        if len(names) < len(migrations.migrations):
            pending.extend(f"{migrations.name}/{name}" for name in names)
    return pending


def database_checks(path: Path) -> list[Check]:
    """data.db is intact and its schema is current (every migration applied). A damaged one
    is marked as such (:mod:`~markus_memory.storage._sqlite.damage`): from then on nothing
    writes to it, in any process, until it is replaced."""
    subject = path.name
    if not path.exists():
        return [Check(subject, "database", True, "not created yet")]
    try:
        conn = open_sqlite(path)[0]  # read-only in a home without write access
    except sqlite3.Error as exc:
        return [Check(subject, "opens", False, _marked(path, exc, str(sqlite_error(path, exc))))]
    found = None
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            found = "; ".join(rows[:3])
            return [Check(subject, "integrity", False, damaged(path, found) + MARKED)]
        checks = [Check(subject, "integrity", True)]
        target = SqliteMigrationTarget(conn)
        pending = pending_migrations(target)
        checks.append(
            Check(subject, "schema current", not pending, ", ".join(pending), fixable=True)
        )
        behind = {name.split("/")[0] for name in pending}
        present = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
        started = {
            str(r[0]) for r in conn.execute(f"SELECT migration_set FROM {BOOKKEEPING_TABLE}")
        }
        missing = missing_tables(sqlite_tables(), started, behind, present.__contains__)
        checks.append(tables_check(subject, missing))
        problems = derived_problems(conn, behind)
        detail = "; ".join(problems) + " (fix: reindex)" if problems else ""
        checks.append(Check(subject, "derived data", not problems, detail, fixable=True))
    except (sqlite3.Error, MarkusMemoryError) as exc:
        found = str(exc) if isinstance(exc, sqlite3.Error) and is_damage(exc) else None
        detail = damaged(path, str(exc)) + (MARKED if found else "")
        checks = [Check(subject, "readable", False, detail)]
    finally:
        if found is None:
            conn.close()
        else:
            remember_damage(path, found)
            close_leaving_wal(path, [conn])
    return checks


DATA_DB_NOTE = f"data.db{NOTE_SUFFIX}"
MARKED = f" Marked as damaged ({DATA_DB_NOTE}): nothing writes to it any more until it is replaced."


def _marked(path: Path, exc: sqlite3.Error, detail: str) -> str:
    if not is_damage(exc):
        return detail
    remember_damage(path, str(exc))
    return detail + MARKED


def derived_problems(conn: sqlite3.Connection, behind: Collection[str] = frozenset()) -> list[str]:
    """:func:`derived_gaps` of ``data.db``, and its damaged FTS5 tables."""
    started = {
        str(r[0]) for r in conn.execute(f"SELECT DISTINCT migration_set FROM {BOOKKEEPING_TABLE}")
    }
    present = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    problems = derived_gaps(
        "sqlite",
        started,
        behind,
        present.__contains__,
        lambda sql: int(conn.execute(sql).fetchone()[0]),
    )
    for fts in FTS_TABLES:
        if fts in present:
            try:
                conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('integrity-check')")
            except sqlite3.Error as exc:
                if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
                    continue  # FTS5 checks by writing; a read-only file had PRAGMA quick_check
                problems.append(f"{fts} damaged: {exc}")
    return problems


def integrity_problem(path: Path) -> str | None:
    """None when SQLite's quick check passes, else what it (or opening the file) says."""
    try:
        conn = open_sqlite(path)[0]
        try:
            rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc)
    return None if rows == ["ok"] else "; ".join(rows[:3])


def damage(path: Path) -> str | None:
    """Why ``path`` cannot be rebuilt (it fails the quick check), with what to do; None when
    it is intact."""
    broken = integrity_problem(path)
    return None if broken is None else damaged(path, broken)


def rebuild(path: Path) -> list[str]:
    """Rebuild what ``data.db`` derives from its rows (activity search, recall index) and
    recreate the knowledge index tables, empty (each agent's is rebuilt from knowledge.md);
    what failed."""
    try:
        store = SqliteStore(path)
        try:
            store.rebuild_derived()
        finally:
            store.close()
        knowledge_schema.recreate_sqlite(path)
    except (MarkusMemoryError, sqlite3.Error) as exc:
        return [f"{path}: {exc}"]
    return []


def create_current(path: Path) -> None:
    """Apply every pending migration of ``data.db`` (the repair of "schema current")."""
    SqliteStore(path).close()
    knowledge_schema.open_sqlite_index(path).close()
