"""Transcript message embeddings on PostgreSQL: the ``transcript_vectors`` table as ``bytea``.

The same contract as :class:`~markus_memory.search.transcript_vectors.TranscriptVectorStore`
(one vector per message, returned only when model key, dimension and text digest match), used
when the memory is given a database URL. Similarity is computed in Python by the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..storage.migrations import Migrations
from ..storage.postgres_conn import PostgresDatabase
from .transcript_vectors import MIGRATION_SET, Key

if TYPE_CHECKING:
    import psycopg

migrations: Migrations[psycopg.Connection[Any]] = Migrations(MIGRATION_SET)


@migrations()
def m001_transcript_vectors(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        """CREATE TABLE transcript_vectors (
  agent_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  model_key TEXT NOT NULL,
  dimension INTEGER NOT NULL,
  digest TEXT NOT NULL,
  vector BYTEA NOT NULL,
  PRIMARY KEY (agent_id, session_id, seq)
)"""
    )


class PostgresTranscriptVectorStore:
    """The ``transcript_vectors`` rows of one agent on the PostgreSQL server at ``url``."""

    def __init__(self, url: str, agent_id: str) -> None:
        self._db = PostgresDatabase(url, extra_migrations=[migrations])
        self.agent_id = agent_id

    def load(
        self, key: str, dimension: int, wanted: Sequence[tuple[str, int, str]]
    ) -> dict[Key, bytes]:
        """float32 bytes of the stored vectors among ``(session, seq, digest)`` that match."""
        digests = {(session_id, int(seq)): digest for session_id, seq, digest in wanted}
        if not digests:
            return {}
        sessions = sorted({session_id for session_id, _ in digests})
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT session_id, seq, digest, vector FROM transcript_vectors "
                "WHERE agent_id = %s AND session_id = ANY(%s) AND model_key = %s "
                "AND dimension = %s",
                (self.agent_id, sessions, key, dimension),
            ).fetchall()
        found: dict[Key, bytes] = {}
        for session_id, seq, digest, blob in rows:
            place = (str(session_id), int(seq))
            if digests.get(place) == digest and len(blob) == 4 * dimension:
                found[place] = bytes(blob)
        return found

    def save(self, key: str, dimension: int, rows: Iterable[tuple[str, int, str, bytes]]) -> None:
        """Store ``(session, seq, digest, float32 bytes)`` rows, replacing what was there."""
        values = [
            (self.agent_id, session_id, seq, key, dimension, digest, blob)
            for session_id, seq, digest, blob in rows
        ]
        if not values:
            return
        with self._db.write() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO transcript_vectors "
                "(agent_id, session_id, seq, model_key, dimension, digest, vector) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (agent_id, session_id, seq) DO UPDATE SET "
                "model_key = EXCLUDED.model_key, dimension = EXCLUDED.dimension, "
                "digest = EXCLUDED.digest, vector = EXCLUDED.vector",
                values,
            )

    def count(self, key: str | None = None) -> int:
        sql = "SELECT count(*) FROM transcript_vectors WHERE agent_id = %s"
        params: list[Any] = [self.agent_id]
        if key is not None:
            sql += " AND model_key = %s"
            params.append(key)
        with self._db.read() as conn:
            row = conn.execute(sql, params).fetchone()
        return 0 if row is None else int(row[0])

    def close(self) -> None:
        self._db.close()
