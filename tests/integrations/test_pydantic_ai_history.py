"""Issue 25: the PydanticAI ``MarkusConversationStore`` on the agent's histories, on SQLite and
PostgreSQL: 5,000 messages load deep-equal after reopening in one paged read, the stored
conversation only ever grows, titles and metadata through ``update``, branches as the
framework's own store keeps them, and a conversation an older version kept in a Markus session
file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
    InMemoryConversationStore,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.test import TestModel
from pydantic_core import to_jsonable_python

from markus_memory import open_agent
from markus_memory.integrations.pydantic_ai_store import META_KEY, MarkusConversationStore
from tests.backends import Backend, open_on


def messages(n: int, start: int = 0) -> list[ModelMessage]:
    """``n`` messages of a tool-using conversation, numbered from ``start``."""
    out: list[ModelMessage] = []
    for i in range(start, start + n):
        if i % 4 == 0:
            out.append(ModelRequest(parts=[UserPromptPart(f"question {i}")]))
        elif i % 4 == 1:
            out.append(ModelResponse(parts=[ToolCallPart("look", {"n": i}, tool_call_id=f"c{i}")]))
        elif i % 4 == 2:
            part = ToolReturnPart("look", f"found {i}", tool_call_id=f"c{i - 1}")
            out.append(ModelRequest(parts=[part]))
        else:
            out.append(ModelResponse(parts=[TextPart(f"answer {i}")]))
    return out


def test_5000_messages_load_deep_equal_in_one_paged_read(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = messages(5_000)
    with open_on(backend, tmp_path) as mem:
        agent = mem.agent_id
        store = MarkusConversationStore(mem)

        async def save_in_parts() -> None:
            conversation = Conversation(conversation_id="long")
            for start in range(0, len(history), 1_000):
                conversation.messages = [*conversation.messages, *history[start : start + 1_000]]
                await store.save(conversation)

        asyncio.run(save_in_parts())
    with open_on(backend, tmp_path, agent) as mem:
        reads: list[int] = []
        items = mem.histories.items

        def counted(*args: Any, **kwargs: Any) -> Any:
            found = items(*args, **kwargs)
            reads.append(len(found))
            return found

        monkeypatch.setattr(mem.histories, "items", counted)
        loaded = asyncio.run(MarkusConversationStore(mem).load("long"))
        assert loaded is not None
        assert loaded.messages == history
        assert reads == [5_000]  # one page: no rereads of the whole conversation
        reads.clear()
        window = asyncio.run(MarkusConversationStore(mem).load("long", limit=10))
        assert window is not None and window.messages == history[-10:]
        assert reads == [10]


def test_a_save_is_one_write_transaction(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_on(backend, tmp_path) as mem:
        store = MarkusConversationStore(mem)
        conversation = Conversation(conversation_id="c")
        conversation.messages = messages(4)
        asyncio.run(store.save(conversation))
        writes: list[int] = []
        write = mem.store.database.write

        def counted(*args: Any, **kwargs: Any) -> Any:
            writes.append(1)
            return write(*args, **kwargs)

        monkeypatch.setattr(mem.store.database, "write", counted)
        conversation.messages = [*conversation.messages, *messages(4, 4)]
        asyncio.run(store.save(conversation))
        assert len(writes) == 1  # the entries and the record that names them, together
        writes.clear()
        asyncio.run(store.save(conversation))  # nothing new: the record alone
        assert len(writes) == 1
        monkeypatch.undo()
        loaded = asyncio.run(MarkusConversationStore(mem).load("c"))
        assert loaded is not None and loaded.messages == conversation.messages


def test_the_stored_conversation_only_ever_grows(tmp_path: Path) -> None:
    async def script(store: MarkusConversationStore) -> list[ModelMessage]:
        agent = Agent(TestModel(custom_output_text="noted"))
        conversation = Conversation(conversation_id="c")
        for turn in range(3):
            result = await agent.run(f"turn {turn}", conversation=conversation)
            await store.save(result)
            loaded = await store.load("c")
            assert loaded is not None
            conversation = loaded
        trimmed = await store.load("c", limit=2)  # a run sent only the newest messages
        assert trimmed is not None
        await store.save(await agent.run("turn 3", conversation=trimmed))
        final = await store.load("c")
        assert final is not None
        return final.messages

    with open_agent("pyd", tmp_path) as mem:
        loaded = asyncio.run(script(MarkusConversationStore(mem)))
        assert len(loaded) == 8
        prompts = [p.content for m in loaded for p in m.parts if p.part_kind == "user-prompt"]
        assert prompts == ["turn 0", "turn 1", "turn 2", "turn 3"]
        assert mem.histories.count("c") == 8


def test_update_sets_titles_and_metadata_and_a_save_keeps_them(
    backend: Backend, tmp_path: Path
) -> None:
    async def script(store: ConversationStore) -> list[Any]:
        agent = Agent(TestModel(custom_output_text="noted"))
        first = await agent.run("plan the trip", conversation=Conversation(conversation_id="t"))
        await store.save(first)
        titled = await store.update("t", title="Trip", expected_title=None)
        try:
            await store.update("t", title="Other", expected_title=None)
            outcome = "updated"
        except ConversationConflict:
            outcome = "conflict"
        meta = await store.update("t", metadata={"model": "small", "n": [1, 2]})
        loaded = await store.load("t")
        assert loaded is not None
        await store.save(await agent.run("and the hotel", conversation=loaded))
        (record,) = await store.list_conversations()
        return [titled.title, outcome, meta.metadata, record.title, record.metadata]

    with open_on(backend, tmp_path) as mem:
        ours = asyncio.run(script(MarkusConversationStore(mem)))
        assert mem.histories.info("t").title == "Trip"  # type: ignore[union-attr]
    theirs = asyncio.run(script(InMemoryConversationStore()))
    assert ours == theirs == ["Trip", "conflict", {"model": "small", "n": [1, 2]}, "Trip", ours[4]]


async def _branching(store: ConversationStore) -> list[Any]:
    """Runs, a branch back to an earlier message, a new turn on it, a branch back again."""
    agent = Agent(TestModel(custom_output_text="ok"))
    out: list[Any] = []
    conversation = Conversation(conversation_id="b")
    for turn in range(3):
        result = await agent.run(f"step {turn}", conversation=conversation)
        await store.save(result)
        conversation = await store.load("b") or conversation
    entries = await store.load_entries("b")
    assert entries is not None
    branched = await store.branch("b", at=2, expected_revision=conversation.revision)
    await store.save(await agent.run("another step", conversation=branched))
    now = await store.load("b")
    assert now is not None
    out.append([getattr(p, "content", None) for m in now.messages for p in m.parts])
    back = await store.branch("b", from_entry=entries[-1].id, expected_revision=now.revision)
    out.append(len(back.messages))
    fork = await store.fork("b", at=1, new_conversation_id="f")
    out.append(len(fork.messages))
    await store.delete("b")
    kept = await store.load("f")
    out.append(None if kept is None else [m.parts[0].part_kind for m in kept.messages])
    return out


def test_branches_and_forks_as_the_frameworks_own_store(backend: Backend, tmp_path: Path) -> None:
    with open_on(backend, tmp_path) as mem:
        ours = asyncio.run(_branching(MarkusConversationStore(mem)))
        agent = mem.agent_id
    assert to_jsonable_python(ours) == to_jsonable_python(
        asyncio.run(_branching(InMemoryConversationStore()))
    )
    with open_on(backend, tmp_path, agent) as mem:  # a fresh process finds the fork's entries
        kept = asyncio.run(MarkusConversationStore(mem).load("f"))
        assert kept is not None and len(kept.messages) == 1
        assert not any("another" in h.text for h in mem.recall_conversation("another step"))


def test_a_conversation_an_older_version_kept_reads_as_before(tmp_path: Path) -> None:
    history = messages(8)
    entries, parent = [], None
    for message in history:
        entries.append(ConversationEntry(parent_id=parent, message=message))
        parent = entries[-1].id
    record = ConversationRecord(conversation_id="old", head_id=parent, title=None)
    with open_agent("pyd", tmp_path) as mem:
        mem.sessions.get_or_create("old")
        for entry in entries[:5]:
            data = {"entry": to_jsonable_python(entry)}
            mem.sessions.append(
                "old", {"role": "user", "content": "x", "metadata": {META_KEY: data}}
            )
        marker = {"record": to_jsonable_python(record)}
        for entry in entries[5:]:
            data = {"entry": to_jsonable_python(entry)}
            mem.sessions.append(
                "old", {"role": "user", "content": "x", "metadata": {META_KEY: data}}
            )
        mem.sessions.append(
            "old", {"role": "system", "content": "", "metadata": {META_KEY: marker}}
        )
    with open_agent("pyd", tmp_path) as mem:
        store = MarkusConversationStore(mem)
        listed = asyncio.run(store.list_conversations())
        assert [r.conversation_id for r in listed] == ["old"]
        loaded = asyncio.run(store.load("old"))
        assert loaded is not None and loaded.messages == history
        more = Agent(TestModel(custom_output_text="still here"))
        asyncio.run(store.save(asyncio.run(more.run("again", conversation=loaded))))
    with open_agent("pyd", tmp_path) as mem:
        again = asyncio.run(MarkusConversationStore(mem).load("old"))
        assert again is not None and again.messages[:8] == history and len(again.messages) == 10
