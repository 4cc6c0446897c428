"""The Anthropic memory tool backend, driven through the SDK's own dispatch (``tool.call``)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic")

from anthropic.tools.memory import BetaLocalFilesystemMemoryTool

from markus_memory import open_agent
from markus_memory.config import Limits, Settings
from markus_memory.integrations.anthropic_memory import MarkusMemoryTool
from tests.integrations.anthropic_support import replies, run

FREE_FILE_SCRIPT: list[dict[str, Any]] = [
    {"command": "create", "path": "/memories/notes/a.md", "file_text": "one\ntwo\ntwo\n"},
    {"command": "create", "path": "/memories/notes/a.md", "file_text": "again"},
    {"command": "view", "path": "/memories/notes/a.md"},
    {"command": "view", "path": "/memories/notes/a.md", "view_range": [2, -1]},
    {"command": "view", "path": "/memories/notes"},
    {"command": "view", "path": "/memories/missing.md"},
    {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "two", "new_str": "2"},
    {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "zzz", "new_str": "2"},
    {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "one", "new_str": "1"},
    {"command": "str_replace", "path": "/memories/nope.md", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/notes/a.md", "insert_line": 1, "insert_text": "x\n"},
    {"command": "insert", "path": "/memories/notes/a.md", "insert_line": 99, "insert_text": "x"},
    {"command": "insert", "path": "/memories/notes", "insert_line": 0, "insert_text": "x"},
    {"command": "create", "path": "/memories/notes/b.md", "file_text": "b"},
    {"command": "rename", "old_path": "/memories/notes/a.md", "new_path": "/memories/notes/b.md"},
    {"command": "rename", "old_path": "/memories/notes/a.md", "new_path": "/memories/c/d.md"},
    {"command": "rename", "old_path": "/memories/gone.md", "new_path": "/memories/e.md"},
    {"command": "rename", "old_path": "/memories/gone.md", "new_path": "/memories/new/e.md"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
    {"command": "view", "path": "/memories/c/d.md"},
    {"command": "delete", "path": "/memories/notes/b.md"},
    {"command": "delete", "path": "/memories/notes/b.md"},
    {"command": "delete", "path": "/memories"},
    {"command": "delete", "path": "/memories/c"},
    {"command": "view", "path": "/memories/../etc/passwd"},
    {"command": "create", "path": "/memories/../outside.md", "file_text": "x"},
    {"command": "create", "path": "/tmp/x.md", "file_text": "x"},
    {"command": "view", "path": "/memories/notes"},
]


def test_free_files_follow_the_reference_implementation_exactly(tmp_path: Path) -> None:
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path / "reference"))
    with open_agent("claude", tmp_path / "home") as mem:
        ours = MarkusMemoryTool(mem)
        for command in FREE_FILE_SCRIPT:
            assert run(ours, **command) == run(reference, **command), command
        assert not (tmp_path / "outside.md").exists()
        assert not (mem.directory / "memories" / "new").exists()  # a failed rename made nothing
        assert (mem.directory / "memories" / "notes").is_dir()


def test_the_root_lists_the_layer_files_beside_the_free_files(tmp_path: Path) -> None:
    with open_agent("claude", tmp_path) as mem:
        tool = MarkusMemoryTool(mem)
        run(tool, command="create", path="/memories/zeta.md", file_text="z")
        run(tool, command="create", path="/memories/alpha/a.md", file_text="a")
        listing = run(tool, command="view", path="/memories").split("\n")
        assert listing[0].startswith("Here're the files and directories up to 2 levels deep")
        paths = [line.split("\t")[1] for line in listing[1:]]
        assert paths == [
            "/memories",
            "/memories/NOTEBOOK.md",
            "/memories/alpha/",
            "/memories/alpha/a.md",
            "/memories/knowledge.md",
            "/memories/state.md",
            "/memories/zeta.md",
        ]


def test_layer_files_are_read_and_written_through_their_layers(tmp_path: Path) -> None:
    with open_agent("claude", tmp_path) as mem:
        tool = MarkusMemoryTool(mem)
        mem.knowledge.update_section("people", "Ana likes tea")
        shown = run(tool, command="view", path="/memories/knowledge.md")
        assert "Ana likes tea" in shown and shown.startswith("Here's the content of")
        done = run(
            tool,
            command="str_replace",
            path="/memories/knowledge.md",
            old_str="Ana likes tea",
            new_str="Ana likes green tea",
        )
        assert done.startswith("The memory file has been edited.")
        assert mem.knowledge.section("people") == "Ana likes green tea"

        end = len(mem.notebook.text().split("\n"))
        result = run(
            tool,
            command="insert",
            path="/memories/NOTEBOOK.md",
            insert_line=end - 1 if mem.notebook.text() else 0,
            insert_text="## current-task\nwrite the report\n",
        )
        assert result == "The file /memories/NOTEBOOK.md has been edited.", result
        assert mem.notebook.get("current-task") is not None
        assert mem.notebook.get("current-task").text == "write the report"  # type: ignore[union-attr]

        run(
            tool,
            command="insert",
            path="/memories/state.md",
            insert_line=0,
            insert_text="## mood\ncalm\n",
        )
        assert [(e.key, e.content) for e in mem.state.entries()] == [("mood", "calm")]


def test_layer_refusals_hold_and_change_nothing(tmp_path: Path) -> None:
    limits = Limits(section_max_chars=40)
    settings = Settings.from_env(home=tmp_path)
    settings = dataclasses.replace(settings, limits=limits)
    with open_agent("claude", settings=settings) as mem:
        tool = MarkusMemoryTool(mem)
        mem.knowledge.update_section("people", "Ana likes tea")
        before = mem.knowledge.text()
        refused = run(
            tool,
            command="str_replace",
            path="/memories/knowledge.md",
            old_str="Ana likes tea",
            new_str="x" * 100,
        )
        assert refused.startswith("ERROR: knowledge.md was not changed") and "limit" in refused
        assert mem.knowledge.text() == before

        mem.notebook.upsert("rules", "from the operator", "system")
        notebook = mem.notebook.text()
        refused = run(
            tool,
            command="str_replace",
            path="/memories/NOTEBOOK.md",
            old_str="from the operator",
            new_str="mine now",
        )
        assert refused.startswith("ERROR: the notebook entry 'rules' is managed by the system")
        assert mem.notebook.text() == notebook

        five = "".join(f"## k{i}\ntext\n" for i in range(5))
        refused = run(
            tool, command="insert", path="/memories/NOTEBOOK.md", insert_line=0, insert_text=five
        )
        assert "at most 4 entries" in refused
        assert mem.notebook.text() == notebook

        for command in (
            {"command": "create", "path": "/memories/knowledge.md", "file_text": "x"},
            {"command": "delete", "path": "/memories/state.md"},
            {
                "command": "rename",
                "old_path": "/memories/NOTEBOOK.md",
                "new_path": "/memories/n.md",
            },
            {"command": "create", "path": "/memories/./knowledge.md", "file_text": "x"},
        ):
            assert run(tool, **command).startswith("ERROR: "), command
        run(tool, command="create", path="/memories/free.md", file_text="x")
        assert (
            run(tool, command="rename", old_path="/memories/free.md", new_path="/memories/state.md")
            == "ERROR: The destination /memories/state.md already exists"
        )
        assert not (mem.directory / "memories" / "knowledge.md").exists()


def test_symlinks_are_refused_even_inside_the_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    with open_agent("claude", tmp_path / "home") as mem:
        tool = MarkusMemoryTool(mem)
        run(tool, command="create", path="/memories/real/a.md", file_text="a")
        root = mem.directory / "memories"
        os.symlink(outside, root / "out")
        os.symlink(root / "real", root / "inside")
        for path in ("/memories/out/secret.md", "/memories/inside/a.md"):
            assert "symbolic link" in run(tool, command="view", path=path)
        assert "symbolic link" in run(
            tool, command="create", path="/memories/inside/new.md", file_text="x"
        )
        assert "symbolic link" in run(tool, command="delete", path="/memories/inside")
        assert not (root / "real" / "new.md").exists() and (root / "real" / "a.md").exists()


def test_malformed_input_is_a_tool_error_not_a_traceback(tmp_path: Path) -> None:
    with open_agent("claude", tmp_path) as mem:
        tool = MarkusMemoryTool(mem)
        for command in (
            {"command": "view"},
            {"command": "create", "path": "/memories/a.md"},
            {"command": "str_replace", "path": 3, "old_str": "a", "new_str": "b"},
            {"command": "fly", "path": "/memories"},
        ):
            assert run(tool, **command).startswith("ERROR: "), command
        assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}


def test_the_sdks_tool_runner_sends_results_and_refusals_back(tmp_path: Path) -> None:
    """The whole loop: Messages API answers (served locally) -> runner -> tool -> tool_result."""
    import httpx2
    from anthropic import Anthropic

    sent: list[dict[str, Any]] = []
    answers = replies(
        {"command": "create", "path": "/memories/a.md", "file_text": "x"},
        {"command": "delete", "path": "/memories/NOTEBOOK.md"},
    )

    def messages_api(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=answers.pop(0))

    with (
        open_agent("claude", tmp_path) as mem,
        httpx2.Client(transport=httpx2.MockTransport(messages_api)) as http,
    ):
        client = Anthropic(api_key="offline", http_client=http, max_retries=0)
        final = client.beta.messages.tool_runner(
            model="claude-test",
            max_tokens=100,
            tools=[MarkusMemoryTool(mem)],
            messages=[{"role": "user", "content": "remember x"}],
        ).until_done()
        assert (mem.directory / "memories" / "a.md").read_text() == "x"
    assert final.content[0].text == "done"  # type: ignore[union-attr]
    assert sent[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    created, refused = sent[1]["messages"][-1]["content"]
    assert created["content"] == "File created successfully at: /memories/a.md"
    assert "is_error" not in created
    assert refused["is_error"] is True and refused["content"].startswith("Cannot delete")
