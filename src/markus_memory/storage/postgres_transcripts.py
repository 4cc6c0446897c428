"""The PostgreSQL side of the transcript index: message ids from the identity column.

Everything else (marks, reads, search, the recall index) is :mod:`.transcripts`, written once.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._sql import DialectSql
from .base import TranscriptMessage
from .postgres_conn import PostgresDatabase
from .recall_index import Doc
from .transcripts import TranscriptTables, stored_message


class PostgresTranscriptIndex(PostgresDatabase, TranscriptTables):
    """The transcript index (:class:`~.base.TranscriptIndex`) and its recall index."""

    def _add_messages(
        self, sql: DialectSql, agent_id: str, messages: Sequence[TranscriptMessage]
    ) -> list[Doc]:
        # One statement whatever the number of messages; a seq another writer inserted since
        # it was read is skipped, and only the rows inserted come back to be indexed.
        if not messages:
            return []
        rows = [stored_message(self.dialect, m) for m in messages]
        inserted = sql.rows(
            "INSERT INTO transcript_messages (agent_id, session_id, seq, role, content, "
            "created_at, speaker, metadata) "
            "SELECT ?, ?, u.seq, u.role, u.content, u.created_at, u.speaker, u.metadata::jsonb "
            "FROM unnest(?::int[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], "
            "?::text[]) AS u(seq, role, content, created_at, speaker, metadata) "
            "ON CONFLICT (agent_id, session_id, seq) DO NOTHING "
            "RETURNING id, content, speaker, role",
            (agent_id, rows[0][0], *([r[i] for r in rows] for i in range(1, 7))),
        )
        return [Doc(*r) for r in inserted]
