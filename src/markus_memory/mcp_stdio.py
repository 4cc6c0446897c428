"""MCP over stdio: answer each line the SDK cannot read instead of leaving the client waiting."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from .errors import ExtraNotInstalledError

try:
    import anyio
    import mcp.types as types
    from mcp.shared.message import SessionMessage
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ExtraNotInstalledError("mcp", exc.name or "mcp") from exc

log = logging.getLogger(__name__)

_LEADING_ID = re.compile(r'^\s*\{[^{}\[\]]*?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def unreadable_reply(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error for a line the transport could not read (too deep, not JSON …).

    The request id is recovered when it comes before any nesting, so the client's pending
    request ends; otherwise the id is null, as JSON-RPC prescribes for a parse error.
    """
    listed = getattr(exc, "errors", None)
    errors = listed() if callable(listed) else []
    first = errors[0] if errors and isinstance(errors[0], dict) else {}
    line, reason = first.get("input"), str(first.get("msg") or exc).splitlines()[0]
    found = _LEADING_ID.match(line) if isinstance(line, str) else None
    parse = first.get("type") == "json_invalid"
    if "recursion limit" in reason:
        reason = f"the request is nested too deeply to read ({reason})"
    log.warning("refused an unreadable MCP message: %s", reason)
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=json.loads(found.group(1)) if found else None,
        error=types.ErrorData(
            code=types.PARSE_ERROR if parse else types.INVALID_REQUEST, message=reason
        ),
    )


class AnswerUnreadable:
    """The stdio read stream, answering each line the SDK could not parse.

    The SDK hands such a line to the server as an exception, which it drops silently: the
    client would wait for ever. Everything else passes through unchanged.
    """

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(unreadable_reply(item)))

    def __aiter__(self) -> AnswerUnreadable:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnswerUnreadable:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self._inner, name)
