"""SQLite repositories beside activities: mailbox items, decisions and chat history."""

from __future__ import annotations

from datetime import datetime
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
from .sqlite_conn import (
    DECODE,
    SqliteDatabase,
    json_text,
    to_iso,
)


def _opt_iso(moment: datetime | None) -> str | None:
    return None if moment is None else to_iso(moment)


class SqliteSideTables(SqliteDatabase):
    """Mailbox, decisions and chat sessions/messages."""

    # -- mailbox ------------------------------------------------------------------------------

    def save_mailbox_item(self, item: MailboxItem) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO mailbox_items (id, agent_id, source_type, priority, "
                "status, payload, metadata, queued_at, started_at, completed_at, "
                "deferred_until, merged_into, retry_count) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    item.id,
                    item.agent_id,
                    item.source_type,
                    item.priority,
                    item.status,
                    json_text(item.payload),
                    json_text(item.metadata),
                    to_iso(item.queued_at),
                    _opt_iso(item.started_at),
                    _opt_iso(item.completed_at),
                    _opt_iso(item.deferred_until),
                    item.merged_into,
                    item.retry_count,
                ),
            )

    def get_mailbox_item(self, agent_id: str, item_id: str) -> MailboxItem | None:
        with self.read() as conn:
            row = conn.execute(
                f"SELECT {MAILBOX_COLUMNS} FROM mailbox_items WHERE id = ? AND agent_id = ?",
                (item_id, agent_id),
            ).fetchone()
        return None if row is None else DECODE.mailbox_item(row)

    def mailbox_items(
        self, agent_id: str, *, status: str | None = None, limit: int = 100
    ) -> list[MailboxItem]:
        sql = f"SELECT {MAILBOX_COLUMNS} FROM mailbox_items WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        sql += " ORDER BY priority, queued_at, id LIMIT ?"
        params.append(max(0, int(limit)))
        with self.read() as conn:
            return [DECODE.mailbox_item(r) for r in conn.execute(sql, params)]

    def record_decision(self, decision: Decision) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO agent_decisions (id, agent_id, decision_type, mailbox_item_id, "
                "context, reasoning, outcome, created_at) VALUES (?,?,?,?,?,?,?,?)",
                (
                    decision.id,
                    decision.agent_id,
                    decision.decision_type,
                    decision.mailbox_item_id,
                    json_text(decision.context),
                    decision.reasoning,
                    decision.outcome,
                    to_iso(decision.created_at),
                ),
            )

    def decisions(
        self, agent_id: str, *, mailbox_item_id: str | None = None, limit: int = 100
    ) -> list[Decision]:
        sql = f"SELECT {DECISION_COLUMNS} FROM agent_decisions WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if mailbox_item_id is not None:
            sql += " AND mailbox_item_id = ?"
            params.append(mailbox_item_id)
        sql += " ORDER BY created_at, rowid LIMIT ?"
        params.append(max(0, int(limit)))
        with self.read() as conn:
            return [DECODE.decision(r) for r in conn.execute(sql, params)]

    # -- chat history -------------------------------------------------------------------------

    def create_chat_session(self, session: ChatSession) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO chat_sessions (id, agent_id, user_id, title, is_main, metadata, "
                "created_at, last_message_at) VALUES (?,?,?,?,?,?,?,?)",
                (
                    session.id,
                    session.agent_id,
                    session.user_id,
                    session.title,
                    int(session.is_main),
                    json_text(session.metadata),
                    to_iso(session.created_at),
                    _opt_iso(session.last_message_at),
                ),
            )

    def get_chat_session(self, agent_id: str, session_id: str) -> ChatSession | None:
        with self.read() as conn:
            row = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE id = ? AND agent_id = ?",
                (session_id, agent_id),
            ).fetchone()
        return None if row is None else DECODE.chat_session(row)

    def chat_sessions(self, agent_id: str, *, limit: int = 50) -> list[ChatSession]:
        with self.read() as conn:
            rows = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE agent_id = ? "
                "ORDER BY COALESCE(last_message_at, created_at) DESC, id DESC LIMIT ?",
                (agent_id, max(0, int(limit))),
            ).fetchall()
        return [DECODE.chat_session(r) for r in rows]

    def append_chat_message(self, message: ChatMessage) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO chat_messages (id, session_id, agent_id, role, content, metadata, "
                "tokens_used, created_at) VALUES (?,?,?,?,?,?,?,?)",
                (
                    message.id,
                    message.session_id,
                    message.agent_id,
                    message.role,
                    message.content,
                    json_text(message.metadata),
                    message.tokens_used,
                    to_iso(message.created_at),
                ),
            )
            conn.execute(
                "UPDATE chat_sessions SET last_message_at = ?1 WHERE id = ?2 "
                "AND (last_message_at IS NULL OR last_message_at < ?1)",
                (to_iso(message.created_at), message.session_id),
            )

    def chat_messages(
        self, agent_id: str, session_id: str, *, limit: int | None = None
    ) -> list[ChatMessage]:
        # rowid breaks ties between messages written in the same millisecond.
        sql = (
            f"SELECT {MESSAGE_COLUMNS} FROM chat_messages m JOIN chat_sessions s "
            "ON s.id = m.session_id WHERE m.session_id = ? AND s.agent_id = ? "
            "ORDER BY m.created_at DESC, m.rowid DESC"
        )
        params: list[Any] = [session_id, agent_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        with self.read() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [DECODE.chat_message(r) for r in reversed(rows)]
