"""PydanticAI ``ConversationStore`` over the agent's histories (``memory.histories``).

A conversation is one history, named by
:func:`~markus_memory.integrations._session_keys.session_key` from its id (any non-empty
string; ``conv-1`` keeps its name, ``tenant:42/chat:7`` becomes ``~tenant+3A42+2Fchat+3A7``;
the record keeps the id as given). Each entry (one ``ModelMessage`` and the entry before it) is
an item of the history, its text what recall indexes; the stored conversation only ever grows,
as the framework's contract says: nothing is compacted or rewritten. The record (head, usage,
revision, title, metadata …) is the history's details, with where its head and branch tips are
stored, so ``load`` reads the record, then the history up to its head in one paged read: time
grows linearly with the length read. ``update`` (titles and metadata) is supported:
``write_details`` writes them, and a save keeps them.

Writes happen under the agent lock after the revision check, so a conflicting save writes
nothing. ``delete`` forgets: the conversation's history goes from the store, recall, its index
and its vectors. The entries another conversation's history still reaches (a fork) move to that
conversation's history first, as the framework's own store keeps them. A conversation an older
version kept in a Markus session file moves into the store on first use and reads as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import ExtraNotInstalledError
from ..layers.histories import HistoryItem, HistoryRecord
from ._session_keys import session_key

try:
    from pydantic import TypeAdapter
    from pydantic_ai.conversation_store import (
        ConversationConflict,
        ConversationEntry,
        ConversationRecord,
        ConversationStore,
    )
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("pydantic-ai", exc.name or "pydantic_ai") from exc

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationDetails  # 2.78 on: titles, metadata

    from ..memory import AgentMemory

META_KEY = "pydantic_ai"
_ENTRY = TypeAdapter(ConversationEntry)
_RECORD = TypeAdapter(ConversationRecord)
Where = tuple[str, int]
"""An entry's history key and position in it."""
_Page = dict[str, tuple[int, dict[str, Any], Any]]
"""Entry id -> (position, entry JSON, where its parent is when in another history)."""


