"""The chat model contract: the ChatModel protocol, its messages and what it answers.

Messages use the Markus ``LLMMessage`` shape: ``{"role", "content",
"toolCalls"?, "toolCallId"?}``. Tools are given in OpenAI function-calling format
(``{"type": "function", "function": {"name", "description", "parameters"}}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Message = Mapping[str, Any]
ToolSchema = Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ChatResponse:
    """What the model answered: text and/or tool calls."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()

    def as_message(self) -> dict[str, Any]:
        """This answer as the assistant ``LLMMessage`` to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["toolCalls"] = [
                {"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                for c in self.tool_calls
            ]
        return message


@runtime_checkable
class ChatModel(Protocol):
    """Anything that can complete a chat. Implementations must honour ``timeout`` (seconds)."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        timeout: float | None = None,
    ) -> ChatResponse: ...
