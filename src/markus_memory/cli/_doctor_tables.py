"""doctor: every table of every migration set a database has started is there.

A table dropped from ``data.db`` or the PostgreSQL schema (by hand, by a tool, by damage) is
reported, whichever set it belongs to: the derived ones are also named by the "derived data"
check (``reindex`` rebuilds them), the others held rows that only a backup brings back.
The tables of a SQLite set are found by applying it to an empty in-memory database, so the
list follows the migrations; PostgreSQL's are :data:`POSTGRES_TABLES` (a test holds them to
what the migrations create).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Mapping
from functools import cache

from ..backend import DATA_DB_MIGRATIONS
from ..storage.migrations import BOOKKEEPING_TABLE, SqliteMigrationTarget
from ._common import Check

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


def missing_tables(
    expected: Mapping[str, tuple[str, ...]],
    started: Collection[str],
    behind: Collection[str],
    exists: Callable[[str], bool],
) -> list[str]:
    """``set/table`` for every table of a set the database has started (and that is not
    behind: the schema check covers those) that it does not have."""
    return [
        f"{name}/{table}"
        for name, tables in expected.items()
        if name in started and name not in behind
        for table in tables
        if not exists(table)
    ]


def tables_check(subject: str, missing: list[str]) -> Check:
    detail = ""
    if missing:
        detail = (
            f"missing {', '.join(missing)}: a derived table is rebuilt by doctor --fix "
            "(reindex); one that held rows needs the database restored from a backup"
        )
    return Check(subject, "tables present", not missing, detail)
