"""Transcript vectors on PostgreSQL: searched in the database with pgvector when the server has
it, a bounded scan when it does not.

* **pgvector** (the server lets ``CREATE EXTENSION vector`` succeed, or has it already):
  ``recall_vectors.vector`` is of pgvector's ``vector`` type, and each vector dimension has a
  partial HNSW index (inner product) over the vectors of that dimension. An agent with at most
  :data:`EXACT_LIMIT` vectors of an embedding space is searched exactly (its rows, found by
  the ``(agent, model, doc)`` index, sorted by distance in the database); a larger one through
  the HNSW index with iterative scans (``hnsw.iterative_scan = relaxed_order``), so that the
  rows of other agents and models, skipped by the filter, do not leave it short of results.
* **without pgvector**: the column stays ``BYTEA`` and vectors are scored in the process, in
  chunks: the query's lexical candidates and the agent's :data:`RECENT_VECTORS` newest (exact
  for an agent with no more vectors than that), and from
  :data:`~.recall.vector_lists.LISTS_FROM` vectors those of the inverted lists nearest the query
  instead of the newest (:mod:`.recall.vector_lists`, as on SQLite).

The store looks at the column the first time it uses vectors; when it is still ``BYTEA`` and
the extension can be created, it converts the column in place (one transaction, under the
migration lock), so a server that gains pgvector later is used from the next store opened.
The extension goes to ``public``, so that dropping a store's schema never drops it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..recall import vector_lists
from ..recall.contract import RecallFilters
from ..recall.fetch import Sql
from ..recall.rank import agent_key
from ..recall.vector_scan import BYTES, VectorCodec
from ..recall.vectors import VECTOR_CHUNK
from ..transcripts import Transcripts
from .conn import MIGRATION_LOCK_KEY

if TYPE_CHECKING:
    import psycopg

EXACT_LIMIT = 20_000
"""An agent with at most this many vectors of a space is searched exactly."""
RECENT_VECTORS = 10_000
"""Without pgvector: the newest vectors scored besides the lexical candidates."""
EF_SEARCH = 100
"""HNSW candidate list (``hnsw.ef_search``) at least; raised to the number of results asked."""
_MAX_EF_SEARCH = 1000
HNSW_MAX_DIMENSIONS = 2000
"""pgvector indexes ``vector`` up to this many dimensions; larger ones are searched exactly."""


def vector_schema(conn: psycopg.Connection[Any], lock_key: int) -> str | None:
    """The schema of pgvector's type when ``recall_vectors.vector`` is of it (converting the
    column first when the extension can be had), else None. ``lock_key``: the migration lock."""
    found = _column_type(conn)
    if found is not None or not _available(conn):
        return found
    import psycopg

    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))",
            (lock_key & 0x7FFFFFFF,),
        )
        found = _column_type(conn)
        if found is not None:
            return found
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
                row = conn.execute(
                    "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                    "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
                ).fetchone()
                assert row is not None
                _convert(conn, str(row[0]))
        except psycopg.Error:  # not allowed to create it, or to change the table
            return None
        return str(row[0])


def iterative_scans(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server's pgvector has iterative index scans (0.8.0 and later)."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    version = (
        tuple(int(part) for part in str(row[0]).split(".")[:2] if part.isdigit()) if row else ()
    )
    return version >= (0, 8)


def _column_type(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute(
        "SELECT t.typname, n.nspname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "JOIN pg_namespace n ON n.oid = t.typnamespace "
        "WHERE a.attrelid = 'recall_vectors'::regclass AND a.attname = 'vector'"
    ).fetchone()
    return str(row[1]) if row is not None and row[0] == "vector" else None


def _available(conn: psycopg.Connection[Any]) -> bool:
    return (
        conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        is not None
    )


def _convert(conn: psycopg.Connection[Any], schema: str) -> None:
    """BYTEA vectors to pgvector's type, written once (the old column is dropped)."""
    kind = f"{_quote(schema)}.vector"
    conn.execute(f"ALTER TABLE recall_vectors ADD COLUMN embedding {kind}")
    last = -(2**63)
    while rows := conn.execute(
        "SELECT doc, vector FROM recall_vectors WHERE doc > %s ORDER BY doc LIMIT %s",
        (last, VECTOR_CHUNK),
    ).fetchall():
        with conn.cursor() as cursor:
            cursor.executemany(
                f"UPDATE recall_vectors SET embedding = CAST(%s AS {kind}) WHERE doc = %s",
                [(to_text(bytes(blob)), doc) for doc, blob in rows],
            )
        last = int(rows[-1][0])
    conn.execute("ALTER TABLE recall_vectors DROP COLUMN vector")
    conn.execute("ALTER TABLE recall_vectors RENAME COLUMN embedding TO vector")
    conn.execute("ALTER TABLE recall_vectors ALTER COLUMN vector SET NOT NULL")
    for (dimension,) in conn.execute(
        f"SELECT DISTINCT {_quote(schema)}.vector_dims(vector) FROM recall_vectors"
    ).fetchall():
        ensure_index(conn, schema, int(dimension))


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def to_text(blob: bytes) -> str:
    """pgvector's text form of float32 bytes."""
    values = struct.unpack(f"<{len(blob) // 4}f", blob)
    return "[" + ",".join(map(repr, values)) + "]"


