"""Chat models: the ChatModel protocol the dream cycle and the memory flush call, and test doubles.

Messages use the Markus ``LLMMessage`` shape (REFERENCE §2.5): ``{"role", "content",
"toolCalls"?, "toolCallId"?}``. Tools are given in OpenAI function-calling format
(``{"type": "function", "function": {"name", "description", "parameters"}}``). Adapters for
real endpoints (OpenAI-compatible, Anthropic) live in this module too and import their HTTP
client lazily (extra ``[llm]``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .errors import ExtraNotInstalledError, InvalidInputError, LLMError

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


# --------------------------------------------------------------------------------------------
# HTTP adapters (extra ``[llm]``: httpx, imported lazily)

_RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ExtraNotInstalledError("llm", "httpx") from exc
    return httpx


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff on 429, 5xx, timeouts and connection errors.

    Every call also has a deadline (its ``timeout``): no attempt and no backoff sleep runs past
    it, so a dead endpoint costs at most ``timeout`` seconds, never forever.
    """

    max_attempts: int = 3
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 8.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        wait = min(self.max_backoff_seconds, self.backoff_seconds * (2.0 ** (attempt - 1)))
        if retry_after is not None:
            wait = min(self.max_backoff_seconds, max(wait, retry_after))
        return wait


class _HTTPChatModel:
    """Shared transport: one httpx client, a deadline per call, bounded retries, clear errors."""

    api_name = "chat endpoint"

    def __init__(
        self,
        *,
        base_url: str,
        timeout: float,
        retry: RetryPolicy | None,
        sleep: Callable[[float], None],
    ) -> None:
        if timeout <= 0:
            raise InvalidInputError(f"timeout must be positive seconds, got {timeout!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self._sleep = sleep
        self._client: Any = None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(
        self, path: str, headers: Mapping[str, str], body: Mapping[str, Any], timeout: float | None
    ) -> Any:
        httpx = _httpx()
        if self._client is None:
            self._client = httpx.Client()
        url = self.base_url + path
        budget = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMError(f"{self.api_name} {url}: no answer within the {budget:g}s deadline")
            retry_after: float | None = None
            try:
                response = self._client.post(
                    url, headers=dict(headers), json=body, timeout=httpx.Timeout(remaining)
                )
            except httpx.TimeoutException:
                failure = f"timed out (attempt {attempt}, deadline {budget:g}s)"
            except httpx.TransportError as exc:
                failure = f"connection failed: {exc!r}"
            else:
                if response.status_code < 300:
                    return self._json(url, response)
                failure = f"answered HTTP {response.status_code}: {_excerpt(response.text)}"
                if response.status_code not in _RETRY_STATUSES:
                    raise LLMError(f"{self.api_name} {url} {failure}")
                retry_after = _retry_after(response.headers.get("retry-after"))
            wait = self.retry.delay(attempt, retry_after)
            if attempt >= self.retry.max_attempts or time.monotonic() + wait >= deadline:
                raise LLMError(
                    f"{self.api_name} {url} {failure}; gave up after {attempt} attempt(s)"
                )
            self._sleep(wait)

    def _json(self, url: str, response: Any) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise LLMError(
                f"{self.api_name} {url} returned a body that is not JSON: {_excerpt(response.text)}"
            ) from exc


def _excerpt(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _malformed(api: str, what: str, payload: object) -> LLMError:
    return LLMError(
        f"{api} answered a malformed body ({what}): {_excerpt(json.dumps(payload, default=str))}"
    )


def _text_of(content: Any) -> str:
    """The text of a message content: a string, or the concatenated text parts (REFERENCE §2.5)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def _tool_arguments(api: str, raw: Any) -> Mapping[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise LLMError(
                f"{api} returned tool arguments that are not JSON: {_excerpt(raw)}"
            ) from exc
        if isinstance(parsed, Mapping):
            return dict(parsed)
    raise LLMError(
        f"{api} returned tool arguments that are not a JSON object: {_excerpt(str(raw))}"
    )


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
