"""Recognising an error among tool results (the original's rule), for hosts and activity logs."""

from __future__ import annotations

import json
import re

_PLAIN_TEXT_ERROR = re.compile(
    r"^\s*(?:[a-z0-9_]*error\b|err\b|failed\b|failure\b|exception\b|traceback\b|fatal\b"
    r"|cannot\b|unable to\b|denied\b|rejected\b|panic\b)",
    re.IGNORECASE | re.ASCII,
)
_ERROR_STATUSES = frozenset({"error", "denied", "rejected"})


def is_tool_error_result(text: str) -> bool:
    """True if a tool's result string reports a failure.

    JSON objects: ``status`` is error/denied/rejected, or ``success`` is false, or ``error`` is
    truthy while ``success`` is not true. Anything else is matched as plain text against the
    usual error openings (``Error:``, ``TypeError:``, ``Failed to``, ``Traceback`` …).
    """
    try:
        parsed = json.loads(text)
    except (ValueError, TypeError):
        return bool(_PLAIN_TEXT_ERROR.match(text)) if isinstance(text, str) else False
    if not isinstance(parsed, dict):
        return False
    if parsed.get("status") in _ERROR_STATUSES:
        return True
    if parsed.get("success") is False:
        return True
    return bool(parsed.get("error")) and parsed.get("success") is not True
