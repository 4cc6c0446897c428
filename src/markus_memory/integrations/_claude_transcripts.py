"""Claude transcripts (JSONL lines) kept in the agent's sessions: each line verbatim in a
session message whose text feeds recall; a line's ``uuid`` is its idempotency key.

Shared by the Claude Code hooks (``_claude_lines``) and the Claude Agent SDK session store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ._session_keys import session_key

if TYPE_CHECKING:
    from ..memory import AgentMemory

META_KEY = "claude_code"
_TEXT_LIMIT = 4000  # per tool input/result in the recalled text; the entry itself is kept whole


def session_id_for(project_key: str, session_id: str, subpath: str | None = None) -> str:
    """The agent's session that holds one Claude transcript: the project's prefix, then the
    session id and subpath mapped by :func:`session_key` (a UUID session id keeps its name)."""
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInputError("a Claude session id must be a non-empty string")
    parts = (session_id, subpath) if subpath else (session_id,)
    return session_key(*parts, prefix=scope_prefix(project_key), kind="Claude session id")


def scope_prefix(project_key: str) -> str:
    """The start of the session ids of one project's Claude transcripts."""
    return f"claude-code_{hashlib.blake2b(project_key.encode(), digest_size=6).hexdigest()}_"


def line_message(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The session message for one transcript line: its text for recall, the line verbatim."""
    inner = entry.get("message")
    inner = inner if isinstance(inner, Mapping) else {}
    kind = entry.get("type")
    role, text = "system", ""
    if kind in ("user", "assistant"):
        role, text = _content(str(inner.get("role", kind)), inner.get("content"))
    data: dict[str, Any] = {"entry": dict(entry)}
    if kind in ("user", "assistant") and isinstance(inner.get("content"), str):
        # The text is the message's content: stored once, as the session message's text.
        data = {"entry": {**entry, "message": {**inner, "content": None}}, "text_in": "content"}
    metadata: dict[str, Any] = {META_KEY: data}
    if isinstance(entry.get("timestamp"), str):
        metadata["timestamp"] = entry["timestamp"]
    return {"role": role, "content": text, "metadata": metadata}


def _content(role: str, content: object) -> tuple[str, str]:
    if isinstance(content, str):
        return ("assistant" if role == "assistant" else "user"), content
    parts, results = [], 0
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_use":
            shown = json.dumps(block.get("input"), ensure_ascii=False)[:_TEXT_LIMIT]
            parts.append(f"[tool {block.get('name')}] {shown}")
        elif block.get("type") == "tool_result":
            results += 1
            parts.append(_result_text(block.get("content"))[:_TEXT_LIMIT])
    if role == "assistant":
        return "assistant", "\n".join(parts)
    return ("tool" if results and results == len(parts) else "user"), "\n".join(parts)


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text")) for b in content if isinstance(b, Mapping) and "text" in b
        )
    return ""


def entries_of(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for message in messages:
        meta = message.get("metadata")
        data = meta.get(META_KEY) if isinstance(meta, Mapping) else None
        if isinstance(data, Mapping) and isinstance(data.get("entry"), Mapping):
            entry = dict(data["entry"])
            if data.get("text_in") == "content" and isinstance(entry.get("message"), Mapping):
                entry["message"] = {**entry["message"], "content": message.get("content")}
            found.append(entry)
    return found


def record_entries(memory: AgentMemory, sid: str, entries: Sequence[Mapping[str, Any]]) -> int:
    """Append the transcript lines not yet in session ``sid``; how many were appended.

    A line whose ``uuid`` is already recorded is skipped; a line without one is appended as it
    comes (the SDK's contract for mirrored batches). Every line is checked before the first is
    written.
    """
    with memory.lock:
        session = memory.sessions.get(sid)
        seen = {_identity(e) for e in (entries_of(session.messages) if session else [])}
        fresh = []
        for entry in entries:
            if not isinstance(entry, Mapping):
                raise InvalidInputError(f"a transcript line must be an object, got {entry!r:.40}")
            identity = _identity(entry)
            if identity is not None and identity in seen:
                continue
            seen.add(identity)
            fresh.append(line_message(entry))
        if not fresh:
            return 0
        _check_json(fresh)
        memory.sessions.get_or_create(sid)
        for message in fresh:
            memory.sessions.append(sid, message)
        return len(fresh)


def _identity(entry: Mapping[str, Any]) -> str | None:
    uuid = entry.get("uuid")
    return "uuid:" + uuid if isinstance(uuid, str) else None


def _check_json(messages: list[dict[str, Any]]) -> None:
    try:
        json.dumps(messages, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"a transcript line is not plain JSON: {exc}") from None
