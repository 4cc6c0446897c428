"""The OpenAI-compatible and Anthropic adapters against a fake server speaking each wire format."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from markus_memory.errors import LLMError
from markus_memory.llm import (
    AnthropicChatModel,
    ChatModel,
    ChatResponse,
    OpenAIChatModel,
    RetryPolicy,
    ToolCall,
)
from tests.fake_llm_server import FakeServer, Reply, fake_server

FAST = RetryPolicy(max_attempts=3, backoff_seconds=0.0)
SAVE_TOOL = {
    "type": "function",
    "function": {
        "name": "memory_save",
        "description": "Save an observation",
        "parameters": {"type": "object", "properties": {"content": {"type": "string"}}},
    },
}
CONVERSATION = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "remember the deploy day"},
    {
        "role": "assistant",
        "content": "",
        "toolCalls": [{"id": "c1", "name": "memory_save", "arguments": {"content": "Fri"}}],
    },
    {"role": "tool", "toolCallId": "c1", "content": '{"status":"saved"}'},
    {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with fake_server() as fake:
        yield fake


def openai_reply(content: str | None, tool_calls: list[dict[str, object]] | None = None) -> dict:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def openai(server: FakeServer, **kw: object) -> OpenAIChatModel:
    kw.setdefault("retry", FAST)
    return OpenAIChatModel("gpt-test", base_url=server.url + "/v1", api_key="sk-test", **kw)


def anthropic(server: FakeServer, **kw: object) -> AnthropicChatModel:
    kw.setdefault("retry", FAST)
    return AnthropicChatModel("claude-test", base_url=server.url, api_key="ak-test", **kw)


def test_adapters_are_chat_models(server: FakeServer) -> None:
    assert isinstance(openai(server), ChatModel)
    assert isinstance(anthropic(server), ChatModel)


def test_openai_text_reply_and_request_wire_format(server: FakeServer) -> None:
    server.replies.append(Reply(body=openai_reply("hello")))
    with openai(server, max_tokens=50) as model:
        answer = model.complete(CONVERSATION, tools=[SAVE_TOOL])
    assert answer == ChatResponse("hello")
    seen = server.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.body["model"] == "gpt-test"
    assert seen.body["max_tokens"] == 50
    assert seen.body["tools"] == [SAVE_TOOL]
    sent = seen.body["messages"]
    assert sent[2]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "memory_save", "arguments": '{"content": "Fri"}'},
        }
    ]
    assert sent[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"status":"saved"}'}


def test_openai_without_key_sends_no_authorization(server: FakeServer) -> None:
    server.replies.append(Reply(body=openai_reply("ok")))
    model = OpenAIChatModel("local", base_url=server.url + "/v1", retry=FAST)
    assert model.complete([{"role": "user", "content": "hi"}]).text == "ok"
    assert "authorization" not in server.requests[0].headers


def test_openai_tool_calls_are_parsed(server: FakeServer) -> None:
    call = {
        "id": "call_9",
        "type": "function",
        "function": {"name": "memory_save", "arguments": '{"content": "x"}'},
    }
    server.replies.append(Reply(body=openai_reply(None, [call])))
    answer = openai(server).complete([{"role": "user", "content": "save"}], tools=[SAVE_TOOL])
    assert answer == ChatResponse("", (ToolCall("call_9", "memory_save", {"content": "x"}),))


def test_openai_tool_arguments_that_are_not_json_raise(server: FakeServer) -> None:
    call = {
        "id": "c",
        "type": "function",
        "function": {"name": "memory_save", "arguments": "{oops"},
    }
    server.replies.append(Reply(body=openai_reply(None, [call])))
    with pytest.raises(LLMError, match="not JSON"):
        openai(server).complete([{"role": "user", "content": "x"}])


def test_anthropic_text_reply_and_request_wire_format(server: FakeServer) -> None:
    server.replies.append(
        Reply(body={"type": "message", "content": [{"type": "text", "text": "hi"}]})
    )
    answer = anthropic(server).complete(CONVERSATION, tools=[SAVE_TOOL])
    assert answer == ChatResponse("hi")
    seen = server.requests[0]
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == "ak-test"
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.body["system"] == "You are helpful."
    assert seen.body["tools"] == [
        {
            "name": "memory_save",
            "description": "Save an observation",
            "input_schema": SAVE_TOOL["function"]["parameters"],
        }
    ]
    turns = seen.body["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "memory_save", "input": {"content": "Fri"}}
    ]
    # the tool result and the next user text share one user turn (roles must alternate)
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": '{"status":"saved"}'},
        {"type": "text", "text": "thanks"},
    ]


def test_anthropic_tool_use_blocks_are_parsed(server: FakeServer) -> None:
    body = {
        "content": [
            {"type": "text", "text": "saving "},
            {"type": "tool_use", "id": "tu_1", "name": "memory_save", "input": {"content": "y"}},
        ]
    }
    server.replies.append(Reply(body=body))
    answer = anthropic(server).complete([{"role": "user", "content": "x"}], tools=[SAVE_TOOL])
    assert answer == ChatResponse("saving ", (ToolCall("tu_1", "memory_save", {"content": "y"}),))


@pytest.mark.parametrize("make", [openai, anthropic])
def test_client_error_is_not_retried_and_names_the_status(server: FakeServer, make) -> None:
    server.replies.append(Reply(401, {"error": {"message": "bad key"}}))
    with pytest.raises(LLMError, match="HTTP 401.*bad key"):
        make(server).complete([{"role": "user", "content": "x"}])
    assert len(server.requests) == 1


@pytest.mark.parametrize("make", [openai, anthropic])
def test_429_and_5xx_are_retried_with_backoff(server: FakeServer, make) -> None:
    good = (
        openai_reply("fine") if make is openai else {"content": [{"type": "text", "text": "fine"}]}
    )
    server.replies += [
        Reply(429, "slow down", {"retry-after": "0"}),
        Reply(503, "busy"),
        Reply(body=good),
    ]
    sleeps: list[float] = []
    model = make(
        server, retry=RetryPolicy(max_attempts=3, backoff_seconds=0.01), sleep=sleeps.append
    )
    assert model.complete([{"role": "user", "content": "x"}]).text == "fine"
    assert len(server.requests) == 3
    assert sleeps == [0.01, 0.02]


@pytest.mark.parametrize("make", [openai, anthropic])
def test_retries_are_bounded(server: FakeServer, make) -> None:
    server.replies += [Reply(500, "boom")] * 5
    with pytest.raises(LLMError, match="HTTP 500.*gave up after 3 attempt"):
        make(server).complete([{"role": "user", "content": "x"}])
    assert len(server.requests) == 3


@pytest.mark.parametrize("make", [openai, anthropic])
def test_timeout_is_a_deadline_not_a_hang(server: FakeServer, make) -> None:
    server.replies += [Reply(body={}, delay=5.0)] * 3
    model = make(server, retry=RetryPolicy(max_attempts=1))
    with pytest.raises(LLMError, match="timed out"):
        model.complete([{"role": "user", "content": "x"}], timeout=0.3)


@pytest.mark.parametrize("make", [openai, anthropic])
def test_body_that_is_not_json(server: FakeServer, make) -> None:
    server.replies.append(Reply(200, "<html>proxy error</html>"))
    with pytest.raises(LLMError, match="not JSON.*proxy error"):
        make(server).complete([{"role": "user", "content": "x"}])


@pytest.mark.parametrize("make", [openai, anthropic])
def test_json_of_the_wrong_shape(server: FakeServer, make) -> None:
    server.replies.append(Reply(200, {"unexpected": True}))
    with pytest.raises(LLMError, match="malformed"):
        make(server).complete([{"role": "user", "content": "x"}])


def test_connection_refused_is_an_llm_error() -> None:
    with fake_server() as gone:
        url = gone.url
    model = OpenAIChatModel(
        "m", base_url=url, retry=RetryPolicy(max_attempts=2, backoff_seconds=0.0)
    )
    with pytest.raises(LLMError, match="connection failed"):
        model.complete([{"role": "user", "content": "x"}], timeout=2)


def test_chat_response_as_message_is_the_assistant_turn_to_append() -> None:
    call = ToolCall("c1", "memory_save", {"content": "Fri"})
    assert ChatResponse("ok", (call,)).as_message() == {
        "role": "assistant",
        "content": "ok",
        "toolCalls": [{"id": "c1", "name": "memory_save", "arguments": {"content": "Fri"}}],
    }
    assert ChatResponse("plain").as_message() == {"role": "assistant", "content": "plain"}
