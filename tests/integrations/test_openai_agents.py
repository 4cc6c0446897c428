"""The OpenAI Agents SDK adapter, run by the SDK's own Runner on a scripted model, offline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, Session, SQLiteSession, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.strict_schema import ensure_strict_json_schema
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from markus_memory import InvalidInputError, open_agent
from markus_memory.integrations.openai_agents import MarkusSession, memory_function_tools
from markus_memory.tools import REGISTRY, is_tool_error_result, tool_names


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)  # the SDK would otherwise try to export traces


def _text(text: str) -> ResponseOutputMessage:
    part = ResponseOutputText(type="output_text", text=text, annotations=[])
    return ResponseOutputMessage(
        id="msg_1", type="message", role="assistant", status="completed", content=[part]
    )


def _call(
    name: str, arguments: dict[str, Any], call_id: str = "call_1"
) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=json.dumps(arguments), call_id=call_id
    )


class ScriptedModel(Model):
    """Answers each turn from a script; records the input and tools of every turn."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.inputs: list[Any] = []
        self.tools: list[Any] = []

    async def get_response(
        self, system_instructions, input, model_settings, tools, *args, **kwargs
    ):  # type: ignore[no-untyped-def]
        self.inputs.append(input)
        self.tools.append(tools)
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def test_runner_calls_a_memory_tool_and_the_session_persists_across_runs(tmp_path: Path) -> None:
    with open_agent("helper", tmp_path) as mem:
        model = ScriptedModel(
            [
                [_call("memory_save", {"content": "Ana prefers tea", "type": None, "tags": None})],
                [_text("Saved.")],
            ]
        )
        agent = Agent(name="a", model=model, tools=memory_function_tools(mem))
        session = MarkusSession("chat-1", mem)
        result = asyncio.run(Runner.run(agent, "remember: Ana prefers tea", session=session))
        assert result.final_output == "Saved."
        saved = mem.search("tea")
        assert [h.content for h in saved.hits] == ["Ana prefers tea"]
        tool_output = model.inputs[1][-1]
        assert tool_output["type"] == "function_call_output"
        assert not is_tool_error_result(tool_output["output"])

    # A second process-like open: the history comes back verbatim and the model sees it.
    with open_agent("helper", tmp_path) as mem:
        model = ScriptedModel([[_text("You told me Ana prefers tea.")]])
        agent = Agent(name="a", model=model, tools=memory_function_tools(mem))
        session = MarkusSession("chat-1", mem)
        before = asyncio.run(session.get_items())
        result = asyncio.run(Runner.run(agent, "what does Ana drink?", session=session))
        assert result.final_output == "You told me Ana prefers tea."
        seen = model.inputs[0]
        assert seen[: len(before)] == before
        assert [i.get("type") for i in before][1:] == [
            "function_call",
            "function_call_output",
            "message",
        ]
        assert before[0]["content"] == "remember: Ana prefers tea"
        assert before[1]["name"] == "memory_save"
        hits = mem.recall_conversation("Ana drink", session_id="chat-1")
        assert any("what does Ana drink" in h.text for h in hits)


def test_session_protocol_matches_the_sdk_sqlite_session(tmp_path: Path) -> None:
    items: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
        {"type": "function_call", "name": "x", "arguments": "{}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "done"},
    ]

    async def exercise(session: Session) -> list[Any]:
        seen: list[Any] = []
        await session.add_items(items)
        seen.append(await session.get_items())
        seen.append(await session.get_items(limit=2))
        seen.append(await session.pop_item())
        seen.append(await session.get_items())
        await session.clear_session()
        seen.append(await session.get_items())
        seen.append(await session.pop_item())
        await session.add_items(items[:1])
        seen.append(await session.get_items())
        return seen

    with open_agent("helper", tmp_path) as mem:
        ours = MarkusSession("s1", mem)
        assert isinstance(ours, Session)
        reference = SQLiteSession("s1")
        assert asyncio.run(exercise(ours)) == asyncio.run(exercise(reference))
        reference.close()


def test_a_bad_item_writes_nothing(tmp_path: Path) -> None:
    with open_agent("helper", tmp_path) as mem:
        session = MarkusSession("s1", mem)
        asyncio.run(session.add_items([{"role": "user", "content": "kept"}]))
        bad: Any = [{"role": "user", "content": "lost"}, {"role": "user", "content": float("nan")}]
        with pytest.raises(InvalidInputError):
            asyncio.run(session.add_items(bad))
        assert asyncio.run(session.get_items()) == [{"role": "user", "content": "kept"}]


@pytest.mark.parametrize("strict", [True, False])
def test_tool_schemas_survive_strict_mode_or_go_verbatim(tmp_path: Path, strict: bool) -> None:
    with open_agent("helper", tmp_path) as mem:
        tools = memory_function_tools(mem, strict=strict)
        assert [t.name for t in tools] == list(tool_names())
        for tool in tools:
            definition = REGISTRY.get(tool.name)
            assert definition is not None
            if strict:
                schema = tool.params_json_schema
                assert schema == ensure_strict_json_schema(json.loads(json.dumps(schema)))
                assert set(schema["required"]) == set(schema["properties"])
            else:
                assert tool.params_json_schema == definition.schema("mcp")["inputSchema"]


def test_strict_nulls_mean_not_given_and_bad_calls_reach_the_model_as_errors(
    tmp_path: Path,
) -> None:
    with open_agent("helper", tmp_path) as mem:
        model = ScriptedModel(
            [
                [
                    _call("memory_search", {"query": None, "type": None, "limit": None}, "c1"),
                    _call("update_notebook", {"key": "k"}, "c2"),
                    _call("memory_save", {"content": "x"}, "c3"),
                ],
                [_text("ok")],
            ]
        )
        tools = memory_function_tools(mem, names=["memory_search", "update_notebook"])
        tools += memory_function_tools(mem, names=["memory_save"], strict=False)
        agent = Agent(name="a", model=model, tools=tools)
        before = sorted(p.name for p in mem.directory.rglob("*"))
        asyncio.run(Runner.run(agent, "go"))
        outputs = {
            i["call_id"]: i["output"]
            for i in model.inputs[1]
            if i.get("type") == "function_call_output"
        }
        assert not is_tool_error_result(outputs["c1"])
        assert is_tool_error_result(outputs["c2"]) and "content" in outputs["c2"]
        assert "Traceback" not in outputs["c2"]
        assert not is_tool_error_result(outputs["c3"])
        assert "k" not in [e.key for e in mem.notebook.entries()]
        assert before  # the agent directory existed before the run