def _from_floats(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def codec(schema: str) -> VectorCodec:
    """The ``vector`` column of pgvector's type in ``schema``."""
    return VectorCodec(
        param=f"CAST(? AS {_quote(schema)}.vector)",
        column="CAST(v.vector AS real[])",
        encode=to_text,
        decode=_from_floats,
    )


def ensure_index(conn: psycopg.Connection[Any], schema: str, dimension: int) -> None:
    """The HNSW index of the vectors of one dimension (created once; concurrent creators
    queue on a lock)."""
    if dimension > HNSW_MAX_DIMENSIONS:
        return
    name = f"idx_recall_vectors_hnsw_{int(dimension)}"
    exists = conn.execute(
        "SELECT 1 FROM pg_class WHERE relname = %s AND relnamespace = "
        "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())",
        (name,),
    ).fetchone()
    if exists:
        return
    s = _quote(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (name,))
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON recall_vectors USING hnsw "
            f"((vector::{s}.vector({int(dimension)})) {s}.vector_ip_ops) "
            f"WHERE {s}.vector_dims(vector) = {int(dimension)}"
        )


def nearest(
    sql: Sql,
    schema: str,
    agent_id: str,
    model: str,
    vector: bytes,
    limit: int,
    filters: RecallFilters,
    when: Callable[[datetime], Any],
    *,
    iterative: bool = True,
) -> list[tuple[int, float]]:
    """The agent's ``limit`` nearest ``model`` vectors passing ``filters``, best first, as
    ``(id, inner product)``: exact for an agent within :data:`EXACT_LIMIT` (or for any agent
    when pgvector has no ``iterative`` scans or cannot index the dimension), else by HNSW.
    ``sql`` is in a transaction (the HNSW settings are local to it)."""
    if limit <= 0:
        return []
    agent, s, dimension = agent_key(agent_id), _quote(schema), len(vector) // 4
    where, extra = filters.sql(when)
    join = "" if filters.empty else " JOIN transcript_messages t ON t.id = v.doc"
    query = to_text(vector)
    count = sql.rows(
        "SELECT count(*) FROM (SELECT 1 FROM recall_vectors WHERE agent = ? "
        "AND model = ? LIMIT ?) s",
        (agent, model, EXACT_LIMIT + 1),
    )[0][0]
    if int(count) <= EXACT_LIMIT or not iterative or dimension > HNSW_MAX_DIMENSIONS:
        # OFFSET 0 keeps the planner from ordering through the HNSW index.
        rows = sql.rows(
            f"SELECT doc, d FROM (SELECT v.doc, v.vector OPERATOR({s}.<#>) "
            f"CAST(? AS {s}.vector) AS d FROM recall_vectors v{join} WHERE v.agent = ? "
            f"AND v.model = ?{where} OFFSET 0) near ORDER BY d, doc LIMIT ?",
            (query, agent, model, *extra, limit),
        )
    else:
        ef = min(max(EF_SEARCH, limit), _MAX_EF_SEARCH)
        sql.rows(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', ?, true)",
            (str(ef),),
        )
        typed = f"{s}.vector({dimension})"
        rows = sql.rows(
            f"SELECT v.doc, (v.vector::{typed}) OPERATOR({s}.<#>) CAST(? AS {typed}) AS d "
            f"FROM recall_vectors v{join} WHERE {s}.vector_dims(v.vector) = {dimension} "
            f"AND v.agent = ? AND v.model = ?{where} ORDER BY d LIMIT ?",
            (query, agent, model, *extra, limit),
        )
    ranked = [(int(doc), -float(d)) for doc, d in rows]
    return sorted(ranked, key=lambda pair: (-pair[1], pair[0]))


