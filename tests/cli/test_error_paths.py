"""Every error a user can reach from the command line is one line, with the documented exit code.

The walk covers every command of the CLI (a new command fails the first test until it is added
here): a malformed or missing agent, an unknown option, a missing or unreachable PostgreSQL
database, damaged and misplaced files, and files the user may not write. Exit codes as the
README documents them: 1 the operation failed or was refused, 2 the command line was wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from markus_memory import Settings, open_agent
from markus_memory.cli import cli

SERVERS = {("serve",), ("ui",)}
"""Commands that keep running: walked for their argument errors only."""
# What each command needs besides --agent to do its work.
CALLS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("agent", "delete"): ("{agent}", "--yes"),
    ("agents",): (),
    ("doctor",): (),
    ("dream", "diff"): ("dream_nosuch",),
    ("dream", "history"): (),
    ("dream", "run"): (),
    ("dream", "undo"): (),
    ("export",): ("--to-home", "{tmp}/export"),
    ("hook", "pre-compact"): (),
    ("hook", "session-end"): (),
    ("hook", "session-start"): (),
    ("hook", "stop"): (),
    ("import",): ("--from-home", "{tmp}/import"),
    ("init",): (),
    ("install", "claude-code"): ("--project", "{tmp}"),
    ("knowledge", "edit"): ("Team", "--content", "Ana leads."),
    ("knowledge", "show"): (),
    ("migrate",): (),
    ("notebook", "clear"): ("task",),
    ("notebook", "set"): ("task", "ship it"),
    ("notebook", "show"): (),
    ("prompt",): (),
    ("recall", "activities"): ("login",),
    ("recall", "activity"): ("act_nosuch",),
    ("recall", "conversation"): ("camping",),
    ("reindex",): (),
    ("save",): ("Deploys run on Fridays.",),
    ("search",): ("deploy",),
    ("sessions",): (),
    ("show",): (),
    ("state", "clear"): ("focus",),
    ("state", "set"): ("focus", "review"),
    ("state", "show"): (),
}
CREATORS = {("init",)}
"""The command that creates the agent it names; every other one, writers included, refuses an
agent the memory does not have (a typo never starts a new agent)."""
NOT_AN_AGENT = {("agents",)}
HOOKS = {("hook", name) for name in ("pre-compact", "session-start", "stop", "session-end")}
"""Claude Code hooks exit 1 for every failure (Claude Code reads exit 2 as "block")."""
SETUP = {("install", "claude-code")}
"""Writes a host's configuration for an agent that is created on first use."""


