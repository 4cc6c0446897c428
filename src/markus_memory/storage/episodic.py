"""Everything an agent needs from a backend's episodic store: one protocol composed of each
repository's (every read takes the caller's ``agent_id`` and returns only that agent's rows)."""

from __future__ import annotations

from typing import Protocol

from .repos.activities import ActivityRepo
from .repos.conversations import ConversationRepo
from .repos.side import ChatRepo, MailboxRepo
from .repos.transcripts import TranscriptStore


class EpisodicStore(
    ActivityRepo, MailboxRepo, ChatRepo, TranscriptStore, ConversationRepo, Protocol
):
    """Everything AgentMemory needs from a backend."""

    def rebuild_derived(self) -> int:
        """Rebuild everything derived from the stored rows, for every agent: the activity
        search and the recall index (one transaction); the number of messages indexed."""
        ...

    def close(self) -> None: ...
