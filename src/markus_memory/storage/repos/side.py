"""Mailbox items, decisions and chat history: the records and the repository protocols both
backends implement (:mod:`..side_tables`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..base import JsonObject


@dataclass(frozen=True)
class MailboxItem:
    """A unit of work queued for an agent (a row of ``mailbox_items``)."""

    id: str
    agent_id: str
    source_type: str
    queued_at: datetime
    priority: int = 2
    status: str = "queued"
    payload: JsonObject = field(default_factory=dict)
    metadata: JsonObject = field(default_factory=dict)
    started_at: datetime | None = None
    completed_at: datetime | None = None
    deferred_until: datetime | None = None
    merged_into: str | None = None
    retry_count: int = 0


@dataclass(frozen=True)
class Decision:
    """A scheduling decision about a mailbox item (a row of ``agent_decisions``)."""

    id: str
    agent_id: str
    decision_type: str
    mailbox_item_id: str
    created_at: datetime
    context: JsonObject = field(default_factory=dict)
    reasoning: str = ""
    outcome: str | None = None


@dataclass(frozen=True)
class ChatSession:
    """A UI chat session (``chat_sessions``); ids look like ``cs_<16hex>``."""

    id: str
    agent_id: str
    created_at: datetime
    user_id: str | None = None
    title: str | None = None
    is_main: bool = False
    metadata: JsonObject | None = None
    last_message_at: datetime | None = None


@dataclass(frozen=True)
class ChatMessage:
    """One message of a UI chat session (``chat_messages``); ids look like ``cm_<16hex>``."""

    id: str
    session_id: str
    agent_id: str
    role: str
    content: str
    created_at: datetime
    metadata: JsonObject | None = None
    tokens_used: int = 0


class MailboxRepo(Protocol):
    """Mailbox items and the decisions taken about them."""

    def save_mailbox_item(self, item: MailboxItem) -> None:
        """Insert or replace (the original saves with INSERT OR REPLACE)."""
        ...

    def get_mailbox_item(self, agent_id: str, item_id: str) -> MailboxItem | None: ...

    def mailbox_items(
        self, agent_id: str, *, status: str | None = None, limit: int = 100
    ) -> list[MailboxItem]:
        """By priority, then ``queued_at``."""
        ...

    def record_decision(self, decision: Decision) -> None: ...

    def decisions(
        self, agent_id: str, *, mailbox_item_id: str | None = None, limit: int = 100
    ) -> list[Decision]:
        """Oldest first."""
        ...


class ChatRepo(Protocol):
    """UI chat sessions and messages, read back in order for session restore."""

    def create_chat_session(self, session: ChatSession) -> None: ...

    def get_chat_session(self, agent_id: str, session_id: str) -> ChatSession | None: ...

    def chat_sessions(self, agent_id: str, *, limit: int = 50) -> list[ChatSession]:
        """Most recently active first."""
        ...

    def append_chat_message(self, message: ChatMessage) -> None:
        """Store a message and bump the session's ``last_message_at``."""
        ...

    def chat_messages(
        self, agent_id: str, session_id: str, *, limit: int | None = None
    ) -> list[ChatMessage]:
        """In conversation order; with ``limit``, the last ``limit`` messages."""
        ...
