"""`markus-memory install claude-code`: machine paths only in personal settings, committed
files cleaned of what an earlier version put there, a second run changes nothing, the MCP
extra checked, and the commands it writes work outside the virtual environment."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from markus_memory import open_agent
from markus_memory.cli import cli
from markus_memory.integrations.claude_code import session_id_for

from .claude_support import PROJECT, SESSION, hook_json, lines, tree, write_transcript

PYTHON = os.path.abspath(sys.executable)
EVENTS = {"SessionStart": "session-start", "PreCompact": "pre-compact", "Stop": "stop"}
EVENTS["SessionEnd"] = "session-end"


def commands(settings: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose committed files hold other settings and what the old installer wrote."""
    root = tmp_path / "proj"
    (root / ".claude").mkdir(parents=True)
    old = "markus-memory --home /home/ana/.markus hook {} --agent coder"
    settings = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreCompact": [
                {"matcher": "", "hooks": [{"type": "command", "command": "echo bye"}]},
                {"hooks": [{"type": "command", "command": old.format("pre-compact")}]},
            ],
            "SessionStart": [
                {"hooks": [{"type": "command", "command": old.format("session-start")}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        },
    }
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    servers = {
        "other": {"command": "other-server", "args": []},
        "markus-memory": {"type": "stdio", "command": "markus-memory", "args": ["serve"]},
    }
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return root


def install(*args: str) -> Any:
    return CliRunner().invoke(cli, ["install", "claude-code", *args])


def test_local_scope_writes_machine_paths_only_into_personal_files(
    project: Path, tmp_path: Path
) -> None:
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    first = install("--project", str(project), "--agent", "coder")
    assert first.exit_code == 0, first.output
    assert "keep it out of version control" in first.output
    local = read(project / ".claude" / "settings.local.json")
    for event, name in EVENTS.items():
        [command] = [c for c in commands(local, event) if "markus_memory" in c]
        words = shlex.split(command)
        assert words[:3] == [PYTHON, "-m", "markus_memory.cli"]
        assert words[-4:] == ["hook", name, "--agent", "coder"]
    config = read(claude / ".claude.json")
    server = config["projects"][str(project.resolve())]["mcpServers"]["markus-memory"]
    assert server["command"] == PYTHON and server["args"][-3:] == ["serve", "--agent", "coder"]

    committed = read(project / ".claude" / "settings.json")
    assert committed["permissions"] == {"allow": ["Bash(npm test)"]}
    assert commands(committed, "PreCompact") == ["echo bye"]
    assert commands(committed, "Stop") == ["say done"]
    assert "SessionStart" not in committed["hooks"]
    assert read(project / ".mcp.json") == {
        "mcpServers": {"other": {"command": "other-server", "args": []}}
    }
    for shared in (project / ".claude" / "settings.json", project / ".mcp.json"):
        assert PYTHON not in shared.read_text() and str(tmp_path) not in shared.read_text()

    before = {**tree(project), **tree(claude)}
    second = install("--project", str(project), "--agent", "coder")
    assert second.exit_code == 0 and "updated" not in second.output
    assert second.output.count("already set up") == 4
    assert {**tree(project), **tree(claude)} == before

    moved = install("--project", str(project), "--agent", "helper")  # updated in place
    assert moved.exit_code == 0
    local = read(project / ".claude" / "settings.local.json")
    for event in EVENTS:
        [command] = commands(local, event)
        assert command.endswith("--agent helper")


def test_user_scope_writes_the_user_files_and_leaves_the_project_alone(tmp_path: Path) -> None:
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    (claude).mkdir()
    (claude / ".claude.json").write_text(json.dumps({"numStartups": 3, "mcpServers": {}}))
    project = tmp_path / "proj"
    project.mkdir()
    result = install("--project", str(project), "--scope", "user", "--agent", "coder")
    assert result.exit_code == 0, result.output
    assert list(project.iterdir()) == [] and "version control" not in result.output
    settings = read(claude / "settings.json")
    assert all(commands(settings, event) for event in EVENTS)
    config = read(claude / ".claude.json")
    assert config["numStartups"] == 3 and config["mcpServers"]["markus-memory"]["command"] == PYTHON


def test_without_claude_config_dir_the_files_are_under_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    result = install("--project", str(tmp_path), "--scope", "user")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "user" / ".claude" / "settings.json").is_file()
    assert "markus-memory" in read(tmp_path / "user" / ".claude.json")["mcpServers"]


def test_the_mcp_extra_missing_is_refused_unless_no_mcp(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp fails, as without the extra
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    before = tree(project)
    refused = install("--project", str(project))
    assert refused.exit_code == 1 and "[mcp]" in refused.output and "--no-mcp" in refused.output
    assert tree(project) == before and not claude.exists()
    hooks_only = install("--project", str(project), "--no-mcp")
    assert hooks_only.exit_code == 0, hooks_only.output
    assert (project / ".claude" / "settings.local.json").is_file()
    assert not (claude / ".claude.json").exists()


def test_a_broken_settings_file_is_refused_and_nothing_written(project: Path) -> None:
    (project / ".claude" / "settings.local.json").write_text("{ not json")
    before = tree(project)
    result = install("--project", str(project))
    assert result.exit_code == 2 and "not valid JSON" in result.output
    assert "Traceback" not in result.output
    assert tree(project) == before
    assert not Path(os.environ["CLAUDE_CONFIG_DIR"]).exists()


def test_the_installed_commands_run_outside_the_virtual_environment(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    result = CliRunner().invoke(
        cli, ["--home", str(home), "install", "claude-code", "--project", str(project)]
    )
    assert result.exit_code == 0, result.output
    local = read(project / ".claude" / "settings.local.json")
    transcript = write_transcript(tmp_path / "t.jsonl", lines(6))
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    env.pop("MARKUS_HOME")
    env.pop("VIRTUAL_ENV", None)
    for event in ("Stop", "SessionEnd"):
        [command] = commands(local, event)
        ran = subprocess.run(
            command,
            shell=True,
            input=hook_json(event, transcript),
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stderr
    [start] = commands(local, "SessionStart")
    ran = subprocess.run(
        start,
        shell=True,
        input=hook_json("SessionStart", transcript, source="startup"),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert ran.returncode == 0 and json.loads(ran.stdout)["hookSpecificOutput"]
    with open_agent("default", home) as mem:
        session = mem.sessions.get(session_id_for(PROJECT, SESSION))
        assert session is not None and len(session.messages) == 6
