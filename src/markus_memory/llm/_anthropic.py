"""AnthropicChatModel: the Anthropic Messages API and the message shape it needs."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ._base import ChatResponse, Message, ToolCall, ToolSchema
from ._http import RetryPolicy, _HTTPChatModel, _malformed, _text_of, _tool_arguments


class AnthropicChatModel(_HTTPChatModel):
    """The Anthropic Messages API (``POST {base_url}/v1/messages``)."""

    api_name = "Anthropic endpoint"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str = "https://api.anthropic.com",
        anthropic_version: str = "2023-06-01",
        max_tokens: int = 4096,
        timeout: float = 120.0,
        temperature: float | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(base_url=base_url, timeout=timeout, retry=retry, sleep=sleep)
        self.model = model
        self.api_key = api_key
        self.anthropic_version = anthropic_version
        self.max_tokens = max_tokens
        self.temperature = temperature

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] | None = None,
        timeout: float | None = None,
    ) -> ChatResponse:
        system, turns = _to_anthropic(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": turns,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [_anthropic_tool(t) for t in tools]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        headers = {"content-type": "application/json", "anthropic-version": self.anthropic_version}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return self._parse(self._post("/v1/messages", headers, body, timeout))

    def _parse(self, payload: Any) -> ChatResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        try:
            for block in payload["content"]:
                if block["type"] == "text":
                    texts.append(str(block["text"]))
                elif block["type"] == "tool_use":
                    calls.append(
                        ToolCall(
                            str(block["id"]),
                            str(block["name"]),
                            _tool_arguments(self.api_name, block.get("input", {})),
                        )
                    )
        except (KeyError, TypeError) as exc:
            raise _malformed(self.api_name, f"missing {exc}", payload) from exc
        return ChatResponse("".join(texts), tuple(calls))


def _anthropic_tool(tool: ToolSchema) -> dict[str, Any]:
    spec = tool.get("function", tool)
    return {
        "name": spec["name"],
        "description": spec.get("description", ""),
        "input_schema": spec.get("parameters") or spec.get("input_schema") or {"type": "object"},
    }


def _anthropic_blocks(message: Message) -> list[dict[str, Any]]:
    role = message.get("role")
    if role == "tool":
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.get("toolCallId", ""),
                "content": _text_of(message.get("content", "")),
            }
        ]
    content = message.get("content", "")
    blocks: list[dict[str, Any]] = []
    parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
    for part in parts:
        if part.get("type") == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            blocks.append(_anthropic_image(str(part["image_url"]["url"])))
    for call in message.get("toolCalls") or ():
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": call["name"],
                "input": call.get("arguments", {}),
            }
        )
    return blocks


def _anthropic_image(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _to_anthropic(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """System text apart; tool results become user turns; consecutive same-role turns merge."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "system":
            system.append(_text_of(message.get("content", "")))
            continue
        role = "assistant" if message.get("role") == "assistant" else "user"
        blocks = _anthropic_blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return "\n\n".join(s for s in system if s), turns
