"""Tool results: compact JSON in the Markus shapes, and the error every bad call turns into."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Result = dict[str, Any]


class ToolCallError(Exception):
    """A tool call that cannot run as given. Raised before any write; becomes an error result.

    ``message`` says what was wrong and how to call the tool correctly; ``extra`` holds
    further result keys (sizes of a refused write, the offending section …).
    """

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


def drop_none(value: Any) -> Any:
    """Remove None-valued keys at every depth (JavaScript drops ``undefined`` the same way)."""
    if isinstance(value, Mapping):
        return {str(k): drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [drop_none(v) for v in value]
    return value


def to_json(result: Mapping[str, Any]) -> str:
    """The result as the model sees it: compact JSON, non-ASCII kept, no None values."""
    return json.dumps(drop_none(result), ensure_ascii=False, separators=(",", ":"), default=str)


def error_result(
    message: str, store: str | None, *, message_key: str = "error", **extra: Any
) -> Result:
    """``{"status":"error","ok":false,"error":…,"store":…}`` (``message`` key for recall)."""
    result: Result = {"status": "error", "ok": False, message_key: message}
    result.update(extra)
    result["store"] = store
    return result
