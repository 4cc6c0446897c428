"""Paths the memory tool takes are capped: no command can build a tree the library cannot walk,
and no refusal tells the model where the memory lives on the host."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("anthropic")

from click.testing import CliRunner

from markus_memory import open_agent
from markus_memory.cli import cli
from markus_memory.integrations._memory_tool_checks import MAX_DEPTH
from markus_memory.integrations.anthropic_memory import MarkusMemoryTool
from tests.integrations.anthropic_support import run


def test_a_deep_path_is_refused_and_the_agent_still_opens(tmp_path: Path) -> None:
    with open_agent("claude", tmp_path) as mem:
        tool = MarkusMemoryTool(mem)
        said = run(tool, command="create", path="/memories/" + "d/" * 1000 + "f.md", file_text="x")
        assert said.startswith("ERROR: The path /memories/d/d/") and "at most 16 levels" in said
        assert not (mem.directory / "memories" / "d").exists()
        deepest = "/memories/" + "d/" * (MAX_DEPTH - 1) + "f.md"
        assert run(tool, command="create", path=deepest, file_text="x").startswith("File created")
        deeper = "/memories/" + "d/" * MAX_DEPTH + "f.md"
        assert "at most 16 levels" in run(tool, command="create", path=deeper, file_text="x")
        moved = run(tool, command="rename", old_path="/memories/d", new_path="/memories/e/d")
        assert moved.startswith("ERROR: Moving /memories/d to /memories/e/d would nest files 17")
        assert not (mem.directory / "memories" / "e").exists()
    with open_agent("claude", tmp_path) as mem:
        assert mem.notebook.entries() == []
    runner = CliRunner()
    for args in (
        ["doctor", "--agent", "claude"],
        ["export", "--agent", "claude", "--to-home", str(tmp_path / "copy")],
    ):
        result = runner.invoke(cli, args, env={"MARKUS_HOME": str(tmp_path)})
        assert not isinstance(result.exception, RecursionError), args


def test_long_names_and_paths_are_refused_without_the_host_path(tmp_path: Path) -> None:
    with open_agent("claude", tmp_path) as mem:
        tool = MarkusMemoryTool(mem)
        for path in (
            "/memories/" + "x" * 300 + ".md",
            "/memories/" + "é" * 200,
            "/memories/" + "/".join(["n" * 200] * 6) + "/f.md",
        ):
            for command in (
                {"command": "create", "path": path, "file_text": "x"},
                {"command": "view", "path": path},
                {"command": "rename", "old_path": "/memories/NOTEBOOK2.md", "new_path": path},
            ):
                said = run(tool, **command)
                assert said.startswith("ERROR: "), command
                assert str(tmp_path) not in said and str(tmp_path.resolve()) not in said
                assert "bytes" in said or "characters" in said, said
        assert not (mem.directory / "memories").exists() or not any(
            (mem.directory / "memories").iterdir()
        )
