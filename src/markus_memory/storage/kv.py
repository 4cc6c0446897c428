"""A namespaced JSON key-value table beside the episodic store, written once for both backends.

Backs the LangGraph store: one row per (agent, namespace, key) with its JSON value, the text
indexed for full-text search, an optional vector and TTL bookkeeping. It lives in the agent's
episodic database (``data.db``, opened through :class:`~.sqlite_conn.SqliteDatabase`, or the
``MARKUS_DATABASE_URL`` database) in tables of its own, created by the ``langgraph`` migration
set (in the ``data.db`` registry, so ``doctor`` checks it). Reads return what is stored;
:meth:`KVTable.apply` writes a whole batch in one transaction, so a batch is all or nothing.

Only the full-text ranking is per backend (:meth:`KVTable.text_scores`): an external-content
FTS5 index of the ``text`` column, kept in step by triggers, on SQLite; a generated
``tsvector`` column on PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..analysis import query_terms, quote_fts
from .migrations import Migrations

if TYPE_CHECKING:
    import sqlite3

    import psycopg

    from .dialect import Database

SEP = "."
"""Namespace labels are joined with a period, which LangGraph forbids inside a label."""
MIGRATION_SET = "langgraph"


@dataclass(frozen=True)
class Row:
    namespace: str
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: float | None
    ttl_minutes: float | None
    vector: list[float] | None


@dataclass(frozen=True)
class Write:
    """An upsert (``value`` set) or a delete (``value`` None) of one key."""

    namespace: str
    key: str
    value: dict[str, Any] | None
    text: str = ""
    vector: list[float] | None = None
    expires_at: float | None = None
    ttl_minutes: float | None = None


def scores_under(
    found: Sequence[Sequence[Any]], namespace_prefix: str
) -> dict[tuple[str, str], float]:
    """Full-text hits ``(namespace, key, score)`` inside ``namespace_prefix`` (all when empty)."""
    return {
        (ns, key): float(score)
        for ns, key, score in found
        if not namespace_prefix or ns == namespace_prefix or ns.startswith(namespace_prefix + SEP)
    }


def _dt(text: str | datetime) -> datetime:
    return text if isinstance(text, datetime) else datetime.fromisoformat(text)


def _row(r: Sequence[Any]) -> Row:
    value = r[2] if isinstance(r[2], dict) else json.loads(r[2])
    vector = r[7] if r[7] is None or isinstance(r[7], list) else json.loads(r[7])
    return Row(r[0], r[1], value, _dt(r[3]), _dt(r[4]), r[5], r[6], vector)


COLUMNS = "namespace, key, value, created_at, updated_at, expires_at, ttl_minutes, vector"
_LIVE = "agent_id = ? AND (expires_at IS NULL OR expires_at > ?)"
_KEY = "agent_id = ? AND namespace = ? AND key = ?"

sqlite_migrations: Migrations[sqlite3.Connection] = Migrations(MIGRATION_SET)
postgres_migrations: Migrations[psycopg.Connection[Any]] = Migrations(MIGRATION_SET)


@sqlite_migrations()
def m001_items(conn: sqlite3.Connection) -> None:
    # IF NOT EXISTS: a data.db from before this set already has the tables (no bookkeeping).
    conn.execute(
        """CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at REAL, ttl_minutes REAL,
    vector TEXT, PRIMARY KEY (agent_id, namespace, key))"""
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS langgraph_items_fts USING fts5("
        "agent_id UNINDEXED, namespace UNINDEXED, key UNINDEXED, text)"
    )


_SQLITE_ITEMS = """CREATE TABLE langgraph_items (
    id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    value TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at REAL,
    ttl_minutes REAL, vector TEXT, text TEXT NOT NULL DEFAULT '',
    UNIQUE (agent_id, namespace, key))"""
_ITEM_COLUMNS = "agent_id, namespace, key, value, created_at, updated_at, expires_at, ttl_minutes"


@sqlite_migrations()
def m002_item_text(conn: sqlite3.Connection) -> None:
    # The indexed text moves into the item row (as on PostgreSQL), so that every write is the
    # same SQL on both backends. The FTS5 table becomes an external-content index of that
    # column, keyed by an integer id that VACUUM keeps (an implicit rowid it may renumber),
    # and triggers keep it in step: removing an item's text is a lookup, not a scan.
    texts = conn.execute(
        "SELECT text, agent_id, namespace, key FROM langgraph_items_fts"
    ).fetchall()
    conn.execute(_SQLITE_ITEMS.replace("langgraph_items", "langgraph_items_new", 1))
    conn.execute(
        f"INSERT INTO langgraph_items_new ({_ITEM_COLUMNS}, vector) "
        f"SELECT {_ITEM_COLUMNS}, vector FROM langgraph_items"
    )
    conn.executemany(f"UPDATE langgraph_items_new SET text = ? WHERE {_KEY}", texts)
    conn.execute("DROP TABLE langgraph_items")
    conn.execute("DROP TABLE langgraph_items_fts")
    conn.execute("ALTER TABLE langgraph_items_new RENAME TO langgraph_items")
    conn.execute(
        "CREATE VIRTUAL TABLE langgraph_items_fts USING fts5(text, "
        "content='langgraph_items', content_rowid='id')"
    )
    conn.execute("INSERT INTO langgraph_items_fts (langgraph_items_fts) VALUES ('rebuild')")
    drop = (
        "INSERT INTO langgraph_items_fts (langgraph_items_fts, rowid, text) "
        "VALUES ('delete', old.id, old.text);"
    )
    add = "INSERT INTO langgraph_items_fts (rowid, text) VALUES (new.id, new.text);"
    for name, event, body in (
        ("langgraph_items_ai", "INSERT", add),
        ("langgraph_items_ad", "DELETE", drop),
        ("langgraph_items_au", "UPDATE OF text", f"{drop} {add}"),
    ):
        conn.execute(f"CREATE TRIGGER {name} AFTER {event} ON langgraph_items BEGIN {body} END")


@postgres_migrations(name="m001_items")
def pg_m001_items(conn: psycopg.Connection[Any]) -> None:
    # IF NOT EXISTS: a schema from before this set already has the table (no bookkeeping).
    conn.execute(
        """CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
    expires_at DOUBLE PRECISION, ttl_minutes DOUBLE PRECISION, vector JSONB,
    text TEXT NOT NULL DEFAULT '',
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    PRIMARY KEY (agent_id, namespace, key))"""
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS langgraph_items_tsv ON langgraph_items USING GIN (tsv)"
    )


@postgres_migrations(name="m002_item_text")
def pg_m002_item_text(conn: psycopg.Connection[Any]) -> None:
    # SQLite m002 moves the text into the item row; PostgreSQL has kept it there from m001.
    del conn


class KVTable:
    """One agent's items in one opened database (its handle is closed with the table)."""

    def __init__(self, database: Database, agent_id: str) -> None:
        self.database = database
        self.agent_id = agent_id
        self.dialect = database.dialect

    def _select(self, where: str, args: Sequence[Any], order: str = "") -> list[Row]:
        with self.database.read() as conn:
            found = self.dialect.bind(conn).rows(
                f"SELECT {COLUMNS} FROM langgraph_items WHERE {_LIVE}{where}{order}",
                (self.agent_id, *args),
            )
        return [_row(r) for r in found]

    def rows(self, namespace_prefix: str, now: float) -> list[Row]:
        order = " ORDER BY updated_at DESC, namespace, key"
        if not namespace_prefix:
            return self._select("", [now], order)
        return self._select(
            " AND (namespace = ? OR substr(namespace, 1, ?) = ?)",
            [now, namespace_prefix, len(namespace_prefix) + 1, namespace_prefix + SEP],
            order,
        )

    def get(self, pairs: Sequence[tuple[str, str]], now: float) -> dict[tuple[str, str], Row]:
        out: dict[tuple[str, str], Row] = {}
        for namespace, key in set(pairs):
            for found in self._select(" AND namespace = ? AND key = ?", [now, namespace, key]):
                out[(namespace, key)] = found
        return out

    def text_scores(
        self, namespace_prefix: str, query: str, now: float
    ) -> dict[tuple[str, str], float]:
        """Ranked full-text hits (higher is better): FTS5 ``bm25`` over any term on SQLite,
        ``ts_rank`` of the live items on PostgreSQL."""
        terms = query_terms(query)
        if not terms:
            return {}
        if self.dialect.name == "sqlite":
            statement = (
                "SELECT i.namespace, i.key, -bm25(langgraph_items_fts) FROM langgraph_items_fts "
                # CROSS JOIN: the full-text match drives, each hit finds its item by key.
                "CROSS JOIN langgraph_items i ON i.id = langgraph_items_fts.rowid "
                "WHERE langgraph_items_fts MATCH ? AND i.agent_id = ?"
            )
            params: tuple[Any, ...] = (" OR ".join(quote_fts(t) for t in terms), self.agent_id)
        else:
            statement = (
                "SELECT namespace, key, ts_rank(tsv, q) FROM langgraph_items, "
                f"to_tsquery('simple', ?) q WHERE {_LIVE} AND tsv @@ q"
            )
            params = (" | ".join(terms), self.agent_id, now)
        with self.database.read() as conn:
            found = self.dialect.bind(conn).rows(statement, params)
        return scores_under(found, namespace_prefix)

    def namespaces(self, now: float) -> list[str]:
        with self.database.read() as conn:
            found = self.dialect.bind(conn).rows(
                f"SELECT DISTINCT namespace FROM langgraph_items WHERE {_LIVE}",
                (self.agent_id, now),
            )
        return [r[0] for r in found]

    def apply(
        self, writes: Sequence[Write], refreshes: Sequence[tuple[str, str, float]], now: datetime
    ) -> None:
        d = self.dialect
        stamp = d.exact_time(now)
        with self.database.write() as conn:
            sql = d.bind(conn)
            for ns, key, expires in refreshes:
                sql.run(
                    f"UPDATE langgraph_items SET expires_at = ? WHERE {_KEY}",
                    (expires, self.agent_id, ns, key),
                )
            for w in writes:
                where = (self.agent_id, w.namespace, w.key)
                if w.value is None:
                    sql.run(f"DELETE FROM langgraph_items WHERE {_KEY}", where)
                    continue
                j = "?" + d.json_cast
                sql.run(
                    "INSERT INTO langgraph_items (agent_id, namespace, key, value, created_at, "
                    f"updated_at, expires_at, ttl_minutes, vector, text) VALUES "
                    f"(?, ?, ?, {j}, ?, ?, ?, ?, {j}, ?) ON CONFLICT (agent_id, namespace, key) "
                    "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
                    "expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes, "
                    "vector = excluded.vector, text = excluded.text, created_at = CASE WHEN "
                    "langgraph_items.expires_at IS NOT NULL AND langgraph_items.expires_at <= ? "
                    "THEN excluded.created_at ELSE langgraph_items.created_at END",
                    (
                        *where,
                        json.dumps(w.value, ensure_ascii=False),
                        stamp,
                        stamp,
                        w.expires_at,
                        w.ttl_minutes,
                        None if w.vector is None else json.dumps(w.vector),
                        d.text(w.text),
                        now.timestamp(),
                    ),
                )

    def sweep(self, now: float) -> int:
        with self.database.write() as conn:
            return self.dialect.bind(conn).run(
                "DELETE FROM langgraph_items WHERE agent_id = ? AND expires_at <= ?",
                (self.agent_id, now),
            )

    def close(self) -> None:
        self.database.close()
