"""PostgreSQL transcript index: every recorded session message, its marks and full-text search."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ._records import (
    HIT_COLUMNS,
    MARK_COLUMNS,
    TRANSCRIPT_COLUMNS,
    import_top,
    transcript_filters,
)
from .base import (
    JsonObject,
    TranscriptHit,
    TranscriptMark,
    TranscriptMessage,
    search_terms,
)
from .postgres_conn import (
    DECODE,
    PostgresDatabase,
    clean_text,
    json_param,
    to_utc,
)
from .postgres_schema import tsquery_sql


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


class PostgresTranscriptIndex(PostgresDatabase):
    """The transcript index (:class:`~.base.TranscriptIndex`)."""

    search_candidates: int

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
            conn.execute(
                "INSERT INTO transcript_messages (agent_id, session_id, seq, role, content, "
                "created_at, speaker, metadata) VALUES (%s,%s,%s,%s,%s,%s,%s,%s::jsonb) "
                "ON CONFLICT (agent_id, session_id, seq) DO UPDATE SET role = EXCLUDED.role, "
                "content = EXCLUDED.content, created_at = EXCLUDED.created_at, "
                "speaker = EXCLUDED.speaker, metadata = EXCLUDED.metadata",
                _transcript_row(message),
            )
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
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO transcript_messages (agent_id, session_id, seq, role, "
                        "content, created_at, speaker, metadata) "
                        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s::jsonb) "
                        "ON CONFLICT (agent_id, session_id, seq) DO NOTHING",
                        rows,
                        returning=False,
                    )
                    added = max(cur.rowcount, 0)
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
            return conn.execute(
                "DELETE FROM transcript_messages WHERE agent_id = %s AND session_id = %s",
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
        """Messages containing any query term, best ``ts_rank`` first (as SQLite's bm25 order).

        Ranking covers every match when there are at most ``search_candidates``; beyond that,
        the newest matches (score 0.0).
        """
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        tsquery, terms_params = tsquery_sql(terms, any_term=True)
        filters = transcript_filters(
            to_utc, session_id=session_id, role=role, since=since, until=until
        )
        where = f"agent_id = %s AND search @@ {tsquery}"
        where += "".join(f" AND {test} %s" for test, _ in filters)
        params: list[Any] = [agent_id, *terms_params, *(value for _, value in filters)]
        with self.read() as conn:
            # Newest matches first, with their rank; a complete set is then ordered by rank.
            rows = conn.execute(
                f"SELECT {HIT_COLUMNS}, ts_rank(search, {tsquery}) FROM transcript_messages "
                f"WHERE {where} ORDER BY id DESC LIMIT %s",
                (*terms_params, *params, self.search_candidates + 1),
            ).fetchall()
        if len(rows) <= self.search_candidates:
            rows = sorted(rows, key=lambda r: -float(r[6]))[:limit]
        else:
            rows = [(*r[:6], 0.0) for r in rows[: min(limit, self.search_candidates)]]
        return [DECODE.transcript_hit(r, float(r[6])) for r in rows]
