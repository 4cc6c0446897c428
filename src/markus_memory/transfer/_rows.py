"""Episodic rows of one agent, read and written through the EpisodicStore protocol only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from ..storage.episodic import EpisodicStore
from ..storage.repos.activities import Activity, ActivityLogEntry
from ..storage.repos.conversations import ConversationHead
from ..storage.repos.side import ChatMessage, ChatSession, Decision, MailboxItem
from ..storage.repos.transcripts import TranscriptMark, TranscriptMessage

ALL = 2**31 - 1
HISTORY = "history"
EPOCH_UTC = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class AgentRows:
    """Every stored row of one agent (derived indexes excluded: they are rebuilt).

    ``transcript`` is the session transcript, per session: its mark and its messages (the only
    copy of the turns compaction dropped from the session files). ``histories`` are the heads
    of the framework histories the store holds (their messages are in ``transcript``).
    """

    activities: tuple[tuple[Activity, tuple[ActivityLogEntry, ...]], ...]
    mailbox: tuple[MailboxItem, ...]
    decisions: tuple[Decision, ...]
    chats: tuple[tuple[ChatSession, tuple[ChatMessage, ...]], ...]
    agent_id: str = ""
    transcript: tuple[tuple[str, TranscriptMark, tuple[TranscriptMessage, ...]], ...] = ()
    histories: tuple[ConversationHead, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.activities
            or self.mailbox
            or self.decisions
            or self.chats
            or self.transcript
            or self.histories
        )

    @property
    def count(self) -> int:
        return (
            sum(1 + len(logs) for _, logs in self.activities)
            + len(self.mailbox)
            + len(self.decisions)
            + sum(1 + len(messages) for _, messages in self.chats)
            + sum(len(messages) for _, _, messages in self.transcript)
        )


def read_rows(store: EpisodicStore, agent_id: str) -> AgentRows:
    """The agent's rows, oldest first, in a canonical order (comparable between stores)."""
    activities = sorted(
        store.activities.query_activities(agent_id, limit=ALL), key=lambda a: (a.started_at, a.id)
    )
    chats = sorted(
        store.chats.chat_sessions(agent_id, limit=ALL), key=lambda s: (s.created_at, s.id)
    )
    return AgentRows(
        tuple((a, tuple(store.activities.activity_logs(agent_id, a.id))) for a in activities),
        tuple(sorted(store.mailbox.mailbox_items(agent_id, limit=ALL), key=lambda m: m.id)),
        tuple(
            sorted(store.mailbox.decisions(agent_id, limit=ALL), key=lambda d: (d.created_at, d.id))
        ),
        tuple((s, tuple(store.chats.chat_messages(agent_id, s.id))) for s in chats),
        agent_id,
        _transcript(store, agent_id),
        tuple(store.conversations.conversations(agent_id, HISTORY)),
    )


def _transcript(
    store: EpisodicStore, agent_id: str
) -> tuple[tuple[str, TranscriptMark, tuple[TranscriptMessage, ...]], ...]:
    by_session: dict[str, list[TranscriptMessage]] = {}
    for message in store.transcripts.transcript_messages(agent_id):
        by_session.setdefault(message.session_id, []).append(message)
    marks = store.transcripts.transcript_marks(agent_id)
    unmarked = TranscriptMark(0, EPOCH_UTC)  # held with a gap: the next recall re-imports it
    return tuple(
        (sid, marks.get(sid, unmarked), tuple(by_session.get(sid, ())))
        for sid in sorted(set(marks) | set(by_session))
    )


def write_rows(store: EpisodicStore, rows: AgentRows) -> None:
    """Insert ``rows`` into a store that holds none of them (log ``seq``s come out the same
    when the source's are 1..n, which the stores guarantee)."""
    for activity, logs in rows.activities:
        store.activities.insert_activity(activity)
        for log in logs:
            store.activities.append_log(
                activity.agent_id, activity.id, log.type, log.content, log.metadata, log.created_at
            )
    for item in rows.mailbox:
        store.mailbox.save_mailbox_item(item)
    for decision in rows.decisions:
        store.mailbox.record_decision(decision)
    for session, messages in rows.chats:
        store.chats.create_chat_session(session)
        for message in messages:
            store.chats.append_chat_message(message)
    for session_id, mark, transcript in rows.transcript:
        store.transcripts.import_transcript(
            rows.agent_id, session_id, transcript, synced_at=mark.synced_at
        )
    _hold_histories(store, rows.agent_id, rows.histories)


def _hold_histories(store: EpisodicStore, agent_id: str, heads: Sequence[ConversationHead]) -> int:
    """Make the store hold these histories over the rows copied (those it holds kept); how
    many it did not hold."""
    added = 0
    for head in heads:
        if store.conversations.adopt_entries(
            agent_id,
            head.session_id,
            HISTORY,
            started_at=head.started_at,
            last_activity_at=head.last_activity_at,
            first_seq=head.first_seq,
            next_seq=head.next_seq,
            view_from=head.view_from,
            summary=head.summary,
            bodies=[],
        ):
            store.conversations.set_conversation_details(
                agent_id, head.session_id, title=head.title, details=head.details
            )
            added += 1
    return added


def merge_rows(store: EpisodicStore, rows: AgentRows, present: AgentRows) -> int:
    """Add to ``store`` the rows of ``rows`` that ``present`` (its rows) lacks, by id: whole
    activities (with their logs), mailbox items, decisions, chat sessions and the messages a
    chat session lacks, and the transcript messages past what a session holds. Running it
    again adds nothing. How many rows were added."""
    have = {a.id for a, _ in present.activities}
    activities = tuple((a, logs) for a, logs in rows.activities if a.id not in have)
    mailbox_ids = {m.id for m in present.mailbox}
    decision_ids = {d.id for d in present.decisions}
    missing = AgentRows(
        activities,
        tuple(m for m in rows.mailbox if m.id not in mailbox_ids),
        tuple(d for d in rows.decisions if d.id not in decision_ids),
        (),
        rows.agent_id,
    )
    write_rows(store, missing)
    added = missing.count
    chats = {s.id: {m.id for m in messages} for s, messages in present.chats}
    for session, messages in rows.chats:
        held = chats.get(session.id)
        if held is None:
            store.chats.create_chat_session(session)
            added += 1
            held = set()
        for message in messages:
            if message.id not in held:
                store.chats.append_chat_message(message)
                added += 1
    for session_id, mark, transcript in rows.transcript:
        added += store.transcripts.import_transcript(
            rows.agent_id, session_id, transcript, synced_at=mark.synced_at
        )
    return added + _hold_histories(store, rows.agent_id, rows.histories)