class MarkusConversationStore(ConversationStore):
    """Conversations of ``memory`` kept as its histories; conversation ids name them."""

    def __init__(self, memory: AgentMemory) -> None:
        self.memory = memory
        self._where: dict[str, Where] = {}  # entry id -> where it was last seen
        self._adopted = False  # older versions' conversations moved into the store

    # -- records -------------------------------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return await asyncio.to_thread(self._record, _key(conversation_id))

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        def read() -> list[ConversationRecord]:
            found = [self._record(key) for key in self._keys()]
            records = [r for r in found if r is not None and (scope is None or r.scope == scope)]
            records.sort(key=lambda r: r.updated_at, reverse=True)
            return records[:limit]

        return await asyncio.to_thread(read)

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        await asyncio.to_thread(self._write, record, list(new_entries), expected_revision)

    def _write(
        self, record: ConversationRecord, new: list[ConversationEntry], expected: str | None
    ) -> None:
        key, histories = _key(record.conversation_id), self.memory.histories
        with self.memory.lock:
            stored = self._record(key)
            if (stored.revision if stored is not None else None) != expected:
                raise ConversationConflict(record.conversation_id)
            base, placed = histories.count(key), {}
            for n, entry in enumerate(new):
                placed[entry.id] = (key, base + n)
            head = record.head_id
            if head is not None and head not in placed and self._locate(head) is None:
                raise ConversationConflict(record.conversation_id)
            if stored is not None:  # a save never changes what ``update`` wrote
                record = replace(record, title=stored.title, metadata=stored.metadata)
            # The entries and the record naming them in one transaction: a failure keeps
            # neither.
            described = self._described(record, placed)
            histories.append(key, [self._item(e, placed) for e in new], describe=described)
            self._where.update(placed)

    async def write_details(
        self,
        conversation_id: str,
        details: ConversationDetails,
        *,
        expected_revision: str,
        expected: ConversationDetails | None = None,
    ) -> ConversationRecord:
        def write() -> ConversationRecord:
            key = _key(conversation_id)
            unknown = set(details) | set(expected or {})
            if unknown - {"title", "metadata"}:
                raise NotImplementedError(f"no such conversation detail: {sorted(unknown)}")
            with self.memory.lock:
                stored = self._record(key)
                if stored is None or stored.revision != expected_revision:
                    raise ConversationConflict(conversation_id)
                if any(getattr(stored, k) != v for k, v in (expected or {}).items()):
                    raise ConversationConflict(conversation_id)
                changed = replace(stored, **details)
                self._set_state(key, changed)
                return changed

        return await asyncio.to_thread(write)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        def delete() -> None:
            key = _key(conversation_id)
            with self.memory.lock:
                stored = self._record(key)
                if stored is None or stored.revision != expected_revision:
                    raise ConversationConflict(conversation_id)
                self._rehome_shared(key)
                self.memory.histories.delete(key)
                self._where = {e: w for e, w in self._where.items() if w[0] != key}

        await asyncio.to_thread(delete)

    def _rehome_shared(self, key: str) -> None:
        """Append the entries of history ``key`` that another conversation's history reaches
        to the history of the first such conversation (so deleting ``key`` keeps them)."""
        owners: dict[str, str] = {}
        for other in self._keys():
            record = self._record(other) if other != key else None
            for tip in () if record is None else (record.head_id, *record.branches):
                for entry, (held_in, _) in self._walk(tip) if tip else ():
                    if held_in == key:
                        owners.setdefault(entry["id"], other)
        if not owners:
            return
        moving: dict[str, list[ConversationEntry]] = {}
        for stored in self.memory.histories.items(key):  # parents first, as they were stored
            data = _entry_data(stored)
            if data is not None and data.get("id") in owners:
                moving.setdefault(owners[data["id"]], []).append(_ENTRY.validate_python(data))
        for owner, entries in moving.items():
            base = self.memory.histories.count(owner)
            placed = {e.id: (owner, base + n) for n, e in enumerate(entries)}
            self.memory.histories.append(owner, [self._item(e, placed) for e in entries])
            self._where.update(placed)
            record = self._record(owner)
            if record is not None:
                self._set_state(owner, record)

    # -- entries -------------------------------------------------------------------------------

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        found = await asyncio.to_thread(self._walk, entry_id, 1)
        return _ENTRY.validate_python(found[0][0])

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[ConversationEntry]:
        def read() -> list[ConversationEntry]:
            return [_ENTRY.validate_python(e) for e, _ in self._walk(head_id, limit)]

        return await asyncio.to_thread(read)

    def _walk(self, head_id: str | None, limit: int | None = None) -> list[tuple[Any, Where]]:
        """The entries from the first up to ``head_id`` (the last ``limit`` of them) with where
        each is stored, read a page at a time: one page while the history is one history's.
        KeyError for an entry the store does not hold."""
        out: list[tuple[Any, Where]] = []
        entry_id, at, rescanned = head_id, None, False
        while entry_id is not None and (limit is None or len(out) < limit):
            at = at or self._locate(entry_id)
            if at is None:
                raise KeyError(entry_id)
            key, position = at
            start = 0 if limit is None else max(0, position + 1 - (limit - len(out)))
            page = self._page(key, start, position + 1)
            found = page.get(entry_id)
            if found is None:  # moved or gone since it was seen: look for it once
                if rescanned:
                    raise KeyError(entry_id)
                at, rescanned = self._scan(entry_id), True
                continue
            rescanned = False
            while found is not None and (limit is None or len(out) < limit):
                pos, entry, parent_at = found
                out.append((entry, (key, pos)))
                entry_id = entry.get("parent_id")
                at = (parent_at[0], parent_at[1]) if isinstance(parent_at, list) else None
                found = None if entry_id is None or at is not None else page.get(entry_id)
                more = limit is None or len(out) < limit
                if more and found is None and entry_id is not None and at is None and start > 0:
                    page.update(self._page(key, 0, start))  # a branch: further back in it
                    start = 0
                    found = page.get(entry_id)
        out.reverse()
        return out

    def _page(self, key: str, start: int, stop: int | None) -> _Page:
        limit = None if stop is None else stop - start
        page: _Page = {}
        for pos, stored in enumerate(self.memory.histories.items(key, start=start, limit=limit)):
            data = _entry_data(stored)
            if data is not None and isinstance(data.get("id"), str):
                parent_at = None if stored.legacy else stored.value.get("parent_at")
                page[data["id"]] = (start + pos, data, parent_at)
                self._where[data["id"]] = (key, start + pos)
        return page

    def _locate(self, entry_id: str) -> Where | None:
        return self._where.get(entry_id) or self._scan(entry_id)

    def _scan(self, entry_id: str) -> Where | None:
        """Where ``entry_id`` is, read from every conversation (noting where each entry is)."""
        self._where.pop(entry_id, None)
        for key in self._keys():
            self._page(key, 0, None)
            if entry_id in self._where:
                return self._where[entry_id]
        return None

    def _item(self, entry: ConversationEntry, placed: Mapping[str, Where]) -> HistoryItem:
        """The history item of a new entry; where its parent is when in another history."""
        value: dict[str, Any] = {"entry": _ENTRY.dump_python(entry, mode="json")}
        parent = entry.parent_id
        at = None if parent is None else placed.get(parent) or self._locate(parent)
        own = placed[entry.id][0]
        if at is not None and at[0] != own:
            value["parent_at"] = list(at)
        message = entry.message
        role = "assistant" if isinstance(message, ModelResponse) else _request_role(message)
        return HistoryItem(value, role, _text(message))

    # -- the histories' details ----------------------------------------------------------------

    def _keys(self) -> list[str]:
        """The histories that hold conversations (moving older versions' into the store)."""
        for info in () if self._adopted else self.memory.sessions.list():
            session = self.memory.sessions.get(info.id)
            if session is not None and any(_meta(m) is not None for m in session.messages):
                self._state(info.id)
        self._adopted = True
        return [
            info.key
            for info in self.memory.histories.list()
            if isinstance((info.details or {}).get(META_KEY), Mapping)
        ]

    def _record(self, key: str) -> ConversationRecord | None:
        state = self._state(key)
        data = None if state is None else state.get("record")
        return None if data is None else _RECORD.validate_python(data)

    def _state(self, key: str) -> Mapping[str, Any] | None:
        info = self.memory.histories.info(key)
        if info is None:
            return None
        state = (info.details or {}).get(META_KEY)
        if not isinstance(state, Mapping):
            return self._adopt(key)
        for tip, at in (state.get("at") or {}).items():
            self._where.setdefault(tip, (at[0], at[1]))
        return state

    def _set_state(self, key: str, record: ConversationRecord) -> None:
        title, details = self._described(record, {})
        self.memory.histories.set_details(key, title=title, details=details)

    def _described(
        self, record: ConversationRecord, placed: Mapping[str, tuple[str, int]]
    ) -> tuple[str | None, dict[str, Any]]:
        """The title and details that keep ``record`` and where its tips are (``placed``:
        entries about to be stored)."""
        at = {}
        for tip in (record.head_id, *record.branches):
            where = (
                None
                if tip is None
                else placed.get(tip) or self._where.get(tip) or self._locate(tip)
            )
            if tip is not None and where is not None:
                at[tip] = list(where)
        state = {"record": _RECORD.dump_python(record, mode="json"), "at": at}
        return record.title, {META_KEY: state}

    def _adopt(self, key: str) -> Mapping[str, Any] | None:
        """The state of a conversation an older version kept as Markus messages (its entries,
        and a record after each save), noted in the history's details."""
        record: Any = None
        found = False
        for pos, stored in enumerate(self.memory.histories.items(key)):
            data = _meta(stored.value) if stored.legacy else None
            if data is None:
                continue
            found = True
            if isinstance(data.get("entry"), Mapping):
                self._where[str(data["entry"].get("id"))] = (key, pos)
            elif "record" in data:
                record = data["record"]
            elif data.get("deleted"):
                record = None
        if not found:
            return None
        if record is None:
            self.memory.histories.set_details(key, title=None, details={META_KEY: {}})
            return {}
        self._set_state(key, _RECORD.validate_python(record))
        return self._state(key)


def _key(conversation_id: str) -> str:
    return session_key(conversation_id, kind="conversation id")


def _meta(message: object) -> Mapping[str, Any] | None:
    meta = message.get("metadata") if isinstance(message, Mapping) else None
    data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
    return data if isinstance(data, Mapping) else None


def _entry_data(stored: HistoryRecord) -> Any:
    data = _meta(stored.value) if stored.legacy else stored.value
    entry = data.get("entry") if isinstance(data, Mapping) else None
    return entry if isinstance(entry, Mapping) else None


def _request_role(message: ModelMessage) -> str:
    kinds = {getattr(p, "part_kind", "") for p in message.parts}
    return "tool" if kinds and kinds <= {"tool-return", "retry-prompt"} else "user"


def _text(message: ModelMessage) -> str:
    texts = []
    for part in message.parts:
        content = getattr(part, "content", None)
        if isinstance(content, str) and part.part_kind in ("user-prompt", "text", "tool-return"):
            texts.append(content)
        elif isinstance(message, ModelRequest) and isinstance(content, list):
            texts.extend(c for c in content if isinstance(c, str))
    return "\n".join(texts)


__all__ = ["MarkusConversationStore"]
