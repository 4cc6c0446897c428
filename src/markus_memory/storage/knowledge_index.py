"""The knowledge.md search index inside the store: one implementation for SQLite and PostgreSQL.

The index is derived, never a source of truth. :meth:`KnowledgeIndex.sync` makes an agent's
index equal to the documents it is given (observations and curated chunks): each document
carries a content digest, changed or vanished documents are replaced or deleted (trimmed and
deleted observations never come back as ghost hits), and a caller-supplied ``version`` (the
knowledge.md signature) lets an unchanged corpus skip the diff.

Documents are analysed by :mod:`markus_memory.analysis` (the analyser of conversation recall
and activities) into ``search_postings`` (agent, term, document, term frequency, document
length), and a query is ranked by Okapi BM25 with FTS5's constants and idf over the agent's
own documents. The SQL is one text for both backends (``?`` placeholders, translated by the
:class:`~.dialect.Dialect` of the :class:`~.dialect.Database`), so the same query finds the
same words, with the same scores, in the same order, on SQLite and on PostgreSQL.

Vectors (``search_vectors``, float32 bytes tied to the document digest) live beside the
postings and are read back in bounded chunks (:meth:`KnowledgeIndex.vector_chunks`): no
process holds every vector of an agent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from ..analysis import analyse, query_counts, query_terms, term_key
from ._sql import DialectSql
from .base import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from .dialect import Database, Dialect
from .recall.contract import RecallStats as Stats

K1 = 1.2
B = 0.75
VECTOR_CHUNK = 1024
"""Vectors read per round trip (a capped knowledge.md fits in one)."""
_DOC_COLUMNS = (
    ("doc", "bigint"),
    ("agent_id", "text"),
    ("doc_id", "text"),
    ("kind", "text"),
    ("digest", "text"),
    ("len", "integer"),
)
_POSTING_COLUMNS = (
    ("agent", "bigint"),
    ("term", "bigint"),
    ("doc", "bigint"),
    ("tf", "integer"),
    ("len", "integer"),
)
_VECTOR_COLUMNS = (
    ("agent_id", "text"),
    ("doc_id", "text"),
    ("model", "text"),
    ("digest", "text"),
    ("vector", "bytea"),
)


@dataclass(frozen=True)
class IndexDoc:
    """One searchable document: an observation or a curated chunk (``kind == "curated"``)."""

    id: str
    kind: str
    text: str

    @property
    def digest(self) -> str:
        return hashlib.blake2b(
            f"{self.kind}\0{self.text}".encode("utf-8", "surrogatepass"), digest_size=16
        ).hexdigest()


@dataclass(frozen=True)
class SyncReport:
    """What one :meth:`KnowledgeIndex.sync` changed."""

    added: int
    updated: int
    removed: int
    skipped: bool


@dataclass(frozen=True)
class IndexState:
    """What ``doctor`` compares with knowledge.md: the synced version, each document's digest,
    and the documents whose postings do not add up to their length (not fully searchable)."""

    version: str | None
    digests: dict[str, str]
    unsearchable: int


def agent_key(agent_id: str) -> int:
    """The agent's 63-bit key in ``search_postings``."""
    return term_key("\x00knowledge\x00" + agent_id)


def doc_key(agent_id: str, doc_id: str) -> int:
    """A document's 63-bit key (unique across agents)."""
    return term_key(f"\x00knowledge\x00{agent_id}\x00{doc_id}")


