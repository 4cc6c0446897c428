"""Row → record mapping and argument checks shared by the SQLite and PostgreSQL side tables.

Both backends select the same columns in the same order (the ``*_COLUMNS`` lists below) and
differ only in how a stored time or JSON value reads back; a :class:`RowDecoder` carries those
two conversions and builds the records of :mod:`.repos`. SQL text stays with each dialect;
each ``*_conn`` module holds its decoder (``DECODE``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from ..errors import InvalidInputError
from .repos.activities import Activity, ActivityLogEntry
from .repos.side import ChatMessage, ChatSession, Decision, MailboxItem
from .repos.transcripts import TranscriptMark, TranscriptMessage

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

ACTIVITY_COLUMNS = (
    "id, agent_id, type, label, started_at, task_id, mailbox_item_id, ended_at, "
    "total_tokens, total_tools, success, summary, keywords"
)
# Read through ``agent_activity_logs l`` (joined with its activity).
LOG_COLUMNS = "l.activity_id, l.seq, l.type, l.content, l.metadata, l.created_at"
MAILBOX_COLUMNS = (
    "id, agent_id, source_type, priority, status, payload, metadata, queued_at, started_at, "
    "completed_at, deferred_until, merged_into, retry_count"
)
DECISION_COLUMNS = (
    "id, agent_id, decision_type, mailbox_item_id, created_at, context, reasoning, outcome"
)
SESSION_COLUMNS = "id, agent_id, created_at, user_id, title, is_main, metadata, last_message_at"
# Read through ``chat_messages m`` (joined with its session).
MESSAGE_COLUMNS = (
    "m.id, m.session_id, m.agent_id, m.role, m.content, m.created_at, m.metadata, m.tokens_used"
)
TRANSCRIPT_COLUMNS = "agent_id, session_id, seq, role, content, created_at, speaker, metadata, body"
MARK_COLUMNS = "session_id, next_seq, synced_at"


class Row(Protocol):
    """A result row read by position (a tuple, or an ``sqlite3.Row``)."""

    def __getitem__(self, index: int, /) -> Any: ...
    def __len__(self) -> int: ...


@dataclass(frozen=True)
class RowDecoder:
    """Builds records from rows; ``when`` reads a stored time, ``obj`` a stored JSON object."""

    when: Callable[[Any], datetime | None]
    obj: Callable[[Any], dict[str, Any]]

    def activity(self, r: Row) -> Activity:
        return Activity(
            id=r[0],
            agent_id=r[1],
            type=r[2],
            label=r[3],
            started_at=self.when(r[4]) or EPOCH,
            task_id=r[5],
            mailbox_item_id=r[6],
            ended_at=self.when(r[7]),
            total_tokens=int(r[8] or 0),
            total_tools=int(r[9] or 0),
            success=bool(r[10]) if r[10] is not None else True,
            summary=r[11] or "",
            keywords=tuple(k.strip() for k in (r[12] or "").split(",") if k.strip()),
        )

    def activity_log(self, r: Row) -> ActivityLogEntry:
        return ActivityLogEntry(
            activity_id=r[0],
            seq=int(r[1]),
            type=r[2],
            content=r[3] or "",
            metadata=self.obj(r[4]),
            created_at=self.when(r[5]) or EPOCH,
        )

    def mailbox_item(self, r: Row) -> MailboxItem:
        return MailboxItem(
            id=r[0],
            agent_id=r[1],
            source_type=r[2],
            priority=int(r[3] if r[3] is not None else 2),
            status=r[4] or "queued",
            payload=self.obj(r[5]),
            metadata=self.obj(r[6]),
            queued_at=self.when(r[7]) or EPOCH,
            started_at=self.when(r[8]),
            completed_at=self.when(r[9]),
            deferred_until=self.when(r[10]),
            merged_into=r[11],
            retry_count=int(r[12] or 0),
        )

    def decision(self, r: Row) -> Decision:
        return Decision(
            id=r[0],
            agent_id=r[1],
            decision_type=r[2],
            mailbox_item_id=r[3],
            created_at=self.when(r[4]) or EPOCH,
            context=self.obj(r[5]),
            reasoning=r[6] or "",
            outcome=r[7],
        )

    def chat_session(self, r: Row) -> ChatSession:
        return ChatSession(
            id=r[0],
            agent_id=r[1],
            created_at=self.when(r[2]) or EPOCH,
            user_id=r[3],
            title=r[4],
            is_main=bool(r[5]),
            metadata=None if r[6] is None else self.obj(r[6]),
            last_message_at=self.when(r[7]),
        )

    def chat_message(self, r: Row) -> ChatMessage:
        return ChatMessage(
            id=r[0],
            session_id=r[1],
            agent_id=r[2],
            role=r[3],
            content=r[4] or "",
            created_at=self.when(r[5]) or EPOCH,
            metadata=None if r[6] is None else self.obj(r[6]),
            tokens_used=int(r[7] or 0),
        )

    def transcript_message(self, r: Row) -> TranscriptMessage:
        return TranscriptMessage(
            agent_id=r[0],
            session_id=r[1],
            seq=int(r[2]),
            role=r[3],
            content=r[4],
            created_at=self.when(r[5]) or EPOCH,
            speaker=r[6],
            metadata=None if r[7] is None else self.obj(r[7]),
            body=r[8] if len(r) > 8 else None,  # recall reads turns without their bodies
        )

    def transcript_marks(self, rows: Sequence[Row]) -> dict[str, TranscriptMark]:
        return {r[0]: TranscriptMark(int(r[1]), self.when(r[2]) or EPOCH) for r in rows}


def import_top(agent_id: str, session_id: str, messages: Sequence[TranscriptMessage]) -> int:
    """The ``next_seq`` an import of ``messages`` covers (top seq + 1, 0 for none); every
    message must belong to the session being imported."""
    for m in messages:
        if m.agent_id != agent_id or m.session_id != session_id:
            raise InvalidInputError("import_transcript: message of another session")
    return max((int(m.seq) + 1 for m in messages), default=0)
