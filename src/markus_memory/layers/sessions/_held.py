"""HeldSessions: the Markus sessions of one agent kept in the database, for many hosts.

The same public API as :class:`~._store.SessionStore` over ``markus`` conversations of the
episodic store (:mod:`~markus_memory.storage.conversations`): every message is one row, kept
exactly (its JSON), numbered under the conversation's row lock, durable and indexed for recall
when the append returns, and seen by every host at its next read (nothing is cached here).

The session a Markus agent loop sees is a view: compaction (the original's, at
``Limits.session_compact_trigger`` messages down to ``session_compact_keep``, or
:meth:`HeldSessions.compact`) moves the view's start and stores the summary that stands for
the messages before it, whose rows stay for recall. Oversized tool results that have left the
recent window are shrunk in the view as the original shrinks them in its file.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from ...config import Clock, Limits, epoch_ms
from ...storage.repos.conversations import (
    ConversationHead,
    ConversationRepo,
    NewEntry,
    StoredEntry,
)
from . import _format as fmt
from . import _messages as msg
from ._records import AppendedMessage, CompactResult, Session, SessionInfo
from ._store import NON_MAIN_PREFIXES

KIND = "markus"

EntryOf = Callable[[str, msg.Message, str, datetime], NewEntry]
"""``(session_id, message, its JSON, now) -> NewEntry``: how a message is stored (its time and
speaker are read by the facade, which knows the recall conventions)."""


class HeldSessions:
    """The ``markus`` conversations of one agent in its episodic store."""

    def __init__(
        self,
        store: Callable[[], ConversationRepo],
        agent_id: str,
        limits: Limits,
        clock: Clock,
        *,
        entry_of: EntryOf,
        stored: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self.agent_id = agent_id
        self.limits = limits
        self.clock = clock
        self._entry_of = entry_of
        self._stored = stored

    # -- sessions ------------------------------------------------------------------------------

    def create(self, prefix: str = "sess") -> Session:
        """A new empty session ``<prefix>_<ms>_<rand36(6)>``."""
        while True:
            sid = fmt.new_session_id(prefix, epoch_ms(self.clock()))
            if self._store().conversation(self.agent_id, sid) is None:
                head = self._store().start_conversation(self.agent_id, sid, KIND, self.clock())
                return self._session(head, [])

    def get(self, session_id: str) -> Session | None:
        """The session's view, None if there is none."""
        sid = fmt.validate_session_id(session_id)
        head = self._head(sid)
        return None if head is None else self._session(head, self._view_entries(head))

    def get_or_create(self, session_id: str) -> Session:
        sid = fmt.validate_session_id(session_id)
        head = self._store().start_conversation(self.agent_id, sid, KIND, self.clock())
        return self._session(head, self._view_entries(head))

    def check_message(self, message: Mapping[str, Any]) -> msg.Message:
        """The message as :meth:`append` would store it; InvalidInputError otherwise."""
        return self._encode(message)[0]

    def append(self, session_id: str, message: Mapping[str, Any]) -> AppendedMessage:
        """Append a message; it is committed (every host sees it) when this returns.
        NotFoundError for an unknown session, InvalidInputError for a bad message."""
        sid = fmt.validate_session_id(session_id)
        clean, encoded = self._encode(message)
        now = self.clock()
        entry = self._entry_of(sid, clean, encoded, now)
        before = self._store().append_conversation(
            self.agent_id, sid, KIND, [entry], now, create=False
        )
        self._stored()
        seq = before.next_seq
        view_index = seq - before.view_from + (0 if before.summary is None else 1)
        if view_index + 1 > self.limits.session_compact_trigger:
            self.compact(sid, self.limits.session_compact_keep)
        return AppendedMessage(
            agent_id=self.agent_id,
            session_id=sid,
            index=view_index,
            role=clean["role"],
            text=msg.message_text(clean),
            timestamp=now,
            metadata=clean.get("metadata"),
            seq=seq,
        )

    def delete(self, session_id: str) -> bool:
        """Forget the session: its messages, recall postings and vectors. False if none."""
        sid = fmt.validate_session_id(session_id)
        store = self._store()
        held = self._head(sid) is not None
        return store.forget_session(self.agent_id, sid) > 0 or held

    def recent(self, session_id: str, n: int) -> list[msg.Message]:
        """The last ``n`` messages of the view, ``[]`` for an unknown session."""
        sid = fmt.validate_session_id(session_id)
        head = self._head(sid)
        if head is None or n <= 0:
            return []
        if n <= head.next_seq - head.view_from:
            start = head.next_seq - n
            rows = self._store().conversation_entries(self.agent_id, sid, start=start)
            return self._shrunk(head, [_message(r) for r in rows], start)
        return list(self._session(head, self._view_entries(head)).messages[-n:])

    def peek_next_seq(self, session_id: str) -> int | None:
        head = self._head(fmt.validate_session_id(session_id))
        return None if head is None else head.next_seq

    def list(self) -> list[SessionInfo]:
        """Every session, latest activity first."""
        return [
            SessionInfo(h.session_id, h.last_activity_at, None)
            for h in self._store().conversations(self.agent_id, KIND)
        ]

    def latest(self) -> Session | None:
        return self._first(self.list())

    def latest_main(self) -> Session | None:
        """The latest "main" chat session (heartbeat, system, task, a2a … excluded)."""
        return self._first(i for i in self.list() if not i.id.startswith(NON_MAIN_PREFIXES))

    def compact(self, session_id: str, keep_last: int = 20) -> CompactResult:
        """Show all but the last ``keep_last`` messages as one summary, as the original; the
        messages stay in the store for recall."""
        sid = fmt.validate_session_id(session_id)
        head = self._head(sid)
        if head is None:
            return CompactResult("", 0)
        messages = list(self._session(head, self._view_entries(head)).messages)
        keep_last = max(keep_last, 0)
        if len(messages) <= keep_last or head.next_seq - keep_last <= head.view_from:
            return CompactResult("", 0)
        older = messages[: len(messages) - keep_last]
        summary = msg.heuristic_summary(older)
        message = msg.summary_message(len(older), keep_last, summary)
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self._store().compact_conversation(self.agent_id, sid, head.next_seq - keep_last, text)
        return CompactResult(summary, len(older))

    def restore(self, messages: Iterable[Mapping[str, Any]]) -> Session:
        """A new ``sess_`` session holding the trimmed user/assistant history (as the original)."""
        trimmed = msg.trim_messages_for_restore(
            messages,
            self.limits.session_restore_max_messages,
            self.limits.session_restore_max_message_tokens,
        )
        encoded = [self._encode(m) for m in trimmed]
        session = self.create("sess")
        now = self.clock()
        entries = [self._entry_of(session.id, clean, text, now) for clean, text in encoded]
        self._store().append_conversation(self.agent_id, session.id, KIND, entries, now)
        self._stored()
        restored = self.get(session.id)
        assert restored is not None
        return restored

    def flush(self) -> None:
        """Nothing to write: every append committed when it returned."""

    def close(self) -> None:
        """Nothing is held open between calls."""

    # -- helpers -------------------------------------------------------------------------------

    def _encode(self, message: Mapping[str, Any]) -> tuple[msg.Message, str]:
        return msg.encode_within(message, self.limits.session_message_max_bytes)

    def _head(self, sid: str) -> ConversationHead | None:
        head = self._store().conversation(self.agent_id, sid)
        return head if head is not None and head.kind == KIND else None

    def _view_entries(self, head: ConversationHead) -> builtins.list[StoredEntry]:
        return self._store().conversation_entries(
            self.agent_id, head.session_id, start=head.view_from
        )

    def _session(self, head: ConversationHead, entries: builtins.list[StoredEntry]) -> Session:
        compacted = head.view_from - head.first_seq if head.summary is not None else 0
        messages = self._shrunk(head, [_message(e) for e in entries], head.view_from)
        if compacted > 0 and head.summary is not None:
            messages.insert(0, json.loads(head.summary))
        return Session(
            id=head.session_id,
            agent_id=self.agent_id,
            messages=tuple(messages),
            started_at=head.started_at,
            last_activity_at=head.last_activity_at,
            compacted=compacted,
            first_seq=head.first_seq,
            extra=dict(head.details or {}),
        )

    def _shrunk(
        self, head: ConversationHead, messages: builtins.list[msg.Message], start: int
    ) -> builtins.list[msg.Message]:
        """Tool results older than the recent window shrunk, as the original's file."""
        boundary = head.next_seq - self.limits.session_compact_keep
        out = []
        for offset, message in enumerate(messages):
            shrunk = None
            if start + offset < boundary:
                shrunk = msg.shrink_if_oversized(message, self.limits.session_tool_shrink_chars)
            out.append(message if shrunk is None else shrunk)
        return out

    def _first(self, infos: Iterable[SessionInfo]) -> Session | None:
        for info in infos:
            found = self.get(info.id)
            if found is not None:
                return found
        return None


def _message(entry: StoredEntry) -> msg.Message:
    """The stored message; one recorded from a file before it moved here without its exact
    body is rebuilt from its role, text and metadata."""
    if entry.body is not None:
        value = json.loads(entry.body)
        if isinstance(value, dict):
            return value
    rebuilt: msg.Message = {"role": entry.role, "content": entry.text}
    if entry.metadata is not None:
        rebuilt["metadata"] = dict(entry.metadata)
    return rebuilt
