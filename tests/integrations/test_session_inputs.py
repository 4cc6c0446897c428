"""Issue 25, every input checked before the first write: OpenAI Agents batches validated whole
(size, JSON, Unicode), ``get_items(limit)`` as the SDK's ``SQLiteSession`` reads a limit, any
non-empty string id (OpenAI, PydanticAI, Claude) mapped to a distinct safe session key, and a
tool output stored once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")

from agents import SQLiteSession
from agents.memory import SessionSettings
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.models.test import TestModel

from markus_memory import InvalidInputError, Limits, Settings, open_agent
from markus_memory.integrations._session_keys import session_key
from markus_memory.integrations.claude_code import MarkusSessionStore
from markus_memory.integrations.openai_agents import MarkusSession
from markus_memory.integrations.pydantic_ai_store import MarkusConversationStore
from markus_memory.layers.sessions import validate_session_id

MiB = 1 << 20
ODD_IDS = [
    "tenant:42/chat:7",
    "../escape",
    " spaced ",
    "a~b",
    "~",
    ".hidden",
    "x" * 500,
    "cafe\u0301",  # NFD: must not meet "café"
    "café",
    "lone \ud800 surrogate",
    "line\nbreak",
]


# -- OpenAI Agents: a batch is checked whole --------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"role": "user", "content": "x" * (2 * MiB)}, "too large"),
        ({"role": "user", "content": "half a pair \ud83d"}, "lone surrogate"),
        ({"role": "user", "content": "nan", "extra": float("nan")}, "JSON"),
        ("not an item", "must be an object"),
    ],
)
def test_a_bad_item_anywhere_in_a_batch_stores_nothing(tmp_path: Path, bad: Any, says: str) -> None:
    settings = Settings(home=tmp_path, limits=Limits(history_item_max_bytes=MiB))
    with open_agent("helper", settings=settings) as mem:
        session = MarkusSession("s1", mem)
        good: Any = {"role": "user", "content": "good"}
        with pytest.raises(InvalidInputError, match=says):
            asyncio.run(session.add_items([good, bad]))
        assert asyncio.run(session.get_items()) == []
        assert mem.histories.list() == []
        assert mem.recall_conversation("good") == []


@pytest.mark.parametrize("limit", [None, -5, -1, 0, 1, 2, 3, 10])
@pytest.mark.parametrize("setting", [None, -1, 0, 2])
def test_limits_mean_what_they_mean_for_the_sdks_sqlite_session(
    tmp_path: Path, limit: int | None, setting: int | None
) -> None:
    items: list[Any] = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    settings = SessionSettings(limit=setting)

    async def read(session: Any) -> list[Any]:
        await session.add_items(items)
        return list(await session.get_items(limit))

    with open_agent("helper", tmp_path) as mem:
        ours = asyncio.run(read(MarkusSession("s1", mem, session_settings=settings)))
    reference = SQLiteSession("s1", session_settings=settings)
    try:
        assert ours == asyncio.run(read(reference))
    finally:
        reference.close()


def test_a_3_mib_tool_output_is_stored_once_and_read_back_equal(tmp_path: Path) -> None:
    output = "tool says " + "0123456789abcdef" * (3 * MiB // 16)
    items: list[Any] = [
        {"type": "function_call", "name": "dump", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": output},
        {"role": "user", "content": "y" * (3 * MiB)},
    ]
    with open_agent("helper", tmp_path) as mem:
        asyncio.run(MarkusSession("big", mem).add_items(items))
    with open_agent("helper", tmp_path) as mem:
        assert asyncio.run(MarkusSession("big", mem).get_items()) == items


# -- any string id, a distinct safe key -------------------------------------------------------


@pytest.mark.parametrize("odd", ODD_IDS)
def test_any_string_id_names_its_own_session(tmp_path: Path, odd: str) -> None:
    item = {"role": "user", "content": ascii(odd)}
    with open_agent("helper", tmp_path) as mem:
        asyncio.run(MarkusSession(odd, mem).add_items([item]))  # type: ignore[list-item]
        asyncio.run(MarkusSession("plain", mem).add_items([{"role": "user", "content": "p"}]))
    with open_agent("helper", tmp_path) as mem:
        session = MarkusSession(odd, mem)
        assert session.session_id == odd
        assert asyncio.run(session.get_items()) == [item]
        assert len(mem.histories.list()) == 2
    with pytest.raises(InvalidInputError, match="non-empty string"):
        MarkusSession("", mem)


def test_plain_ids_keep_their_names() -> None:
    assert session_key("chat-1") == "chat-1"
    assert session_key("7f6c0c1e-aaaa-4bbb-8ccc-123456789abc") == (
        "7f6c0c1e-aaaa-4bbb-8ccc-123456789abc"
    )
    assert session_key("tenant:42/chat:7") == "~tenant+3A42+2Fchat+3A7"


ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), min_size=1, max_size=80)
LONG_TEXT = st.text(alphabet=st.sampled_from("ab~+/é\ud800 "), min_size=1, max_size=300)
IDS = st.one_of(ANY_TEXT, LONG_TEXT, st.sampled_from(ODD_IDS))
PARTS = st.one_of(st.tuples(IDS), st.tuples(IDS, IDS))


@given(PARTS, PARTS, st.sampled_from(["", "claude-code_0a1b2c3d4e5f_"]))
def test_distinct_ids_never_share_a_key_and_every_key_is_a_valid_session_id(
    a: tuple[str, ...], b: tuple[str, ...], prefix: str
) -> None:
    key_a, key_b = session_key(*a, prefix=prefix), session_key(*b, prefix=prefix)
    assert validate_session_id(key_a) == key_a
    assert key_a.startswith(prefix)
    assert (key_a == key_b) == (a == b)


# -- PydanticAI and the Claude store take any id too ------------------------------------------


def test_pydantic_ai_conversations_under_odd_ids(tmp_path: Path) -> None:
    async def script(store: MarkusConversationStore) -> list[Any]:
        agent = Agent(TestModel(custom_output_text="noted"))
        for cid in ("tenant:42/chat:7", "tenant:42/chat:8"):
            conversation = Conversation(conversation_id=cid)
            await store.save(await agent.run(f"hello from {cid}", conversation=conversation))
        loaded = await store.load("tenant:42/chat:7")
        assert loaded is not None
        listed = sorted(r.conversation_id for r in await store.list_conversations())
        return [listed, [getattr(p, "content", None) for m in loaded.messages for p in m.parts]]

    with open_agent("pyd", tmp_path) as mem:
        listed, contents = asyncio.run(script(MarkusConversationStore(mem)))
    assert listed == ["tenant:42/chat:7", "tenant:42/chat:8"]
    assert contents == ["hello from tenant:42/chat:7", "noted"]


def test_claude_store_keys_with_odd_session_ids_and_subpaths(tmp_path: Path) -> None:
    main = {"project_key": "-home-ana", "session_id": "../x~y"}
    sub = {**main, "subpath": "subagents/agent~1"}
    twin = {**main, "session_id": "../x", "subpath": "y/subagents/agent~1"}
    line = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    with open_agent("coder", tmp_path) as mem:
        store = MarkusSessionStore(mem)
        for number, key in enumerate((main, sub, twin)):
            asyncio.run(store.append(key, [{**line, "uuid": f"u{number}"}]))
        assert asyncio.run(store.load(sub)) == [{**line, "uuid": "u1"}]
        assert asyncio.run(store.load(twin)) == [{**line, "uuid": "u2"}]
        listed = asyncio.run(store.list_sessions("-home-ana"))
        assert [s["session_id"] for s in listed] == ["../x~y"]
        assert asyncio.run(store.list_subkeys(main)) == ["subagents/agent~1"]


def test_a_3_mib_claude_transcript_line_is_stored_once_and_loads_equal(tmp_path: Path) -> None:
    key = {"project_key": "-home-ana", "session_id": "s-big"}
    lines = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "z" * (3 * MiB)}},
        {"type": "assistant", "uuid": "u2", "message": {"role": "assistant", "content": "ok"}},
    ]
    with open_agent("coder", tmp_path) as mem:
        asyncio.run(MarkusSessionStore(mem).append(key, lines))
    with open_agent("coder", tmp_path) as mem:
        assert asyncio.run(MarkusSessionStore(mem).load(key)) == lines
