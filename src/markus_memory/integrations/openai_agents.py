"""OpenAI Agents SDK: a ``Session`` over the agent's sessions and the memory tools as tools.

:class:`MarkusSession` implements the SDK's ``Session`` protocol on ``memory.sessions``: each
item is kept verbatim (the SDK fingerprints items, so they must come back as they went in)
inside an ordinary session message whose text feeds transcript recall, so
``recall_conversation`` finds what was said in any run. An item's text (a tool output, a
message's string content) is stored once, as the message's text, and put back on reading.
``clear_session`` deletes the session and ``pop_item`` rewrites it without its last item: what
they remove is gone from the session file, from recall, its index and its vectors.

:func:`memory_function_tools` gives the registry's tools as ``FunctionTool`` objects; every
call goes through ``dispatch``, so a bad call reaches the model as the registry's error result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..config import iso_ms
from ..errors import ExtraNotInstalledError, InvalidInputError
from ._session_keys import session_key
from ._tools import call, drop_nulls, parameters, select_tools, strict_parameters

try:
    from agents import FunctionTool
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("openai-agents", exc.name or "agents") from exc

if TYPE_CHECKING:
    from ..memory import AgentMemory
    from ..tools import ToolDefinition

META_KEY = "openai_agents"
"""The key of a session message's ``metadata`` that holds the SDK item (or a marker)."""
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_FIELDS = ("output", "content")
"""Item fields whose string value is the message's text: stored there only."""


