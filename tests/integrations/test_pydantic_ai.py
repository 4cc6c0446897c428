"""The PydanticAI capability, toolset and conversation store, on its TestModel/FunctionModel."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationStore,
    InMemoryConversationStore,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from markus_memory import open_agent
from markus_memory.integrations.pydantic_ai import MarkusMemory, MemoryToolset
from markus_memory.integrations.pydantic_ai_store import MarkusConversationStore
from markus_memory.tools import is_tool_error_result, tool_names


def test_an_agent_on_test_model_calls_a_memory_tool(tmp_path: Path) -> None:
    with open_agent("pyd", tmp_path) as mem:
        model = TestModel(call_tools=["memory_save"])
        agent = Agent(model, capabilities=[MarkusMemory(mem)])
        result = asyncio.run(agent.run("hello"))
        assert len(mem.knowledge.observations()) == 1
        returned = [
            p.content
            for m in result.all_messages()
            for p in m.parts
            if p.part_kind == "tool-return"
        ]
        assert len(returned) == 1 and not is_tool_error_result(str(returned[0]))
        offered = model.last_model_request_parameters
        assert offered is not None
        assert sorted(t.name for t in offered.function_tools) == sorted(tool_names())


def test_bad_calls_come_back_as_error_results_and_context_is_in_instructions(
    tmp_path: Path,
) -> None:
    seen: dict[str, Any] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            seen["instructions"] = messages[0].instructions  # type: ignore[union-attr]
            return ModelResponse(
                parts=[
                    ToolCallPart("update_notebook", {"key": "k"}, tool_call_id="c1"),
                    ToolCallPart("memory_search", '{"query": "tea"', tool_call_id="c2"),
                    ToolCallPart("memory_search", {"query": "tea"}, tool_call_id="c3"),
                ]
            )
        seen["returns"] = {
            p.tool_call_id: p.content for p in messages[-1].parts if p.part_kind == "tool-return"
        }
        return ModelResponse(parts=[TextPart("done")])

    with open_agent("pyd", tmp_path) as mem:
        mem.knowledge.update_section("people", "Ana likes tea")
        before = mem.notebook.text()
        agent = Agent(FunctionModel(respond), capabilities=[MarkusMemory(mem, profile="converse")])
        assert asyncio.run(agent.run("what does Ana drink?")).output == "done"
        assert "Ana likes tea" in seen["instructions"]
        returns = seen["returns"]
        assert is_tool_error_result(returns["c1"]) and "Traceback" not in returns["c1"]
        assert is_tool_error_result(returns["c2"]) and "JSON" in returns["c2"]
        assert "Ana likes tea" in returns["c3"]
        assert "## k" not in mem.notebook.text() and before.count("## k") == 0


def test_the_toolset_alone_offers_a_scenarios_tools(tmp_path: Path) -> None:
    with open_agent("pyd", tmp_path) as mem:
        model = TestModel(call_tools=[])
        agent = Agent(model, toolsets=[MemoryToolset(mem, scenario="reflex")])
        asyncio.run(agent.run("hi"))
        offered = model.last_model_request_parameters
        assert offered is not None
        assert [t.name for t in offered.function_tools] == list(tool_names("reflex"))
        schema = offered.function_tools[0].parameters_json_schema
        assert schema == json.loads(json.dumps(schema)) and schema["type"] == "object"


def _conversation_script(store: ConversationStore) -> list[Any]:
    """Runs, loads, a conflicting save, a fork, a listing and a delete; what each returned."""

    async def script() -> list[Any]:
        out: list[Any] = []
        agent = Agent(TestModel(custom_output_text="noted"))
        conversation = await store.load("conv-1") or Conversation(conversation_id="conv-1")
        first = await agent.run("my cat is Tom", conversation=conversation)
        out.append(len(await store.save(first)))
        loaded = await store.load("conv-1")
        assert loaded is not None
        out.append([m.parts[0].part_kind for m in loaded.messages])
        second = await agent.run("and my dog is Rex", conversation=loaded)
        out.append(len(await store.save(second)))
        try:
            await store.save(first)  # saved from a stale revision
            out.append("saved")
        except ConversationConflict:
            out.append("conflict")
        again = await store.load("conv-1")
        assert again is not None
        out.append([getattr(p, "content", None) for m in again.messages for p in m.parts])
        out.append(len((await store.load("conv-1", limit=2) or Conversation()).messages))
        forked = await store.fork("conv-1", at=2, new_conversation_id="conv-2")
        out.append(len(forked.messages))
        out.append(sorted(r.conversation_id for r in await store.list_conversations()))
        await store.delete("conv-1")
        out.append(await store.load("conv-1"))
        kept = await store.load("conv-2")
        out.append(None if kept is None else len(kept.messages))
        return out

    return asyncio.run(script())


def _normalise(values: list[Any]) -> list[Any]:
    return json.loads(json.dumps(values, default=str))


def test_the_conversation_store_behaves_as_the_frameworks_in_memory_one(tmp_path: Path) -> None:
    with open_agent("pyd", tmp_path) as mem:
        ours = _conversation_script(MarkusConversationStore(mem))
        theirs = _conversation_script(InMemoryConversationStore())
        assert _normalise(ours) == _normalise(theirs)
        # conv-1 is deleted: what only it held is forgotten; what the fork conv-2 shares
        # (its first two messages) moved to conv-2's session and stays recallable there.
        assert mem.recall_conversation("dog Rex") == []
        hits = mem.recall_conversation("cat Tom")
        assert {h.session_id for h in hits} == {"conv-2"} and any("Tom" in h.text for h in hits)

    with open_agent("pyd", tmp_path) as mem:  # persisted: a fresh handle loads the fork
        loaded = asyncio.run(MarkusConversationStore(mem).load("conv-2"))
        assert loaded is not None and len(loaded.messages) == 2
