"""The MCP server through the SDK's own client: in-process, over stdio, over HTTP."""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
import httpx2  # noqa: E402
import uvicorn  # noqa: E402
from mcp import Client, MCPError, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from markus_memory import AgentMemory, InvalidInputError, open_agent  # noqa: E402
from markus_memory.mcp_server import (  # noqa: E402
    PROMPT_NAME,
    RESOURCES,
    build_server,
    check_http_binding,
    http_app,
)
from markus_memory.prompt import render_memory_context  # noqa: E402
from markus_memory.tools import REGISTRY, dispatch, is_tool_error_result, tool_schemas  # noqa: E402

T = TypeVar("T")


def with_client(server: Any, body: Callable[[Client], Awaitable[T]]) -> T:
    async def main() -> T:
        async with Client(server) as client:
            return await body(client)

    return anyio.run(main)


def protocol_error(server: Any, body: Callable[[Client], Awaitable[Any]]) -> MCPError:
    """The MCPError a request raises (caught inside the session, which stays usable)."""

    async def main() -> MCPError:
        async with Client(server) as client:
            try:
                await body(client)
            except MCPError as exc:
                await client.list_tools()
                return exc
            raise AssertionError("the request did not fail")

    return anyio.run(main)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[AgentMemory]:
    with open_agent("alice", home=tmp_path / "a") as mem:
        yield mem


def seed(mem: AgentMemory) -> None:
    """The same starting memory for the server's agent and its twin."""
    mem.knowledge.save_observation("The deploy runs every Friday at noon.", tags=("ops",))
    mem.knowledge.update_section("Team", "Ana leads the platform team.")
    mem.notebook.upsert("plan", "ship the importer")
    mem.state.update("build", "green")
    activity = mem.activities.start("task", "Fix the importer deploy")
    mem.activities.log(activity, "tool_call", "ran the importer tests")
    mem.activities.end(activity)


# tools


