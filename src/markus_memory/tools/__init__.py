"""The LLM-visible memory tools: definitions, schemas in three formats, and dispatch.

``dispatch(memory, name, arguments)`` runs one tool call and returns the JSON string the
model should see (the original Markus result shapes); it never raises. ``tool_schemas``
gives the definitions in OpenAI, Anthropic or MCP format, optionally for one scenario.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from . import _deliberation, _dispatch, _knowledge_tools, _notebook_tools, _recall_tools, _registry
from ._errors import is_tool_error_result
from ._paths import hide_host_paths
from ._recall_normalize import RecallArgs, normalize_recall_args
from ._registry import SchemaFormat, ToolDefinition
from ._scenarios import SCENARIO_TOOLS

if TYPE_CHECKING:
    from ..memory import AgentMemory

REGISTRY = _registry.Registry(
    (*_knowledge_tools.TOOLS, *_notebook_tools.TOOLS, *_recall_tools.TOOLS),
)
"""Every memory tool, canonical ones first, then the legacy aliases, in a stable order."""


def dispatch(
    memory: AgentMemory, name: str, arguments: Any, *, offered: Iterable[str] | None = None
) -> str:
    """Run tool ``name`` with ``arguments`` (dict or JSON text): a JSON string; never raises.

    ``offered``: the tool names the model was given, which an unknown-tool error lists
    (default: the canonical tools, as :func:`tool_schemas` gives them by default).
    """
    return _dispatch.run(REGISTRY, memory, name, arguments, offered)


def apply_memory_updates(memory: AgentMemory, updates: Any) -> list[str]:
    """Deliberation ``memory_updates``: working → notebook, longterm → curated patch."""
    return _deliberation.apply_memory_updates(memory, updates, dispatch)


def tool_names(scenario: str | None = None, *, legacy: bool = False) -> tuple[str, ...]:
    """Tool names for ``scenario`` (see :data:`SCENARIO_TOOLS`), or every canonical tool."""
    if scenario is not None:
        if scenario not in SCENARIO_TOOLS:
            known = ", ".join(SCENARIO_TOOLS)
            raise ValueError(f"unknown scenario {scenario!r}; known: {known}")
        return SCENARIO_TOOLS[scenario]
    return tuple(t.name for t in REGISTRY if legacy or not t.legacy)


def tool_schemas(
    format: SchemaFormat = "openai",
    *,
    scenario: str | None = None,
    names: Iterable[str] | None = None,
    legacy: bool = False,
) -> list[dict[str, Any]]:
    """The tools' schemas in ``format`` ("openai", "anthropic" or "mcp").

    By default every canonical tool; ``scenario`` picks a scenario's set, ``names`` an explicit
    list, ``legacy=True`` adds the legacy aliases.
    """
    wanted = tuple(names) if names is not None else tool_names(scenario, legacy=legacy)
    tools = []
    for name in wanted:
        tool = REGISTRY.get(name)
        if tool is None:
            raise ValueError(f"unknown tool {name!r}")
        tools.append(tool.schema(format))
    return tools


__all__ = [
    "REGISTRY",
    "SCENARIO_TOOLS",
    "RecallArgs",
    "ToolDefinition",
    "apply_memory_updates",
    "dispatch",
    "hide_host_paths",
    "is_tool_error_result",
    "normalize_recall_args",
    "tool_names",
    "tool_schemas",
]
