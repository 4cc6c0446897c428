"""#28: every tool a default text tells the model to call is a tool of this package.

The default HEARTBEAT checklist told the model to "check your assigned tasks with task_list",
a tool markus-memory does not have. Here every text the package writes for a model by default
(the heartbeat, the flush prompt, the rendered memory context of every profile, the tool
descriptions, the MCP server's instructions, a new knowledge.md) is searched for snake_case
names; each must be a registry tool or one of their arguments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.flush import FLUSH_PROMPT
from markus_memory.layers.procedural import DEFAULT_HEARTBEAT_CHECKLIST
from markus_memory.prompt import PROFILES, TRUNCATED_HINT, render_memory_context
from markus_memory.tools import REGISTRY

KNOWN = set(REGISTRY.names()) | {arg for t in REGISTRY for arg in t.parameters["properties"]}
SNAKE = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")


def _default_texts(home: Path) -> list[str]:
    texts = [DEFAULT_HEARTBEAT_CHECKLIST, FLUSH_PROMPT, TRUNCATED_HINT]
    texts += [tool.description for tool in REGISTRY]
    with open_agent("alice", home=home) as mem:
        mem.notebook.upsert("plan", "ship the importer")
        mem.notebook.upsert("cognitive-context", "a chat about the importer", managed="cpp")
        mem.knowledge.update_section("Team", "Ana leads.")
        mem.knowledge.save_observation("the importer ships on friday")
        mem.state.update("build", "green")
        texts += [render_memory_context(mem, p, query="importer").text for p in PROFILES]
        texts += [mem.knowledge.text(), mem.roles.heartbeat()]
        try:
            from markus_memory.mcp_server import build_server
        except ImportError:
            pass
        else:
            texts.append(str(build_server(mem).instructions))
    return texts


def test_every_tool_named_in_a_default_text_exists(tmp_path: Path) -> None:
    texts = _default_texts(tmp_path / "home")
    named = {name for text in texts for name in SNAKE.findall(text)}
    assert named, "no tool named at all: the search is broken"
    assert named - KNOWN == set()


def test_the_default_heartbeat_names_a_tool_the_heartbeat_is_given() -> None:
    from markus_memory.tools import SCENARIO_TOOLS

    named = set(SNAKE.findall(DEFAULT_HEARTBEAT_CHECKLIST))
    assert named and named <= set(SCENARIO_TOOLS["heartbeat"])


@pytest.mark.parametrize("profile", PROFILES)
def test_the_notebook_header_says_what_cpp_entries_are(tmp_path: Path, profile: str) -> None:
    with open_agent("alice", home=tmp_path / "home") as mem:
        mem.notebook.upsert("cognitive-context", "a chat about the importer", managed="cpp")
        text = render_memory_context(mem, profile).text
    assert "[cpp] (the context its cognitive preparation pipeline prepared)" in text
