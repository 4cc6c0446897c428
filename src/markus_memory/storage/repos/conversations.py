"""Conversations the store holds and database-held daily logs: the records and the repository
protocols both backends implement (:mod:`..conversations`, :mod:`..daily_logs`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..base import JsonObject


@dataclass(frozen=True)
class ConversationHead:
    """What the store knows of one conversation it holds."""

    session_id: str
    kind: str
    started_at: datetime
    last_activity_at: datetime
    first_seq: int
    next_seq: int
    view_from: int
    """A Markus session's view starts at this seq (the messages before it are ``summary``)."""
    summary: str | None
    title: str | None
    details: JsonObject | None

    @property
    def count(self) -> int:
        """The messages the conversation holds (from its first seq to its next)."""
        return self.next_seq - self.first_seq


@dataclass(frozen=True)
class NewEntry:
    """A message to append: the exact ``body`` (JSON text) and what recall indexes."""

    role: str
    text: str
    body: str
    created_at: datetime
    speaker: str | None = None
    metadata: JsonObject | None = None


@dataclass(frozen=True)
class StoredEntry:
    """A message of a held conversation. ``body`` is None for a message recorded from a
    session file before the store held the conversation (role, text and metadata are all
    that is known of it)."""

    seq: int
    role: str
    text: str
    created_at: datetime
    metadata: JsonObject | None
    body: str | None


class ConversationRepo(Protocol):
    """Conversations the store holds (:mod:`..conversations`)."""

    def conversation(self, agent_id: str, session_id: str) -> ConversationHead | None: ...
    def start_conversation(
        self, agent_id: str, session_id: str, kind: str, at: datetime
    ) -> ConversationHead: ...
    def conversations(self, agent_id: str, kind: str | None = None) -> list[ConversationHead]: ...
    def set_conversation_details(
        self, agent_id: str, session_id: str, *, title: str | None, details: JsonObject | None
    ) -> bool: ...
    def append_conversation(
        self,
        agent_id: str,
        session_id: str,
        kind: str,
        entries: Sequence[NewEntry],
        at: datetime,
        *,
        create: bool = True,
        describe: tuple[str | None, JsonObject | None] | None = None,
    ) -> ConversationHead: ...
    def forget_conversation_head(self, agent_id: str, session_id: str) -> None: ...
    def forget_session(self, agent_id: str, session_id: str) -> int:
        """Drop a conversation: its messages, mark and head; the number of messages removed."""
        ...

    def conversation_entries(
        self,
        agent_id: str,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        limit: int | None = None,
    ) -> list[StoredEntry]: ...
    def compact_conversation(
        self, agent_id: str, session_id: str, view_from: int, summary: str
    ) -> bool: ...
    def drop_last_entry(self, agent_id: str, session_id: str) -> StoredEntry | None: ...
    def adopt_entries(
        self,
        agent_id: str,
        session_id: str,
        kind: str,
        *,
        started_at: datetime,
        last_activity_at: datetime,
        first_seq: int,
        next_seq: int,
        view_from: int,
        summary: str | None,
        bodies: Sequence[tuple[int, str]],
        details: JsonObject | None = None,
    ) -> bool: ...


class DailyLogRepo(Protocol):
    """Daily logs held in the database (:mod:`..daily_logs`)."""

    def append_daily_log(self, agent_id: str, day: str, text: str) -> None: ...
    def import_daily_log(self, agent_id: str, day: str, text: str) -> bool: ...
    def replace_daily_log(self, agent_id: str, day: str, text: str | None) -> None: ...
    def daily_log_text(self, agent_id: str, day: str) -> str | None: ...
    def daily_log_days(self, agent_id: str) -> list[str]: ...
