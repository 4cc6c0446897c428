"""The HTTP transport the adapters share: lazy httpx, a deadline per call, bounded retries."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ExtraNotInstalledError, InvalidInputError, LLMError

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
    """The text of a message content: a string, or the concatenated text parts (as Markus)."""
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
