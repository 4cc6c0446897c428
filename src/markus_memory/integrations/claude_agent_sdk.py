"""Claude Agent SDK: a ``SessionStore`` over the agent's histories (``memory.histories``).

Pass it as ``ClaudeAgentOptions(session_store=MarkusSessionStore(memory))``. The SDK owns its
transcripts, so each one is a history kept exactly as given and never compacted: ``load``
returns every entry ``append`` stored, deep-equal, however long the session. An entry's text
(a message's text, a tool's input and result) is what recall indexes, so
``recall_conversation`` finds what was said. A line's ``uuid`` is its idempotency key (a line
without one is appended as it comes, the SDK's contract for mirrored batches); a batch is
checked whole before any of it is written. ``delete`` forgets a session (with its subagent
transcripts, or one subpath alone): its lines leave recall, its index and its vectors.

Any non-empty session id and subpath are accepted: the history's key is
:func:`~markus_memory.integrations._claude_transcripts.session_id_for` of them, and the
SDK's key is kept, as given, in the history's details. A session an older version kept in a
Markus session file (a key message, then each line in a message's metadata) moves into the
store on first use and reads as the lines it held. Nothing here imports the SDK: the store is
duck-typed, as the SDK allows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..layers.histories import HistoryInfo, HistoryItem, HistoryRecord
from ._claude_transcripts import META_KEY, _content, entries_of, scope_prefix, session_id_for

if TYPE_CHECKING:
    from ..memory import AgentMemory


class MarkusSessionStore:
    """A Claude Agent SDK ``SessionStore`` over the agent's histories: ``append``, ``load``,
    ``list_sessions``, ``list_subkeys`` and ``delete``."""

    def __init__(self, memory: AgentMemory) -> None:
        self.memory = memory
        self._uuids: dict[str, set[str]] = {}  # history key -> the uuids it holds, once read

    async def append(self, key: Mapping[str, Any], entries: list[dict[str, Any]]) -> None:
        if entries:
            await asyncio.to_thread(self._append, dict(key), list(entries))

    def _append(self, key: dict[str, Any], entries: list[dict[str, Any]]) -> None:
        sid = self._sid(key)
        histories = self.memory.histories
        with self.memory.lock:
            seen = self._seen(sid)
            fresh, uuids = [], set()
            for n, entry in enumerate(entries):
                if not isinstance(entry, Mapping):
                    raise InvalidInputError(
                        f"entry {n}: a transcript line must be an object, got {entry!r:.40}"
                    )
                uuid = entry.get("uuid")
                if isinstance(uuid, str):
                    if uuid in seen or uuid in uuids:
                        continue
                    uuids.add(uuid)
                fresh.append(_item(entry))
            if not fresh:
                return
            histories.check(fresh)
            if histories.info(sid) is None:
                histories.set_details(sid, title=None, details={"key": key})
            histories.append(sid, fresh)
            seen.update(uuids)

    async def load(self, key: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        def load() -> list[dict[str, Any]] | None:
            sid = self._sid(key)
            if self.memory.histories.info(sid) is None:
                return None
            return _entries(self.memory.histories.items(sid))

        return await asyncio.to_thread(load)

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        def listing() -> list[dict[str, Any]]:
            found = []
            for info, key in self._keys(project_key):
                if not key.get("subpath"):
                    mtime = int(info.last_activity_at.timestamp() * 1000)
                    found.append({"session_id": key["session_id"], "mtime": mtime})
            return found

        return await asyncio.to_thread(listing)

    async def list_subkeys(self, key: Mapping[str, Any]) -> list[str]:
        return await asyncio.to_thread(self._subkeys, key)

    def _subkeys(self, key: Mapping[str, Any]) -> list[str]:
        return sorted(
            str(stored["subpath"])
            for _, stored in self._keys(str(key["project_key"]))
            if stored.get("subpath") and stored.get("session_id") == key["session_id"]
        )

    async def delete(self, key: Mapping[str, Any]) -> None:
        def delete() -> None:
            with self.memory.lock:
                sids = [self._sid(key)]
                if not key.get("subpath"):
                    sids += [self._sid({**key, "subpath": sub}) for sub in self._subkeys(key)]
                for sid in sids:
                    self.memory.histories.delete(sid)
                    self._uuids.pop(sid, None)

        await asyncio.to_thread(delete)

    # -- keys ------------------------------------------------------------------------------

    def _sid(self, key: Mapping[str, Any]) -> str:
        project = key.get("project_key")
        if not isinstance(project, str):
            raise InvalidInputError("a session key needs a string project_key")
        return session_id_for(project, str(key.get("session_id")), key.get("subpath") or None)

    def _keys(self, project_key: str) -> list[tuple[HistoryInfo, dict[str, Any]]]:
        """The histories of the project's transcripts, each with the SDK key it was given."""
        prefix = scope_prefix(project_key)
        self._adopt_older(prefix)
        found = []
        for info in self.memory.histories.list():
            key = self._key_of(info) if info.key.startswith(prefix) else None
            if key is not None and key.get("project_key") == project_key:
                found.append((info, key))
        return found

    def _key_of(self, info: HistoryInfo) -> dict[str, Any] | None:
        stored = (info.details or {}).get("key")
        if isinstance(stored, Mapping):
            return dict(stored)
        first = self.memory.histories.items(info.key, limit=1)
        key = _legacy_key(first[0]) if first else None
        if key is not None:  # noted in the details: the next listing reads the head only
            self.memory.histories.set_details(info.key, title=info.title, details={"key": key})
        return key

    def _adopt_older(self, prefix: str) -> None:
        """Move into the store the project's sessions an older version of this store kept in
        Markus session files (their first message holds the key; the Claude Code hooks'
        sessions, which have none, stay Markus sessions)."""
        for info in self.memory.sessions.list():
            if not info.id.startswith(prefix):
                continue
            session = self.memory.sessions.get(info.id)
            first = session.messages[0] if session is not None and session.messages else None
            meta = first.get("metadata") if first is not None else None
            data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
            if isinstance(data, Mapping) and isinstance(data.get("key"), Mapping):
                self.memory.histories.info(info.id)

    def _seen(self, sid: str) -> set[str]:
        """The uuids history ``sid`` holds: read once per store, then kept up to date."""
        seen = self._uuids.get(sid)
        if seen is None:
            held = _entries(self.memory.histories.items(sid))
            seen = {e["uuid"] for e in held if isinstance(e.get("uuid"), str)}
            self._uuids[sid] = seen
        return seen


def _item(entry: Mapping[str, Any]) -> HistoryItem:
    """The history item that keeps a transcript line as given, with the text recall shows."""
    inner = entry.get("message")
    kind = entry.get("type")
    role, text = "system", ""
    if kind in ("user", "assistant"):
        inner = inner if isinstance(inner, Mapping) else {}
        role, text = _content(str(inner.get("role", kind)), inner.get("content"))
    return HistoryItem(entry, role, text, at=_time(entry.get("timestamp")))


def _time(stamp: object) -> datetime | None:
    if not isinstance(stamp, str):
        return None
    try:
        at = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def _entries(records: Sequence[HistoryRecord]) -> list[dict[str, Any]]:
    """The transcript lines of a history, the older version's messages read as their lines."""
    older = entries_of(r.value for r in records if r.legacy)
    return [*older, *(dict(r.value) for r in records if not r.legacy)]


def _legacy_key(record: HistoryRecord) -> dict[str, Any] | None:
    meta = record.value.get("metadata") if record.legacy else None
    data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
    key = data.get("key") if isinstance(data, Mapping) else None
    return dict(key) if isinstance(key, Mapping) else None


__all__ = ["MarkusSessionStore"]
