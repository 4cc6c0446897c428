"""#28: a home that refuses writes gets the package's own error, and no tool error tells the
model where the memory lives on the host.

Before: tools answered "memory_save failed: OSError: [Errno 30] Read-only file system:
'/abs/path/.knowledge.md.1a2b3c4d.tmp'", ``sessions.append`` raised the raw OSError, and a
corrupt file or a 300-character file name put the home's absolute path in the model's context.
"""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from markus_memory import AgentMemory, UnwritableError, open_agent
from markus_memory.tools import REGISTRY, dispatch
from tests.test_files_trust import _read_only

WRITES = [
    ("memory_save", {"content": "the deploy runs on fridays"}, "knowledge.md"),
    ("memory_update", {"section": "procedures", "content": "step 2"}, "knowledge.md"),
    ("memory_update_longterm", {"section": "procedures", "content": "step 2"}, "knowledge.md"),
    ("update_notebook", {"key": "plan", "content": "ship"}, "NOTEBOOK.md"),
    ("update_working_memory", {"key": "plan", "content": "ship"}, "NOTEBOOK.md"),
    ("clear_notebook", {"key": "current-task"}, "NOTEBOOK.md"),
    ("state_update", {"key": "freeze", "content": "on"}, "state.md"),
    ("state_clear", {"key": "deploy-freeze"}, "state.md"),
    ("memory_update", {"section": "s", "mode": "delete", "ids": ["OBS"]}, "knowledge.md"),
]


def _seeded(home: Path) -> tuple[str, str]:
    """An agent with something in every file; its session id and an observation id."""
    with open_agent("alice", home=home) as mem:
        obs = mem.knowledge.save_observation("keep me")
        mem.knowledge.update_section("procedures", "step 1")
        mem.notebook.upsert("current-task", "ship it")
        mem.state.update("deploy-freeze", "on")
        sid = mem.sessions.create().id
        mem.sessions.append(sid, {"role": "user", "content": "hello"})
    return sid, obs.id


@pytest.mark.skipif(sys.platform == "win32", reason="a read-only mount needs POSIX")
def test_a_read_only_home_refuses_writes_with_the_packages_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sid, obs_id = _seeded(home)

    def refused() -> None:
        mem = open_agent("alice", home=home)
        for name, args, store in WRITES:
            args = {k: [obs_id] if v == ["OBS"] else v for k, v in args.items()}
            text = dispatch(mem, name, args)
            result = json.loads(text)
            assert result["status"] == "error" and result["store"] == store, (name, result)
            assert result["error"] == f"could not write {store}: the file system is read-only"
            assert str(home) not in text and "OSError" not in text, text
        with pytest.raises(UnwritableError) as caught:
            mem.sessions.append(sid, {"role": "user", "content": "again"})
        assert caught.value.errno == errno.EROFS and isinstance(caught.value, OSError)
        assert str(caught.value) == (
            f"could not write {home / 'agents' / 'alice' / 'sessions' / sid}.jsonl: "
            "the file system is read-only"
        )
        with pytest.raises(UnwritableError, match="sessions/sess_.*read-only"):
            mem.sessions.create()
        assert [m["content"] for m in mem.sessions.get(sid).messages] == ["hello"]
        mem.close()

    assert _read_only(home, refused) == ""


def _call(memory: AgentMemory, name: str, args: Any) -> str:
    text = dispatch(memory, name, args)
    assert json.loads(text)["status"] == "error", (name, text)
    return text


def test_no_tool_error_names_the_homes_absolute_path(tmp_path: Path) -> None:
    """A corrupt file's error names its path; the model gets it relative to the agent."""
    home = tmp_path / "home"
    _seeded(home)
    knowledge = home / "agents" / "alice" / "knowledge.md"
    knowledge.write_bytes(b"# Knowledge\n\xff\xfe not utf-8\n")
    with open_agent("alice", home=home) as mem:
        for tool in REGISTRY:
            if tool.store != "knowledge.md":
                continue
            text = _call(mem, tool.name, dict(tool.example))
            assert str(home) not in text and str(home.resolve()) not in text, text
            assert "knowledge.md" in text
    assert knowledge.read_bytes() == b"# Knowledge\n\xff\xfe not utf-8\n"


def test_a_file_name_over_the_limit_is_refused_without_the_host_path(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import ToolError

    from markus_memory.integrations.anthropic_memory import MarkusMemoryTool

    home = tmp_path / "home"
    name = "f" * 300
    with open_agent("alice", home=home) as mem:
        tool = MarkusMemoryTool(mem)
        for command in (
            {"command": "create", "path": f"/memories/{name}", "file_text": "x"},
            {"command": "create", "path": f"/memories/{name}/notes.md", "file_text": "x"},
            {"command": "view", "path": f"/memories/{name}"},
        ):
            with pytest.raises(ToolError) as caught:
                tool.call(command)
            said = str(caught.value)
            assert str(home) not in said and "OSError" not in said, said
            assert "a file name is too long for the file system" in said
            assert f"(/memories/{name}" in said
        assert not (mem.directory / "memories").exists() or not any(
            (mem.directory / "memories").iterdir()
        )
