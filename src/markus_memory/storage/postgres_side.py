"""PostgreSQL repositories beside activities: mailbox, decisions and chat history."""

from __future__ import annotations

from typing import Any

from ._records import (
    DECISION_COLUMNS,
    MAILBOX_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
)
from .base import (
    ChatMessage,
    ChatSession,
    Decision,
    MailboxItem,
)
from .postgres_conn import (
    DECODE,
    PostgresDatabase,
    clean_text,
    json_param,
    opt_utc,
    to_utc,
)


class PostgresSideTables(PostgresDatabase):
    """Mailbox, decisions and chat sessions/messages."""

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
                    json_param(item.payload),
                    json_param(item.metadata),
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
                    json_param(decision.context),
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
                    json_param(session.metadata),
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
                    json_param(message.metadata),
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
