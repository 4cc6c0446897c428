"""Mailbox items, decisions and chat history: written once for both backends.

Each repository is constructed with the database it uses (``SqliteDatabase`` or
``PostgresDatabase``): ``read``/``write`` and the :class:`~.dialect.Dialect` that spells the
SQL and adapts the values.
"""

from __future__ import annotations

from typing import Any

from ._records import (
    DECISION_COLUMNS,
    MAILBOX_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
)
from .dialect import Repository
from .repos.side import ChatMessage, ChatSession, Decision, MailboxItem

_MAILBOX_UPDATED = (
    "agent_id",
    "source_type",
    "priority",
    "status",
    "payload",
    "metadata",
    "queued_at",
    "started_at",
    "completed_at",
    "deferred_until",
    "merged_into",
    "retry_count",
)


class Mailbox(Repository):
    """Mailbox items and the decisions taken about them."""

    def save_mailbox_item(self, item: MailboxItem) -> None:
        d = self.dialect
        j = "?" + d.json_cast
        with self.database.write() as conn:
            conn.execute(
                d.sql(
                    f"INSERT INTO mailbox_items ({MAILBOX_COLUMNS}) "
                    f"VALUES (?,?,?,?,?,{j},{j},?,?,?,?,?,?)"
                    + d.on_conflict_update("id", _MAILBOX_UPDATED)
                ),
                (
                    item.id,
                    item.agent_id,
                    d.text(item.source_type),
                    item.priority,
                    d.text(item.status),
                    d.json(item.payload),
                    d.json(item.metadata),
                    d.time(item.queued_at),
                    d.opt_time(item.started_at),
                    d.opt_time(item.completed_at),
                    d.opt_time(item.deferred_until),
                    item.merged_into,
                    item.retry_count,
                ),
            )

    def get_mailbox_item(self, agent_id: str, item_id: str) -> MailboxItem | None:
        d = self.dialect
        rows = self.select(
            f"SELECT {MAILBOX_COLUMNS} FROM mailbox_items WHERE id = ? AND agent_id = ?",
            (item_id, agent_id),
        )
        return d.decode.mailbox_item(rows[0]) if rows else None

    def mailbox_items(
        self, agent_id: str, *, status: str | None = None, limit: int = 100
    ) -> list[MailboxItem]:
        d = self.dialect
        sql = f"SELECT {MAILBOX_COLUMNS} FROM mailbox_items WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        sql += " ORDER BY priority, queued_at, id LIMIT ?"
        params.append(max(0, int(limit)))
        rows = self.select(sql, params)
        return [d.decode.mailbox_item(r) for r in rows]

    def record_decision(self, decision: Decision) -> None:
        d = self.dialect
        with self.database.write() as conn:
            conn.execute(
                d.sql(
                    "INSERT INTO agent_decisions (id, agent_id, decision_type, mailbox_item_id,"
                    " context, reasoning, outcome, created_at)"
                    f" VALUES (?,?,?,?,?{d.json_cast},?,?,?)"
                ),
                (
                    decision.id,
                    decision.agent_id,
                    d.text(decision.decision_type),
                    decision.mailbox_item_id,
                    d.json(decision.context),
                    d.text(decision.reasoning),
                    d.opt_text(decision.outcome),
                    d.time(decision.created_at),
                ),
            )

    def decisions(
        self, agent_id: str, *, mailbox_item_id: str | None = None, limit: int = 100
    ) -> list[Decision]:
        d = self.dialect
        sql = f"SELECT {DECISION_COLUMNS} FROM agent_decisions WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if mailbox_item_id is not None:
            sql += " AND mailbox_item_id = ?"
            params.append(mailbox_item_id)
        sql += f" ORDER BY created_at, {d.insertion_order('ord')} LIMIT ?"
        params.append(max(0, int(limit)))
        rows = self.select(sql, params)
        return [d.decode.decision(r) for r in rows]


class Chats(Repository):
    """UI chat sessions and their messages."""

    def create_chat_session(self, session: ChatSession) -> None:
        d = self.dialect
        with self.database.write() as conn:
            conn.execute(
                d.sql(
                    "INSERT INTO chat_sessions (id, agent_id, user_id, title, is_main, metadata, "
                    f"created_at, last_message_at) VALUES (?,?,?,?,?,?{d.json_cast},?,?)"
                ),
                (
                    session.id,
                    session.agent_id,
                    session.user_id,
                    d.opt_text(session.title),
                    d.flag(session.is_main),
                    d.json(session.metadata),
                    d.time(session.created_at),
                    d.opt_time(session.last_message_at),
                ),
            )

    def get_chat_session(self, agent_id: str, session_id: str) -> ChatSession | None:
        d = self.dialect
        rows = self.select(
            f"SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE id = ? AND agent_id = ?",
            (session_id, agent_id),
        )
        return d.decode.chat_session(rows[0]) if rows else None

    def chat_sessions(self, agent_id: str, *, limit: int = 50) -> list[ChatSession]:
        d = self.dialect
        rows = self.select(
            f"SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE agent_id = ? "
            "ORDER BY COALESCE(last_message_at, created_at) DESC, id DESC LIMIT ?",
            (agent_id, max(0, int(limit))),
        )
        return [d.decode.chat_session(r) for r in rows]

    def append_chat_message(self, message: ChatMessage) -> None:
        d = self.dialect
        created = d.time(message.created_at)
        with self.database.write() as conn:
            conn.execute(
                d.sql(
                    "INSERT INTO chat_messages (id, session_id, agent_id, role, content, metadata,"
                    f" tokens_used, created_at) VALUES (?,?,?,?,?,?{d.json_cast},?,?)"
                ),
                (
                    message.id,
                    message.session_id,
                    message.agent_id,
                    d.text(message.role),
                    d.text(message.content),
                    d.json(message.metadata),
                    message.tokens_used,
                    created,
                ),
            )
            conn.execute(
                d.sql(
                    "UPDATE chat_sessions SET last_message_at = ? WHERE id = ? "
                    "AND (last_message_at IS NULL OR last_message_at < ?)"
                ),
                (created, message.session_id, created),
            )

    def chat_messages(
        self, agent_id: str, session_id: str, *, limit: int | None = None
    ) -> list[ChatMessage]:
        d = self.dialect
        # The insertion order breaks ties between messages written in the same millisecond.
        order = d.insertion_order("ord")
        sql = (
            f"SELECT {MESSAGE_COLUMNS} FROM chat_messages m JOIN chat_sessions s "
            "ON s.id = m.session_id WHERE m.session_id = ? AND s.agent_id = ? "
            f"ORDER BY m.created_at DESC, m.{order} DESC"
        )
        params: list[Any] = [session_id, agent_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        rows = self.select(sql, params)
        return [d.decode.chat_message(r) for r in reversed(rows)]
