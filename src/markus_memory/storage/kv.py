"""A namespaced JSON key-value table beside the episodic store, written once for both backends.

Backs the LangGraph store: one row per (agent, namespace, key) with its JSON value, the text
indexed for search, an optional vector and TTL bookkeeping, in tables of the ``langgraph``
migration set (:mod:`.kv_schema`) in the agent's episodic database (``data.db`` or the
``MARKUS_DATABASE_URL`` database). Every statement is one text for both backends (``?``
placeholders, translated by the :class:`~.dialect.Dialect`); only the JSON filter differs
(:mod:`.kv_filter`).

Search runs in SQL: the namespace prefix, the filter, the order and the page (``LIMIT`` /
``OFFSET``), so only the returned page is read and decoded. A query ranks by Okapi BM25 over
the postings of :mod:`markus_memory.analysis` (stems, stop words, CJK pairs), with the
constants and the idf of the knowledge index over the agent's stored items; without a query
the newest update comes first. :meth:`KVTable.apply` writes a whole batch in one transaction,
a few statements whatever its size, so a batch is all or nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..analysis import query_counts, query_terms
from . import kv_filter
from ._sql import DialectSql
from .base import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from .knowledge_index import K1, B
from .kv_schema import (
    ADD_TERMS,
    MIGRATION_SET,
    POSTING_COLUMNS,
    TERM_COLUMNS,
    agent_key,
    doc_key,
    postgres_migrations,
    postings,
    sqlite_migrations,
)
from .recall.contract import RecallStats

if TYPE_CHECKING:
    from .dialect import Database

SEP = "."
"""Namespace labels are joined with a period, which LangGraph forbids inside a label."""
CHUNK = 500
"""Keys per ``IN (…)`` list on SQLite (PostgreSQL sends one array)."""
STAGED = 200
"""Items from which a PostgreSQL batch is copied into a staging table (see
:func:`_staged_insert`)."""
ANALYSED = 5000
"""Items from which a PostgreSQL batch analyses the items table in its transaction (before
autovacuum would: a page without a query is then read from the index, not sorted)."""
CANDIDATES = 4
CANDIDATES_MIN = 100
"""A ranked page first looks at the best ``CANDIDATES * (offset + limit) + CANDIDATES_MIN``
documents (see :meth:`KVTable.ranked`)."""


@dataclass(frozen=True)
class Row:
    namespace: str
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: float | None
    ttl_minutes: float | None


@dataclass(frozen=True)
class Write:
    """An upsert (``value``, the JSON text of an object) or a delete (``value`` None)."""

    namespace: str
    key: str
    value: str | None
    text: str = ""
    vector: list[float] | None = None
    expires_at: float | None = None
    ttl_minutes: float | None = None


@dataclass(frozen=True)
class Where:
    """Which items a search looks at: under ``prefix`` (all when empty), passing ``filter``."""

    prefix: str
    filter: Mapping[str, Any] | None
    now: float


def _dt(text: str | datetime) -> datetime:
    return text if isinstance(text, datetime) else datetime.fromisoformat(text)


def _row(r: Sequence[Any]) -> Row:
    value = r[2] if isinstance(r[2], dict) else json.loads(r[2])
    return Row(r[0], r[1], value, _dt(r[3]), _dt(r[4]), r[5], r[6])


COLUMNS = "i.namespace, i.key, i.value, i.created_at, i.updated_at, i.expires_at, i.ttl_minutes"
_LIVE = "i.agent_id = ? AND (i.expires_at IS NULL OR i.expires_at > ?)"
_ITEM_COLUMNS = (
    ("agent_id", "text"),
    ("namespace", "text"),
    ("key", "text"),
    ("value", "jsonb"),
    ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
    ("expires_at", "double precision"),
    ("ttl_minutes", "double precision"),
    ("vector", "jsonb"),
    ("text", "text"),
    ("doc", "bigint"),
    ("len", "integer"),
)
_UPDATED = ("value", "updated_at", "expires_at", "ttl_minutes", "vector", "text", "len")

__all__ = [
    "MIGRATION_SET",
    "SEP",
    "KVTable",
    "Row",
    "Where",
    "Write",
    "postgres_migrations",
    "sqlite_migrations",
]


class KVTable:
    """One agent's items in one opened database (its handle is closed with the table)."""

    def __init__(self, database: Database, agent_id: str) -> None:
        self.database = database
        self.agent_id = agent_id
        self.dialect = database.dialect
        self.agent = agent_key(agent_id)

    @contextmanager
    def _sql(self, *, write: bool = False) -> Iterator[DialectSql]:
        db = self.database
        with db.write() if write else db.read() as conn:
            yield self.dialect.bind(conn)

    def _where(self, where: Where) -> tuple[str, list[Any]]:
        sql = _LIVE
        params: list[Any] = [self.agent_id, where.now]
        if where.prefix:
            sql += " AND (i.namespace = ? OR substr(i.namespace, 1, ?) = ?)"
            params += [where.prefix, len(where.prefix) + 1, where.prefix + SEP]
        condition, args = kv_filter.condition(self.dialect.name, where.filter, "i.value")
        if condition:
            sql += f" AND {condition}"
            params += args
        return sql, params

    def _order(self) -> str:
        return f"{self.dialect.bytewise('i.namespace')}, {self.dialect.bytewise('i.key')}"

    # -- reads -------------------------------------------------------------------------------

    def get(self, pairs: Sequence[tuple[str, str]], now: float) -> dict[tuple[str, str], Row]:
        docs = sorted({doc_key(self.agent_id, ns, key) for ns, key in pairs})
        out: dict[tuple[str, str], Row] = {}
        with self._sql() as sql:
            for part in _chunks(docs, self.dialect.name):
                by_doc, params = self.dialect.any_of("i.doc", part)
                for r in sql.rows(
                    f"SELECT {COLUMNS} FROM langgraph_items i WHERE {_LIVE} AND {by_doc}",
                    (self.agent_id, now, *params),
                ):
                    found = _row(r)
                    out[(found.namespace, found.key)] = found
        return out

    def recent(self, where: Where, limit: int, offset: int) -> list[Row]:
        """A page of the items, the last updated first (ties by namespace and key)."""
        condition, params = self._where(where)
        with self._sql() as sql:
            found = sql.rows(
                f"SELECT {COLUMNS} FROM langgraph_items i WHERE {condition} "
                f"ORDER BY i.updated_at DESC, {self._order()} LIMIT ? OFFSET ?",
                (*params, limit, offset),
            )
        return [_row(r) for r in found]

    def ranked(self, where: Where, query: str, limit: int, offset: int) -> list[tuple[Row, float]]:
        """A page of the items holding a term of ``query``, best BM25 score first (ties by
        item key: stable, the same on both backends); nothing for a query without content
        words. The best ``CANDIDATES``-times-the-page documents are scored from the postings
        alone and only they are joined with their items; when too few of them pass the prefix
        and the filter, every matching document is."""
        with self._sql() as sql:
            weights, stats = self._weights(sql, query)
            if not weights or stats.avgdl <= 0:
                return []
            wanted = offset + limit
            candidates = CANDIDATES * wanted + CANDIDATES_MIN
            found = self._rank(sql, weights, stats.avgdl, where, limit, offset, candidates)
            if len(found) < limit and (not found or int(found[0][8]) >= candidates):
                found = self._rank(sql, weights, stats.avgdl, where, limit, offset, None)
        return [(_row(r), float(r[7])) for r in found]

    def _rank(
        self,
        sql: DialectSql,
        weights: dict[int, float],
        avgdl: float,
        where: Where,
        limit: int,
        offset: int,
        candidates: int | None,
    ) -> list[tuple[Any, ...]]:
        """The page among the best ``candidates`` documents (all when None); each row ends
        with the score and the number of candidates."""
        values = ", ".join(["(CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION))"] * len(weights))
        score = (
            f"SUM(q.w * p.tf * {K1 + 1} / (p.tf + {K1} * ({1 - B} + {B} * "
            "CAST(p.len AS DOUBLE PRECISION) / ?)))"
        )
        cut = "" if candidates is None else f" ORDER BY score DESC, p.doc LIMIT {int(candidates)}"
        condition, params = self._where(where)
        return sql.rows(
            f"WITH q(term, w) AS (VALUES {values}), s AS (SELECT p.doc, {score} AS score "
            "FROM q JOIN langgraph_postings p ON p.agent = ? AND p.term = q.term "
            f"GROUP BY p.doc{cut}), n AS (SELECT count(*) AS n FROM s) "
            f"SELECT {COLUMNS}, s.score, n.n FROM s CROSS JOIN n JOIN langgraph_items i "
            f"ON i.doc = s.doc WHERE {condition} ORDER BY s.score DESC, s.doc LIMIT ? OFFSET ?",
            (
                *(v for pair in weights.items() for v in pair),
                avgdl,
                self.agent,
                *params,
                limit,
                offset,
            ),
        )

    def _weights(self, sql: DialectSql, query: str) -> tuple[dict[int, float], RecallStats]:
        """BM25 weights of the query's terms the agent's items use, and their statistics."""
        text = query[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")
        counts = query_counts(query_terms(text)[:MAX_QUERY_TERMS])
        if not counts:
            return {}, RecallStats(0, 0, {})
        condition, keys = self.dialect.any_of("term", sorted(counts))
        rows = sql.rows(
            "SELECT NULL, docs, tokens FROM langgraph_stats WHERE agent_id = ? UNION ALL "
            f"SELECT term, df, 0 FROM langgraph_terms WHERE agent = ? AND {condition} AND df > 0",
            (self.agent_id, self.agent, *keys),
        )
        totals = next((r for r in rows if r[0] is None), (None, 0, 0))
        df = {int(r[0]): int(r[1]) for r in rows if r[0] is not None}
        stats = RecallStats(int(totals[1]), int(totals[2]), df)
        return {key: stats.idf(key) * n for key, n in counts.items() if df.get(key)}, stats

    def vectors(self, where: Where) -> list[tuple[int, list[float] | None]]:
        """``(doc, vector)`` of every item the search looks at (None: not embedded)."""
        condition, params = self._where(where)
        with self._sql() as sql:
            found = sql.rows(
                f"SELECT i.doc, i.vector FROM langgraph_items i WHERE {condition} "
                f"ORDER BY i.updated_at DESC, {self._order()}",
                params,
            )
        return [
            (int(r[0]), r[1] if r[1] is None or isinstance(r[1], list) else json.loads(r[1]))
            for r in found
        ]

    def by_doc(self, docs: Sequence[int]) -> dict[int, Row]:
        """The rows of item keys (see :func:`.kv_schema.doc_key`)."""
        out: dict[int, Row] = {}
        with self._sql() as sql:
            for part in _chunks(sorted(set(docs)), self.dialect.name):
                by_doc, params = self.dialect.any_of("i.doc", part)
                for r in sql.rows(
                    f"SELECT {COLUMNS}, i.doc FROM langgraph_items i WHERE i.agent_id = ? "
                    f"AND {by_doc}",
                    (self.agent_id, *params),
                ):
                    out[int(r[7])] = _row(r)
        return out

    def namespaces(self, now: float) -> list[str]:
        with self._sql() as sql:
            found = sql.rows(
                f"SELECT DISTINCT i.namespace FROM langgraph_items i WHERE {_LIVE}",
                (self.agent_id, now),
            )
        return [r[0] for r in found]

    # -- writes ------------------------------------------------------------------------------

    def apply(
        self, writes: Sequence[Write], refreshes: Sequence[tuple[str, str, float]], now: datetime
    ) -> None:
        """Refresh TTLs, delete and upsert, in one transaction (each key at most once)."""
        d = self.dialect
        stamp = d.exact_time(now)
        items: list[tuple[Any, ...]] = []
        terms: list[tuple[int, int, int, int, int]] = []
        for w in writes:
            if w.value is None:
                continue
            doc = doc_key(self.agent_id, w.namespace, w.key)
            text = d.text(w.text)
            length, found = postings(self.agent, doc, text)
            terms.extend(found)
            items.append(
                (
                    self.agent_id,
                    w.namespace,
                    w.key,
                    w.value,
                    stamp,
                    stamp,
                    w.expires_at,
                    w.ttl_minutes,
                    None if w.vector is None else json.dumps(w.vector),
                    text,
                    doc,
                    length,
                )
            )
        with self._sql(write=True) as sql:
            if refreshes:
                sql.many(
                    "UPDATE langgraph_items SET expires_at = ? WHERE agent_id = ? AND "
                    "namespace = ? AND key = ?",
                    [(at, self.agent_id, ns, key) for ns, key, at in refreshes],
                )
            gone = [doc_key(self.agent_id, w.namespace, w.key) for w in writes if w.value is None]
            self._delete(sql, "langgraph_items", gone)
            self._delete(sql, "langgraph_postings", [row[10] for row in items])
            # An upsert over an expired item starts it afresh (a new created_at).
            conflict = (
                d.on_conflict_update("agent_id, namespace, key", _UPDATED)
                + ", created_at = CASE WHEN langgraph_items.expires_at IS NOT NULL AND "
                f"langgraph_items.expires_at <= {float(now.timestamp())!r} "
                "THEN excluded.created_at ELSE langgraph_items.created_at END"
            )
            if d.name == "postgres" and len(items) >= STAGED:
                _staged_insert(sql, items, conflict)
                if len(items) >= ANALYSED:  # the planner learns the table's new size now
                    sql.run("ANALYZE langgraph_items")
            else:
                sql.insert("langgraph_items", _ITEM_COLUMNS, items, conflict)
            sql.insert("langgraph_postings", POSTING_COLUMNS, terms)
            counts = Counter(row[1] for row in terms)
            sql.insert(
                "langgraph_terms",
                TERM_COLUMNS,
                [(self.agent, term, n) for term, n in counts.items()],
                ADD_TERMS,
            )

    def _delete(self, sql: DialectSql, table: str, docs: Sequence[int]) -> None:
        for part in _chunks(docs, self.dialect.name):
            by_doc, params = self.dialect.any_of("doc", part)
            sql.run(f"DELETE FROM {table} WHERE {by_doc}", params)

    def sweep(self, now: float) -> int:
        with self._sql(write=True) as sql:
            return sql.run(
                "DELETE FROM langgraph_items WHERE agent_id = ? AND expires_at <= ?",
                (self.agent_id, now),
            )

    def close(self) -> None:
        self.database.close()


def _staged_insert(sql: DialectSql, items: Sequence[Sequence[Any]], conflict: str) -> None:
    """A large batch of items on PostgreSQL: ``COPY`` into a temporary table of this
    connection (emptied at commit), then one ``INSERT … SELECT`` (a parameter array per column
    costs the driver more than the server's whole insert)."""
    names = ", ".join(name for name, _ in _ITEM_COLUMNS)
    columns = ", ".join(f"{name} {kind}" for name, kind in _ITEM_COLUMNS)
    sql.run(f"CREATE TEMP TABLE IF NOT EXISTS langgraph_staged ({columns}) ON COMMIT DELETE ROWS")
    with sql.conn.cursor() as cursor:
        with cursor.copy(f"COPY langgraph_staged ({names}) FROM STDIN") as copy:
            for row in items:
                copy.write_row(row)
    sql.run(
        f"INSERT INTO langgraph_items ({names}) SELECT {names} FROM langgraph_staged {conflict}"
    )


def _chunks(values: Sequence[int], backend: str) -> Iterator[Sequence[int]]:
    """``values`` in lists short enough for an SQLite ``IN (…)``; one list on PostgreSQL."""
    size = CHUNK if backend == "sqlite" else max(len(values), 1)
    for start in range(0, len(values), size):
        yield values[start : start + size]
