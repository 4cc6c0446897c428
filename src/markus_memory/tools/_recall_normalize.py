"""recall_activity argument normalisation, exactly as the original does it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPERATIONS = ("list", "get", "search")
_OP_KEYS = ("operation", "op", "action", "mode", "data")
_ID_KEYS = ("activity_id", "activityId", "id")
_QUERY_KEYS = ("query", "q", "keywords")
_TASK_KEYS = ("task_id", "taskId")
ALIASES = {keys[0]: keys[1:] for keys in (_ID_KEYS, _QUERY_KEYS, _TASK_KEYS, _OP_KEYS)}
"""Each argument's other spellings, as models send them."""


@dataclass(frozen=True)
class RecallArgs:
    """What a recall_activity call asks for, after tolerating the model's many spellings."""

    operation: str
    activity_id: str | None
    query: str | None
    task_id: str | None
    type: str | None
    limit: Any


def _first_string(args: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def explicit_operation(args: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """The first operation key given (operation, op, action, mode, data) and its operation.

    None when no such key holds text; the operation is None when the text names none of
    list/get/search (a value starting with one of them names it, e.g. "list recent").
    """
    for key in _OP_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            lowered = value.strip().lower()
            return key, next((op for op in OPERATIONS if lowered.startswith(op)), None)
    return None


def _explicit_op(args: Mapping[str, Any]) -> str | None:
    given = explicit_operation(args)
    return given[1] if given is not None else None


def normalize_recall_args(args: Mapping[str, Any]) -> RecallArgs:
    """Map every argument spelling seen in production onto one operation and its inputs."""
    activity_id = _first_string(args, _ID_KEYS)
    query = _first_string(args, _QUERY_KEYS)
    task_id = _first_string(args, _TASK_KEYS)
    kind = args.get("type") if isinstance(args.get("type"), str) else None
    op = _explicit_op(args)
    if op is None and kind is not None and kind.strip().lower() in OPERATIONS:
        op, kind = kind.strip().lower(), None
    if op is None and query is not None:
        lowered = query.lower()
        if lowered in ("list", "recent") or lowered.startswith("list "):
            op, query = "list", None
        elif lowered == "get" or lowered.startswith("get "):
            op, rest = "get", query[3:].strip()
            activity_id = activity_id or (rest or None)
            query = None
        elif lowered == "search" or lowered.startswith("search "):
            op, query = "search", query[6:].strip() or None
    if op is None:
        op = "get" if activity_id else ("search" if query else "list")
    return RecallArgs(op, activity_id, query, task_id, kind or None, args.get("limit"))


def recall_limit(value: Any, default: int = 5, maximum: int = 20) -> int:
    """``clamp(number(limit) or default, 1, maximum)``; fractions are cut to whole numbers."""
    number: float
    if isinstance(value, bool):
        number = float(value)
    elif isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip()) if value.strip() else 0.0
        except ValueError:
            number = 0.0
    else:
        number = 0.0
    if number != number or number == 0:  # NaN or 0 → the default
        return default
    if number in (float("inf"), float("-inf")):
        return maximum if number > 0 else 1
    return int(min(max(number, 1), maximum))
