"""Tool definitions and their schemas in OpenAI, Anthropic and MCP formats; scenario tool sets."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ._results import Result
from ._schema import validator_for

if TYPE_CHECKING:
    from ..memory import AgentMemory

Handler = Callable[["AgentMemory", Mapping[str, Any]], Result]
SchemaFormat = Literal["openai", "anthropic", "mcp"]


@dataclass(frozen=True)
class ToolDefinition:
    """One LLM-visible memory tool: what the model reads, and the code that runs the call.

    ``example`` is a correct call, quoted back in every error so the model can retry;
    ``store`` names where the tool reads or writes (every result reports it);
    ``error_key`` is the key that carries an error's text (``message`` for recall_activity).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Handler = field(repr=False, compare=False)
    example: Mapping[str, Any]
    store: str
    error_key: str = "error"
    legacy: bool = False
    validator: Any = field(init=False, repr=False, compare=False)
    """jsonschema's validator for exactly the parameters every schema format hands out."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "validator", validator_for(_plain(self.parameters)))

    def schema(self, format: SchemaFormat = "openai") -> dict[str, Any]:
        """This tool's definition in one of the three formats hosts send to models."""
        params = _plain(self.parameters)
        if format == "openai":
            return {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": params,
                },
            }
        if format == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": params}
        if format == "mcp":
            return {"name": self.name, "description": self.description, "inputSchema": params}
        raise ValueError(f"unknown schema format {format!r}; use openai, anthropic or mcp")


def _plain(value: Any) -> Any:
    """A deep copy made of dicts and lists only, safe to hand out and to serialise."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class Registry:
    """An ordered set of tool definitions, looked up by name."""

    def __init__(self, tools: Iterable[ToolDefinition]) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"duplicate tool {tool.name!r}")
            self._tools[tool.name] = tool

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
