"""The SQLite side of the transcript index: message ids inside the agent's rowid span.

Everything else (marks, reads, search, the recall index) is :mod:`.transcripts`, written once.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._sql import DialectSql
from .base import TranscriptMessage
from .recall_index import Doc
from .sqlite_conn import SqliteDatabase, next_rowid
from .sqlite_schema import fill_activity_search
from .transcripts import TranscriptTables, stored_message


class SqliteTranscriptIndex(SqliteDatabase, TranscriptTables):
    """The transcript index (:class:`~.base.TranscriptIndex`) and its recall index."""

    def _add_messages(
        self, sql: DialectSql, agent_id: str, messages: Sequence[TranscriptMessage]
    ) -> list[Doc]:
        # The write transaction holds the file: nothing else can insert meanwhile, and the
        # ids continue the agent's span (sqlite_schema m004), so its rows stay together.
        if not messages:
            return []
        first = next_rowid(sql.conn, "transcript_messages", "id", agent_id)
        rows = [
            (first + n, agent_id, *stored_message(self.dialect, m)) for n, m in enumerate(messages)
        ]
        sql.many(
            "INSERT INTO transcript_messages (id, agent_id, session_id, seq, role, content, "
            "created_at, speaker, metadata) VALUES (?,?,?,?,?,?,?,?,?)",
            rows,
        )
        return [Doc(r[0], r[5], r[7], r[4]) for r in rows]

    def rebuild_derived(self) -> int:
        """Recreate and refill everything derived from the stored rows: the activity search
        and the recall index (one transaction); the number of messages indexed."""
        with self.write() as conn:
            fill_activity_search(conn)
            sql = self.dialect.bind(conn)
            self.recreate(sql, "BLOB", " WITHOUT ROWID")
            return self.rebuild(sql)
