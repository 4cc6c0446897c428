"""examples/agent_loop.py against a local fake OpenAI-compatible server; files checked after."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("httpx")

from markus_memory import open_agent  # noqa: E402
from markus_memory.flush import FLUSH_HEADER  # noqa: E402

EXAMPLE = Path(__file__).parent.parent / "examples" / "agent_loop.py"
Reply = Callable[[dict[str, Any]], dict[str, Any]]


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_loop_example", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _completion(content: str | None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


class FakeOpenAI:
    """A chat-completions endpoint on 127.0.0.1 that answers from a script and logs requests."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                if self.path != "/v1/chat/completions" or not fake.script:
                    self.send_response(500)
                    self.end_headers()
                    return
                payload = json.dumps(fake.script.pop(0)(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def example() -> Iterator[ModuleType]:
    yield _load_example()


def _tools_offered(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def test_agent_loop_saves_memory_and_notebook_to_disk(
    example: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    script: list[Reply] = [
        lambda body: _completion(
            None,
            [
                _tool_call(
                    "c1", "memory_save", {"content": "User prefers green tea", "tags": "user"}
                ),
                _tool_call("c2", "update_notebook", {"key": "current-task", "content": "chatting"}),
                _tool_call("c3", "memory_save", {"content": "   ", "summary": "no content"}),
            ],
        ),
        lambda body: _completion("Noted: green tea."),
        lambda body: _completion(None, [_tool_call("c4", "memory_search", {"query": "tea"})]),
        lambda body: _completion("You prefer green tea."),
    ]
    with FakeOpenAI(script) as server:
        code = example.main(
            [
                "--base-url",
                server.base_url,
                "--model",
                "fake",
                "--agent",
                "alice",
                "--home",
                str(home),
                "Remember I prefer green tea",
                "What tea do I like?",
            ]
        )
    assert code == 0
    assert "You prefer green tea." in capsys.readouterr().out
    agent_dir = home / "agents" / "alice"
    assert "User prefers green tea" in (agent_dir / "knowledge.md").read_text()
    assert "no content" not in (agent_dir / "knowledge.md").read_text()
    assert "## current-task" in (agent_dir / "NOTEBOOK.md").read_text()
    # the model saw the memory tools, and its second turn saw the notebook and recall
    assert {"memory_save", "memory_search", "update_notebook"} <= _tools_offered(server.requests[0])
    second_turn_system = server.requests[2]["messages"][0]["content"]
    assert "## Notebook" in second_turn_system and "current-task" in second_turn_system
    assert "relevant-context" in second_turn_system and "green tea" in second_turn_system
    assert "## relevant-context" in (agent_dir / "NOTEBOOK.md").read_text()  # persist_recall
    # the follow-up request is valid OpenAI wire format
    sent = server.requests[1]["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == [
        "memory_save",
        "update_notebook",
        "memory_save",
    ]
    assert all(isinstance(c["function"]["arguments"], str) for c in assistant["tool_calls"])
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["c1", "c2", "c3"]
    # tool results went back to the model: the empty save got a structured error
    tool_results = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(tool_results[0]["content"])["status"] == "saved"
    refused = json.loads(tool_results[2]["content"])
    assert refused["status"] == "error" and 'no argument "summary"' in refused["error"]
    search = json.loads(
        [m for m in server.requests[3]["messages"] if m["role"] == "tool"][-1]["content"]
    )
    assert search["count"] >= 1 and search["store"] == "knowledge.md"
    with open_agent("alice", home=home) as memory:
        session = memory.sessions.get("chat_demo")
        assert session is not None
        roles = [m["role"] for m in session.messages]
        assert roles.count("user") == 2 and roles.count("tool") == 4


def test_agent_loop_flushes_before_the_context_fills(example: ModuleType, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_agent("bob", home=home) as memory:
        memory.sessions.get_or_create("chat_demo")
        for i in range(12):
            memory.sessions.append("chat_demo", {"role": "user", "content": f"question {i}"})
            memory.sessions.append(
                "chat_demo",
                {
                    "role": "assistant",
                    "content": f"We decided to use Postgres 16, reason {i}. " * 4,
                },
            )

    def flush_reply(body: dict[str, Any]) -> dict[str, Any]:
        assert FLUSH_HEADER in body["messages"][0]["content"]
        assert _tools_offered(body) == {"memory_save", "update_notebook"}
        assert "We decided to use Postgres 16" in body["messages"][1]["content"]
        return _completion(
            None, [_tool_call("f1", "memory_save", {"content": "Decision: Postgres 16"})]
        )

    script: list[Reply] = [
        lambda body: _completion("First answer."),  # usage is measured after this turn
        flush_reply,
        lambda body: _completion("No important information left to save."),
        lambda body: _completion("Second answer."),
        lambda body: _completion("Third answer."),  # no second flush for the session
    ]
    with FakeOpenAI(script) as server:
        example.main(
            [
                "--base-url",
                server.base_url,
                "--model",
                "fake",
                "--agent",
                "bob",
                "--home",
                str(home),
                "--context-window",
                "500",
                "one",
                "two",
                "three",
            ]
        )
    assert not script
    flush_requests = [r for r in server.requests if FLUSH_HEADER in r["messages"][0]["content"]]
    assert len(flush_requests) == 2  # the flush turn: the save round, then the closing answer
    agent_dir = home / "agents" / "bob"
    assert "Decision: Postgres 16" in (agent_dir / "knowledge.md").read_text()
    sys_files = list((agent_dir / "sessions").glob("sys_*"))
    assert sys_files, "the flush turn is recorded as a sys_ session"


def test_agent_loop_reports_a_model_failure_and_exits_1(
    example: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script: list[Reply] = [lambda body: _completion(None, [_tool_call("c", "memory_save", [])])]
    with FakeOpenAI(script) as server:
        code = example.main(
            [
                "--base-url",
                server.base_url,
                "--model",
                "fake",
                "--agent",
                "carol",
                "--home",
                str(tmp_path / "home"),
                "hello",
            ]
        )
    assert code == 1 and "model error" in capsys.readouterr().err
