"""Everything an agent needs from a backend's episodic store: its repositories, each with its
own protocol (:mod:`.repos`; every read takes the caller's ``agent_id`` and returns only that
agent's rows), over one database. A layer is given the one repository it uses."""

from __future__ import annotations

from typing import Protocol

from .dialect import Database
from .repos.activities import ActivityRepo
from .repos.conversations import ConversationRepo, DailyLogRepo
from .repos.side import ChatRepo, MailboxRepo
from .repos.transcripts import TranscriptStore


class EpisodicStore(Protocol):
    """Everything AgentMemory needs from a backend (``storage/store.py`` composes it)."""

    @property
    def database(self) -> Database: ...
    @property
    def activities(self) -> ActivityRepo: ...
    @property
    def mailbox(self) -> MailboxRepo: ...
    @property
    def chats(self) -> ChatRepo: ...
    @property
    def transcripts(self) -> TranscriptStore: ...
    @property
    def conversations(self) -> ConversationRepo: ...
    @property
    def daily_logs(self) -> DailyLogRepo: ...

    def rebuild_derived(self) -> int:
        """Rebuild everything derived from the stored rows, for every agent: the activity
        search and the recall index (one transaction); the number of messages indexed."""
        ...

    def close(self) -> None: ...
