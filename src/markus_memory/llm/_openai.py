"""OpenAIChatModel: any OpenAI-compatible ``/chat/completions`` endpoint."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._base import ChatResponse, Message, ToolCall, ToolSchema
from ._http import RetryPolicy, _HTTPChatModel, _malformed, _text_of, _tool_arguments


class OpenAIChatModel(_HTTPChatModel):
    """Any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, llama.cpp, Ollama…).

    ``base_url`` is the API root including its version path (``https://api.openai.com/v1``,
    ``http://127.0.0.1:8080/v1``); ``api_key`` may be None for local servers.
    """

    api_name = "OpenAI-compatible endpoint"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        timeout: float = 120.0,
        max_tokens: int | None = None,
        temperature: float | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(base_url=base_url, timeout=timeout, retry=retry, sleep=sleep)
        self.model = model
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.temperature = temperature

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        timeout: float | None = None,
    ) -> ChatResponse:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_to_openai(m) for m in messages],
        }
        if tools:
            body["tools"] = [dict(t) for t in tools]
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return self._parse(self._post("/chat/completions", headers, body, timeout))

    def _parse(self, payload: Any) -> ChatResponse:
        try:
            message = payload["choices"][0]["message"]
            text = message.get("content") or ""
            raw_calls = message.get("tool_calls") or []
            calls = tuple(
                ToolCall(
                    str(c["id"]),
                    str(c["function"]["name"]),
                    _tool_arguments(self.api_name, c["function"].get("arguments")),
                )
                for c in raw_calls
            )
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise _malformed(self.api_name, f"missing {exc}", payload) from exc
        return ChatResponse(_text_of(text), calls)


def _to_openai(message: Message) -> dict[str, Any]:
    role = message.get("role")
    out: dict[str, Any] = {"role": role, "content": message.get("content", "")}
    if role == "tool":
        out["tool_call_id"] = message.get("toolCallId", "")
        out["content"] = _text_of(out["content"])
    calls = message.get("toolCalls")
    if role == "assistant" and calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
            }
            for c in calls
        ]
    return out
