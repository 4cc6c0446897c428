"""What every adapter needs from the tool registry: which tools, their schemas, one call.

Calls go through :func:`markus_memory.tools.dispatch` only, so validation, refusals and the
error results are the registry's wherever the tool is offered; nothing here raises to a framework.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..tools import REGISTRY, ToolDefinition, dispatch, tool_names

if TYPE_CHECKING:
    from ..memory import AgentMemory


def select_tools(
    *, scenario: str | None = None, names: Iterable[str] | None = None, legacy: bool = False
) -> list[ToolDefinition]:
    """The registry's tools: every canonical one, a scenario's set, or an explicit list.

    Raises ValueError for an unknown scenario or tool name (a programming error of the host).
    """
    wanted = tuple(names) if names is not None else tool_names(scenario, legacy=legacy)
    tools = []
    for name in wanted:
        tool = REGISTRY.get(name)
        if tool is None:
            raise ValueError(f"unknown tool {name!r}; known: {', '.join(REGISTRY.names())}")
        tools.append(tool)
    return tools


def parameters(tool: ToolDefinition) -> dict[str, Any]:
    """The tool's JSON Schema for its arguments, as a fresh plain dict."""
    return dict(tool.schema("mcp")["inputSchema"])


def call(memory: AgentMemory, name: str, arguments: Any) -> str:
    """Run one tool call through the registry: the JSON result text; never raises."""
    return dispatch(memory, name, arguments)


def strict_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` rewritten for OpenAI strict mode without changing what a call means.

    Strict mode requires every property and forbids extra ones; an optional property becomes
    required-but-nullable (``null`` meaning "not given", removed by :func:`drop_nulls` before
    the call), and ``oneOf`` becomes ``anyOf`` (strict mode knows only the latter; the branches
    of the registry's schemas never overlap, so both accept the same values).
    """
    strict: dict[str, Any] = _strict(schema)
    return strict


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    out = {("anyOf" if k == "oneOf" else k): _strict(v) for k, v in node.items()}
    properties = out.get("properties")
    if out.get("type") == "object" and isinstance(properties, dict):
        required = set(out.get("required") or ())
        out["properties"] = {
            name: prop if name in required else _nullable(prop) for name, prop in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def _nullable(prop: Any) -> dict[str, Any]:
    if not isinstance(prop, dict):
        return {"anyOf": [prop, {"type": "null"}]}
    described = {k: v for k, v in prop.items() if k in ("description", "title")}
    inner = {k: v for k, v in prop.items() if k not in ("description", "title")}
    if "anyOf" in inner and len(inner) == 1:
        return {**described, "anyOf": [*inner["anyOf"], {"type": "null"}]}
    return {**described, "anyOf": [inner, {"type": "null"}]}


def drop_nulls(tool: ToolDefinition, arguments: Any) -> Any:
    """The call's arguments without the ``null`` of optional properties (see strict mode).

    Anything that is not a JSON object is passed on unchanged, for dispatch to refuse.
    """
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError):
            return arguments
    if not isinstance(arguments, Mapping):
        return arguments
    required = set(tool.parameters.get("required") or ())
    return {k: v for k, v in arguments.items() if v is not None or k in required}
