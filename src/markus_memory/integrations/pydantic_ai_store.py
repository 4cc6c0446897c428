"""PydanticAI ``ConversationStore`` over the agent's sessions (``memory.sessions``).

A conversation is the session of the same id; each entry (one ``ModelMessage`` and the entry
before it) is appended as a session message whose text feeds transcript recall and whose
metadata keeps the entry exactly; each save appends the conversation's record after its
entries, and the newest record wins. Appends happen under the agent lock after the revision
check, so a conflicting save writes nothing. ``delete_record`` appends a deletion mark: the
entries stay in the session file (the transcript remains recallable, as every session does).
When session compaction has dropped the oldest messages of a very long conversation, its
history starts at the oldest entry still kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ExtraNotInstalledError, InvalidInputError
from ..layers.sessions import validate_message

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
        return await asyncio.to_thread(self._record, conversation_id)

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
                self.memory.sessions.append(sid, _marker({"deleted": True}))

        await asyncio.to_thread(delete)

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

    def _record(self, conversation_id: str) -> ConversationRecord | None:
        record: ConversationRecord | None = None
        for data in self._marks(_session_id(conversation_id)):
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
        sid = self._where.get(entry_id)
        sessions = [sid] if sid is not None else [i.id for i in self.memory.sessions.list()]
        for candidate in sessions:
            for data in self._marks(candidate):
                if "entry" in data and data["entry"].get("id") == entry_id:
                    return _ENTRY.validate_python(data["entry"])
        return None


def _session_id(conversation_id: str) -> str:
    if not isinstance(conversation_id, str):
        raise InvalidInputError("a conversation id must be a string")
    return conversation_id


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
