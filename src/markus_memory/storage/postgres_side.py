"""PostgreSQL repositories beside activities: mailbox, decisions, chat history, transcripts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ._records import (
    DECISION_COLUMNS,
    HIT_COLUMNS,
    MAILBOX_COLUMNS,
    MARK_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    TRANSCRIPT_COLUMNS,
    import_top,
    transcript_filters,
)
from .base import (
    ChatMessage,
    ChatSession,
    Decision,
    JsonObject,
    MailboxItem,
    TranscriptHit,
    TranscriptMark,
    TranscriptMessage,
    search_terms,
)
from .postgres_conn import (
    DECODE,
    PostgresDatabase,
    clean_text,
    json_value,
    opt_utc,
    to_utc,
)
from .postgres_schema import FTS_CONFIG


def tsquery_sql(terms: Sequence[str], *, any_term: bool = False) -> tuple[str, list[str]]:
    """SQL for a tsquery in which every term is a literal phrase, and its parameters."""
    part = f"phraseto_tsquery('{FTS_CONFIG}', %s)"
    joined = (" || " if any_term else " && ").join([part] * len(terms))
    return f"({joined})", [clean_text(t) for t in terms]


def _json(value: Any) -> str | None:
    text = json_value(value)
    return None if text is None else clean_text(text)


def _transcript_row(m: TranscriptMessage) -> tuple[Any, ...]:
    return (
        m.agent_id,
        m.session_id,
        int(m.seq),
        clean_text(m.role),
        clean_text(m.content),
        to_utc(m.created_at),
        None if m.speaker is None else clean_text(m.speaker),
        _json(m.metadata),
    )


class PostgresSideTables(PostgresDatabase):
    """Mailbox, decisions, chat sessions/messages and the transcript index."""

    search_candidates: int

    # -- mailbox ------------------------------------------------------------------------------

    def save_mailbox_item(self, item: MailboxItem) -> None:
        with self.write() as conn:
            conn.execute(
                f"INSERT INTO mailbox_items ({MAILBOX_COLUMNS}) "
                "VALUES (%s,%s,%s,%s,%s,%s::jsonb,%s::jsonb,%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (id) DO UPDATE SET agent_id = EXCLUDED.agent_id, "
                "source_type = EXCLUDED.source_type, priority = EXCLUDED.priority, "
                "status = EXCLUDED.status, payload = EXCLUDED.payload, "
                "metadata = EXCLUDED.metadata, queued_at = EXCLUDED.queued_at, "
                "started_at = EXCLUDED.started_at, completed_at = EXCLUDED.completed_at, "
                "deferred_until = EXCLUDED.deferred_until, merged_into = EXCLUDED.merged_into, "
                "retry_count = EXCLUDED.retry_count",
                (
                    item.id,
                    item.agent_id,
                    clean_text(item.source_type),
                    item.priority,
                    clean_text(item.status),
                    _json(item.payload),
                    _json(item.metadata),
                    to_utc(item.queued_at),
                    opt_utc(item.started_at),
                    opt_utc(item.completed_at),
                    opt_utc(item.deferred_until),
                    item.merged_into,
                    item.retry_count,
                ),
            )

    def get_mailbox_item(self, agent_id: str, item_id: str) -> MailboxItem | None:
        with self.read() as conn:
            row = conn.execute(
                f"SELECT {MAILBOX_COLUMNS} FROM mailbox_items WHERE id = %s AND agent_id = %s",
                (item_id, agent_id),
            ).fetchone()
        return None if row is None else DECODE.mailbox_item(row)

    def mailbox_items(
        self, agent_id: str, *, status: str | None = None, limit: int = 100
    ) -> list[MailboxItem]:
        sql = f"SELECT {MAILBOX_COLUMNS} FROM mailbox_items WHERE agent_id = %s"
        params: list[Any] = [agent_id]
        if status is not None:
            sql += " AND status = %s"
            params.append(status)
        sql += " ORDER BY priority, queued_at, id LIMIT %s"
        params.append(max(0, int(limit)))
        with self.read() as conn:
            return [DECODE.mailbox_item(r) for r in conn.execute(sql, params).fetchall()]

    def record_decision(self, decision: Decision) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO agent_decisions (id, agent_id, decision_type, mailbox_item_id, "
                "context, reasoning, outcome, created_at) "
                "VALUES (%s,%s,%s,%s,%s::jsonb,%s,%s,%s)",
                (
                    decision.id,
                    decision.agent_id,
                    clean_text(decision.decision_type),
                    decision.mailbox_item_id,
                    _json(decision.context),
                    clean_text(decision.reasoning),
                    None if decision.outcome is None else clean_text(decision.outcome),
                    to_utc(decision.created_at),
                ),
            )

    def decisions(
        self, agent_id: str, *, mailbox_item_id: str | None = None, limit: int = 100
    ) -> list[Decision]:
        sql = f"SELECT {DECISION_COLUMNS} FROM agent_decisions WHERE agent_id = %s"
        params: list[Any] = [agent_id]
        if mailbox_item_id is not None:
            sql += " AND mailbox_item_id = %s"
            params.append(mailbox_item_id)
        sql += " ORDER BY created_at, ord LIMIT %s"
        params.append(max(0, int(limit)))
        with self.read() as conn:
            return [DECODE.decision(r) for r in conn.execute(sql, params).fetchall()]

    # -- chat history -------------------------------------------------------------------------

    def create_chat_session(self, session: ChatSession) -> None:
        with self.write() as conn:
            conn.execute(
                f"INSERT INTO chat_sessions ({SESSION_COLUMNS}) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s::jsonb,%s)",
                (
                    session.id,
                    session.agent_id,
                    to_utc(session.created_at),
                    session.user_id,
                    None if session.title is None else clean_text(session.title),
                    bool(session.is_main),
                    _json(session.metadata),
                    opt_utc(session.last_message_at),
                ),
            )

    def get_chat_session(self, agent_id: str, session_id: str) -> ChatSession | None:
        with self.read() as conn:
            row = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE id = %s AND agent_id = %s",
                (session_id, agent_id),
            ).fetchone()
        return None if row is None else DECODE.chat_session(row)

    def chat_sessions(self, agent_id: str, *, limit: int = 50) -> list[ChatSession]:
        with self.read() as conn:
            rows = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE agent_id = %s "
                "ORDER BY COALESCE(last_message_at, created_at) DESC, id DESC LIMIT %s",
                (agent_id, max(0, int(limit))),
            ).fetchall()
        return [DECODE.chat_session(r) for r in rows]

    def append_chat_message(self, message: ChatMessage) -> None:
        created = to_utc(message.created_at)
        with self.write() as conn:
            conn.execute(
                "INSERT INTO chat_messages (id, session_id, agent_id, role, content, metadata, "
                "tokens_used, created_at) VALUES (%s,%s,%s,%s,%s,%s::jsonb,%s,%s)",
                (
                    message.id,
                    message.session_id,
                    message.agent_id,
                    clean_text(message.role),
                    clean_text(message.content),
                    _json(message.metadata),
                    message.tokens_used,
                    created,
                ),
            )
            conn.execute(
                "UPDATE chat_sessions SET last_message_at = %s WHERE id = %s "
                "AND (last_message_at IS NULL OR last_message_at < %s)",
                (created, message.session_id, created),
            )

    def chat_messages(
        self, agent_id: str, session_id: str, *, limit: int | None = None
    ) -> list[ChatMessage]:
        # ord breaks ties between messages written in the same millisecond.
        sql = (
            f"SELECT {MESSAGE_COLUMNS} FROM chat_messages m JOIN chat_sessions s "
            "ON s.id = m.session_id WHERE m.session_id = %s AND s.agent_id = %s "
            "ORDER BY m.created_at DESC, m.ord DESC"
        )
        params: list[Any] = [session_id, agent_id]
        if limit is not None:
            sql += " LIMIT %s"
            params.append(max(0, int(limit)))
        with self.read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [DECODE.chat_message(r) for r in reversed(rows)]

    # -- transcript index ---------------------------------------------------------------------

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
