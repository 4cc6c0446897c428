"""ScriptedChatModel: a real ChatModel that answers from a script, for tests and examples."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import LLMError
from ._base import ChatResponse, Message, ToolSchema

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
