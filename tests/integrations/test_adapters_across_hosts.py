"""Many hosts, one memory: what each framework session adapter stored on host A (its own
home), host B (another, empty home, the same PostgreSQL database) loads whole."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from markus_memory import Settings, open_agent
from tests.postgres_support import new_agent_id

pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")
pytest.importorskip("claude_agent_sdk")


def _host(url: str, home: Path) -> Settings:
    return Settings(home=home, database_url=url, embedder="none")


def test_every_session_adapter_loads_on_host_b_what_host_a_stored(
    postgres_url: str, tmp_path: Path
) -> None:
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from markus_memory.integrations.claude_agent_sdk import MarkusSessionStore
    from markus_memory.integrations.openai_agents import MarkusSession
    from markus_memory.integrations.pydantic_ai_store import MarkusConversationStore

    agent = new_agent_id()
    items = [
        {"role": "user", "content": "which port does staging use?"},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "8443"},
    ]
    messages = [
        ModelRequest(parts=[UserPromptPart("which port does staging use?")]),
        ModelResponse(parts=[TextPart("8443")]),
    ]
    key = {"project_key": "-srv-app", "session_id": "tenant:42/chat:7"}
    lines = [
        {"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": f"line {n}"}}
        for n in range(3)
    ]
    with open_agent(agent, settings=_host(postgres_url, tmp_path / "a")) as a:
        asyncio.run(MarkusSession("tenant:42/chat:7", a).add_items(items))  # type: ignore[arg-type]
        conversation = Conversation(conversation_id="conv-1")
        conversation.messages = messages
        asyncio.run(MarkusConversationStore(a).save(conversation))
        asyncio.run(MarkusSessionStore(a).append(key, lines))
    with open_agent(agent, settings=_host(postgres_url, tmp_path / "b")) as b:
        assert asyncio.run(MarkusSession("tenant:42/chat:7", b).get_items()) == items
        loaded = asyncio.run(MarkusConversationStore(b).load("conv-1"))
        assert loaded is not None and loaded.messages == messages
        assert asyncio.run(MarkusSessionStore(b).load(key)) == lines
        assert b.recall_conversation("staging port")
    assert not list((tmp_path / "b").rglob("*.json"))  # host b's home holds none of it