class MarkusSession:
    """The SDK ``Session`` protocol over one session of ``memory.sessions``.

    ``session_id`` is any non-empty string; it names the agent's session
    :func:`~markus_memory.integrations._session_keys.session_key` maps it to (``chat-1`` stays
    ``chat-1``, ``tenant:42/chat:7`` becomes ``~tenant+3A42+2Fchat+3A7``), and
    ``self.session_id`` keeps it as given. ``limit`` (or ``session_settings.limit``) in
    ``get_items()`` means what it means for the SDK's ``SQLiteSession``: the newest ``limit``
    items, none for 0, all of them for a negative limit.
    """

    def __init__(
        self,
        session_id: str,
        memory: AgentMemory,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.key = session_key(session_id)
        self.session_id = session_id
        self.memory = memory
        self.session_settings = session_settings

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = await asyncio.to_thread(self._items)
        if limit is None or limit < 0:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        # Every item is checked (shape, JSON, Unicode, size) before the first is written:
        # a bad list changes nothing.
        stamp = iso_ms(self.memory.sessions.clock())
        check = self.memory.sessions.check_message
        messages = [check(_message(item, stamp)) for item in items]
        await asyncio.to_thread(self._append, messages)

    async def pop_item(self) -> TResponseInputItem | None:
        def pop() -> TResponseInputItem | None:
            with self.memory.lock:
                kept = self._kept()
                if not kept:
                    return None
                self.memory.delete_session(self.key)
                self._append(kept[:-1])
                return _item(kept[-1])

        return await asyncio.to_thread(pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self.memory.delete_session, self.key)

    def _append(self, messages: Sequence[Mapping[str, Any]]) -> None:
        if not messages:
            return
        with self.memory.lock:
            self.memory.sessions.get_or_create(self.key)
            for message in messages:
                self.memory.sessions.append(self.key, message)

    def _kept(self) -> list[Mapping[str, Any]]:
        session = self.memory.sessions.get(self.key)
        return [] if session is None else _kept_messages(session.messages)

    def _items(self) -> list[TResponseInputItem]:
        return [_item(message) for message in self._kept()]


def replay(messages: Iterable[Mapping[str, Any]]) -> list[TResponseInputItem]:
    """The SDK items a session's messages stand for, in order."""
    return [_item(message) for message in _kept_messages(messages)]


def _kept_messages(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages that stand for items, after the pop and clear markers older versions of
    this adapter appended (it now rewrites or deletes the session instead)."""
    kept: list[Mapping[str, Any]] = []
    for message in messages:
        meta = message.get("metadata")
        entry = meta.get(META_KEY) if isinstance(meta, Mapping) else None
        op = entry.get("op") if isinstance(entry, Mapping) else None
        if op == "pop":
            if kept:
                kept.pop()
        elif op == "clear":
            kept.clear()
        elif (isinstance(entry, Mapping) and "item" in entry) or message.get("role") in (
            "user",
            "assistant",
            "system",
        ):
            kept.append(message)
    return kept


def _item(message: Mapping[str, Any]) -> TResponseInputItem:
    """The SDK item a message keeps. A message written by another host (or the summary of a
    compaction) becomes a plain message item, so the model sees the history the session holds."""
    meta = message.get("metadata")
    entry = meta.get(META_KEY) if isinstance(meta, Mapping) else None
    if isinstance(entry, Mapping) and isinstance(entry.get("item"), Mapping):
        item = dict(entry["item"])
        field = entry.get("text_in")
        if field in _TEXT_FIELDS:
            item[field] = message.get("content")
        return cast("TResponseInputItem", item)
    content = message.get("content")
    text = content if isinstance(content, str) else _text(content)
    return cast("TResponseInputItem", {"role": message["role"], "content": text})


def _message(item: object, stamp: str) -> dict[str, Any]:
    """The session message that keeps ``item`` and carries its text for recall."""
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"a session item must be an object, got {type(item).__name__}")
    kind = item.get("type", "message")
    role = item.get("role")
    if kind == "message" and role in _ROLES:
        return _wrap(_ROLES[str(role)], _text(item.get("content")), item, stamp)
    if kind == "function_call_output" or str(kind).endswith("_call_output"):
        output = item.get("output")
        return _wrap("tool", output if isinstance(output, str) else _text(output), item, stamp)
    if kind == "function_call":
        text = f"{item.get('name')}({item.get('arguments', '')})"
        return _wrap("assistant", text, item, stamp)
    return _wrap("assistant", _text(item.get("content") or item.get("summary")), item, stamp)


def _wrap(role: str, text: str, item: Mapping[str, Any], stamp: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"item": item}
    for field in _TEXT_FIELDS:
        if isinstance(item.get(field), str) and item[field] == text:
            entry = {"item": {**item, field: None}, "text_in": field}
            break
    return {"role": role, "content": text, "metadata": {META_KEY: entry, "timestamp": stamp}}


def _text(content: object) -> str:
    """The text parts of an item's content (input_text, output_text, text …), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for part in content:
        if isinstance(part, Mapping):
            text = part.get("text", part.get("refusal"))
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


def memory_function_tools(
    memory: AgentMemory,
    *,
    scenario: str | None = None,
    names: Iterable[str] | None = None,
    strict: bool = True,
) -> list[FunctionTool]:
    """The memory tools as SDK ``FunctionTool`` objects, running through ``dispatch``.

    With ``strict`` (the SDK's default) every optional property is sent as required but
    nullable and a ``null`` means "not given"; ``strict=False`` sends the registry's schemas
    as they are. ``scenario``/``names`` pick the tools as :func:`markus_memory.tools.tool_names`.
    """
    return [
        _function_tool(memory, tool, strict)
        for tool in select_tools(scenario=scenario, names=names)
    ]


def _function_tool(memory: AgentMemory, tool: ToolDefinition, strict: bool) -> FunctionTool:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        given: Any = drop_nulls(tool, arguments) if strict else arguments
        return await asyncio.to_thread(call, memory, tool.name, given)

    schema = strict_parameters(parameters(tool)) if strict else parameters(tool)
    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=schema,
        on_invoke_tool=invoke,
        strict_json_schema=strict,
    )


__all__ = ["META_KEY", "MarkusSession", "memory_function_tools", "replay"]
