"""NOTEBOOK.md and state.md tools: update/clear_notebook, their working-memory aliases, state_*."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._registry import ToolDefinition
from ._results import Result, ToolCallError
from ._schema import arguments, text
from ._validation import example, optional_string

if TYPE_CHECKING:
    from ..memory import AgentMemory

NOTEBOOK = "NOTEBOOK.md"
STATE = "state.md"
NOTEBOOK_EXAMPLE = {"key": "current-task", "content": "Migrating the billing service; step 2/5"}
STATE_EXAMPLE = {"key": "deploy-freeze", "content": "No deploys until Friday (release week)"}


SYSTEM_KEYS = frozenset(
    {"relevant-context", "triage-decision", "deliberation", "cognitive-context", "reflection"}
)
"""Keys the runtime writes itself (in the original); an agent entry there would be overwritten."""


def _check_agent_key(memory: AgentMemory, key: str, hint: str) -> None:
    """System-managed entries (relevant-context, triage …) are not the agent's to change."""
    if key in SYSTEM_KEYS:
        raise ToolCallError(
            f'notebook key "{key}" is reserved for entries the system writes; choose another '
            f"key. {hint}",
            key=key,
        )
    entry = memory.notebook.get(key)
    if entry is not None and entry.managed != "agent":
        raise ToolCallError(
            f'notebook entry "{key}" is managed by the system ({entry.managed}) and is rewritten '
            f"automatically; choose another key. {hint}",
            key=key,
        )


def _upsert(memory: AgentMemory, key: str, content: str, hint: str) -> Result:
    key = key.strip()
    _check_agent_key(memory, key, hint)
    result = memory.notebook.upsert(key, content, managed="agent")
    limit = memory.settings.limits.notebook_max_chars_per_entry
    return {
        "status": "updated",
        "key": result.key,
        "evicted": result.evicted,
        "truncated": True if result.truncated else None,
        "limit": limit if result.truncated else None,
        "store": NOTEBOOK,
    }


def _update(memory: AgentMemory, args: Mapping[str, Any], tool: str) -> Result:
    hint = "Example: " + example(tool, NOTEBOOK_EXAMPLE)
    return _upsert(memory, args["key"], args["content"], hint)


def update_notebook(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    return _update(memory, args, "update_notebook")


def update_working_memory(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    return _update(memory, args, "update_working_memory")


def _clear(memory: AgentMemory, args: Mapping[str, Any], tool: str) -> Result:
    hint = f"Example: {example(tool, {'key': 'current-task'})} or {example(tool, {'all': True})}"
    everything = args.get("all") is True
    key = (optional_string(args, "key") or "").strip()
    if everything and key:
        raise ToolCallError(
            f'give either "key" (one entry) or "all": true (all of yours), not both. {hint}'
        )
    if everything:
        cleared = memory.notebook.clear()
        return {"status": "cleared", "cleared": cleared, "store": NOTEBOOK}
    if not key:
        raise ToolCallError(
            'say what to remove: "key" names one entry, and "all": true removes all of your '
            f"own entries; nothing was removed. {hint}"
        )
    _check_agent_key(memory, key, hint)
    cleared = memory.notebook.clear(key=key)
    return {"status": "cleared", "cleared": cleared, "store": NOTEBOOK}


def clear_notebook(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    return _clear(memory, args, "clear_notebook")


def clear_working_memory(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    return _clear(memory, args, "clear_working_memory")


def state_update(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    entry = memory.state.update(args["key"].strip(), args["content"].strip())
    return {"status": "updated", "key": entry.key, "store": STATE}


def state_clear(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    key = args["key"].strip()
    removed = memory.state.clear(key)
    return {"status": "cleared", "key": key, "cleared": 1 if removed else 0, "store": STATE}


_NOTEBOOK_PARAMS = arguments(
    {
        "key": text("Short stable key, e.g. current-task."),
        "content": text("The full new text of the entry."),
    },
    "key",
    "content",
)
_CLEAR_PARAMS = arguments(
    {
        "key": {"type": "string", "description": "The entry to remove."},
        "all": {
            "type": "boolean",
            "description": "true removes all of your own entries (instead of a key).",
        },
    }
)

TOOLS = (
    ToolDefinition(
        name="update_notebook",
        description=(
            "Create or overwrite a keyed entry in your Notebook (NOTEBOOK.md), the workspace "
            "shown in every prompt under '## Notebook' and kept across sessions. At most 4 "
            "entries of your own, 6000 characters each; when all 4 are used, writing a new key "
            "evicts your oldest entry. Choose few, stable keys (e.g. current-task, plan) and "
            "rewrite them as work progresses. Entries marked [system] are managed for you."
        ),
        parameters=_NOTEBOOK_PARAMS,
        handler=update_notebook,
        example=NOTEBOOK_EXAMPLE,
        store=NOTEBOOK,
    ),
    ToolDefinition(
        name="clear_notebook",
        description=(
            "Remove one of your Notebook entries by key, or all of your own entries "
            "(all: true; a call with neither removes nothing). System-managed entries are "
            "never removed."
        ),
        parameters=_CLEAR_PARAMS,
        handler=clear_notebook,
        example={"key": "current-task"},
        store=NOTEBOOK,
    ),
    ToolDefinition(
        name="state_update",
        description=(
            "Record a short-lived status line in state.md under a key (e.g. a freeze, an "
            "ongoing incident). State entries expire after 7 days without an update. Use "
            "memory_save for lasting facts."
        ),
        parameters=arguments(
            {
                "key": text("Short stable key."),
                "content": text("The current state, briefly."),
            },
            "key",
            "content",
        ),
        handler=state_update,
        example=STATE_EXAMPLE,
        store=STATE,
    ),
    ToolDefinition(
        name="state_clear",
        description="Remove a state.md entry by key when it no longer holds.",
        parameters=arguments({"key": text("The entry to remove.")}, "key"),
        handler=state_clear,
        example={"key": "deploy-freeze"},
        store=STATE,
    ),
    ToolDefinition(
        name="update_working_memory",
        description="Legacy alias of update_notebook: upsert a keyed working-memory entry.",
        parameters=_NOTEBOOK_PARAMS,
        handler=update_working_memory,
        example=NOTEBOOK_EXAMPLE,
        store=NOTEBOOK,
        legacy=True,
    ),
    ToolDefinition(
        name="clear_working_memory",
        description="Legacy alias of clear_notebook: remove a working-memory entry, or all yours.",
        parameters=_CLEAR_PARAMS,
        handler=clear_working_memory,
        example={"key": "current-task"},
        store=NOTEBOOK,
        legacy=True,
    ),
)