def leaves(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaves(command, (*prefix, name))
        else:
            yield (*prefix, name)


def takes_agent(path: tuple[str, ...]) -> bool:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    if "{agent}" in CALLS.get(path, ()):
        return True
    return any(param.name == "agent" for param in command.params)


def call(path: tuple[str, ...], tmp: Path, agent: str | None = None) -> list[str]:
    named = agent or "al"
    args = [*path, *(a.replace("{tmp}", str(tmp)).replace("{agent}", named) for a in CALLS[path])]
    if "{agent}" in CALLS[path]:
        return args
    if agent is not None and takes_agent(path):
        args += ["--agent", agent]
    return args


def run(
    home: Path, args: list[str], env: dict[str, str] | None = None, stdin: str | None = None
) -> Result:
    return CliRunner().invoke(
        cli, ["--home", str(home), *args], input=stdin, env=env, catch_exceptions=True
    )


REBUILT_IN_PART = "could not rebuild: "
"""reindex names each part it could not rebuild on its own line (README: reindex)."""


def failed_cleanly(result: Result, code: int) -> str:
    """The one stderr line of a failure with exit ``code`` (reindex: one line per part it could
    not rebuild, the first returned); never a traceback or a crash."""
    crash = result.exception
    assert crash is None or isinstance(crash, SystemExit), repr(crash)
    assert "Traceback" not in result.output
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    if lines and lines[0].startswith(REBUILT_IN_PART):
        assert all(line.startswith(REBUILT_IN_PART) for line in lines), result.stderr
        lines = lines[:1]
    assert len(lines) == 1, result.stderr
    assert "unexpected" not in lines[0], lines[0]  # the catch-all is for bugs, not for users
    hook = re.match(r"markus-memory (SessionStart|PreCompact|Stop|SessionEnd) hook: ", lines[0])
    return lines[0][hook.end() :] if hook else lines[0]


def bad_argument(path: tuple[str, ...]) -> int:
    return 1 if path in HOOKS else 2


def seeded(home: Path) -> Path:
    with open_agent("al", settings=Settings(home=home)) as mem:
        mem.knowledge.save_observation("Deploys run on Fridays.")
        mem.notebook.upsert("task", "ship it")
        mem.state.update("focus", "review")
        return mem.paths.root


DESTRUCTIVE = {("agent", "delete")}
"""Walked last: what it deletes, the commands after it would not find."""
COMMANDS = sorted(CALLS, key=lambda path: (path in DESTRUCTIVE, path))
AGENT_COMMANDS = [p for p in COMMANDS if p not in NOT_AN_AGENT]


def test_the_walk_covers_every_command() -> None:
    assert set(leaves(cli)) - SERVERS == set(CALLS)


@pytest.mark.parametrize("path", AGENT_COMMANDS, ids=" ".join)
def test_a_malformed_agent_id_is_a_bad_argument(path: tuple[str, ...], tmp_path: Path) -> None:
    seeded(tmp_path / "home")
    result = run(tmp_path / "home", call(path, tmp_path, "../evil"))
    assert "invalid agent id '../evil'" in failed_cleanly(result, bad_argument(path))
    assert not (tmp_path / ".mcp.json").exists()  # nothing written for a malformed id


@pytest.mark.parametrize("path", AGENT_COMMANDS, ids=" ".join)
def test_a_missing_agent_is_refused_by_every_command(path: tuple[str, ...], tmp_path: Path) -> None:
    home = tmp_path / "home"
    seeded(home)
    (tmp_path / "import").mkdir()
    result = run(home, call(path, tmp_path, "nosuch"))
    if path in SETUP:
        assert result.exit_code == 0, result.output
        return
    if path in HOOKS:  # the SessionStart of a new agent starts it; no input is a bad call
        if result.exit_code:
            assert "hook input" in failed_cleanly(result, 1)
        return
    if path in CREATORS:
        assert result.exit_code == 0, result.output
        assert (home / "agents" / "nosuch").is_dir()
        return
    line = failed_cleanly(result, 1)
    assert "no agent 'nosuch'" in line or "no such agent in the source: 'nosuch'" in line
    assert not (home / "agents" / "nosuch").exists()  # refusing created nothing


@pytest.mark.parametrize("path", [*COMMANDS, *sorted(SERVERS)], ids=" ".join)
def test_an_unknown_option_is_a_usage_error(path: tuple[str, ...], tmp_path: Path) -> None:
    args = call(path, tmp_path) if path in CALLS else list(path)
    result = run(tmp_path / "home", [*args, "--bogus"])
    assert result.exit_code == bad_argument(path) and "Traceback" not in result.output
    said = "markus-memory hook: No such option" if path in HOOKS else "Error: No such option"
    assert result.stderr.strip().splitlines()[-1].startswith(said)


def test_serve_refuses_bad_arguments_in_one_line(tmp_path: Path) -> None:
    result = run(tmp_path / "home", ["serve", "--agent", "../evil"])
    assert "invalid agent id" in failed_cleanly(result, 2)


def _postgres(tmp_path: Path) -> str:
    pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    url = os.environ.get("MARKUS_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("MARKUS_TEST_POSTGRES_URL is not set")
    return url


@pytest.mark.slow
def test_every_command_on_a_missing_postgres_database(tmp_path: Path) -> None:
    base = _postgres(tmp_path).split("?", 1)[0].rsplit("/", 1)[0]
    env = {"MARKUS_DATABASE_URL": f"{base}/markus_no_such_db?connect_timeout=1"}
    home = tmp_path / "home"
    seeded(home)
    (tmp_path / "import").mkdir()
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type": "user", "uuid": "u1", "message": {"content": "hi"}}\n')
    given = json.dumps({"session_id": "s1", "transcript_path": str(transcript)})
    for path in COMMANDS:  # a hook gets valid input: it reads it before the database
        result = run(home, call(path, tmp_path, "al"), env, given if path in HOOKS else None)
        if path in SETUP:  # writes a host's config only
            assert result.exit_code == 0
            continue
        if path == ("doctor",):  # a report: the database's line says it, the agent is unchecked
            assert result.exception is None or isinstance(result.exception, SystemExit)
            assert result.exit_code == 1, result.output
            assert "has no database 'markus_no_such_db'" in result.output
            assert "not checked" in result.output
            continue
        line = failed_cleanly(result, 1)
        assert "has no database 'markus_no_such_db'" in line and "unreachable" not in line


def test_an_unreachable_postgres_server_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    env = {"MARKUS_DATABASE_URL": "postgresql://markus@127.0.0.1:1/markus?connect_timeout=1"}
    home = tmp_path / "home"
    seeded(home)
    for path in [("show",), ("save",), ("export",)]:
        line = failed_cleanly(run(home, call(path, tmp_path, "al"), env), 1)
        assert "127.0.0.1:1 is unreachable" in line and "fix the host and port" in line


def _knowledge_is_a_directory(root: Path) -> None:
    (root / "knowledge.md").unlink()
    (root / "knowledge.md").mkdir()


def _notebook_is_not_utf8(root: Path) -> None:
    (root / "NOTEBOOK.md").write_bytes(b"# Notebook\n\n## task\nship \xff it\n")


def _database_is_garbage(root: Path) -> None:
    (root.parent.parent / "data.db").write_bytes(b"not a database " * 100)


def _sessions_is_a_file(root: Path) -> None:
    shutil.rmtree(root / "sessions", ignore_errors=True)
    (root / "sessions").write_text("a file where the sessions directory belongs")


DAMAGE = {
    "knowledge.md is a directory": (_knowledge_is_a_directory, "is a directory"),
    "NOTEBOOK.md is not UTF-8": (_notebook_is_not_utf8, "line 4, column 6"),
    "data.db is garbage": (_database_is_garbage, "data.db"),
    "sessions is a file": (_sessions_is_a_file, "sessions"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_files_give_one_line_naming_them(damage: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = seeded(home)
    harm, named = DAMAGE[damage]
    harm(root)
    (tmp_path / "import").mkdir()
    failures = 0
    for path in COMMANDS:
        result = run(home, call(path, tmp_path, "al"))
        if path == ("doctor",):  # a failed check: the report itself, exit 1
            assert result.exit_code == 1 and named in result.stdout, result.output
            continue
        if result.exit_code == 0:
            continue
        line = failed_cleanly(result, 1)
        if not any(absent in line for absent in ABSENT):
            failures += 1
            assert line.startswith(("Error: ", REBUILT_IN_PART)) or path in HOOKS, (path, line)
            assert named in line, (path, line)
    assert failures > 0


ABSENT = (
    "dream_nosuch",
    "act_nosuch",
    "no such agent in the source",
    "No ",
    "Nothing undone",
    "hook input",
)
"""Refusals of this walk's own arguments (a made-up run or activity id), not of the damage."""


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anyway")
def test_files_the_user_may_not_write_give_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = seeded(home)
    (root / "NOTEBOOK.md").chmod(0o444)
    root.chmod(0o555)
    try:
        line = failed_cleanly(run(home, ["notebook", "set", "k", "v", "--agent", "al"]), 1)
        assert "permission denied" in line
    finally:
        root.chmod(0o755)
