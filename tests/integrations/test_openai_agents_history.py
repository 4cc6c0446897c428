"""Issue 25: the OpenAI Agents ``MarkusSession`` keeps the SDK's history exactly as given, in
``memory.histories``, on SQLite and PostgreSQL: 10,000 items deep-equal after reopening, call and
output pairs intact (nothing compacted), a 5 MiB tool output through ``Runner.run``, the newest
``limit`` items read alone, a clear error for a lone surrogate, and a session an older version
kept as Markus session messages read as the items it stood for."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, Runner, set_tracing_disabled

from markus_memory import InvalidInputError, Limits, Settings, open_agent
from markus_memory.integrations.openai_agents import META_KEY, MarkusSession
from tests.backends import Backend, open_on
from tests.integrations.test_openai_agents import ScriptedModel, _call, _text

MiB = 1 << 20


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)


def tool_session(n: int) -> list[Any]:
    """``n`` items of a tool-using conversation: a question, a call, its output, an answer."""
    items: list[Any] = []
    for turn in range(n // 4):
        items += [
            {"role": "user", "content": f"question {turn}"},
            {"type": "function_call", "name": "look", "arguments": "{}", "call_id": f"c{turn}"},
            {"type": "function_call_output", "call_id": f"c{turn}", "output": f"found {turn}"},
            {
                "type": "message",
                "role": "assistant",
                "id": f"m{turn}",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"answer {turn}", "annotations": []}],
            },
        ]
    return items


def test_ten_thousand_items_come_back_deep_equal_with_every_call_paired(
    backend: Backend, tmp_path: Path
) -> None:
    items = tool_session(10_000)
    agent = None
    with open_on(backend, tmp_path) as mem:
        agent = mem.agent_id
        session = MarkusSession("long", mem)
        for start in range(0, len(items), 1_000):
            asyncio.run(session.add_items(items[start : start + 1_000]))
    with open_on(backend, tmp_path, agent) as mem:
        session = MarkusSession("long", mem)
        assert asyncio.run(session.get_items()) == items
        newest = asyncio.run(session.get_items(limit=3))
        assert newest == items[-3:]
        calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
        outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
        assert calls == outputs and len(calls) == 2_500
        assert mem.histories.count(session.key) == 10_000


def test_a_5_mib_tool_output_goes_through_runner_run_and_comes_back(
    backend: Backend, tmp_path: Path
) -> None:
    dump = "0123456789abcdef" * (5 * MiB // 16)
    with open_on(backend, tmp_path) as mem:
        agent_id = mem.agent_id

        async def dump_log(ctx: Any, arguments: str) -> str:
            return dump

        tool = FunctionTool(
            name="dump_log",
            description="the whole log",
            params_json_schema={"type": "object", "properties": {}, "additionalProperties": False},
            on_invoke_tool=dump_log,
        )
        model = ScriptedModel([[_call("dump_log", {})], [_text("The log is long.")]])
        agent = Agent(name="a", model=model, tools=[tool])
        session = MarkusSession("logs", mem)
        result = asyncio.run(Runner.run(agent, "show me the log", session=session))
        assert result.final_output == "The log is long."
    with open_on(backend, tmp_path, agent_id) as mem:
        items = asyncio.run(MarkusSession("logs", mem).get_items())
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        assert [o["output"] for o in outputs] == [dump]
        model = ScriptedModel([[_text("Still here.")]])
        session = MarkusSession("logs", mem)
        again = asyncio.run(Runner.run(Agent(name="a", model=model), "and now?", session=session))
        assert again.final_output == "Still here."
        assert model.inputs[0][: len(items)] == items


def test_a_lone_surrogate_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    with open_agent("helper", tmp_path) as mem:
        session = MarkusSession("s", mem)
        bad: Any = {"type": "function_call_output", "call_id": "c", "output": "bad \udc80 byte"}
        with pytest.raises(InvalidInputError, match="item 1 .*lone surrogate"):
            asyncio.run(session.add_items([{"role": "user", "content": "ok"}, bad]))
        assert asyncio.run(session.get_items()) == []


def test_an_item_over_the_cap_names_the_limit(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, limits=Limits(history_item_max_bytes=MiB))
    with open_agent("helper", settings=settings) as mem:
        big: Any = {"role": "user", "content": "x" * MiB}
        with pytest.raises(InvalidInputError, match="history_item_max_bytes"):
            asyncio.run(MarkusSession("s", mem).add_items([big]))


def test_pop_and_clear_read_what_is_left(backend: Backend, tmp_path: Path) -> None:
    items = tool_session(8)
    with open_on(backend, tmp_path) as mem:
        session = MarkusSession("tenant:42/chat:7", mem)
        asyncio.run(session.add_items(items))
        assert asyncio.run(session.pop_item()) == items[-1]
        assert asyncio.run(session.get_items()) == items[:-1]
        asyncio.run(session.clear_session())
        assert asyncio.run(session.get_items()) == []
        assert asyncio.run(session.pop_item()) is None
        assert mem.recall_conversation("question") == []


def legacy(item: dict[str, Any], text: str, role: str = "user", **entry: Any) -> dict[str, Any]:
    """A message as an older version of the adapter wrote it."""
    return {"role": role, "content": text, "metadata": {META_KEY: {"item": item, **entry}}}


def marker(op: str) -> dict[str, Any]:
    return {"role": "system", "content": "", "metadata": {META_KEY: {"op": op}}}


def test_a_session_an_older_version_wrote_reads_as_its_items(tmp_path: Path) -> None:
    old = [
        legacy({"role": "user", "content": None}, "gone", text_in="content"),
        marker("clear"),
        legacy({"role": "user", "content": None}, "hello", text_in="content"),
        legacy({"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}, "f()"),
        legacy(
            {"type": "function_call_output", "call_id": "c", "output": None},
            "out",
            "tool",
            text_in="output",
        ),
        legacy({"role": "user", "content": None}, "popped", text_in="content"),
        marker("pop"),
    ]
    kept: list[Any] = [
        {"role": "user", "content": "hello"},
        {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "out"},
    ]
    with open_agent("helper", tmp_path) as mem:
        mem.sessions.get_or_create("chat-1")
        for message in old:
            mem.sessions.append("chat-1", message)
    with open_agent("helper", tmp_path) as mem:
        session = MarkusSession("chat-1", mem)
        assert asyncio.run(session.get_items()) == kept
        assert asyncio.run(session.get_items(limit=2)) == kept[-2:]
        added: Any = {"role": "user", "content": "new"}
        asyncio.run(session.add_items([added]))
        assert asyncio.run(session.get_items(limit=2)) == [kept[-1], added]
        assert asyncio.run(session.pop_item()) == added
        assert asyncio.run(session.pop_item()) == kept[-1]  # the old messages, written again
        assert asyncio.run(session.get_items()) == kept[:-1]
        assert not any(r.legacy for r in mem.histories.items(session.key))
        assert mem.recall_conversation("popped") == []


def test_clearing_a_session_an_older_version_wrote_forgets_it(tmp_path: Path) -> None:
    with open_agent("helper", tmp_path) as mem:
        mem.sessions.get_or_create("chat-1")
        mem.sessions.append("chat-1", legacy({"role": "user"}, "zebra secret", text_in="content"))
    with open_agent("helper", tmp_path) as mem:
        asyncio.run(MarkusSession("chat-1", mem).clear_session())
    with open_agent("helper", tmp_path) as mem:
        assert asyncio.run(MarkusSession("chat-1", mem).get_items()) == []
        assert mem.recall_conversation("zebra secret") == []
