"""Stored embeddings of transcript messages (``data.db``), tagged with model, dimension and text.

One vector per message: storing a vector for another model or another text replaces the old
one, and a lookup returns only vectors whose model key (``<model>:<dimension>``) and text
digest match, so a model change re-embeds instead of ever mixing two vector spaces.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from ..storage.migrations import Migrations
from ..storage.sqlite_conn import SqliteDatabase

MIGRATION_SET = "transcript-vectors"

migrations: Migrations[sqlite3.Connection] = Migrations(MIGRATION_SET)


@migrations()
def m001_transcript_vectors(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE transcript_vectors (
  agent_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  model_key TEXT NOT NULL,
  dimension INTEGER NOT NULL,
  digest TEXT NOT NULL,
  vector BLOB NOT NULL,
  PRIMARY KEY (agent_id, session_id, seq)
)"""
    )


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def model_key(model: str, dimension: int) -> str:
    return f"{model}:{int(dimension)}"


Key = tuple[str, int]


class TranscriptVectors(Protocol):
    """Where ConversationIndex keeps message vectors: this module's SQLite store or
    :class:`~markus_memory.search.pg_transcript_vectors.PostgresTranscriptVectorStore`."""

    def load(
        self, key: str, dimension: int, wanted: Sequence[tuple[str, int, str]]
    ) -> dict[Key, bytes]: ...

    def save(
        self, key: str, dimension: int, rows: Iterable[tuple[str, int, str, bytes]]
    ) -> None: ...

    def count(self, key: str | None = None) -> int: ...

    def close(self) -> None: ...


class TranscriptVectorStore:
    """The ``transcript_vectors`` table of one agent in the SQLite file at ``path``."""

    def __init__(self, path: Path | str, agent_id: str) -> None:
        self._db = SqliteDatabase(path, extra_migrations=[migrations])
        self.agent_id = agent_id

    def load(
        self, key: str, dimension: int, wanted: Sequence[tuple[str, int, str]]
    ) -> dict[Key, bytes]:
        """float32 bytes of the stored vectors among ``(session, seq, digest)`` that match."""
        found: dict[Key, bytes] = {}
        by_session: dict[str, dict[int, str]] = {}
        for session_id, seq, digest in wanted:
            by_session.setdefault(session_id, {})[seq] = digest
        with self._db.read() as conn:
            for session_id, digests in by_session.items():
                rows = conn.execute(
                    "SELECT seq, digest, vector FROM transcript_vectors WHERE agent_id = ? "
                    "AND session_id = ? AND model_key = ? AND dimension = ?",
                    (self.agent_id, session_id, key, dimension),
                )
                for seq, digest, blob in rows:
                    if digests.get(int(seq)) == digest and len(blob) == 4 * dimension:
                        found[(session_id, int(seq))] = bytes(blob)
        return found

    def save(self, key: str, dimension: int, rows: Iterable[tuple[str, int, str, bytes]]) -> None:
        """Store ``(session, seq, digest, float32 bytes)`` rows, replacing what was there."""
        with self._db.write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO transcript_vectors "
                "(agent_id, session_id, seq, model_key, dimension, digest, vector) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (self.agent_id, session_id, seq, key, dimension, digest, blob)
                    for session_id, seq, digest, blob in rows
                ],
            )

    def count(self, key: str | None = None) -> int:
        with self._db.read() as conn:
            if key is None:
                sql, params = (
                    "SELECT count(*) FROM transcript_vectors WHERE agent_id = ?",
                    [self.agent_id],
                )
            else:
                sql = "SELECT count(*) FROM transcript_vectors WHERE agent_id = ? AND model_key = ?"
                params = [self.agent_id, key]
            return int(conn.execute(sql, params).fetchone()[0])

    def close(self) -> None:
        self._db.close()
