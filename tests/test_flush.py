"""The memory flush turn with a scripted model on a real AgentMemory (the original's was blind)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory import AgentMemory, Limits, Settings, open_agent
from markus_memory.flush import FLUSH_HEADER, FlushTracker, memory_flush
from markus_memory.llm import ChatResponse, ScriptedChatModel, ToolCall

SESSION = "chat_agt_flush_1"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    with open_agent("agt_flush", home=tmp_path / "home") as mem:
        yield mem


def _fill(memory: AgentMemory, pairs: int = 12, answer: str = "We chose Postgres 16 " * 8) -> None:
    memory.sessions.get_or_create(SESSION)
    for i in range(pairs):
        memory.sessions.append(SESSION, {"role": "user", "content": f"question {i}"})
        memory.sessions.append(SESSION, {"role": "assistant", "content": f"{answer} #{i}"})


def _saves(*contents: str) -> ChatResponse:
    return ChatResponse(
        "", tuple(ToolCall(f"c{i}", "memory_save", {"content": c}) for i, c in enumerate(contents))
    )


def test_flush_sees_the_transcript_and_saves(memory: AgentMemory) -> None:
    """The original flush ran in an empty session and saw nothing."""
    _fill(memory)
    model = ScriptedChatModel(
        [
            _saves("Decision: Postgres 16"),
            ChatResponse(
                "",
                (
                    ToolCall(
                        "n1", "update_notebook", {"key": "current-task", "content": "db choice"}
                    ),
                ),
            ),
            "Saved.",
        ]
    )
    before = len(memory.sessions.get(SESSION).messages)
    report = memory_flush(memory, model, SESSION)
    assert report.ran and report.rounds == 3 and report.reply == "Saved."
    assert [c.name for c in report.calls] == ["memory_save", "update_notebook"]
    assert not any(c.error for c in report.calls)
    messages, tools = model.calls[0]
    assert messages[0]["content"].startswith(FLUSH_HEADER)
    assert "We chose Postgres 16" in messages[1]["content"]
    assert {t["function"]["name"] for t in tools} == {"memory_save", "update_notebook"}
    assert [o.content for o in memory.knowledge.observations()] == ["Decision: Postgres 16"]
    assert memory.notebook.get("current-task").text == "db choice"
    # the original session is untouched (read-only copy); the flush is its own sys_ session
    assert len(memory.sessions.get(SESSION).messages) == before
    recorded = memory.sessions.get(report.flush_session_id)
    assert report.flush_session_id.startswith("sys_agt_flush_")
    assert [m["role"] for m in recorded.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_only_the_flush_tools_run(memory: AgentMemory) -> None:
    _fill(memory)
    model = ScriptedChatModel(
        [
            ChatResponse("", (ToolCall("x", "memory_update", {"section": "s", "content": "c"}),)),
            "done",
        ]
    )
    report = memory_flush(memory, model, SESSION)
    assert report.calls[0].error and "not available" in report.calls[0].result
    assert memory.knowledge.section("s") is None


def test_rounds_are_bounded(memory: AgentMemory) -> None:
    _fill(memory)
    model = ScriptedChatModel([_saves(f"fact {i}") for i in range(10)])
    report = memory_flush(memory, model, SESSION, max_rounds=3)
    assert report.rounds == 3 and len(model.script) == 7
    assert len(memory.knowledge.observations()) == 3


def test_a_sys_session_is_never_flushed(memory: AgentMemory) -> None:
    model = ScriptedChatModel([])
    report = memory_flush(memory, model, "sys_agt_flush_1")
    assert not report.ran and "sys_" in report.reason and model.calls == []


def test_short_or_shallow_sessions_are_skipped_without_a_model_call(memory: AgentMemory) -> None:
    _fill(memory, pairs=9)  # 18 messages
    model = ScriptedChatModel([])
    assert not memory_flush(memory, model, SESSION).ran
    _fill(memory, pairs=12, answer="ok")  # enough messages, no substantial answer
    report = memory_flush(memory, model, SESSION)
    assert not report.ran and "assistant" in report.reason and model.calls == []


def test_model_failure_is_reported_not_raised(memory: AgentMemory) -> None:
    _fill(memory)
    report = memory_flush(memory, ScriptedChatModel([]), SESSION)
    assert not report.ran and "model failed" in report.reason


def test_marked_flushed_only_when_the_flush_ran(memory: AgentMemory) -> None:
    """The original marked the session flushed even when it skipped."""
    tracker = FlushTracker()
    model = ScriptedChatModel(["No important information to save."])
    assert tracker.maybe_flush(memory, model, SESSION) is None  # no usage recorded yet
    tracker.record_usage(SESSION, 80.0)
    skipped = tracker.maybe_flush(memory, model, SESSION)  # session too short
    assert skipped is not None and not skipped.ran and not tracker.flushed(SESSION)
    _fill(memory)
    report = tracker.maybe_flush(memory, model, SESSION)
    assert report is not None and report.ran and tracker.flushed(SESSION)
    assert tracker.maybe_flush(memory, model, SESSION) is None  # once per session


def test_tracker_maps_are_bounded() -> None:
    tracker = FlushTracker(max_sessions=3)
    for i in range(10):
        tracker.record_usage(f"chat_{i}", 90.0)
    assert not tracker.should_flush("chat_0") and tracker.should_flush("chat_9")


def test_flush_results_are_json_the_model_can_read(memory: AgentMemory) -> None:
    _fill(memory)
    model = ScriptedChatModel([_saves("x", ""), "ok"])
    report = memory_flush(memory, model, SESSION)
    assert json.loads(report.calls[0].result)["status"] == "saved"
    assert json.loads(report.calls[1].result)["status"] == "error"


def test_two_flushes_in_the_same_millisecond_get_their_own_sys_sessions(tmp_path: Path) -> None:
    frozen = datetime(2026, 5, 1, tzinfo=timezone.utc)
    settings = Settings(home=tmp_path / "frozen", clock=lambda: frozen)
    with open_agent("agt_flush", settings=settings) as mem:
        _fill(mem)
        first = memory_flush(mem, ScriptedChatModel(["nothing"]), SESSION)
        second = memory_flush(mem, ScriptedChatModel(["nothing"]), SESSION)
        assert first.flush_session_id != second.flush_session_id
        assert len(mem.sessions.get(second.flush_session_id).messages) == 3


@pytest.mark.parametrize(
    ("setting", "own", "usage", "flushes"),
    [
        (60.0, None, 65.0, True),  # the agent's setting, below the original's 75
        (90.0, None, 80.0, False),
        (90.0, 70.0, 80.0, True),  # a tracker's own threshold wins
    ],
)
def test_the_tracker_flushes_at_the_agents_threshold(
    tmp_path: Path, setting: float, own: float | None, usage: float, flushes: bool
) -> None:
    """``Limits.memory_flush_threshold_percent`` is the usage a session flushes at; it used
    to be ignored for a fixed 75."""
    limits = replace(Limits(), memory_flush_threshold_percent=setting)
    settings = Settings(home=tmp_path / "home", limits=limits)
    with open_agent("agt_flush", settings=settings) as mem:
        _fill(mem)
        tracker = FlushTracker(threshold=own)
        tracker.record_usage(SESSION, usage)
        report = tracker.maybe_flush(mem, ScriptedChatModel(["Saved."]), SESSION)
    assert (report is not None and report.ran) is flushes
