"""Issue 25: the Claude Agent SDK ``MarkusSessionStore`` keeps transcripts in the agent's
histories, on SQLite and PostgreSQL: the SDK's own conformance suite, 3,500 entries loaded
whole after reopening (nothing compacted) and the long session still listed, a batch checked
whole, delete forgetting, and a session an older version kept in a Markus session file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from markus_memory import InvalidInputError, open_agent
from markus_memory.integrations._claude_transcripts import META_KEY, session_id_for
from markus_memory.integrations.claude_agent_sdk import MarkusSessionStore
from markus_memory.memory import AgentMemory
from tests.backends import Backend, open_on

KEY = {"project_key": "-home-ana-billing", "session_id": "5f3c2a9e-8d7b-4c61-a0e2-93b1f4d6c7a8"}


def line(n: int, text: str | None = None, **extra: Any) -> dict[str, Any]:
    role = "user" if n % 2 == 0 else "assistant"
    content: Any = text or f"line {n}"
    if n % 3 == 0:
        content = [{"type": "text", "text": content}]
    return {
        "type": role,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "timestamp": "2026-01-02T03:04:05.678Z",
        "message": {"role": role, "content": content},
        **extra,
    }


def test_the_sdks_conformance_suite(backend: Backend, tmp_path: Path) -> None:
    conformance = pytest.importorskip("claude_agent_sdk.testing")
    handles: list[AgentMemory] = []

    def make() -> MarkusSessionStore:
        handles.append(open_on(backend, tmp_path))
        return MarkusSessionStore(handles[-1])

    try:
        asyncio.run(conformance.run_session_store_conformance(make))
    finally:
        for handle in handles:
            handle.close()


def test_3500_entries_load_whole_and_the_session_stays_listed(
    backend: Backend, tmp_path: Path
) -> None:
    lines = [line(n) for n in range(3_500)]
    sub = {**KEY, "subpath": "subagents/agent-1"}
    with open_on(backend, tmp_path) as mem:
        agent = mem.agent_id
        store = MarkusSessionStore(mem)
        for start in range(0, len(lines), 500):
            asyncio.run(store.append(KEY, lines[start : start + 500]))
        asyncio.run(store.append(KEY, lines[3_000:]))  # a retried batch: every uuid known
        asyncio.run(store.append(sub, [line(0, "a subagent's line")]))
    with open_on(backend, tmp_path, agent) as mem:
        store = MarkusSessionStore(mem)
        assert asyncio.run(store.load(KEY)) == lines
        asyncio.run(store.append(KEY, [lines[0], line(3_500)]))  # known again after reopening
        assert asyncio.run(store.load(KEY)) == [*lines, line(3_500)]
        listed = asyncio.run(store.list_sessions(KEY["project_key"]))
        assert [s["session_id"] for s in listed] == [KEY["session_id"]]
        assert asyncio.run(store.list_subkeys(KEY)) == ["subagents/agent-1"]
        assert [h.text for h in mem.recall_conversation("line 3499")][:1] == ["line 3499"]


def test_lines_without_a_uuid_are_appended_as_they_come(tmp_path: Path) -> None:
    title = {"type": "custom-title", "customTitle": "billing"}
    with open_agent("coder", tmp_path) as mem:
        store = MarkusSessionStore(mem)
        asyncio.run(store.append(KEY, [title]))
        asyncio.run(store.append(KEY, [title, line(1)]))
        assert asyncio.run(store.load(KEY)) == [title, title, line(1)]


def test_a_bad_line_anywhere_in_a_batch_writes_nothing(tmp_path: Path) -> None:
    with open_agent("coder", tmp_path) as mem:
        store = MarkusSessionStore(mem)
        for bad in ("not a line", line(2, "bad \ud800 half"), {**line(2), "x": float("nan")}):
            with pytest.raises(InvalidInputError, match="(entry|item) 1"):
                asyncio.run(store.append(KEY, [line(0), bad]))  # type: ignore[list-item]
        assert asyncio.run(store.load(KEY)) is None
        assert asyncio.run(store.list_sessions(KEY["project_key"])) == []
        asyncio.run(store.append(KEY, [line(0)]))  # the rejected uuid u0 was not taken
        assert asyncio.run(store.load(KEY)) == [line(0)]


def test_delete_forgets_the_session_and_its_subagents(backend: Backend, tmp_path: Path) -> None:
    sub = {**KEY, "subpath": "subagents/agent-1"}
    other = {**KEY, "session_id": "other"}
    with open_on(backend, tmp_path) as mem:
        store = MarkusSessionStore(mem)
        asyncio.run(store.append(KEY, [line(0, "my zebra password is hunter2")]))
        asyncio.run(store.append(sub, [line(1, "the zebra subagent saw hunter2")]))
        asyncio.run(store.append(other, [line(0, "a zebra that stays")]))
        asyncio.run(store.delete(KEY))
        assert asyncio.run(store.load(KEY)) is None and asyncio.run(store.load(sub)) is None
        assert [h.text for h in mem.recall_conversation("zebra", limit=20)] == [
            "a zebra that stays"
        ]
        asyncio.run(store.append(KEY, [line(0, "said again")]))  # not a known uuid any more
        assert asyncio.run(store.load(KEY)) == [line(0, "said again")]


def test_a_session_an_older_version_kept_moves_into_the_store(tmp_path: Path) -> None:
    sid = session_id_for(KEY["project_key"], KEY["session_id"])
    lines = [line(0, "first"), line(1, "second")]
    with open_agent("coder", tmp_path) as mem:
        mem.sessions.get_or_create(sid)
        mem.sessions.append(
            sid, {"role": "system", "content": "", "metadata": {META_KEY: {"key": KEY}}}
        )
        for entry in lines:
            inner = {**entry["message"], "content": None}
            data = {"entry": {**entry, "message": inner}, "text_in": "content"}
            content = entry["message"]["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            if not isinstance(content, str):
                data = {"entry": entry}
            message = {"role": entry["type"], "content": text, "metadata": {META_KEY: data}}
            mem.sessions.append(sid, message)
    with open_agent("coder", tmp_path) as mem:
        store = MarkusSessionStore(mem)
        listed = asyncio.run(store.list_sessions(KEY["project_key"]))
        assert [s["session_id"] for s in listed] == [KEY["session_id"]]
        assert mem.sessions.get(sid) is None
        asyncio.run(store.append(KEY, [lines[1], line(2, "third")]))
        assert asyncio.run(store.load(KEY)) == [*lines, line(2, "third")]
        asyncio.run(store.delete(KEY))
        assert mem.recall_conversation("second") == []
