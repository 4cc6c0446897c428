"""PydanticAI ``ConversationStore`` over the agent's sessions (``memory.sessions``).

A conversation is kept in one session, named by
:func:`~markus_memory.integrations._session_keys.session_key` from its id (any non-empty
string; ``conv-1`` keeps its name, ``tenant:42/chat:7`` becomes ``~tenant+3A42+2Fchat+3A7``;
the record keeps the id as given). Each entry (one ``ModelMessage`` and the entry before it) is
appended as a session message whose text feeds transcript recall and whose metadata keeps the
entry exactly; each save appends the conversation's record after its entries, and the newest
record wins. Appends happen under the agent lock after the revision check, so a conflicting save
writes nothing. ``delete_record`` deletes the conversation's session: its text is gone from the
session files, recall, its index and its vectors. The entries another conversation's history
still reaches (a fork) move to that conversation's session first, as the framework's own store
keeps them. When session compaction has dropped the oldest messages of a very long
conversation, its history starts at the oldest entry still kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ExtraNotInstalledError
from ..layers.sessions import validate_message
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
    from ..memory import AgentMemory

META_KEY = "pydantic_ai"
_ENTRY = TypeAdapter(ConversationEntry)
_RECORD = TypeAdapter(ConversationRecord)


class MarkusConversationStore(ConversationStore):
    """Conversations of ``memory`` kept as its sessions; conversation ids are session ids."""

    def __init__(self, memory: AgentMemory) -> None:
        self.memory = memory
        self._where: dict[str, str] = {}  # entry id -> session id, filled as sessions are read

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return await asyncio.to_thread(self._record, _session_id(conversation_id))

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        def read() -> list[ConversationRecord]:
            found = [self._record(info.id) for info in self.memory.sessions.list()]
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
        def write() -> None:
            sid = _session_id(record.conversation_id)
            messages = [_entry_message(e) for e in new_entries]
            messages.append(_marker({"record": _RECORD.dump_python(record, mode="json")}))
            with self.memory.lock:
                stored = self._record(sid)
                if (stored.revision if stored is not None else None) != expected_revision:
                    raise ConversationConflict(record.conversation_id)
                new_ids = {e.id for e in new_entries}
                head = record.head_id
                if head is not None and head not in new_ids and self._find(head) is None:
                    raise ConversationConflict(record.conversation_id)
                self.memory.sessions.get_or_create(sid)
                for message in messages:
                    self.memory.sessions.append(sid, message)
                for entry in new_entries:
                    self._where[entry.id] = sid

        await asyncio.to_thread(write)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        def delete() -> None:
            sid = _session_id(conversation_id)
            with self.memory.lock:
                stored = self._record(sid)
                if stored is None or stored.revision != expected_revision:
                    raise ConversationConflict(conversation_id)
                self._rehome_shared(sid)
                self.memory.delete_session(sid)
                self._where = {e: s for e, s in self._where.items() if s != sid}

        await asyncio.to_thread(delete)

    def _rehome_shared(self, sid: str) -> None:
        """Append the entries of session ``sid`` that another conversation's history reaches
        to the session of the first such conversation (so deleting ``sid`` keeps them)."""
        session = self.memory.sessions.get(sid)
        held = {}
        for message in () if session is None else session.messages:
            entry = _entry_data(message)
            if entry is not None:
                held[str(entry.get("id"))] = message
        if not held:
            return
        parents: dict[str, str | None] = {}
        heads: list[tuple[str, list[str]]] = []
        for info in self.memory.sessions.list():
            record: ConversationRecord | None = None
            for data in self._marks(info.id):
                if "entry" in data:
                    parents[str(data["entry"].get("id"))] = data["entry"].get("parent_id")
                elif "record" in data:
                    record = _RECORD.validate_python(data["record"])
                elif data.get("deleted"):
                    record = None
            if record is not None and info.id != sid:
                heads.append((info.id, [h for h in (record.head_id, *record.branches) if h]))
        owners: dict[str, str] = {}
        for owner, starts in heads:
            for start in starts:
                entry_id: str | None = start
                while entry_id is not None and entry_id not in owners:
                    if entry_id in held:
                        owners[entry_id] = owner
                    entry_id = parents.get(entry_id)
        for held_id, message in held.items():  # in the order they were stored: parents first
            target = owners.get(held_id)
            if target is not None:
                self.memory.sessions.append(target, message)
                self._where[held_id] = target

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        entry = await asyncio.to_thread(self._find, entry_id)
        if entry is None:
            raise KeyError(entry_id)
        return entry

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[ConversationEntry]:
        def read() -> list[ConversationEntry]:
            entries: list[ConversationEntry] = []
            entry_id = head_id
            while entry_id is not None and (limit is None or len(entries) < limit):
                entry = self._find(entry_id)
                if entry is None:  # compacted away: the history starts after it
                    break
                entries.append(entry)
                entry_id = entry.parent_id
            entries.reverse()
            return entries

        return await asyncio.to_thread(read)

    # -- reading the session files -----------------------------------------------------------

    def _record(self, sid: str) -> ConversationRecord | None:
        record: ConversationRecord | None = None
        for data in self._marks(sid):
            if "record" in data:
                record = _RECORD.validate_python(data["record"])
            elif data.get("deleted"):
                record = None
        return record

    def _marks(self, sid: str) -> Iterator[Mapping[str, Any]]:
        session = self.memory.sessions.get(sid)
        for message in () if session is None else session.messages:
            meta = message.get("metadata")
            data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
            if isinstance(data, Mapping):
                if "entry" in data:
                    self._where.setdefault(str(data["entry"].get("id")), sid)
                yield data

    def _find(self, entry_id: str) -> ConversationEntry | None:
        """The entry: in the session it was last seen in, else in any (it may have moved
        there when its conversation was deleted)."""
        cached = self._where.get(entry_id)
        others = [i.id for i in self.memory.sessions.list() if i.id != cached]
        for candidate in [cached, *others] if cached is not None else others:
            found = self._find_in(candidate, entry_id)
            if found is not None:
                return found
        return None

    def _find_in(self, sid: str, entry_id: str) -> ConversationEntry | None:
        for data in self._marks(sid):
            if "entry" in data and data["entry"].get("id") == entry_id:
                return _ENTRY.validate_python(data["entry"])
        return None


def _session_id(conversation_id: str) -> str:
    return session_key(conversation_id, kind="conversation id")


def _entry_data(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    meta = message.get("metadata")
    data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
    entry = data.get("entry") if isinstance(data, Mapping) else None
    return entry if isinstance(entry, Mapping) else None


def _marker(data: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "system", "content": "", "metadata": {META_KEY: dict(data)}}


def _entry_message(entry: ConversationEntry) -> dict[str, Any]:
    message = entry.message
    role = "assistant" if isinstance(message, ModelResponse) else _request_role(message)
    return validate_message(
        {
            "role": role,
            "content": _text(message),
            "metadata": {META_KEY: {"entry": _ENTRY.dump_python(entry, mode="json")}},
        }
    )


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
