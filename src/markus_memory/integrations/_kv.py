"""A namespaced JSON key-value table beside the episodic store, on SQLite or PostgreSQL.

Backs the LangGraph store: one row per (agent, namespace, key) with its JSON value, the text
indexed for full-text search (FTS5 on SQLite, a ``tsvector`` on PostgreSQL), an optional vector
and TTL bookkeeping. It lives in the same database as the agent's episodic store (``data.db``
or the ``MARKUS_DATABASE_URL`` database), in tables of its own. Reads return what is stored;
:meth:`KVTable.apply` writes a whole batch in one transaction, so a batch is all or nothing.
No framework is imported here.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ..analysis import query_terms, quote_fts
from ..errors import StorageError

SEP = "."
"""Namespace labels are joined with a period, which LangGraph forbids inside a label."""


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


class KVTable(Protocol):
    def rows(self, namespace_prefix: str, now: float) -> list[Row]: ...
    def get(self, pairs: Sequence[tuple[str, str]], now: float) -> dict[tuple[str, str], Row]: ...
    def text_scores(
        self, namespace_prefix: str, query: str, now: float
    ) -> dict[tuple[str, str], float]: ...
    def namespaces(self, now: float) -> list[str]: ...
    def apply(
        self, writes: Sequence[Write], refreshes: Sequence[tuple[str, str, float]], now: datetime
    ) -> None: ...
    def sweep(self, now: float) -> int: ...
    def close(self) -> None: ...


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


def row(r: Sequence[Any]) -> Row:
    value = r[2] if isinstance(r[2], dict) else json.loads(r[2])
    vector = r[7] if r[7] is None or isinstance(r[7], list) else json.loads(r[7])
    return Row(r[0], r[1], value, _dt(r[3]), _dt(r[4]), r[5], r[6], vector)


COLUMNS = "namespace, key, value, created_at, updated_at, expires_at, ttl_minutes, vector"

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at REAL, ttl_minutes REAL,
    vector TEXT, PRIMARY KEY (agent_id, namespace, key));
CREATE VIRTUAL TABLE IF NOT EXISTS langgraph_items_fts USING fts5(
    agent_id UNINDEXED, namespace UNINDEXED, key UNINDEXED, text);
"""


class SqliteKV:
    """The table in ``data.db`` (its own connection; WAL lets it sit beside the store's)."""

    def __init__(self, path: Path, agent_id: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.agent_id = agent_id
        self._guard = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                path, timeout=30, check_same_thread=False, isolation_level=None
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.executescript(_SQLITE_SCHEMA)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the LangGraph store in {path}: {exc}") from exc

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Connection]:
        with self._guard:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StorageError(f"LangGraph store: {exc}") from exc

    def rows(self, namespace_prefix: str, now: float) -> list[Row]:
        sql = (
            f"SELECT {COLUMNS} FROM langgraph_items WHERE agent_id = ? "
            "AND (expires_at IS NULL OR expires_at > ?)"
        )
        args: list[Any] = [self.agent_id, now]
        if namespace_prefix:
            sql += " AND (namespace = ? OR substr(namespace, 1, ?) = ?)"
            args += [namespace_prefix, len(namespace_prefix) + 1, namespace_prefix + SEP]
        with self._cursor() as conn:
            found = conn.execute(sql + " ORDER BY updated_at DESC, namespace, key", args).fetchall()
        return [row(r) for r in found]

    def get(self, pairs: Sequence[tuple[str, str]], now: float) -> dict[tuple[str, str], Row]:
        out: dict[tuple[str, str], Row] = {}
        with self._cursor() as conn:
            for namespace, key in set(pairs):
                r = conn.execute(
                    f"SELECT {COLUMNS} FROM langgraph_items WHERE agent_id = ? AND namespace = ? "
                    "AND key = ? AND (expires_at IS NULL OR expires_at > ?)",
                    (self.agent_id, namespace, key, now),
                ).fetchone()
                if r is not None:
                    out[(namespace, key)] = row(r)
        return out

    def text_scores(
        self, namespace_prefix: str, query: str, now: float
    ) -> dict[tuple[str, str], float]:
        terms = query_terms(query)
        if not terms:
            return {}
        match = " OR ".join(quote_fts(t) for t in terms)
        with self._cursor() as conn:
            found = conn.execute(
                "SELECT namespace, key, -bm25(langgraph_items_fts) FROM langgraph_items_fts "
                "WHERE langgraph_items_fts MATCH ? AND agent_id = ?",
                (match, self.agent_id),
            ).fetchall()
        return scores_under(found, namespace_prefix)

    def namespaces(self, now: float) -> list[str]:
        with self._cursor() as conn:
            found = conn.execute(
                "SELECT DISTINCT namespace FROM langgraph_items WHERE agent_id = ? "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (self.agent_id, now),
            ).fetchall()
        return [r[0] for r in found]

    def apply(
        self, writes: Sequence[Write], refreshes: Sequence[tuple[str, str, float]], now: datetime
    ) -> None:
        stamp = now.isoformat()
        with self._cursor() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for ns, key, expires in refreshes:
                    conn.execute(
                        "UPDATE langgraph_items SET expires_at = ? WHERE agent_id = ? "
                        "AND namespace = ? AND key = ?",
                        (expires, self.agent_id, ns, key),
                    )
                for w in writes:
                    where = (self.agent_id, w.namespace, w.key)
                    conn.execute(
                        "DELETE FROM langgraph_items_fts "
                        "WHERE agent_id = ? AND namespace = ? AND key = ?",
                        where,
                    )
                    if w.value is None:
                        conn.execute(
                            "DELETE FROM langgraph_items "
                            "WHERE agent_id = ? AND namespace = ? AND key = ?",
                            where,
                        )
                        continue
                    conn.execute(
                        "INSERT INTO langgraph_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (agent_id, namespace, key) DO UPDATE SET "
                        "value = excluded.value, "
                        "updated_at = excluded.updated_at, expires_at = excluded.expires_at, "
                        "ttl_minutes = excluded.ttl_minutes, vector = excluded.vector, "
                        "created_at = CASE WHEN langgraph_items.expires_at IS NOT NULL "
                        "AND langgraph_items.expires_at <= ? THEN excluded.created_at "
                        "ELSE langgraph_items.created_at END",
                        (
                            *where,
                            json.dumps(w.value, ensure_ascii=False),
                            stamp,
                            stamp,
                            w.expires_at,
                            w.ttl_minutes,
                            None if w.vector is None else json.dumps(w.vector),
                            now.timestamp(),
                        ),
                    )
                    if w.text:
                        conn.execute(
                            "INSERT INTO langgraph_items_fts VALUES (?, ?, ?, ?)", (*where, w.text)
                        )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def sweep(self, now: float) -> int:
        with self._cursor() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "DELETE FROM langgraph_items_fts WHERE rowid IN (SELECT f.rowid FROM "
                    "langgraph_items_fts f JOIN langgraph_items i ON i.agent_id = f.agent_id AND "
                    "i.namespace = f.namespace AND i.key = f.key WHERE i.agent_id = ? "
                    "AND i.expires_at <= ?)",
                    (self.agent_id, now),
                )
                gone = conn.execute(
                    "DELETE FROM langgraph_items WHERE agent_id = ? AND expires_at <= ?",
                    (self.agent_id, now),
                ).rowcount
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return int(gone)

    def close(self) -> None:
        with self._guard:
            self._conn.close()
