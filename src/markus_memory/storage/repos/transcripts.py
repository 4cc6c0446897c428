"""The transcript: recorded session messages, per-session marks, and the protocols of the
transcript index and store (:mod:`..transcripts`, with the recall index of :mod:`..recall`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..base import JsonObject
from ..recall.contract import RecallIndex


@dataclass(frozen=True)
class TranscriptHit:
    """A transcript message matching a query; ``score`` is the negated bm25 (higher is better)."""

    agent_id: str
    session_id: str
    seq: int
    role: str
    content: str
    created_at: datetime
    score: float


@dataclass(frozen=True)
class TranscriptMessage:
    """One recorded session message. ``seq`` is its absolute position in the session: it never
    restarts, not even when compaction drops old messages from the session file."""

    agent_id: str
    session_id: str
    seq: int
    role: str
    content: str
    created_at: datetime
    speaker: str | None = None
    metadata: JsonObject | None = None
    body: str | None = field(default=None, compare=False)
    """The message exactly as given (JSON text) when the store holds its conversation
    (:mod:`..conversations`); None for a message recorded from a session file."""


@dataclass(frozen=True)
class TranscriptMark:
    """How far the store holds a session: messages ``[0, next_seq)`` were recorded or imported,
    and ``synced_at`` is the session activity time they cover (compared with the session
    file's last activity to find files written past the store)."""

    next_seq: int
    synced_at: datetime


class TranscriptIndex(Protocol):
    """The durable transcript of every session (fed by SessionStore through AgentMemory), with
    full-text search."""

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
        """Record (or re-record) message ``seq`` of a session. In the same transaction the
        session's mark advances while the store holds the session without a gap: message 0
        creates it as ``(1, appended_at)``; with ``seq <= next_seq`` it becomes
        ``(max(next_seq, seq + 1), max(synced_at, appended_at))``; after a gap (or with no mark
        and ``seq > 0``) it is left alone. ``appended_at`` defaults to ``created_at``."""
        ...

    def import_transcript(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[TranscriptMessage],
        *,
        synced_at: datetime,
    ) -> int:
        """Record the messages whose ``seq`` the session does not hold yet (rows already there
        keep their exact times) and set its mark to ``(max(next_seq, top seq + 1),
        max(synced_at, synced_at argument))``, created if absent; one transaction. The number
        of messages added."""
        ...

    def transcript_messages(
        self, agent_id: str, *, session_id: str | None = None
    ) -> list[TranscriptMessage]:
        """Every recorded message of the agent (or of one session), by session id then seq."""
        ...

    def transcript_metadata_strings(
        self, agent_id: str, session_id: str, path: Sequence[str]
    ) -> list[str]:
        """The string at ``path`` (keys from the top) in the metadata of each message of one
        session, by seq; messages without a string there are left out. Reads that value
        only, so a caller can check what a long session holds without loading it."""
        ...

    def transcript_marks(self, agent_id: str) -> dict[str, TranscriptMark]:
        """The mark of every session of the agent the store holds."""
        ...

    def forget_session(self, agent_id: str, session_id: str) -> int:
        """Drop a session's messages, mark and (when the store holds it) head; the number of
        messages removed."""
        ...

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
        """Ranked candidates (best first)."""
        ...


class TranscriptStore(TranscriptIndex, RecallIndex, Protocol):
    """The transcript side of an episodic store: records, marks and the recall index."""

    def reindex_recall(self, agent_id: str | None = None) -> int:
        """Rebuild the recall index (of one agent, or all) from the stored messages."""
        ...
