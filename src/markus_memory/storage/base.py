"""Backend-neutral records and repository protocols of the episodic store (SQLite, PostgreSQL).

Every read takes the caller's ``agent_id`` and only ever returns that agent's rows: an id that
belongs to another agent looks exactly like an unknown id (the original had no ownership check).
Times are timezone-aware UTC datetimes; backends store them as ``iso_ms`` strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..analysis import query_terms, query_tokens
from .recall_contract import RecallIndex

JsonObject = Mapping[str, Any]

# Longest query text and most terms a search will look at (bounds the cost of hostile input).
MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 16


def search_terms(query: str) -> list[str]:
    """The index terms a free-text activity query looks for: the one analyser's terms
    (:mod:`markus_memory.analysis`) of its first :data:`MAX_QUERY_TERMS` content words,
    distinct, in first-seen order. Stop words alone give none (the query finds nothing).
    Backends quote each term as a literal (FTS5: ``quote_fts``; PostgreSQL: a quoted
    ``tsquery`` lexeme), so no term is ever parsed as query syntax.
    """
    if not isinstance(query, str):
        return []
    found = query_tokens(query_terms(query[:MAX_QUERY_CHARS])[:MAX_QUERY_TERMS])
    return [term for term in dict.fromkeys(found) if term]


@dataclass(frozen=True)
class Activity:
    """One episode of an agent (a row of ``agent_activities``)."""

    id: str
    agent_id: str
    type: str
    label: str
    started_at: datetime
    task_id: str | None = None
    mailbox_item_id: str | None = None
    ended_at: datetime | None = None
    total_tokens: int = 0
    total_tools: int = 0
    success: bool = True
    summary: str = ""
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActivityEnd:
    """What ``end`` writes onto an activity."""

    ended_at: datetime
    total_tokens: int
    total_tools: int
    success: bool
    summary: str
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class ActivityLogEntry:
    """One ordered event of an activity (a row of ``agent_activity_logs``)."""

    activity_id: str
    seq: int
    type: str
    content: str
    metadata: JsonObject
    created_at: datetime


@dataclass(frozen=True)
class ActivityHit:
    """A search result: the activity and its relevance (higher is better; bm25 negated)."""

    activity: Activity
    score: float


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
    (:mod:`.conversations`); None for a message recorded from a session file."""


@dataclass(frozen=True)
class TranscriptMark:
    """How far the store holds a session: messages ``[0, next_seq)`` were recorded or imported,
    and ``synced_at`` is the session activity time they cover (compared with the session
    file's last activity to find files written past the store)."""

    next_seq: int
    synced_at: datetime


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


class ActivityRepo(Protocol):
    """Activities and their ordered logs."""

    def insert_activity(self, activity: Activity) -> None: ...

    def end_activity(self, agent_id: str, activity_id: str, end: ActivityEnd) -> bool:
        """Write the end fields; False (no error) when the activity is unknown or foreign."""
        ...

    def append_log(
        self,
        agent_id: str,
        activity_id: str,
        type: str,
        content: str,
        metadata: JsonObject,
        created_at: datetime,
    ) -> int | None:
        """Append a log with the next ``seq`` (assigned atomically); None if unknown/foreign."""
        ...

    def get_activity(self, agent_id: str, activity_id: str) -> Activity | None: ...

    def activity_logs(self, agent_id: str, activity_id: str) -> list[ActivityLogEntry]:
        """Logs in ``seq`` order; [] when the activity is unknown or foreign."""
        ...

    def query_activities(
        self,
        agent_id: str,
        *,
        types: Sequence[str] | None = None,
        task_id: str | None = None,
        before: datetime | None = None,
        limit: int = 30,
    ) -> list[Activity]:
        """Newest first (``started_at DESC``)."""
        ...

    def search_activities(self, agent_id: str, query: str, *, limit: int = 10) -> list[ActivityHit]:
        """Ranked full-text search over label, summary, keywords and log content."""
        ...

    def prune_activities(self, agent_id: str, *, before: datetime) -> int:
        """Delete the agent's activities started before ``before``, with their logs and search
        documents; the number of activities removed (the original never pruned them)."""
        ...

    def activity_for_mailbox_item(self, agent_id: str, mailbox_item_id: str) -> Activity | None: ...

    def activities_for_mailbox_items(
        self, agent_id: str, mailbox_item_ids: Sequence[str]
    ) -> dict[str, Activity]: ...


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


class ConversationRepo(Protocol):
    """Conversations the store holds (:mod:`.conversations`) and database-held daily logs."""

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
    ) -> bool: ...
    def append_daily_log(self, agent_id: str, day: str, text: str) -> None: ...
    def import_daily_log(self, agent_id: str, day: str, text: str) -> bool: ...
    def replace_daily_log(self, agent_id: str, day: str, text: str | None) -> None: ...
    def daily_log_text(self, agent_id: str, day: str) -> str | None: ...
    def daily_log_days(self, agent_id: str) -> list[str]: ...


class EpisodicStore(
    ActivityRepo, MailboxRepo, ChatRepo, TranscriptStore, ConversationRepo, Protocol
):
    """Everything AgentMemory needs from a backend."""

    def rebuild_derived(self) -> int:
        """Rebuild everything derived from the stored rows, for every agent: the activity
        search and the recall index (one transaction); the number of messages indexed."""
        ...

    def close(self) -> None: ...