class PgTranscripts(Transcripts):
    """The transcripts of a PostgreSQL store, with its vector search: in the database with
    pgvector; without it over the lexical candidates and the newest :data:`RECENT_VECTORS`,
    or the nearest inverted lists once the agent has them."""

    _pgvector: tuple[str | None, bool] | None = None
    _indexed: frozenset[int] = frozenset()

    def vector_schema(self) -> str | None:
        """The schema of pgvector when this store searches vectors with it, else None."""
        return self._vectors()[0]

    def _vectors(self) -> tuple[str | None, bool]:
        if self._pgvector is None:
            with self.database.write() as conn:
                schema = vector_schema(conn, MIGRATION_LOCK_KEY)
                self._pgvector = (schema, schema is not None and iterative_scans(conn))
        return self._pgvector

    def _vector_codec(self) -> VectorCodec:
        schema = self.vector_schema()
        return BYTES if schema is None else codec(schema)

    def save_recall_vectors(
        self, agent_id: str, model: str, rows: Sequence[tuple[int, bytes]]
    ) -> None:
        schema = self.vector_schema()
        dimensions = {len(blob) // 4 for _, blob in rows}
        if schema is not None and not dimensions <= self._indexed:
            with self.database.write() as conn:
                for dimension in dimensions - self._indexed:
                    ensure_index(conn, schema, dimension)
            self._indexed = self._indexed | dimensions
        super().save_recall_vectors(agent_id, model, rows)

    def recall_nearest(
        self,
        agent_id: str,
        model: str,
        vector: bytes,
        limit: int,
        filters: RecallFilters | None = None,
        *,
        candidates: Sequence[int] = (),
    ) -> list[tuple[int, float]]:
        filters = filters or RecallFilters()
        schema, iterative = self._vectors()
        if schema is not None:
            with self._recall(write=True) as sql:
                return nearest(
                    sql,
                    schema,
                    agent_id,
                    model,
                    vector,
                    limit,
                    filters,
                    self._when,
                    iterative=iterative,
                )
        return super().recall_nearest(
            agent_id, model, vector, limit, filters, candidates=candidates
        )

    def _vector_lists(self) -> bool:
        return self.vector_schema() is None

    def _nearest_unlisted(
        self,
        agent_id: str,
        model: str,
        vector: bytes,
        limit: int,
        filters: RecallFilters | None,
        candidates: Sequence[int],
    ) -> list[tuple[int, float]]:
        """Without pgvector and below the lists: the ``candidates`` and the
        :data:`RECENT_VECTORS` newest (shipping every vector of a long history to each process
        is what does not scale); every vector, read once, when the agent has no more."""
        with self._recall() as sql:
            count = vector_lists.count_up_to(sql, agent_key(agent_id), model, RECENT_VECTORS + 1)
        if count <= RECENT_VECTORS:  # the newest are all: the candidates among them
            return super()._nearest_unlisted(agent_id, model, vector, limit, filters, candidates)
        return self._nearest_among(
            agent_id, model, vector, limit, filters, candidates, newest=RECENT_VECTORS
        )