def test_lists_every_canonical_tool_with_the_registry_schema(memory: AgentMemory) -> None:
    listed = with_client(build_server(memory), lambda c: c.list_tools())
    got = [
        {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
        for t in listed.tools
    ]
    assert got == tool_schemas("mcp")


def test_legacy_aliases_are_listed_on_request(memory: AgentMemory) -> None:
    listed = with_client(build_server(memory, legacy_tools=True), lambda c: c.list_tools())
    assert [t.name for t in listed.tools] == [t.name for t in REGISTRY]
    assert any(t.legacy for t in REGISTRY)


@pytest.mark.parametrize("legacy", [False, True])
def test_an_unknown_tool_error_names_exactly_the_tools_listed(
    memory: AgentMemory, legacy: bool
) -> None:
    """#28: it used to name the legacy aliases a client without --legacy-tools never saw."""

    async def body(client: Client) -> tuple[Any, Any]:
        return await client.list_tools(), await client.call_tool("memory_forget", {})

    listed, result = with_client(build_server(memory, legacy_tools=legacy), body)
    text = json.loads(result.content[0].text)["error"]
    assert result.is_error and text.startswith("unknown tool 'memory_forget'")
    named = text.split("The memory tools are: ", 1)[1].rstrip(".").split(", ")
    assert named == [t.name for t in listed.tools]
    assert ("memory_list" in named) is legacy


def shape(value: Any) -> Any:
    """Keys and JSON types at every depth: what the two results must share (ids differ)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


@pytest.mark.parametrize("tool", list(REGISTRY), ids=lambda t: t.name)
def test_every_tool_answers_like_dispatch(tool: Any, tmp_path: Path) -> None:
    with (
        open_agent("alice", home=tmp_path / "a") as served,
        open_agent("alice", home=tmp_path / "b") as twin,
    ):
        seed(served)
        seed(twin)
        args = dict(tool.example)
        result = with_client(build_server(served), lambda c: c.call_tool(tool.name, args))
        expected = dispatch(twin, tool.name, args)
    (content,) = result.content
    got = json.loads(content.text)
    assert result.is_error == is_tool_error_result(content.text) == is_tool_error_result(expected)
    assert shape(got) == shape(json.loads(expected))
    assert got.get("store") == tool.store


def test_a_save_through_the_server_lands_in_knowledge_md(memory: AgentMemory) -> None:
    result = with_client(
        build_server(memory),
        lambda c: c.call_tool("memory_save", {"content": "Ana prefers short answers."}),
    )
    assert not result.is_error
    saved = json.loads(result.content[0].text)
    assert [o.id for o in memory.knowledge.observations()] == [saved["id"]]
    assert "Ana prefers short answers." in memory.paths.knowledge.read_text()


def test_bad_calls_are_tool_errors_and_the_server_keeps_serving(memory: AgentMemory) -> None:
    async def body(client: Client) -> list[Any]:
        return [
            await client.call_tool("memory_save", {"content": ["a", "b"]}),
            await client.call_tool("no_such_tool", {}),
            await client.call_tool("state_update", {}),
            await client.call_tool("memory_save", {"content": "still here"}),
        ]

    array, unknown, missing, good = with_client(build_server(memory), body)
    for bad in (array, unknown, missing):
        assert bad.is_error
        assert json.loads(bad.content[0].text)["ok"] is False
    assert "no_such_tool" in unknown.content[0].text
    assert not good.is_error
    assert [o.content for o in memory.knowledge.observations()] == ["still here"]


def test_a_corrupt_file_is_a_tool_error_not_a_crash(memory: AgentMemory) -> None:
    async def body(client: Client) -> list[Any]:
        memory.paths.notebook.write_bytes(b"\xff\xfe not utf-8 \xff")
        broken = await client.call_tool("update_notebook", {"key": "plan", "content": "x"})
        memory.paths.notebook.write_text("", encoding="utf-8")
        fixed = await client.call_tool("update_notebook", {"key": "plan", "content": "x"})
        return [broken, fixed]

    broken, fixed = with_client(build_server(memory), body)
    assert broken.is_error
    assert "NOTEBOOK.md" in broken.content[0].text
    assert str(memory.settings.home) not in broken.content[0].text  # #28: no host path
    assert not fixed.is_error
    assert memory.notebook.get("plan") is not None


def test_a_corrupt_resource_or_prompt_error_names_no_host_path(memory: AgentMemory) -> None:
    memory.paths.notebook.write_bytes(b"\xff\xfe not utf-8 \xff")
    uri = RESOURCES[1].uri(memory.agent_id)
    errors = [
        protocol_error(build_server(memory), lambda c: c.read_resource(uri)),
        protocol_error(build_server(memory), lambda c: c.get_prompt(PROMPT_NAME, {})),
    ]
    for error in errors:
        assert "NOTEBOOK.md" in str(error) and str(memory.settings.home) not in str(error)


# resources and prompt


def test_memory_files_are_resources_that_follow_hand_edits(memory: AgentMemory) -> None:
    seed(memory)
    memory.paths.role.parent.mkdir(parents=True, exist_ok=True)
    memory.paths.role.write_text("# Release manager\nYou ship releases.\n", encoding="utf-8")

    async def body(client: Client) -> tuple[Any, dict[str, str]]:
        listed = await client.list_resources()
        texts = {}
        for resource in listed.resources:
            read = await client.read_resource(resource.uri)
            texts[resource.name] = read.contents[0].text
        return listed, texts

    listed, texts = with_client(build_server(memory), body)
    assert [r.name for r in listed.resources] == [r.name for r in RESOURCES]
    assert texts == {
        "knowledge.md": memory.paths.knowledge.read_text(),
        "NOTEBOOK.md": memory.paths.notebook.read_text(),
        "state.md": memory.paths.state.read_text(),
        "ROLE.md": "# Release manager\nYou ship releases.\n",
    }


def test_an_unknown_resource_is_a_protocol_error_naming_the_known_ones(
    memory: AgentMemory,
) -> None:
    error = protocol_error(
        build_server(memory), lambda c: c.read_resource("markus://agents/alice/../../etc/passwd")
    )
    assert "markus://agents/alice/knowledge.md" in str(error)


@pytest.mark.parametrize("profile", ["default", "converse", "reflex"])
def test_the_prompt_is_the_rendered_memory_context(memory: AgentMemory, profile: str) -> None:
    seed(memory)
    result = with_client(
        build_server(memory), lambda c: c.get_prompt(PROMPT_NAME, {"profile": profile})
    )
    (message,) = result.messages
    expected = render_memory_context(memory, profile).text
    assert message.content.text == expected
    assert ("Ana leads" in expected) == (profile != "reflex")


def test_item11_the_prompt_with_a_query_writes_nothing(memory: AgentMemory) -> None:
    """#12 item 11: rendering the prompt wrote a system entry into NOTEBOOK.md."""
    seed(memory)
    before = memory.paths.notebook.read_bytes()
    server = build_server(memory)
    args = {"profile": "converse", "query": "when is the deploy?"}
    shown = with_client(server, lambda c: c.get_prompt(PROMPT_NAME, args))
    assert "every Friday at noon" in shown.messages[0].content.text
    assert memory.paths.notebook.read_bytes() == before
    kept = with_client(
        server, lambda c: c.get_prompt(PROMPT_NAME, {**args, "persist_recall": "true"})
    )
    assert kept.messages[0].content.text == shown.messages[0].content.text
    entry = memory.notebook.get("relevant-context")
    assert entry is not None and "every Friday at noon" in entry.text
    error = protocol_error(
        server, lambda c: c.get_prompt(PROMPT_NAME, {**args, "persist_recall": "maybe"})
    )
    assert "persist_recall" in str(error)


def test_an_unknown_profile_is_refused(memory: AgentMemory) -> None:
    error = protocol_error(
        build_server(memory), lambda c: c.get_prompt(PROMPT_NAME, {"profile": "chatty"})
    )
    assert "converse" in str(error)


# stdio


def markus_command() -> str:
    found = shutil.which("markus-memory", path=str(Path(sys.executable).parent))
    assert found is not None, "the markus-memory console script is not installed"
    return found


@pytest.mark.slow
def test_stdio_round_trip_with_the_server_as_a_subprocess(tmp_path: Path) -> None:
    home = tmp_path / "home"
    params = StdioServerParameters(
        command=markus_command(),
        args=["serve", "--agent", "bob", "--home", str(home)],
    )

    async def body(client: Client) -> tuple[Any, Any]:
        tools = await client.list_tools()
        saved = await client.call_tool("memory_save", {"content": "stdio works"})
        return tools, saved

    tools, saved = with_client(params, body)
    assert "memory_save" in [t.name for t in tools.tools]
    assert not saved.is_error
    assert "stdio works" in (home / "agents" / "bob" / "knowledge.md").read_text()


@pytest.mark.slow
def test_item17_deep_requests_over_stdio_get_a_clear_error(tmp_path: Path) -> None:
    """#12 item 17: deep nesting is refused with a clear error, never a traceback.

    Within what the transport can read, the tool refuses it; beyond, the server answers the
    request with a parse error (the SDK alone dropped the line and left the client waiting).
    """
    import subprocess

    def deep_call(request_id: int, depth: int) -> str:
        tags = "[" * depth + "]" * depth
        return (
            f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":'
            f'{{"name":"memory_save","arguments":{{"content":"x","tags":{tags}}}}}}}'
        )

    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    lines = [
        json.dumps(hello),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        deep_call(1, 40),
        deep_call(2, 300),
        deep_call(3, 100_000),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ]
    server = subprocess.Popen(
        [markus_command(), "serve", "--agent", "bob", "--home", str(tmp_path / "home")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(60, server.kill)  # a reply that never comes fails, not hangs
    watchdog.start()
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n".join(lines) + "\n")
        server.stdin.flush()
        replies = {}
        for _ in range(5):  # one reply per request, the notification gets none
            reply = json.loads(server.stdout.readline())
            replies[reply["id"]] = reply
        _, stderr = server.communicate(timeout=30)  # closes stdin: the server stops
    finally:
        watchdog.cancel()
        server.kill()
    assert set(replies) == {0, 1, 2, 3, 4}
    refused = json.loads(replies[1]["result"]["content"][0]["text"])
    assert replies[1]["result"]["isError"] and "nested too deeply" in refused["error"]
    for request_id in (2, 3):
        assert replies[request_id]["error"]["code"] == -32700
        assert "nested too deeply" in replies[request_id]["error"]["message"]
    assert replies[4]["result"]["tools"]
    assert "Traceback" not in stderr
    with open_agent("bob", home=tmp_path / "home") as bob:
        assert bob.knowledge.observations() == []


# HTTP


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields the /mcp URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)


def http_call(url: str, token: str | None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None

    async def main() -> Any:
        async with create_mcp_http_client(headers=headers) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool("memory_save", {"content": "over http"})

    return anyio.run(main)


def raw_post(url: str, headers: dict[str, str]) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return httpx2.post(
        url,
        json=body,
        headers={"Accept": "application/json, text/event-stream", **headers},
    )


@pytest.mark.slow
def test_http_on_loopback_without_a_token(memory: AgentMemory) -> None:
    with running(http_app(memory)) as url:
        result = http_call(url, None)
    assert not result.is_error
    assert [o.content for o in memory.knowledge.observations()] == ["over http"]


@pytest.mark.slow
def test_http_with_a_token_refuses_requests_without_it(memory: AgentMemory) -> None:
    token = "s3cret-token-for-tests"
    with running(http_app(memory, token=token)) as url:
        missing = raw_post(url, {})
        wrong = raw_post(url, {"Authorization": "Bearer nope"})
        result = http_call(url, token)
    assert missing.status_code == wrong.status_code == 401
    assert not result.is_error
    assert [o.content for o in memory.knowledge.observations()] == ["over http"]


def test_binding_beyond_loopback_requires_a_token() -> None:
    with pytest.raises(InvalidInputError, match="token"):
        check_http_binding("0.0.0.0", None)
    with pytest.raises(InvalidInputError, match="empty"):
        check_http_binding("0.0.0.0", "  ")
    check_http_binding("0.0.0.0", "t0ken")
    check_http_binding("127.0.0.1", None)
