"""The LangGraph store's table on PostgreSQL (the ``MARKUS_DATABASE_URL`` database)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from ..analysis import query_terms
from ..errors import ExtraNotInstalledError, StorageError
from ._kv import COLUMNS, SEP, Row, Write, row, scores_under

_PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
    expires_at DOUBLE PRECISION, ttl_minutes DOUBLE PRECISION, vector JSONB,
    text TEXT NOT NULL DEFAULT '',
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    PRIMARY KEY (agent_id, namespace, key));
CREATE INDEX IF NOT EXISTS langgraph_items_tsv ON langgraph_items USING GIN (tsv);
"""


class PostgresKV:
    """The table in the PostgreSQL database of ``MARKUS_DATABASE_URL``."""

    def __init__(self, url: str, agent_id: str) -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise ExtraNotInstalledError("postgres", "psycopg") from exc
        self._psycopg = psycopg
        self.agent_id = agent_id
        self._guard = threading.Lock()
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
            with self._conn.transaction():
                self._conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext('markus_langgraph_items'))"
                )
                self._conn.execute(_PG_SCHEMA)
        except psycopg.Error as exc:
            raise StorageError(f"cannot open the LangGraph store in PostgreSQL: {exc}") from exc

    @contextmanager
    def _conn_locked(self) -> Iterator[Any]:
        with self._guard:
            try:
                yield self._conn
            except self._psycopg.Error as exc:
                raise StorageError(f"LangGraph store: {exc}") from exc

    def _select(self, where: str, args: Sequence[Any], order: str = "") -> list[Row]:
        with self._conn_locked() as conn:
            found = conn.execute(
                f"SELECT {COLUMNS} FROM langgraph_items WHERE agent_id = %s "
                f"AND (expires_at IS NULL OR expires_at > %s) {where} {order}",
                (self.agent_id, *args),
            ).fetchall()
        return [row(r) for r in found]

    def rows(self, namespace_prefix: str, now: float) -> list[Row]:
        if not namespace_prefix:
            return self._select("", [now], "ORDER BY updated_at DESC, namespace, key")
        return self._select(
            "AND (namespace = %s OR left(namespace, %s) = %s)",
            [now, namespace_prefix, len(namespace_prefix) + 1, namespace_prefix + SEP],
            "ORDER BY updated_at DESC, namespace, key",
        )

    def get(self, pairs: Sequence[tuple[str, str]], now: float) -> dict[tuple[str, str], Row]:
        out: dict[tuple[str, str], Row] = {}
        for namespace, key in set(pairs):
            for found in self._select("AND namespace = %s AND key = %s", [now, namespace, key]):
                out[(namespace, key)] = found
        return out

    def text_scores(
        self, namespace_prefix: str, query: str, now: float
    ) -> dict[tuple[str, str], float]:
        terms = query_terms(query)
        if not terms:
            return {}
        tsquery = " | ".join(terms)
        with self._conn_locked() as conn:
            found = conn.execute(
                "SELECT namespace, key, ts_rank(tsv, q) FROM langgraph_items, "
                "to_tsquery('simple', %s) q WHERE agent_id = %s AND tsv @@ q "
                "AND (expires_at IS NULL OR expires_at > %s)",
                (tsquery, self.agent_id, now),
            ).fetchall()
        return scores_under(found, namespace_prefix)

    def namespaces(self, now: float) -> list[str]:
        with self._conn_locked() as conn:
            found = conn.execute(
                "SELECT DISTINCT namespace FROM langgraph_items WHERE agent_id = %s "
                "AND (expires_at IS NULL OR expires_at > %s)",
                (self.agent_id, now),
            ).fetchall()
        return [r[0] for r in found]

    def apply(
        self, writes: Sequence[Write], refreshes: Sequence[tuple[str, str, float]], now: datetime
    ) -> None:
        from psycopg.types.json import Jsonb as jsonb

        with self._conn_locked() as conn, conn.transaction():
            for ns, key, expires in refreshes:
                conn.execute(
                    "UPDATE langgraph_items SET expires_at = %s WHERE agent_id = %s "
                    "AND namespace = %s AND key = %s",
                    (expires, self.agent_id, ns, key),
                )
            for w in writes:
                where = (self.agent_id, w.namespace, w.key)
                if w.value is None:
                    conn.execute(
                        "DELETE FROM langgraph_items WHERE agent_id = %s AND namespace = %s "
                        "AND key = %s",
                        where,
                    )
                    continue
                conn.execute(
                    "INSERT INTO langgraph_items (agent_id, namespace, key, value, created_at, "
                    "updated_at, expires_at, ttl_minutes, vector, text) VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (agent_id, namespace, key) "
                    "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
                    "expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes, "
                    "vector = excluded.vector, text = excluded.text, created_at = CASE WHEN "
                    "langgraph_items.expires_at IS NOT NULL AND langgraph_items.expires_at <= %s "
                    "THEN excluded.created_at ELSE langgraph_items.created_at END",
                    (
                        *where,
                        jsonb(w.value),
                        now,
                        now,
                        w.expires_at,
                        w.ttl_minutes,
                        None if w.vector is None else jsonb(w.vector),
                        w.text,
                        now.timestamp(),
                    ),
                )

    def sweep(self, now: float) -> int:
        with self._conn_locked() as conn:
            gone = conn.execute(
                "DELETE FROM langgraph_items WHERE agent_id = %s AND expires_at <= %s",
                (self.agent_id, now),
            ).rowcount
        return int(gone)

    def close(self) -> None:
        with self._guard:
            self._conn.close()
