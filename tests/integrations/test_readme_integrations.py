"""The README's framework examples run as written, offline."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SNIPPETS = {
    module: block
    for block in re.findall(r"^```python\n(.*?)^```", README, flags=re.S | re.M)
    for module in re.findall(r"markus_memory\.integrations\.(\w+) import", block)
}


def run(module: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(SNIPPETS[module], f"README.md ({module})", "exec"), {})
    return out.getvalue()


def test_every_framework_has_an_example() -> None:
    assert set(SNIPPETS) == {
        "openai_agents",
        "langgraph",
        "pydantic_ai",
        "pydantic_ai_store",
        "anthropic_memory",
        "claude_agent_sdk",
    }


def nothing_written_to(home: Path) -> bool:
    """The examples write to a throwaway home, never to the reader's own agents."""
    return not home.exists() or not any(home.rglob("*"))


def test_openai_agents_example(isolated_home: Path) -> None:
    pytest.importorskip("agents")
    printed = run("openai_agents").splitlines()
    assert "I prefer tea" in printed[0] and printed[1:] == ["['I prefer tea']", "[]"]
    assert nothing_written_to(isolated_home)


def test_langgraph_example(isolated_home: Path) -> None:
    pytest.importorskip("langgraph")
    assert "Ana drinks green tea" in run("langgraph")


def test_pydantic_ai_example(isolated_home: Path) -> None:
    pytest.importorskip("pydantic_ai")
    printed = run("pydantic_ai_store").splitlines()
    assert printed == ["Noted: tea.", "[('user:ana/chat-1', 'Drinks')]", "2"]
    assert nothing_written_to(isolated_home)


def test_claude_agent_sdk_example(isolated_home: Path) -> None:
    printed = run("claude_agent_sdk").splitlines()
    assert printed[0].startswith("True [{'session_id': '5f3c2a9e', 'mtime': ")
    assert nothing_written_to(isolated_home)


def test_anthropic_example(isolated_home: Path) -> None:
    pytest.importorskip("anthropic")
    printed = run("anthropic_memory")
    assert "File created successfully at: /memories/todo.md" in printed
    assert "/memories/knowledge.md" in printed and "/memories/todo.md" in printed
