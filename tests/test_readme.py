"""The README works as written: the quick start, the MCP client snippet, every Python snippet
(each in a fresh MARKUS_HOME), and every CLI command is documented."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from markus_memory.cli import cli
from tests.postgres_support import postgres_url

__all__ = ["postgres_url"]

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, flags=re.S | re.M)


def quick_start() -> list[list[str]]:
    """The quick start's commands, comments dropped: install, run, test."""
    lines = [line.split("#", 1)[0].strip() for line in blocks("bash")[0].splitlines()]
    return [shlex.split(line) for line in lines if line]


def console_script(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    assert found is not None, f"{name} is not installed next to {sys.executable}"
    return found


def test_quick_start_is_venv_install_run_test() -> None:
    venv, install, run, test = quick_start()
    assert venv[:3] == ["python", "-m", "venv"] and venv[4:] == ["&&", ".", ".venv/bin/activate"]
    assert install[:3] == ["pip", "install", "-e"]
    extras = re.search(r"\[(.*)\]", install[3])
    assert extras is not None and {"all", "mcp"} & set(extras.group(1).split(","))
    assert run[0] == "markus-memory"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^{re.escape(shlex.join(test))}$", ci, flags=re.M), (
        ".ci/run must run exactly the README's test command"
    )


def stdio_session(command: list[str], env: dict[str, str]) -> tuple[list[str], Any]:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=command[0], args=command[1:], env=env)

    async def main() -> tuple[list[str], Any]:
        async with Client(params) as client:
            tools = await client.list_tools()
            saved = await client.call_tool("memory_save", {"content": "from the README"})
            return [t.name for t in tools.tools], saved

    return anyio.run(main)


def fresh_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKUS_")}
    env["MARKUS_HOME"] = str(home)
    return env


@pytest.mark.slow
def test_the_quick_start_run_command_serves_with_no_configuration(tmp_path: Path) -> None:
    _, _, run, _ = quick_start()
    command = [console_script(run[0]), *run[1:]]
    names, saved = stdio_session(command, fresh_env(tmp_path / "home"))
    assert {"memory_save", "memory_search", "update_notebook"} <= set(names)
    assert not saved.is_error
    knowledge = tmp_path / "home" / "agents" / "default" / "knowledge.md"
    assert "from the README" in knowledge.read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_mcp_client_snippet_starts_the_server(tmp_path: Path) -> None:
    (snippet,) = [b for b in blocks("json") if "mcpServers" in b]
    (server,) = json.loads(snippet)["mcpServers"].values()
    env = {**fresh_env(tmp_path), **server["env"]}
    env["MARKUS_HOME"] = str(tmp_path / "home")  # the snippet's home, moved into the test
    command = [console_script(server["command"]), *server["args"]]
    names, saved = stdio_session(command, env)
    assert "recall_conversation" in names and not saved.is_error
    agent = server["args"][server["args"].index("--agent") + 1]
    assert (tmp_path / "home" / "agents" / agent / "knowledge.md").is_file()


def test_the_python_api_example_runs(isolated_home: Path) -> None:
    example = next(b for b in blocks("python") if "dispatch(" in b and "open_agent(" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, "README.md", "exec"), {})
    printed = out.getvalue()
    assert "Ana prefers short answers" in printed
    assert '"status":"saved"' in printed
    assert (isolated_home / "agents" / "alice" / "knowledge.md").is_file()


def test_the_agent_loop_example_runs(isolated_home: Path) -> None:
    example = next(b for b in blocks("python") if 'scenario="converse"' in b)
    namespace: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), namespace)
    assert '"status":"saved"' in str(namespace["result_json"])
    assert str(namespace["system_prompt"]).startswith("You are Alice, the team's release engineer.")
    knowledge = (isolated_home / "agents" / "alice" / "knowledge.md").read_text("utf-8")
    assert "Deploy window: Fridays 14-16 UTC" in knowledge


def python_snippets() -> list[Any]:
    """Every ```python block, named by the heading above it."""
    found = []
    for match in re.finditer(r"^```python\n(.*?)^```", README, flags=re.S | re.M):
        headings = re.findall(r"^#+ (.+)$", README[: match.start()], flags=re.M)
        line = README[: match.start()].count("\n") + 1
        found.append(pytest.param(match.group(1), id=f"line {line}: {headings[-1]}"))
    return found


