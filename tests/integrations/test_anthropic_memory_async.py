"""The async memory tool: the sync answers, off the event loop, in AsyncAnthropic's runner."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic")

from anthropic.lib.tools import BetaAsyncAbstractMemoryTool, ToolError

from markus_memory import open_agent
from markus_memory.integrations.anthropic_memory import AsyncMarkusMemoryTool, MarkusMemoryTool
from tests.integrations.anthropic_support import replies, run
from tests.integrations.test_anthropic_memory import FREE_FILE_SCRIPT

LAYER_SCRIPT: list[dict[str, Any]] = [
    {"command": "view", "path": "/memories/NOTEBOOK.md"},
    {"command": "insert", "path": "/memories/NOTEBOOK.md", "insert_line": 0, "insert_text": "a: b"},
    {"command": "insert", "path": "/memories/state.md", "insert_line": 0, "insert_text": "## x"},
    {"command": "str_replace", "path": "/memories/state.md", "old_str": "q", "new_str": "r"},
    {"command": "delete", "path": "/memories/knowledge.md"},
    {"command": "create", "path": "/memories/a.md"},
    {"command": "create", "path": "/memories/" + "d/" * 20 + "f.md", "file_text": "x"},
    {"command": "view", "path": "/memories"},
]


async def arun(tool: AsyncMarkusMemoryTool, command: dict[str, Any]) -> str:
    try:
        return str(await tool.call(command))
    except ToolError as exc:
        return f"ERROR: {exc.content}"


def test_the_async_tool_answers_as_the_sync_one(tmp_path: Path) -> None:
    with open_agent("sync", tmp_path) as mem, open_agent("async", tmp_path) as amem:
        ours, theirs = MarkusMemoryTool(mem), AsyncMarkusMemoryTool(amem)
        assert isinstance(theirs, BetaAsyncAbstractMemoryTool)
        for command in [*FREE_FILE_SCRIPT, *LAYER_SCRIPT]:
            assert asyncio.run(arun(theirs, command)) == run(ours, **command), command
        assert amem.notebook.get("a") is not None and amem.notebook.get("a").text == "b"  # type: ignore[union-attr]
        assert asyncio.run(theirs.clear_all_memory()) == ours.clear_all_memory()
        assert theirs.to_dict() == {"type": "memory_20250818", "name": "memory"}


def test_a_waiting_command_leaves_the_event_loop_free(tmp_path: Path) -> None:
    """While another thread holds the agent lock, the command waits in a worker thread and the
    loop goes on running: it is the loop itself that lets the holder go."""
    with open_agent("claude", tmp_path) as mem:
        tool = AsyncMarkusMemoryTool(mem)
        held, release = threading.Event(), threading.Event()

        def holder() -> None:
            with mem.lock:
                held.set()
                release.wait(timeout=20)

        thread = threading.Thread(target=holder)
        thread.start()
        held.wait()

        async def main() -> tuple[bool, str]:
            command = {"command": "create", "path": "/memories/a.md", "file_text": "x"}
            task = asyncio.create_task(arun(tool, command))
            for _ in range(20):
                await asyncio.sleep(0)
            waiting = not task.done()
            release.set()
            return waiting, await task

        waiting, said = asyncio.run(main())
        thread.join()
        assert waiting and said == "File created successfully at: /memories/a.md"


def test_async_anthropics_tool_runner_takes_it(tmp_path: Path) -> None:
    import httpx2
    from anthropic import AsyncAnthropic

    sent: list[dict[str, Any]] = []
    call = {"command": "insert", "path": "/memories/state.md", "insert_line": 0}
    answers = replies(call, {**call, "insert_text": "focus: waiting on review"})

    async def messages_api(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=answers.pop(0))

    async def main(mem: Any) -> Any:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(messages_api)) as http:
            client = AsyncAnthropic(api_key="offline", http_client=http, max_retries=0)
            runner = client.beta.messages.tool_runner(
                model="claude-test",
                max_tokens=100,
                tools=[AsyncMarkusMemoryTool(mem)],
                messages=[{"role": "user", "content": "note my focus"}],
            )
            return await runner.until_done()

    with open_agent("claude", tmp_path) as mem:
        final = asyncio.run(main(mem))
        assert [(e.key, e.content) for e in mem.state.entries()] == [("focus", "waiting on review")]
    assert final.content[0].text == "done"
    assert sent[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    refused, inserted = sent[1]["messages"][-1]["content"]
    assert refused["is_error"] is True and "`insert_text` must be a string" in refused["content"]
    assert inserted["content"].startswith("The file /memories/state.md has been edited.")
