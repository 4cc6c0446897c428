"""Issue 25, forget means forget: clearing or deleting through an adapter (OpenAI Agents
``clear_session``/``pop_item``, PydanticAI ``delete``, the Claude Agent SDK store's ``delete``)
removes the text from the session files, recall, its index and its vectors, on SQLite and on
PostgreSQL, as seen by the same handle and by a fresh process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")

from agents import set_tracing_disabled
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.models.test import TestModel

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.integrations.claude_code import MarkusSessionStore
from markus_memory.integrations.openai_agents import MarkusSession
from markus_memory.integrations.pydantic_ai_store import MarkusConversationStore
from markus_memory.memory import AgentMemory
from markus_memory.search.embedders import FakeEmbedder
from tests.postgres_support import new_agent_id, postgres_url

__all__ = ["postgres_url"]

SECRET = "my SSN is 078-05-1120, zebra"
QUERY = "SSN 078-05-1120"


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    url = None if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    yield Settings(home=tmp_path / "home", database_url=url)


def opened(settings: Settings, agent: str) -> AgentMemory:
    return open_agent(agent, settings=settings, embedder=FakeEmbedder())


def recalled(mem: AgentMemory, query: str = QUERY) -> list[str]:
    return [h.text for h in mem.recall_conversation(query, limit=20)]


def assert_forgotten(mem: AgentMemory) -> None:
    """Nothing of the secret in recall, in the store's messages, or left as a vector."""
    assert not any("078-05-1120" in text for text in recalled(mem))
    mem.catch_up_transcripts()
    held = mem.store.transcripts.transcript_messages(mem.agent_id)
    assert not any("078-05-1120" in m.content + json.dumps(m.metadata) for m in held)
    embedder = FakeEmbedder()
    model = f"{embedder.model}:{embedder.dimension}"
    vectors = sum(
        len(c) for c in mem.store.transcripts.recall_vectors(mem.agent_id, model, newest=10_000)
    )
    assert vectors == len([m for m in held if m.content.strip()])


def recalled_in_a_new_process(settings: Settings, agent: str, query: str = QUERY) -> list[str]:
    script = (
        "import json, sys\n"
        "from markus_memory import open_agent\n"
        "from markus_memory.config import Settings\n"
        "home, url, agent, query = sys.argv[1:]\n"
        "settings = Settings(home=home, database_url=url or None)\n"
        "with open_agent(agent, settings=settings) as mem:\n"
        "    print(json.dumps([h.text for h in mem.recall_conversation(query, limit=20)]))\n"
    )
    args = [str(settings.home), settings.database_url or "", agent, query]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=True
    )
    return list(json.loads(done.stdout))


# -- OpenAI Agents ------------------------------------------------------------------------


def test_openai_clear_session_forgets_the_text(settings: Settings) -> None:
    agent = new_agent_id()
    secret_items: list[Any] = [
        {"role": "user", "content": SECRET},
        {"type": "function_call", "name": "lookup", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": f"record: {SECRET}"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Noted, zebra."}]},
    ]
    with opened(settings, agent) as mem:
        session, other = MarkusSession("tenant:42/chat:7", mem), MarkusSession("other", mem)
        asyncio.run(session.add_items(secret_items))
        asyncio.run(other.add_items([{"role": "user", "content": "a kept zebra note"}]))
        assert len([t for t in recalled(mem) if "078-05-1120" in t]) == 2
        asyncio.run(session.clear_session())
        assert asyncio.run(session.get_items()) == []
        assert_forgotten(mem)
        assert recalled(mem, "zebra") == ["a kept zebra note"]
        assert [h.key for h in mem.histories.list()] == ["other"]
        asyncio.run(session.add_items([{"role": "user", "content": "after the clear"}]))
        assert asyncio.run(session.get_items()) == [{"role": "user", "content": "after the clear"}]
    assert recalled_in_a_new_process(settings, agent) == []
    assert recalled_in_a_new_process(settings, agent, "zebra") == ["a kept zebra note"]


