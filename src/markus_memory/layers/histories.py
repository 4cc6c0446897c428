"""Histories: the conversations a framework owns, kept in the store exactly as given.

A framework session (the OpenAI Agents SDK ``Session``, the PydanticAI store, the Claude Agent
SDK ``SessionStore``) owns its history and never rewrites it, so these are never compacted,
truncated or shortened: what :meth:`Histories.append` stored is what :meth:`Histories.items`
returns, deep-equal, read by page. They live in the episodic store (``data.db`` or PostgreSQL)
as ``history`` conversations (:mod:`~markus_memory.storage.conversations`), so every host of a
PostgreSQL deployment reads the same history, and recall finds what was said in them.

Each item is a JSON value with the role and text recall indexes (the text shortened to
``Limits.recall_text_max_chars`` for the index; the item itself is kept whole). A batch is
checked whole before anything is written (JSON, Unicode, size), then written in one
transaction: a bad item changes nothing. Deleting a history or popping an item takes its text
out of recall, its index and its vectors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .._fs import validate_id
from ..config import Clock, Limits
from ..errors import InvalidInputError
from ..storage.base import JsonObject
from ..storage.repos.conversations import (
    ConversationHead,
    ConversationRepo,
    NewEntry,
    StoredEntry,
)

KIND = "history"


@dataclass(frozen=True)
class HistoryItem:
    """An item to append: ``value`` (any JSON value) is what comes back; ``role`` and
    ``text`` are what recall indexes and shows."""

    value: Any
    role: str
    text: str
    at: datetime | None = None
    speaker: str | None = None
    metadata: JsonObject | None = None


@dataclass(frozen=True)
class HistoryRecord:
    """A stored item. ``value`` is the item as appended; for a message a Markus session file
    held before the history moved into the store, it is that Markus message (``legacy``)."""

    seq: int
    value: Any
    role: str
    text: str
    created_at: datetime
    legacy: bool = False


@dataclass(frozen=True)
class HistoryInfo:
    """One history: its key, times, length, and the title and details its framework set."""

    key: str
    started_at: datetime
    last_activity_at: datetime
    count: int
    title: str | None
    details: JsonObject | None


class Histories:
    """The framework-owned histories of one agent.

    ``store`` gives the episodic store's conversations at each use; ``adopt(key)`` is called
    before a key the store does not hold is used, so a history an older version kept in a
    Markus session file moves into the store first (the facade does it: it spans the sessions
    layer);
    ``stored()`` is told after each append (new vectors are due).
    """

    def __init__(
        self,
        store: Callable[[], ConversationRepo],
        agent_id: str,
        limits: Limits,
        clock: Clock,
        *,
        adopt: Callable[[str], None] = lambda key: None,
        stored: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self.agent_id = agent_id
        self.limits = limits
        self.clock = clock
        self._adopt = adopt
        self._stored = stored

    # -- writes --------------------------------------------------------------------------------

    def check(self, items: Sequence[HistoryItem]) -> list[NewEntry]:
        """The entries ``items`` are stored as; InvalidInputError naming the first bad item."""
        now = self.clock()
        return [self._entry(n, item, now) for n, item in enumerate(items)]

    def append(
        self,
        key: str,
        items: Sequence[HistoryItem],
        *,
        describe: tuple[str | None, JsonObject | None] | None = None,
    ) -> int:
        """Append ``items`` in order (the history is created if absent), all or nothing; the
        seq of the first. InvalidInputError for a bad item (nothing is written). ``describe``
        (a title and details, as :meth:`set_details` takes) is set in the same transaction."""
        sid = self._key(key)
        entries = self.check(items)
        if describe is not None and describe[1] is not None:
            _encode(describe[1], "details")
        if not entries and describe is None:
            return self.count(sid)
        before = self._store().append_conversation(
            self.agent_id, sid, KIND, entries, self.clock(), describe=describe
        )
        self._stored()
        return before.next_seq

    def pop(self, key: str) -> HistoryRecord | None:
        """Remove and return the newest item (its text leaves recall), None when empty."""
        sid = self._key(key)
        dropped = self._store().drop_last_entry(self.agent_id, sid)
        return None if dropped is None else _record(dropped)

    def delete(self, key: str) -> bool:
        """Forget a history: its items, head, recall postings and vectors. False if none."""
        sid = self._key(key)
        held = self._head(sid) is not None  # adopts one an older version kept, to forget it
        return self._store().forget_session(self.agent_id, sid) > 0 or held

    def set_details(self, key: str, *, title: str | None, details: JsonObject | None) -> None:
        """Set a history's title and details (created empty if absent)."""
        sid = self._key(key)
        if details is not None:
            _encode(details, "details")
        store = self._store()
        store.start_conversation(self.agent_id, sid, KIND, self.clock())
        store.set_conversation_details(self.agent_id, sid, title=title, details=details)

    # -- reads ---------------------------------------------------------------------------------

    def info(self, key: str) -> HistoryInfo | None:
        """The history's head, None if there is none."""
        head = self._head(self._key(key))
        return None if head is None else _info(head)

    def count(self, key: str) -> int:
        head = self._head(self._key(key))
        return 0 if head is None else head.count

    def items(self, key: str, *, start: int = 0, limit: int | None = None) -> list[HistoryRecord]:
        """The items from position ``start`` (0 is the first), at most ``limit`` of them."""
        sid = self._key(key)
        head = self._head(sid)
        if head is None or (limit is not None and limit <= 0):
            return []
        rows = self._store().conversation_entries(
            self.agent_id, sid, start=head.first_seq + max(start, 0), limit=limit
        )
        return _records(rows)

    def newest(self, key: str, n: int) -> list[HistoryRecord]:
        """The newest ``n`` items, oldest first (all of them for a negative ``n``)."""
        sid = self._key(key)
        head = self._head(sid)
        if head is None or n == 0:
            return []
        start = head.first_seq if n < 0 else max(head.first_seq, head.next_seq - n)
        rows = self._store().conversation_entries(self.agent_id, sid, start=start)
        return _records(rows)

    def list(self) -> list[HistoryInfo]:
        """Every history of the agent, latest activity first."""
        return [_info(h) for h in self._store().conversations(self.agent_id, KIND)]

    # -- helpers -------------------------------------------------------------------------------

    def _key(self, key: str) -> str:
        return validate_id("history key", key)

    def _head(self, sid: str) -> ConversationHead | None:
        store = self._store()
        head = store.conversation(self.agent_id, sid)
        if head is None:
            self._adopt(sid)
            head = store.conversation(self.agent_id, sid)
        if head is not None and head.kind != KIND:
            raise InvalidInputError(
                f"{sid!r} is a Markus session of this agent, not a framework history: use "
                "another key"
            )
        return head

    def _entry(self, n: int, item: HistoryItem, now: datetime) -> NewEntry:
        if not isinstance(item, HistoryItem):
            raise InvalidInputError(f"item {n}: expected a HistoryItem, got {type(item).__name__}")
        body = _encode(item.value, f"item {n}")
        size, cap = len(body.encode("utf-8")), self.limits.history_item_max_bytes
        if size > cap:
            raise InvalidInputError(
                f"item {n} is too large: {size:,} bytes (limit {cap:,}, "
                "Limits.history_item_max_bytes)"
            )
        if not isinstance(item.role, str) or not isinstance(item.text, str):
            raise InvalidInputError(f"item {n}: role and text must be strings")
        text = _checked_text(item.text, f"item {n}")[: self.limits.recall_text_max_chars]
        if item.metadata is not None:
            _encode(item.metadata, f"item {n} metadata")
        return NewEntry(
            role=item.role,
            text=text,
            body=body,
            created_at=item.at or now,
            speaker=item.speaker,
            metadata=None if item.metadata is None else dict(item.metadata),
        )


