"""Conversations (sessions, transcripts, recall) and Activities (search, detail with logs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from ..layers.sessions import message_text
from ..search.passages import merge_hits
from ..search.recall import speaker_of
from .call import Call
from .web import PageError

SESSION_PAGE = 100
ACTIVITY_PAGE = 50
RECALL_LIMIT = 10
NEIGHBOURS = 2


def conversations(call: Call) -> Response:
    memory = call.memory
    query = call.query("q").strip()
    now = memory.settings.clock()
    hits = (
        memory.recall_conversation(query, limit=RECALL_LIMIT, neighbours=NEIGHBOURS, now=now)
        if query
        else []
    )
    sessions = sorted(memory.sessions.list(), key=lambda s: s.last_activity_at, reverse=True)
    return call.page(
        "conversations.html",
        sessions=sessions[:SESSION_PAGE],
        total_sessions=len(sessions),
        query=query,
        hits=len(hits),
        passages=merge_hits(hits),
    )


def _text(message: Mapping[str, Any]) -> str:
    text = message_text(message)
    if text:
        return text
    calls = message.get("tool_calls")
    return f"(tool calls: {len(calls)})" if isinstance(calls, list) else ""


def _speaker(message: Mapping[str, Any]) -> str | None:
    metadata = message.get("metadata")
    return speaker_of(metadata) if isinstance(metadata, Mapping) else None


def transcript(call: Call) -> Response:
    session_id = call.request.path_params["session"]
    session = call.memory.sessions.get(session_id)
    if session is None:
        raise PageError(
            404, "No such session", f"agent {call.memory.agent_id!r} has no session {session_id!r}."
        )
    focus = call.params.number("hit", -1)
    messages = []
    for index, raw in enumerate(session.messages):
        seq = session.seq(index)
        near = focus >= 0 and seq is not None and abs(seq - focus) <= NEIGHBOURS
        messages.append(
            {
                "seq": seq,
                "role": str(raw.get("role", "")),
                "speaker": _speaker(raw),
                "text": _text(raw),
                "mark": "hit" if seq == focus else "near" if near else "",
            }
        )
    return call.page(
        "transcript.html", session=session, messages=messages, focus=None if focus < 0 else focus
    )


def session_delete(call: Call) -> Response:
    session_id = call.request.path_params["session"]
    if call.form.get("confirm") != "yes":
        raise PageError(
            400,
            "Not confirmed",
            "tick the box that confirms the deletion; nothing was deleted.",
        )
    if not call.memory.delete_session(session_id):
        raise PageError(
            404, "No such session", f"agent {call.memory.agent_id!r} has no session {session_id!r}."
        )
    return call.done(
        "conversations", f"deleted session {session_id} (its files and its text in recall)"
    )


def activities(call: Call) -> Response:
    log = call.memory.activities
    query = call.query("q").strip()
    kind = call.query("type").strip()
    before = call.query("before").strip()
    if query:
        found = [h.activity for h in log.search(query, limit=ACTIVITY_PAGE)]
    else:
        found = log.list(type=kind or None, before=before or None, limit=ACTIVITY_PAGE)
    older = found[-1].started_at.isoformat() if len(found) == ACTIVITY_PAGE and not query else ""
    return call.page(
        "activities.html", activities=found, query=query, kind=kind, older=older, before=before
    )


def activity(call: Call) -> Response:
    detail = call.memory.activities.get(call.request.path_params["activity"], max_content_chars=0)
    return call.page("activity.html", detail=detail)


ROUTES = (
    ("/conversations", "conversations", conversations, False),
    ("/conversations/{session}", "conversations", transcript, False),
    ("/conversations/{session}/delete", "conversations", session_delete, True),
    ("/activities", "activities", activities, False),
    ("/activities/{activity}", "activities", activity, False),
)
