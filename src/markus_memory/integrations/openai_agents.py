"""OpenAI Agents SDK: a ``Session`` over the agent's histories and the memory tools as tools.

:class:`MarkusSession` implements the SDK's ``Session`` protocol on ``memory.histories``: the
SDK owns the conversation, so each item is stored exactly as given (the SDK fingerprints items,
so they must come back as they went in) and never compacted; its text (a message's text, a tool
output, a call's name and arguments) is what recall indexes, so ``recall_conversation`` finds
what was said in any run. ``get_items(limit)`` reads the newest ``limit`` items only,
``add_items`` checks the whole batch before it writes any of it, ``pop_item`` and
``clear_session`` take what they remove out of recall, its index and its vectors.

A session an older version kept as Markus session messages (each item wrapped in a message's
metadata, with pop and clear markers) is read as the items it stands for (:func:`replay`).

:func:`memory_function_tools` gives the registry's tools as ``FunctionTool`` objects; every
call goes through ``dispatch``, so a bad call reaches the model as the registry's error result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..errors import ExtraNotInstalledError, InvalidInputError
from ..layers.histories import HistoryItem, HistoryRecord
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
"""The key of an older version's session message ``metadata`` that held the SDK item."""
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_FIELDS = ("output", "content")
"""Item fields an older version kept as the message's text (put back on reading)."""


class MarkusSession:
    """The SDK ``Session`` protocol over one history of ``memory.histories``.

    ``session_id`` is any non-empty string; it names the history
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
        wanted = -1 if limit is None or limit < 0 else limit
        return await asyncio.to_thread(self._items, wanted)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        # Every item is checked (shape, JSON, Unicode, size) before the first is written:
        # a bad list changes nothing.
        def add() -> None:
            batch = [_history_item(n, item) for n, item in enumerate(items)]
            self.memory.histories.append(self.key, batch)

        await asyncio.to_thread(add)

    async def pop_item(self) -> TResponseInputItem | None:
        def pop() -> TResponseInputItem | None:
            with self.memory.lock:
                newest = self.memory.histories.newest(self.key, 1)
                if not newest:
                    return None
                if newest[0].legacy:
                    return self._pop_legacy()
                popped = self.memory.histories.pop(self.key)
                return None if popped is None else cast("TResponseInputItem", popped.value)

        return await asyncio.to_thread(pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self.memory.histories.delete, self.key)

    def _items(self, limit: int) -> list[TResponseInputItem]:
        histories = self.memory.histories
        records = histories.newest(self.key, limit) if limit > 0 else []
        if limit < 0 or (records and records[0].legacy):
            # An older version's messages (legacy, always the oldest) may hold pop and clear
            # markers: the items they stand for are known from the whole history only.
            items = _replayed(histories.items(self.key))
            return items[-limit:] if limit > 0 else items
        return [cast("TResponseInputItem", r.value) for r in records]

    def _pop_legacy(self) -> TResponseInputItem:
        """Pop from a history an older version wrote whose newest message is its own: the
        history is written again as the items it stands for, without the last."""
        histories = self.memory.histories
        items = _replayed(histories.items(self.key))
        batch = [_history_item(n, item) for n, item in enumerate(items[:-1])]
        histories.check(batch)
        histories.delete(self.key)
        histories.append(self.key, batch)
        return items[-1]


def replay(messages: Iterable[Mapping[str, Any]]) -> list[TResponseInputItem]:
    """The SDK items an older version's session messages stand for, in order."""
    return [_item(message) for message in _kept_messages(messages)]


def _replayed(records: Sequence[HistoryRecord]) -> list[TResponseInputItem]:
    legacy = [r.value for r in records if r.legacy]
    return [
        *replay(legacy),
        *(cast("TResponseInputItem", r.value) for r in records if not r.legacy),
    ]


def _kept_messages(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages that stand for items, after the pop and clear markers still older
    versions of this adapter appended."""
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
    """The SDK item an older version's message kept. A message written by another host (or
    the summary of a compaction) becomes a plain message item, so the model sees the history
    the session holds."""
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


def _history_item(n: int, item: object) -> HistoryItem:
    """The history item that keeps ``item`` as given, with the role and text recall shows."""
    if not isinstance(item, Mapping):
        raise InvalidInputError(
            f"item {n}: a session item must be an object, got {type(item).__name__}"
        )
    kind = item.get("type", "message")
    role = item.get("role")
    if kind == "message" and role in _ROLES:
        return HistoryItem(item, _ROLES[str(role)], _text(item.get("content")))
    if kind == "function_call_output" or str(kind).endswith("_call_output"):
        output = item.get("output")
        return HistoryItem(item, "tool", output if isinstance(output, str) else _text(output))
    if kind == "function_call":
        return HistoryItem(item, "assistant", f"{item.get('name')}({item.get('arguments', '')})")
    return HistoryItem(item, "assistant", _text(item.get("content") or item.get("summary")))


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