SNIPPETS = python_snippets()
README_DATABASE_URL = "postgresql://markus@db/markus"


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh MARKUS_HOME, which is also ``~/.markus`` (HOME moved into the test)."""
    home = tmp_path / ".markus"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MARKUS_HOME", str(home))
    for name in ("MARKUS_DATABASE_URL", "MARKUS_DOCUMENTS", "MARKUS_AGENT", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return home


def run_snippet(snippet: str) -> str:
    """Run ``snippet`` as a script; what it printed. A framework that is not installed skips."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(snippet, "README.md", "exec"), {"__name__": "__main__"})
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "markus_memory":
            raise
        pytest.skip(f"{exc.name} is not installed (its extra is not)")
    return out.getvalue()


def test_the_readme_has_the_snippets_the_tests_expect() -> None:
    assert len(SNIPPETS) >= 12
    for param in SNIPPETS:
        snippet = str(param.values[0])
        if "open_agent(" in snippet:
            assert "from markus_memory import" in snippet and "open_agent" in snippet, param.id


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_every_python_snippet_runs_as_written(
    snippet: str, fresh_home: Path, request: pytest.FixtureRequest
) -> None:
    if README_DATABASE_URL in snippet:  # the reader's server, here the test run's own schema
        url = request.getfixturevalue("postgres_url")
        snippet = snippet.replace(README_DATABASE_URL, url)
        from markus_memory import open_agent

        for agent in re.findall(r'"(agt_\w+)"', snippet):  # the agents the reader has
            with open_agent(agent) as mem:
                mem.knowledge.save_observation("kept across the round trip")
    printed = run_snippet(snippet)
    if "dream(" in snippet:
        assert printed.splitlines()[0] == "False" and "\napplied " in printed
        knowledge = (fresh_home / "agents" / "alice" / "knowledge.md").read_text("utf-8")
        assert knowledge.count("Deploys run on Fridays.") == 2  # undone, byte for byte


def test_the_dream_snippet_runs_against_a_local_model(
    fresh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With OPENAI_BASE_URL set the snippet plans with that model: here a local fake server."""
    from tests.fake_llm_server import Reply, fake_server

    (snippet,) = [str(p.values[0]) for p in SNIPPETS if "undo_last_dream(mem)" in str(p.values[0])]
    plan = {"choices": [{"message": {"content": json.dumps({"remove": [], "merge": []})}}]}
    with fake_server() as server:
        server.replies += [Reply(body=plan), Reply(body=plan)]
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        printed = run_snippet(snippet)
    assert len(server.requests) == 2 and server.requests[0].body["model"] == "gpt-4o-mini"
    assert "\nunchanged " in printed  # the model's plan changes nothing: recorded as such


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in group.commands.items():
        path = (*prefix, name)
        found.append(path)
        if isinstance(command, click.Group):
            found.extend(command_paths(command, path))
    return found


def command_at(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


DOCS = README + "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md"))


# Servers; a hook's answer is the JSON Claude Code reads.
PRINTS_NO_DATA = {("serve",), ("ui",), ("hook", "session-start")}


@pytest.mark.parametrize("path", command_paths(cli), ids=" ".join)
def test_every_command_has_help_and_is_documented(path: tuple[str, ...]) -> None:
    command = command_at(path)
    shown = CliRunner().invoke(cli, [*path, "--help"])
    assert command.help, f"{' '.join(path)} has no help text"
    first_line = command.help.strip().splitlines()[0]
    assert shown.exit_code == 0 and first_line in " ".join(shown.output.split())
    if not isinstance(command, click.Group) and path not in PRINTS_NO_DATA:
        assert "--json" in shown.output, f"{' '.join(path)} has no --json"
    assert command.help and command.help.strip(), f"{' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{' '.join(path)} {param.opts[0]} has no help text"
    mentioned = re.search(rf"markus-memory {re.escape(path[0])}\b", DOCS) and all(
        re.search(rf"\b{re.escape(name)}\b", DOCS) for name in path[1:]
    )
    assert mentioned, f"'markus-memory {' '.join(path)}' is not in README.md or docs/"