def _encode(value: Any, what: str) -> str:
    """Compact JSON text of ``value``; InvalidInputError (naming ``what``) when it has no
    exact JSON form: NaN or infinity, a non-JSON type, a lone surrogate, nesting too deep."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} is not JSON: {exc}") from None
    except RecursionError:
        raise InvalidInputError(f"{what} is nested too deeply to store") from None
    return _checked_text(text, what)


def _checked_text(text: str, what: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} holds a lone surrogate ({text[exc.start]!r} at {exc.start}): not valid "
            "Unicode text"
        ) from None
    return text


def _records(entries: Sequence[StoredEntry]) -> list[HistoryRecord]:
    """The records of stored entries, their bodies decoded as one JSON array: one call of
    the decoder instead of one a body (most of the cost of reading a long history)."""
    values = iter(_decoded([e.body for e in entries if e.body is not None]))
    return [
        _record(e)
        if e.body is None
        else HistoryRecord(e.seq, next(values), e.role, e.text, e.created_at)
        for e in entries
    ]


def _decoded(bodies: Sequence[str]) -> list[Any]:
    """The JSON values of ``bodies``, in order. Each body is one JSON text as
    :func:`_encode` wrote it; should one not be (a row written by other means), the bodies are
    decoded one by one, so its own error is raised and no value moves to another item."""
    if not bodies:
        return []
    try:
        values = json.loads("[" + ",".join(bodies) + "]")
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != len(bodies):
        values = [json.loads(body) for body in bodies]
    return values


def _record(entry: StoredEntry) -> HistoryRecord:
    if entry.body is not None:
        value = json.loads(entry.body)
        return HistoryRecord(entry.seq, value, entry.role, entry.text, entry.created_at)
    legacy: dict[str, Any] = {"role": entry.role, "content": entry.text}
    if entry.metadata is not None:
        legacy["metadata"] = dict(entry.metadata)
    return HistoryRecord(entry.seq, legacy, entry.role, entry.text, entry.created_at, True)


def _info(head: ConversationHead) -> HistoryInfo:
    details: Mapping[str, Any] | None = head.details
    return HistoryInfo(
        head.session_id,
        head.started_at,
        head.last_activity_at,
        head.count,
        head.title,
        None if details is None else dict(details),
    )
