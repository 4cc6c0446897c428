"""SQLite transcript index: every recorded session message, its marks and full-text search."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from ._records import (
    MARK_COLUMNS,
    TRANSCRIPT_COLUMNS,
    import_top,
)
from .base import (
    JsonObject,
    RecallFilters,
    TranscriptHit,
    TranscriptMark,
    TranscriptMessage,
)
from .recall_index import Doc, RecallQueries, index_docs
from .recall_rank import search_hits
from .sqlite_conn import (
    DECODE,
    SqliteDatabase,
    SqliteSql,
    json_text,
    next_rowid,
    to_iso,
)
from .sqlite_schema import fill_activity_search


def _message_values(m: TranscriptMessage) -> tuple[Any, ...]:
    """``(session_id, seq, role, content, created_at, speaker, metadata)`` as stored."""
    return (
        m.session_id,
        int(m.seq),
        m.role,
        m.content,
        to_iso(m.created_at),
        m.speaker,
        json_text(m.metadata),
    )


def _insert_messages(
    conn: sqlite3.Connection, agent_id: str, messages: Sequence[TranscriptMessage]
) -> None:
    """Insert new rows (inside a write); ids live in the agent's rowid span (sqlite_schema m004)."""
    if not messages:
        return
    first = next_rowid(conn, "transcript_messages", "id", agent_id)
    conn.executemany(
        "INSERT INTO transcript_messages (id, agent_id, session_id, seq, role, content, "
        "created_at, speaker, metadata) VALUES (?,?,?,?,?,?,?,?,?)",
        [(first + n, agent_id, *_message_values(m)) for n, m in enumerate(messages)],
    )
    index_docs(
        SqliteSql(conn),
        agent_id,
        [Doc(first + n, m.content, m.speaker, m.role) for n, m in enumerate(messages)],
    )


def _raise_mark(
    conn: sqlite3.Connection, agent_id: str, session_id: str, next_seq: int, synced_at: datetime
) -> None:
    # iso_ms strings of UTC times order like the times themselves.
    conn.execute(
        "INSERT INTO transcript_marks (agent_id, session_id, next_seq, synced_at) "
        "VALUES (?,?,?,?) ON CONFLICT (agent_id, session_id) DO UPDATE SET "
        "next_seq = MAX(next_seq, excluded.next_seq), "
        "synced_at = MAX(synced_at, excluded.synced_at)",
        (agent_id, session_id, int(next_seq), to_iso(synced_at)),
    )


class SqliteTranscriptIndex(SqliteDatabase, RecallQueries):
    """The transcript index (:class:`~.base.TranscriptIndex`) and its recall index."""

    @contextmanager
    def _recall(self, *, write: bool = False) -> Iterator[SqliteSql]:
        with self.write() if write else self.read() as conn:
            yield SqliteSql(conn)

    def rebuild_derived(self) -> int:
        """Recreate and refill everything derived from the stored rows: the activity search
        and the recall index (one transaction); the number of messages indexed."""
        with self.write() as conn:
            fill_activity_search(conn)
            sql = SqliteSql(conn)
            self.recreate(sql, "BLOB", " WITHOUT ROWID")
            return self.rebuild(sql)

    def _when(self, moment: datetime) -> Any:
        return to_iso(moment)

    def _message(self, row: Sequence[Any]) -> TranscriptMessage:
        return DECODE.transcript_message(row)

    def index_message(
        self,
        agent_id: str,
        session_id: str,
        seq: int,
        role: str,
        content: str,
        created_at: datetime,
        *,
        speaker: str | None = None,
        metadata: JsonObject | None = None,
        appended_at: datetime | None = None,
    ) -> None:
        message = TranscriptMessage(
            agent_id, session_id, int(seq), role, content, created_at, speaker, metadata
        )
        with self.write() as conn:
            existing = conn.execute(
                "SELECT id, content, speaker, role FROM transcript_messages "
                "WHERE agent_id = ? AND session_id = ? AND seq = ?",
                (agent_id, session_id, message.seq),
            ).fetchone()
            if existing is None:
                _insert_messages(conn, agent_id, [message])
            else:
                sql = SqliteSql(conn)
                index_docs(sql, agent_id, [Doc(*existing)], sign=-1)
                conn.execute(
                    "UPDATE transcript_messages SET role = ?, content = ?, created_at = ?, "
                    "speaker = ?, metadata = ? WHERE id = ?",
                    (*_message_values(message)[2:], existing[0]),
                )
                index_docs(sql, agent_id, [Doc(existing[0], content, speaker, role)])
            mark = conn.execute(
                "SELECT next_seq FROM transcript_marks WHERE agent_id = ? AND session_id = ?",
                (agent_id, session_id),
            ).fetchone()
            if message.seq <= (0 if mark is None else int(mark[0])):
                _raise_mark(conn, agent_id, session_id, message.seq + 1, appended_at or created_at)

    def import_transcript(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[TranscriptMessage],
        *,
        synced_at: datetime,
    ) -> int:
        top = import_top(agent_id, session_id, messages)
        with self.write() as conn:
            held = {
                int(r[0])
                for r in conn.execute(
                    "SELECT seq FROM transcript_messages WHERE agent_id = ? AND session_id = ?",
                    (agent_id, session_id),
                )
            }
            fresh: dict[int, TranscriptMessage] = {}
            for m in messages:
                if int(m.seq) not in held:
                    fresh[int(m.seq)] = m
            _insert_messages(conn, agent_id, [fresh[seq] for seq in sorted(fresh)])
            _raise_mark(conn, agent_id, session_id, top, synced_at)
            return len(fresh)

    def transcript_messages(
        self, agent_id: str, *, session_id: str | None = None
    ) -> list[TranscriptMessage]:
        sql = f"SELECT {TRANSCRIPT_COLUMNS} FROM transcript_messages WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if session_id is not None:
            sql += " AND session_id = ?"
            params.append(session_id)
        with self.read() as conn:
            rows = conn.execute(sql + " ORDER BY session_id, seq", params).fetchall()
        return [DECODE.transcript_message(r) for r in rows]

    def transcript_marks(self, agent_id: str) -> dict[str, TranscriptMark]:
        with self.read() as conn:
            rows = conn.execute(
                f"SELECT {MARK_COLUMNS} FROM transcript_marks WHERE agent_id = ?", (agent_id,)
            ).fetchall()
        return DECODE.transcript_marks(rows)

    def forget_session(self, agent_id: str, session_id: str) -> int:
        with self.write() as conn:
            conn.execute(
                "DELETE FROM transcript_marks WHERE agent_id = ? AND session_id = ?",
                (agent_id, session_id),
            )
            gone = conn.execute(
                "SELECT id, content, speaker, role FROM transcript_messages "
                "WHERE agent_id = ? AND session_id = ?",
                (agent_id, session_id),
            ).fetchall()
            index_docs(SqliteSql(conn), agent_id, [Doc(*r) for r in gone], sign=-1)
            return conn.execute(
                "DELETE FROM transcript_messages WHERE agent_id = ? AND session_id = ?",
                (agent_id, session_id),
            ).rowcount

    def search_transcript(
        self,
        agent_id: str,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 20,
    ) -> list[TranscriptHit]:
        """Messages containing any query term, best BM25 first (the recall index's ranking
        without its re-ranking stages)."""
        filters = RecallFilters(session_id, role, since, until)
        with self._recall() as sql:
            return search_hits(
                sql,
                agent_id,
                query,
                filters,
                limit,
                self._when,
                self._message,
                self.search_candidates,
            )
