"""PostgreSQL transcript index: every recorded session message, its marks and full-text search."""

from __future__ import annotations

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
from .pg_vectors import PgVectorQueries
from .postgres_conn import (
    DECODE,
    PostgresDatabase,
    PostgresSql,
    clean_text,
    json_param,
    to_utc,
)
from .recall_index import Doc, index_docs
from .recall_rank import search_hits


def _transcript_row(m: TranscriptMessage) -> tuple[Any, ...]:
    return (
        m.agent_id,
        m.session_id,
        int(m.seq),
        clean_text(m.role),
        clean_text(m.content),
        to_utc(m.created_at),
        None if m.speaker is None else clean_text(m.speaker),
        json_param(m.metadata),
    )


_INSERT = (
    "INSERT INTO transcript_messages (agent_id, session_id, seq, role, content, created_at, "
    "speaker, metadata) VALUES (%s,%s,%s,%s,%s,%s,%s,%s::jsonb) "
)


class PostgresTranscriptIndex(PostgresDatabase, PgVectorQueries):
    """The transcript index (:class:`~.base.TranscriptIndex`) and its recall index."""

    search_candidates: int

    @contextmanager
    def _recall(self, *, write: bool = False) -> Iterator[PostgresSql]:
        with self.write() if write else self.read() as conn:
            yield PostgresSql(conn)

    def _when(self, moment: datetime) -> Any:
        return to_utc(moment)

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
        row = _transcript_row(message)
        with self.write() as conn:
            sql = PostgresSql(conn)
            old = conn.execute(
                "SELECT id, content, speaker, role FROM transcript_messages "
                "WHERE agent_id = %s AND session_id = %s AND seq = %s FOR UPDATE",
                (agent_id, session_id, message.seq),
            ).fetchone()
            if old is not None:
                index_docs(sql, agent_id, [Doc(*old)], sign=-1)
            new = conn.execute(
                _INSERT + "ON CONFLICT (agent_id, session_id, seq) DO UPDATE SET "
                "role = EXCLUDED.role, content = EXCLUDED.content, "
                "created_at = EXCLUDED.created_at, speaker = EXCLUDED.speaker, "
                "metadata = EXCLUDED.metadata RETURNING id",
                row,
            ).fetchone()
            assert new is not None
            index_docs(sql, agent_id, [Doc(int(new[0]), row[4], row[6], row[3])])
            # The mark advances only while the session is held without a gap (base.py).
            conn.execute(
                "INSERT INTO transcript_marks AS m (agent_id, session_id, next_seq, synced_at) "
                "SELECT %s, %s, %s, %s WHERE %s = 0 "
                "ON CONFLICT (agent_id, session_id) DO UPDATE SET "
                "next_seq = GREATEST(m.next_seq, EXCLUDED.next_seq), "
                "synced_at = GREATEST(m.synced_at, EXCLUDED.synced_at)",
                (
                    agent_id,
                    session_id,
                    message.seq + 1,
                    to_utc(appended_at or created_at),
                    message.seq,
                ),
            )
            conn.execute(
                "UPDATE transcript_marks SET next_seq = GREATEST(next_seq, %s), "
                "synced_at = GREATEST(synced_at, %s) "
                "WHERE agent_id = %s AND session_id = %s AND next_seq >= %s AND %s > 0",
                (
                    message.seq + 1,
                    to_utc(appended_at or created_at),
                    agent_id,
                    session_id,
                    message.seq,
                    message.seq,
                ),
            )

    def import_transcript(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[TranscriptMessage],
        *,
        synced_at: datetime,
    ) -> int:
        top = import_top(agent_id, session_id, messages)
        rows = [_transcript_row(m) for m in messages]
        with self.write() as conn:
            added = 0
            if rows:
                inserted = conn.execute(
                    "INSERT INTO transcript_messages (agent_id, session_id, seq, role, "
                    "content, created_at, speaker, metadata) "
                    "SELECT %s, %s, u.seq, u.role, u.content, u.created_at, u.speaker, "
                    "u.metadata::jsonb FROM unnest(%s::int[], %s::text[], %s::text[], "
                    "%s::timestamptz[], %s::text[], %s::text[]) "
                    "AS u(seq, role, content, created_at, speaker, metadata) "
                    "ON CONFLICT (agent_id, session_id, seq) DO NOTHING "
                    "RETURNING id, content, speaker, role",
                    (agent_id, session_id, *([r[i] for r in rows] for i in range(2, 8))),
                ).fetchall()
                added = len(inserted)
                index_docs(PostgresSql(conn), agent_id, [Doc(*r) for r in inserted])
            conn.execute(
                "INSERT INTO transcript_marks AS m (agent_id, session_id, next_seq, synced_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (agent_id, session_id) DO UPDATE SET "
                "next_seq = GREATEST(m.next_seq, EXCLUDED.next_seq), "
                "synced_at = GREATEST(m.synced_at, EXCLUDED.synced_at)",
                (agent_id, session_id, top, to_utc(synced_at)),
            )
            return added

    def transcript_messages(
        self, agent_id: str, *, session_id: str | None = None
    ) -> list[TranscriptMessage]:
        sql = f"SELECT {TRANSCRIPT_COLUMNS} FROM transcript_messages WHERE agent_id = %s"
        params: list[Any] = [agent_id]
        if session_id is not None:
            sql += " AND session_id = %s"
            params.append(session_id)
        with self.read() as conn:
            rows = conn.execute(sql + ' ORDER BY session_id COLLATE "C", seq', params).fetchall()
        return [DECODE.transcript_message(r) for r in rows]

    def transcript_marks(self, agent_id: str) -> dict[str, TranscriptMark]:
        with self.read() as conn:
            rows = conn.execute(
                f"SELECT {MARK_COLUMNS} FROM transcript_marks WHERE agent_id = %s", (agent_id,)
            ).fetchall()
        return DECODE.transcript_marks(rows)

    def forget_session(self, agent_id: str, session_id: str) -> int:
        with self.write() as conn:
            conn.execute(
                "DELETE FROM transcript_marks WHERE agent_id = %s AND session_id = %s",
                (agent_id, session_id),
            )
            gone = conn.execute(
                "DELETE FROM transcript_messages WHERE agent_id = %s AND session_id = %s "
                "RETURNING id, content, speaker, role",
                (agent_id, session_id),
            ).fetchall()
            index_docs(PostgresSql(conn), agent_id, [Doc(*r) for r in gone], sign=-1)
            return len(gone)

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
