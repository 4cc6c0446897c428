"""Episodic recall tools: recall_activity (list / search / get) and recall_conversation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import iso_ms, parse_iso
from ..errors import NotFoundError
from ._recall_normalize import (
    ALIASES,
    OPERATIONS,
    explicit_operation,
    normalize_recall_args,
    recall_limit,
)
from ._registry import ToolDefinition
from ._results import Result, ToolCallError
from ._schema import arguments, text
from ._validation import example, optional_string, whole_number

if TYPE_CHECKING:
    from ..memory import AgentMemory

ACTIVITIES = "activities"
SESSIONS = "sessions"
CONVERSATION_MAX_LIMIT = 50
MAX_NEIGHBOURS = 5
ACTIVITY_MAX_LIMIT = 20


def _iso(value: Any) -> str | None:
    return iso_ms(value) if isinstance(value, datetime) else value


def _activity_dict(activity: Any, *, search: bool) -> Result:
    shown: Result = {
        "id": activity.id,
        "type": activity.type,
        "label": activity.label,
        "taskId": activity.task_id,
        "startedAt": _iso(activity.started_at),
        "endedAt": _iso(activity.ended_at),
        "totalTools": None if search else activity.total_tools,
        "success": activity.success,
        "summary": activity.summary or None,
    }
    if search:
        keywords = activity.keywords
        shown["keywords"] = ", ".join(keywords) if keywords else None
    return shown


def _recall_list(memory: AgentMemory, kind: str | None, task_id: str | None, limit: int) -> Result:
    found = memory.activities.list(type=kind, task_id=task_id, limit=limit)
    if not found:
        return {"status": "ok", "activities": [], "message": "No activities found."}
    return {"status": "ok", "activities": [_activity_dict(a, search=False) for a in found]}


def _recall_search(memory: AgentMemory, query: str | None, limit: int) -> Result:
    if not query:
        raise ToolCallError(
            "search needs a query: the words to look for in activity summaries, keywords and "
            'labels. Example: recall_activity {"query":"auth error"}'
        )
    found = memory.activities.search(query, limit=limit)
    if not found:
        return {"status": "ok", "activities": [], "message": f'No activities matching "{query}".'}
    shown = [_activity_dict(hit.activity, search=True) for hit in found]
    return {"status": "ok", "activities": shown}


def _recall_get(memory: AgentMemory, activity_id: str | None) -> Result:
    if not activity_id:
        raise ToolCallError(
            "get needs activity_id: take an id from a list or search result, e.g. "
            'recall_activity {"activity_id":"act_123"}'
        )
    try:
        detail = memory.activities.get(activity_id)  # another agent's id is "not found" too
    except NotFoundError:
        raise ToolCallError(
            f'No activity "{activity_id}" of yours exists. Find ids with recall_activity {{}} '
            '(recent) or {"query":"..."}.'
        ) from None
    if not detail.logs:
        return {"status": "ok", "logs": [], "message": "No logs found for this activity."}
    shown = [
        {
            "seq": log.seq,
            "type": log.type,
            "content": log.content,
            "createdAt": _iso(log.created_at),
        }
        for log in detail.logs
    ]
    return {"status": "ok", "logs": shown}


def recall_activity(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    limits = memory.settings.limits
    given = explicit_operation(args)
    if given is not None and given[1] is None:
        shown = json.dumps(args[given[0]], ensure_ascii=False)
        raise ToolCallError(
            f'"{given[0]}" must be one of {", ".join(OPERATIONS)}, got {shown}; leave it out '
            "and the operation follows from the arguments. Example: "
            + example("recall_activity", {"query": "auth error"})
        )
    req = normalize_recall_args(args)
    limit = recall_limit(req.limit, limits.recall_default_limit, limits.recall_max_limit)
    if req.operation == "get":
        return _recall_get(memory, req.activity_id)
    if req.operation == "search":
        return _recall_search(memory, req.query, limit)
    return _recall_list(memory, req.type, req.task_id, limit)


def _moment(args: Mapping[str, Any], key: str, hint: str) -> datetime | None:
    text = optional_string(args, key)
    if text is None or not text.strip():
        return None
    moment = parse_iso(text)
    if moment is None:
        raise ToolCallError(f'"{key}" must be an ISO date or timestamp like 2026-05-01. {hint}')
    return moment


def recall_conversation(memory: AgentMemory, args: Mapping[str, Any]) -> Result:
    hint = "Example: " + example("recall_conversation", {"query": "database migration plan"})
    query: str = args["query"]
    session_id = optional_string(args, "session_id")
    role = optional_string(args, "role")
    since, until = _moment(args, "since", hint), _moment(args, "until", hint)
    if since is not None and until is not None and since > until:
        raise ToolCallError(f'"since" must not be later than "until". {hint}')
    limit = whole_number(args, "limit", 10)
    neighbours = whole_number(args, "neighbours", 1)
    hits = memory.recall_conversation(
        query.strip(),
        session_id=session_id.strip() if session_id and session_id.strip() else None,
        role=role.strip() if role and role.strip() else None,
        since=since,
        until=until,
        limit=limit,
        neighbours=neighbours,
        now=memory.settings.clock(),  # the model asks in the agent's present
    )
    shown = [_hit_dict(h) for h in hits]
    return {"status": "ok", "results": shown, "count": len(shown)}


def _turn_dict(turn: Any) -> Result:
    return {
        "index": turn.index,
        "role": turn.role,
        "speaker": turn.speaker,
        "timestamp": _iso(turn.timestamp),
        "content": turn.text,
    }


def _hit_dict(hit: Any) -> Result:
    shown = {"sessionId": hit.session_id, **_turn_dict(hit), "score": hit.score}
    shown["before"] = [_turn_dict(t) for t in hit.before] or None
    shown["after"] = [_turn_dict(t) for t in hit.after] or None
    return shown


_ALIASES = {
    alias: {"type": "string", "description": f"Same as {name}."}
    for name, aliases in ALIASES.items()
    for alias in aliases
}
"""The other spellings models use for recall_activity's arguments (the original took them)."""

