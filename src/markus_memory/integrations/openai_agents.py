"""OpenAI Agents SDK: a ``Session`` over the agent's sessions and the memory tools as tools.

:class:`MarkusSession` implements the SDK's ``Session`` protocol on ``memory.sessions``: each
item is kept verbatim (the SDK fingerprints items, so they must come back as they went in)
inside an ordinary session message whose text feeds transcript recall, so
``recall_conversation`` finds what was said in any run. The session file stays append-only:
``pop_item`` and ``clear_session`` append a marker that hides items from the history the SDK
reads back, and the transcript itself stays recallable, as everything the agent said does.

:func:`memory_function_tools` gives the registry's tools as ``FunctionTool`` objects; every
call goes through ``dispatch``, so a bad call reaches the model as the registry's error result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import ExtraNotInstalledError, InvalidInputError
from ..layers.sessions import validate_message
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


class MarkusSession:
    """The SDK ``Session`` protocol over one session of ``memory.sessions``.

    ``session_id`` must be a valid session id (letters, digits, ``_ - .``); the session is
    created on first use. ``session_settings.limit`` caps what ``get_items()`` returns, as in
    the SDK's own sessions.
    """

    def __init__(
        self,
        session_id: str,
        memory: AgentMemory,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        memory.sessions.get_or_create(session_id)  # validates the id; InvalidIdError if unsafe
        self.session_id = session_id
        self.memory = memory
        self.session_settings = session_settings

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = await asyncio.to_thread(self._items)
        if limit is None:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        # Every item is checked before the first is written: a bad list changes nothing.
        messages = [validate_message(_message(item)) for item in items]
        await asyncio.to_thread(self._append, messages)

    async def pop_item(self) -> TResponseInputItem | None:
        def pop() -> TResponseInputItem | None:
            with self.memory.lock:
                items = self._items()
                if not items:
                    return None
                self._append([_marker("pop")])
                return items[-1]

        return await asyncio.to_thread(pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._append, [_marker("clear")])

    def _append(self, messages: Sequence[Mapping[str, Any]]) -> None:
        for message in messages:
            self.memory.sessions.append(self.session_id, message)

    def _items(self) -> list[TResponseInputItem]:
        session = self.memory.sessions.get(self.session_id)
        return [] if session is None else replay(session.messages)


def replay(messages: Iterable[Mapping[str, Any]]) -> list[TResponseInputItem]:
    """The SDK items a session's messages stand for, after their pop and clear markers.

    A message written by another host (or the summary of a compaction) becomes a plain
    message item, so the history the model sees is the one the session holds.
    """
    items: list[TResponseInputItem] = []
    for message in messages:
        meta = message.get("metadata")
        entry = meta.get(META_KEY) if isinstance(meta, Mapping) else None
        if isinstance(entry, Mapping) and "item" in entry:
            items.append(cast("TResponseInputItem", entry["item"]))
        elif isinstance(entry, Mapping) and entry.get("op") == "pop":
            if items:
                items.pop()
        elif isinstance(entry, Mapping) and entry.get("op") == "clear":
            items.clear()
        elif message.get("role") in ("user", "assistant", "system"):
            content = message.get("content")
            text = content if isinstance(content, str) else _text(content)
            items.append(cast("TResponseInputItem", {"role": message["role"], "content": text}))
    return items


def _message(item: object) -> dict[str, Any]:
    """The session message that keeps ``item`` verbatim and carries its text for recall."""
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"a session item must be an object, got {type(item).__name__}")
    kind = item.get("type", "message")
    role = item.get("role")
    if kind == "message" and role in _ROLES:
        return _wrap(_ROLES[str(role)], _text(item.get("content")), item)
    if kind == "function_call_output" or str(kind).endswith("_call_output"):
        output = item.get("output")
        return _wrap("tool", output if isinstance(output, str) else _text(output), item)
    if kind == "function_call":
        return _wrap("assistant", f"{item.get('name')}({item.get('arguments', '')})", item)
    return _wrap("assistant", _text(item.get("content") or item.get("summary")), item)


def _wrap(role: str, text: str, item: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": role, "content": text, "metadata": {META_KEY: {"item": item}}}


def _marker(op: str) -> dict[str, Any]:
    return {"role": "system", "content": "", "metadata": {META_KEY: {"op": op}}}


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
