"""Chat models: the ChatModel protocol the dream cycle and the memory flush call, and test doubles.

Messages use the Markus ``LLMMessage`` shape (REFERENCE §2.5): ``{"role", "content",
"toolCalls"?, "toolCallId"?}``. Tools are given in OpenAI function-calling format
(``{"type": "function", "function": {"name", "description", "parameters"}}``). Adapters for
real endpoints (OpenAI-compatible, Anthropic) live in this module too and import their HTTP
client lazily (extra ``[llm]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .errors import LLMError

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


Script = ChatResponse | str | Callable[[Sequence[Message]], ChatResponse | str]


@dataclass
class ScriptedChatModel:
    """A real ChatModel that answers from a script, for tests and examples.

    Each entry is a :class:`ChatResponse`, a plain string (text only), or a callable receiving
    the messages. Every call is recorded in :attr:`calls`. Running past the end of the script
    raises :class:`LLMError`, like a model that stopped answering.
    """

    script: list[Script]
    calls: list[tuple[list[Message], list[ToolSchema] | None]] = field(default_factory=list)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        timeout: float | None = None,
    ) -> ChatResponse:
        self.calls.append((list(messages), None if tools is None else list(tools)))
        if not self.script:
            raise LLMError("scripted chat model has no more answers")
        step = self.script.pop(0)
        answer = step(messages) if callable(step) else step
        return ChatResponse(answer) if isinstance(answer, str) else answer
