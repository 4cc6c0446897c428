"""AgentMemory wiring of the episodic store: lazy open, activities, chat history, close."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.errors import ClosedError, NotFoundError
from markus_memory.storage.repos.side import ChatMessage, ChatSession

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def test_opening_an_agent_does_not_open_the_database(isolated_home: Path) -> None:
    with open_agent("a1"):
        pass
    assert not (isolated_home / "data.db").exists()


def test_activities_are_stored_in_home_data_db_and_isolated(isolated_home: Path) -> None:
    with open_agent("a1") as one, open_agent("a2") as two:
        activity_id = one.activities.start("task", "Ship release notes")
        one.activities.log(activity_id, "tool_start", "file_write", {"path": "NOTES.md"})
        one.activities.end(activity_id)
        assert (isolated_home / "data.db").exists()
        assert [h.activity.id for h in one.activities.search("release notes")] == [activity_id]
        with pytest.raises(NotFoundError):
            two.activities.get(activity_id)
    with open_agent("a1") as again:
        assert again.activities.get(activity_id).activity.keywords == ("file_write", "NOTES.md")


def test_close_closes_the_store(isolated_home: Path) -> None:
    mem = open_agent("a1")
    store = mem.store
    mem.close()
    mem.close()
    with pytest.raises(ClosedError):
        store.activities.query_activities("a1")


def test_chat_history_recorded_like_a_ui_reads_back_in_order(isolated_home: Path) -> None:
    with open_agent("a1") as mem:
        session = ChatSession(id="cs_00000000000000ff", agent_id="a1", created_at=T0, is_main=True)
        mem.store.chats.create_chat_session(session)
        turns = [("user", "hi"), ("assistant", "hello"), ("user", "bye"), ("assistant", "ciao")]
        for i, (role, text) in enumerate(turns):
            mem.store.chats.append_chat_message(
                ChatMessage(
                    id=f"cm_{i:016x}",
                    session_id=session.id,
                    agent_id="a1",
                    role=role,
                    content=text,
                    created_at=T0 + timedelta(seconds=i),
                )
            )
    with open_agent("a1") as mem:
        restored = mem.store.chats.chat_messages("a1", session.id)
        assert [(m.role, m.content) for m in restored] == turns
        assert [s.id for s in mem.store.chats.chat_sessions("a1")] == [session.id]


def test_a_closed_memory_refuses_further_use_instead_of_reopening(isolated_home: Path) -> None:
    mem = open_agent("alice")
    mem.activities.start("chat", "before closing")
    mem.close()
    for use in (
        lambda: mem.store,
        lambda: mem.activities,
        lambda: mem.search("anything"),
        lambda: mem.recall_conversation("anything"),
        mem.rebuild_search_index,
    ):
        with pytest.raises(ClosedError, match="closed; open it again"):
            use()
    mem.close()  # closing twice stays harmless


def test_a_closed_memory_refuses_every_write_and_starts_no_thread(isolated_home: Path) -> None:
    import threading

    mem = open_agent("alice")
    session = mem.sessions.get_or_create("chat")
    mem.sessions.append(session.id, {"role": "user", "content": "before closing"})
    mem.close()
    files = {p: p.read_bytes() for p in mem.directory.rglob("*") if p.is_file()}
    threads = {t.name for t in threading.enumerate()}
    for write in (
        lambda: mem.notebook.upsert("current-task", "after closing"),
        lambda: mem.knowledge.save_observation("after closing"),
        lambda: mem.knowledge.update_section("procedures", "after closing"),
        lambda: mem.state.update("focus", "after closing"),
        lambda: mem.sessions.append(session.id, {"role": "user", "content": "after closing"}),
        lambda: mem.sessions.get_or_create("another"),
        lambda: mem.daily_log.write("after closing"),
    ):
        with pytest.raises(ClosedError, match="closed; open it again"):
            write()
    assert {p: p.read_bytes() for p in mem.directory.rglob("*") if p.is_file()} == files
    assert {t.name for t in threading.enumerate()} <= threads, "a writer thread restarted"
    with open_agent("alice") as again:  # another handle on the same agent is not closed
        again.notebook.upsert("current-task", "from a new handle")


def test_a_closed_memory_refuses_every_read_too(backend: object, tmp_path: Path) -> None:
    from tests.backends import Backend, open_on

    assert isinstance(backend, Backend)
    mem = open_on(backend, tmp_path)
    notebook = mem.notebook  # a layer kept from before still refuses writes (its lock)
    mem.close()
    for read in (
        lambda: mem.notebook.read(),
        lambda: mem.knowledge.read(),
        lambda: mem.state.entries(),
        lambda: mem.roles.role(),
        lambda: mem.sessions.list(),
        lambda: mem.sessions.get("chat"),
        lambda: mem.daily_log.read(),
        lambda: mem.histories.list(),
        lambda: mem.documents.names(),
        lambda: mem.search("anything"),
        lambda: mem.activities,
        lambda: mem.store,
        lambda: mem.catch_up_transcripts(),
    ):
        with pytest.raises(ClosedError, match="closed; open it again"):
            read()
    with pytest.raises(ClosedError):
        notebook.upsert("task", "after closing")