TOOLS = (
    ToolDefinition(
        name="recall_activity",
        description=(
            "Look through your past activities (tasks, chats, heartbeats): with no arguments "
            "list recent ones; with query search their summaries and keywords; with "
            "activity_id get that activity's step-by-step logs. operation (list/get/search) is "
            "optional and inferred."
        ),
        parameters=arguments(
            {
                "activity_id": {"type": "string", "description": "Get this activity's logs."},
                "query": {"type": "string", "description": "Search words (all must match)."},
                "task_id": {"type": "string", "description": "List only this task's activities."},
                "type": {
                    "type": "string",
                    "description": "List only these types (comma-separated).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": ACTIVITY_MAX_LIMIT,
                    "description": f"1-{ACTIVITY_MAX_LIMIT} (default 5).",
                },
                "operation": {"type": "string", "enum": list(OPERATIONS)},
                **_ALIASES,
            }
        ),
        handler=recall_activity,
        example={"query": "auth error"},
        store=ACTIVITIES,
        error_key="message",
    ),
    ToolDefinition(
        name="recall_conversation",
        description=(
            "Search your past conversations (all sessions' transcripts) for what was said. "
            "Filter by session_id, role (user/assistant/tool/system) and time (since/until, "
            "ISO dates); neighbours (default 1) adds that many messages before and after each hit."
        ),
        parameters=arguments(
            {
                "query": text("What to look for (required)."),
                "session_id": {"type": "string", "description": "Only this session."},
                "role": {
                    "type": "string",
                    "description": "user, assistant, tool, system, or a speaker's name.",
                },
                "since": {"type": "string", "description": "ISO date/time, inclusive."},
                "until": {"type": "string", "description": "ISO date/time, inclusive."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": CONVERSATION_MAX_LIMIT,
                    "description": f"1-{CONVERSATION_MAX_LIMIT} (default 10).",
                },
                "neighbours": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_NEIGHBOURS,
                    "description": f"Context messages around each hit, 0-{MAX_NEIGHBOURS} (1).",
                },
            },
            "query",
        ),
        handler=recall_conversation,
        example={"query": "database migration plan"},
        store=SESSIONS,
    ),
)
