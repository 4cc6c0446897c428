"""recall_conversation: transcript search with session, role, time and neighbour options."""

from __future__ import annotations

import pytest

from markus_memory import AgentMemory

from .conftest import call, files_digest


@pytest.fixture
def talked(memory: AgentMemory) -> AgentMemory:
    memory.sessions.get_or_create("chat_a")
    for role, text in [
        ("user", "Shall we go camping at Lake Tahoe in June?"),
        ("assistant", "Yes, I will book the campsite for the second week."),
        ("user", "Bring the blue tent."),
        ("assistant", "Noted, the blue tent it is."),
    ]:
        memory.sessions.append("chat_a", {"role": role, "content": text})
    memory.sessions.get_or_create("chat_b")
    memory.sessions.append("chat_b", {"role": "user", "content": "Our tax filing is due in April."})
    return memory


def test_finds_the_message_with_context(talked: AgentMemory) -> None:
    result = call(talked, "recall_conversation", {"query": "camping trip Tahoe", "neighbours": 1})
    assert result["status"] == "ok" and result["store"] == "sessions" and result["count"] >= 1
    top = result["results"][0]
    assert top["sessionId"] == "chat_a" and "Tahoe" in top["content"] and top["role"] == "user"
    assert top["after"][0]["content"].startswith("Yes, I will book")
    assert top["timestamp"].endswith("Z")


def test_filters_by_session_and_role(talked: AgentMemory) -> None:
    only_b = call(talked, "recall_conversation", {"query": "tent tax", "session_id": "chat_b"})
    assert {r["sessionId"] for r in only_b["results"]} == {"chat_b"}
    assistant = call(talked, "recall_conversation", {"query": "tent", "role": "assistant"})
    assert assistant["count"] >= 1 and {r["role"] for r in assistant["results"]} == {"assistant"}


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"query": "  "},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 99},
        {"query": "x", "neighbours": 6},
        {"query": "x", "since": "yesterday"},
        {"query": "x", "since": "2026-05-02", "until": "2026-05-01"},
        {"query": "x", "role": 3},
    ],
)
def test_bad_arguments_are_explained(talked: AgentMemory, args: dict) -> None:
    before = files_digest(talked.directory)
    result = call(talked, "recall_conversation", args)
    assert result["status"] == "error" and "recall_conversation {" in result["error"]
    assert files_digest(talked.directory) == before


def test_time_window(talked: AgentMemory) -> None:
    none = call(talked, "recall_conversation", {"query": "tent", "until": "2000-01-01"})
    assert none == {"status": "ok", "results": [], "count": 0, "store": "sessions"}
