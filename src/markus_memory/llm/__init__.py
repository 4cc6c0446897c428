"""Chat models: the ChatModel protocol the dream cycle and the memory flush call, and test doubles.

Messages use the Markus ``LLMMessage`` shape: ``{"role", "content",
"toolCalls"?, "toolCallId"?}``. Tools are given in OpenAI function-calling format
(``{"type": "function", "function": {"name", "description", "parameters"}}``). Adapters for
real endpoints (OpenAI-compatible, Anthropic) import their HTTP client lazily (extra ``[llm]``).
"""

from __future__ import annotations

from ._anthropic import AnthropicChatModel
from ._base import ChatModel, ChatResponse, Message, ToolCall, ToolSchema
from ._http import RetryPolicy
from ._openai import OpenAIChatModel
from ._scripted import Script, ScriptedChatModel

__all__ = [
    "AnthropicChatModel",
    "ChatModel",
    "ChatResponse",
    "Message",
    "OpenAIChatModel",
    "RetryPolicy",
    "Script",
    "ScriptedChatModel",
    "ToolCall",
    "ToolSchema",
]