def test_openai_pop_item_forgets_the_popped_item(settings: Settings) -> None:
    agent = new_agent_id()
    kept: Any = {"role": "user", "content": "the kept zebra line"}
    secret: Any = {"type": "function_call_output", "call_id": "c9", "output": SECRET}
    with opened(settings, agent) as mem:
        session = MarkusSession("chat-1", mem)
        asyncio.run(session.add_items([kept, secret]))
        assert any("078-05-1120" in t for t in recalled(mem))
        assert asyncio.run(session.pop_item()) == secret
        assert asyncio.run(session.get_items()) == [kept]
        assert_forgotten(mem)
        assert recalled(mem, "zebra") == ["the kept zebra line"]
    with opened(settings, agent) as mem:
        assert asyncio.run(MarkusSession("chat-1", mem).get_items()) == [kept]
    assert recalled_in_a_new_process(settings, agent) == []


# -- PydanticAI -------------------------------------------------------------------------------


def test_pydantic_ai_delete_forgets_the_conversation(settings: Settings) -> None:
    agent = new_agent_id()

    async def run(store: MarkusConversationStore, cid: str, prompt: str) -> None:
        model = Agent(TestModel(custom_output_text="noted"))
        conversation = await store.load(cid) or Conversation(conversation_id=cid)
        await store.save(await model.run(prompt, conversation=conversation))

    with opened(settings, agent) as mem:
        store = MarkusConversationStore(mem)
        asyncio.run(run(store, "user:ana/conv 1", SECRET))
        asyncio.run(run(store, "conv-2", "a kept zebra note"))
        assert any("078-05-1120" in t for t in recalled(mem))
        asyncio.run(store.delete("user:ana/conv 1"))
        assert asyncio.run(store.load("user:ana/conv 1")) is None
        assert_forgotten(mem)
        assert "a kept zebra note" in recalled(mem, "zebra")
    assert recalled_in_a_new_process(settings, agent) == []


# -- the Claude Agent SDK session store -------------------------------------------------------


def _line(uuid: str, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "timestamp": "2026-01-02T03:04:05.000Z",
        "message": {"role": "user", "content": text},
    }


def test_claude_store_delete_forgets_the_session_and_its_subagents(settings: Settings) -> None:
    agent = new_agent_id()
    main = {"project_key": "-home-ana-billing", "session_id": "7f6c0c1e-aaaa"}
    sub = {**main, "subpath": "subagents/agent-1"}
    kept = {**main, "session_id": "other-session"}
    with opened(settings, agent) as mem:
        store = MarkusSessionStore(mem)
        asyncio.run(store.append(main, [_line("u1", SECRET)]))
        asyncio.run(store.append(sub, [_line("u2", f"subagent saw {SECRET}")]))
        asyncio.run(store.append(kept, [_line("u3", "a kept zebra note")]))
        assert len([t for t in recalled(mem) if "078-05-1120" in t]) == 2
        asyncio.run(store.delete(main))
        assert asyncio.run(store.load(main)) is None
        assert asyncio.run(store.load(sub)) is None
        assert asyncio.run(store.list_subkeys(main)) == []
        listed = asyncio.run(store.list_sessions(main["project_key"]))
        assert [s["session_id"] for s in listed] == ["other-session"]
        assert_forgotten(mem)
        assert recalled(mem, "zebra") == ["a kept zebra note"]
    assert recalled_in_a_new_process(settings, agent) == []


def test_claude_store_delete_of_a_subpath_forgets_that_one_only(settings: Settings) -> None:
    agent = new_agent_id()
    main = {"project_key": "-home-ana-billing", "session_id": "7f6c0c1e-bbbb"}
    sub = {**main, "subpath": "subagents/agent-1"}
    with opened(settings, agent) as mem:
        store = MarkusSessionStore(mem)
        asyncio.run(store.append(main, [_line("u1", "the kept zebra line")]))
        asyncio.run(store.append(sub, [_line("u2", SECRET)]))
        asyncio.run(store.delete(sub))
        assert asyncio.run(store.load(main)) == [_line("u1", "the kept zebra line")]
        assert asyncio.run(store.load(sub)) is None
        assert_forgotten(mem)
    assert recalled_in_a_new_process(settings, agent) == []