class _Sql(DialectSql):
    def __init__(self, conn: Any, dialect: Dialect) -> None:
        super().__init__(conn)
        self._dialect = dialect

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    def blobs(self, statement: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """:meth:`rows` whose binary columns travel as bytes (PostgreSQL would send ``bytea``
        as hexadecimal text, twice the size, and decode it: three times slower)."""
        if self._dialect.name == "postgres":
            cursor = self.conn.execute(self._dialect.sql(statement), tuple(params), binary=True)
            return [tuple(r) for r in cursor.fetchall()]
        cursor = self.conn.cursor()
        try:
            cursor.row_factory = None  # plain tuples: no Row object per vector
            return list(cursor.execute(statement, tuple(params)).fetchall())
        finally:
            cursor.close()


def weighted_terms(sql: DialectSql, agent_id: str, query: str) -> tuple[dict[int, float], Stats]:
    """BM25 weights of the query's terms the agent uses (idf, once per query word with that
    term) and the agent's statistics."""
    text = query[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")
    counts = query_counts(query_terms(text)[:MAX_QUERY_TERMS])
    if not counts:
        return {}, Stats(0, 0, {})
    condition, keys = sql.dialect.any_of("term", sorted(counts))
    rows = sql.rows(
        "SELECT NULL, count(*), COALESCE(SUM(len), 0) FROM search_docs WHERE agent_id = ? "
        f"UNION ALL SELECT term, count(*), 0 FROM search_postings WHERE agent = ? AND {condition}"
        " GROUP BY term",
        (agent_id, agent_key(agent_id), *keys),
    )
    totals = next(r for r in rows if r[0] is None)
    df = {int(r[0]): int(r[1]) for r in rows if r[0] is not None}
    found = Stats(int(totals[1]), int(totals[2]), df)
    return {key: found.idf(key) * n for key, n in counts.items() if df.get(key)}, found


def rank(sql: DialectSql, agent_id: str, query: str, limit: int) -> list[tuple[str, float]]:
    """The agent's best ``limit`` documents for ``query`` by BM25: ``(doc_id, score)``, higher
    is better; ties (to 1e-9) by document key, the same order on both backends."""
    if limit <= 0 or not isinstance(query, str):
        return []
    weights, found = weighted_terms(sql, agent_id, query)
    if not weights or found.avgdl <= 0:
        return []
    values = ", ".join(["(CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION))"] * len(weights))
    score = (
        f"SUM(q.w * p.tf * {K1 + 1} / (p.tf + {K1} * ({1 - B} + {B} * "
        "CAST(p.len AS DOUBLE PRECISION) / ?)))"
    )
    rows = sql.rows(
        f"WITH q(term, w) AS (VALUES {values}) SELECT r.doc, d.doc_id, r.score FROM "
        f"(SELECT p.doc, {score} AS score FROM q JOIN search_postings p "
        "ON p.agent = ? AND p.term = q.term GROUP BY p.doc ORDER BY score DESC, p.doc LIMIT ?) r "
        "JOIN search_docs d ON d.doc = r.doc",
        (*(v for pair in weights.items() for v in pair), found.avgdl, agent_key(agent_id), limit),
    )
    # The two engines may add a document's terms in another order (a last-bit difference).
    rows.sort(key=lambda r: (-round(float(r[2]), 9), int(r[0])))
    return [(str(r[1]), float(r[2])) for r in rows]


def _version(sql: DialectSql, agent_id: str) -> str | None:
    rows = sql.rows("SELECT version FROM search_state WHERE agent_id = ?", (agent_id,))
    return None if not rows else str(rows[0][0])


def index_state(sql: DialectSql, agent_id: str) -> IndexState:
    """The agent's :class:`IndexState`."""
    version = _version(sql, agent_id)
    rows = sql.rows(
        "SELECT d.doc_id, d.digest, d.len, (SELECT COALESCE(SUM(p.tf), 0) FROM search_postings p"
        " WHERE p.agent = ? AND p.doc = d.doc) FROM search_docs d WHERE d.agent_id = ?",
        (agent_key(agent_id), agent_id),
    )
    return IndexState(
        version,
        {str(r[0]): str(r[1]) for r in rows},
        sum(1 for r in rows if int(r[2]) != int(r[3])),
    )


class OpenDatabase(Database, Protocol):
    def close(self) -> None: ...


class KnowledgeIndex:
    """BM25 postings and vectors of the knowledge.md documents of any number of agents, in
    one :class:`~.dialect.Database` (``data.db`` or a PostgreSQL schema); closing the index
    closes it."""

    def __init__(self, database: OpenDatabase) -> None:
        self.database = database

    def close(self) -> None:
        self.database.close()

    @contextmanager
    def _sql(self, *, write: bool = False) -> Iterator[_Sql]:
        db = self.database
        with db.write() if write else db.read() as conn:
            yield _Sql(conn, db.dialect)

    # -- writing ---------------------------------------------------------------------------

    def version(self, agent_id: str) -> str | None:
        """The corpus version last synced for ``agent_id``."""
        with self._sql() as sql:
            return _version(sql, agent_id)

    def sync(
        self, agent_id: str, docs: Iterable[IndexDoc], version: str | None = None
    ) -> SyncReport:
        """Make the agent's index hold exactly ``docs``; a matching ``version`` skips the work."""
        if version is not None and self.version(agent_id) == version:
            return SyncReport(0, 0, 0, skipped=True)
        wanted = {doc.id: doc for doc in docs}
        with self._sql(write=True) as sql:
            # The agent's state row first: concurrent syncs of one agent take turns on it.
            sql.run(
                "INSERT INTO search_state (agent_id, version) VALUES (?, '')"
                + sql.dialect.on_conflict_update("agent_id", ("version",)),
                (agent_id,),
            )
            have = {
                str(r[0]): (int(r[1]), str(r[2]))
                for r in sql.rows(
                    "SELECT doc_id, doc, digest FROM search_docs WHERE agent_id = ?", (agent_id,)
                )
            }
            changed = [d for d in wanted.values() if have.get(d.id, (0, ""))[1] != d.digest]
            removed = [doc_id for doc_id in have if doc_id not in wanted]
            updated = [d.id for d in changed if d.id in have]
            _forget(sql, agent_id, [have[i][0] for i in removed + updated], removed + updated)
            _store(sql, agent_id, changed)
            if version is None:
                sql.run("DELETE FROM search_state WHERE agent_id = ?", (agent_id,))
            else:
                sql.run(
                    "UPDATE search_state SET version = ? WHERE agent_id = ?", (version, agent_id)
                )
        return SyncReport(len(changed) - len(updated), len(updated), len(removed), skipped=False)

    def rebuild(
        self, agent_id: str, docs: Iterable[IndexDoc], version: str | None = None
    ) -> SyncReport:
        """Drop everything indexed for ``agent_id`` (vectors too) and index ``docs`` afresh."""
        self.drop(agent_id)
        return self.sync(agent_id, docs, version)

    def drop(self, agent_id: str) -> None:
        """Forget ``agent_id`` entirely."""
        with self._sql(write=True) as sql:
            sql.run("DELETE FROM search_postings WHERE agent = ?", (agent_key(agent_id),))
            for table in ("search_docs", "search_vectors", "search_state"):
                sql.run(f"DELETE FROM {table} WHERE agent_id = ?", (agent_id,))

    # -- reading ---------------------------------------------------------------------------

    def doc_ids(self, agent_id: str) -> set[str]:
        with self._sql() as sql:
            rows = sql.rows("SELECT doc_id FROM search_docs WHERE agent_id = ?", (agent_id,))
        return {str(r[0]) for r in rows}

    def rank(self, agent_id: str, query: str, limit: int = 50) -> list[tuple[str, float]]:
        """``(doc_id, BM25 score)`` best first; the OR of the query's analysed terms."""
        with self._sql() as sql:
            return rank(sql, agent_id, query, limit)

    def search(
        self, agent_id: str, docs: Iterable[IndexDoc], version: str | None, query: str, limit: int
    ) -> list[tuple[str, float]]:
        """:meth:`sync` then :meth:`rank`; on one connection when ``version`` is current (the
        common case: a round trip less on PostgreSQL)."""
        if version is not None:
            with self._sql() as sql:
                if _version(sql, agent_id) == version:
                    return rank(sql, agent_id, query, limit)
        self.sync(agent_id, docs, version)
        return self.rank(agent_id, query, limit)

    def state(self, agent_id: str) -> IndexState:
        with self._sql() as sql:
            return index_state(sql, agent_id)

    # -- vectors ---------------------------------------------------------------------------

    def vector_digests(self, agent_id: str, model: str) -> dict[str, str]:
        """The digest each stored vector of ``model`` was made from, by document id."""
        with self._sql() as sql:
            rows = sql.rows(
                "SELECT doc_id, digest FROM search_vectors WHERE agent_id = ? AND model = ?",
                (agent_id, model),
            )
        return {str(r[0]): str(r[1]) for r in rows}

    def put_vectors(
        self, agent_id: str, model: str, items: Iterable[tuple[str, str, bytes]]
    ) -> None:
        """Store ``(doc_id, digest, float32 bytes)`` for ``model``; other models' vectors go."""
        rows = [(agent_id, doc_id, model, digest, blob) for doc_id, digest, blob in items]
        with self._sql(write=True) as sql:
            sql.run(
                "DELETE FROM search_vectors WHERE agent_id = ? AND model <> ?", (agent_id, model)
            )
            sql.insert(
                "search_vectors",
                _VECTOR_COLUMNS,
                rows,
                sql.dialect.on_conflict_update("agent_id, doc_id, model", ("digest", "vector")),
            )

    def vector_chunks(
        self, agent_id: str, model: str, size: int = VECTOR_CHUNK
    ) -> Iterator[list[tuple[str, str, bytes]]]:
        """The agent's ``(doc_id, digest, float32 bytes)`` of ``model``, ``size`` at a time
        (keyset pages, one read each); the digest is that of the text the vector was made
        from, for the caller to compare with its documents'."""
        last = ""
        while True:
            with self._sql() as sql:
                rows = sql.blobs(
                    "SELECT doc_id, digest, vector FROM search_vectors WHERE agent_id = ? "
                    "AND model = ? AND doc_id > ? ORDER BY doc_id LIMIT ?",
                    (agent_id, model, last, size),
                )
            if not rows:
                return
            yield rows  # (text, text, bytes) as both drivers return them
            if len(rows) < size:
                return
            last = str(rows[-1][0])


def _forget(sql: DialectSql, agent_id: str, keys: Sequence[int], ids: Sequence[str]) -> None:
    """Delete documents (by key and id), their postings and their vectors."""
    if not keys:
        return
    by_key, params = sql.dialect.any_of("doc", keys)
    sql.run(
        f"DELETE FROM search_postings WHERE agent = ? AND {by_key}", (agent_key(agent_id), *params)
    )
    sql.run(f"DELETE FROM search_docs WHERE {by_key}", params)
    by_id, params = sql.dialect.any_of("doc_id", ids)
    sql.run(f"DELETE FROM search_vectors WHERE agent_id = ? AND {by_id}", (agent_id, *params))


def _store(sql: DialectSql, agent_id: str, docs: Sequence[IndexDoc]) -> None:
    """Insert documents and their postings (the analysed terms of their text)."""
    agent = agent_key(agent_id)
    rows: list[tuple[Any, ...]] = []
    postings: list[tuple[int, int, int, int, int]] = []
    text = sql.dialect.text
    for doc in docs:
        key = doc_key(agent_id, doc.id)
        freqs = analyse(doc.text.encode("utf-8", "replace").decode("utf-8"))
        length = sum(freqs.values())
        rows.append((key, agent_id, text(doc.id), doc.kind, doc.digest, length))
        postings.extend((agent, term_key(t), key, tf, length) for t, tf in freqs.items())
    sql.insert("search_docs", _DOC_COLUMNS, rows)
    sql.insert("search_postings", _POSTING_COLUMNS, sorted(postings))
