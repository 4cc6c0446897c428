"""The memory flush through each real adapter: tool calls parsed from both wire formats."""

from __future__ import annotations

import json

import pytest

from markus_memory import open_agent
from markus_memory.flush import memory_flush
from markus_memory.llm import AnthropicChatModel, OpenAIChatModel, RetryPolicy
from tests.fake_llm_server import Reply, fake_server

HISTORY = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "detail " * 30}
    for i in range(24)
]
SAVE = {"content": "the release is on Friday", "type": "fact"}


def openai_replies() -> list[Reply]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "memory_save", "arguments": json.dumps(SAVE)},
    }
    first = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
    second = {"choices": [{"message": {"role": "assistant", "content": "Saved."}}]}
    return [Reply(body=first), Reply(body=second)]


def anthropic_replies() -> list[Reply]:
    first = {"content": [{"type": "tool_use", "id": "tu1", "name": "memory_save", "input": SAVE}]}
    second = {"content": [{"type": "text", "text": "Saved."}]}
    return [Reply(body=first), Reply(body=second)]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_flush_saves_through_each_wire_format(kind: str) -> None:
    with fake_server() as server, open_agent("agt_flush") as mem:
        retry = RetryPolicy(backoff_seconds=0)
        if kind == "openai":
            server.replies += openai_replies()
            model = OpenAIChatModel("m", base_url=server.url + "/v1", retry=retry)
        else:
            server.replies += anthropic_replies()
            model = AnthropicChatModel("m", base_url=server.url, api_key="k", retry=retry)
        report = memory_flush(mem, model, "sess_1", messages=HISTORY)
        saved = [o.content for o in mem.knowledge.observations()]
    assert report.ran and report.reply == "Saved."
    assert saved == ["the release is on Friday"]
    second = server.requests[1].body
    assert second["tools"]
    if kind == "openai":
        assert (
            second["messages"][-1]["role"] == "tool"
            and second["messages"][-1]["tool_call_id"] == "c1"
        )
    else:
        assert second["messages"][-1]["content"][0]["tool_use_id"] == "tu1"
