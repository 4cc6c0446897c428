"""Deliberation ``memory_updates`` (as in the original), applied through the same tool handlers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._results import error_result, to_json

if TYPE_CHECKING:
    from ..memory import AgentMemory

Dispatch = Callable[["AgentMemory", str, Any], str]
UPDATE_TYPES = ("working", "longterm")


def apply_memory_updates(memory: AgentMemory, updates: Any, dispatch: Dispatch) -> list[str]:
    """Apply ``[{type: "working"|"longterm", key, content, mode?}]``; one JSON result per item.

    ``working`` upserts a notebook entry; ``longterm`` patches (does not replace, unless
    ``mode`` says so) the curated section ``key``. Unlike the original, a refused write is
    reported in its result instead of being ignored. Never raises.
    """
    if isinstance(updates, str):
        try:
            updates = json.loads(updates)
        except ValueError:
            return [to_json(error_result("memory_updates is not valid JSON", None))]
    if not isinstance(updates, list):
        return [to_json(error_result("memory_updates must be an array of objects", None))]
    results = []
    for item in updates:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "working":
            args = {"key": item.get("key"), "content": item.get("content")}
            results.append(dispatch(memory, "update_notebook", args))
        elif kind == "longterm":
            args = {
                "section": item.get("key"),
                "content": item.get("content"),
                "mode": item.get("mode", "patch"),
            }
            results.append(dispatch(memory, "memory_update_longterm", args))
        else:
            message = f"each memory update needs type {' or '.join(UPDATE_TYPES)}, key, content"
            results.append(to_json(error_result(message, None)))
    return results
