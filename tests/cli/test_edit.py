"""init, save, notebook, knowledge and state through the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory import open_agent

from .conftest import Invoke, as_json


@pytest.fixture(autouse=True)
def agent_al(invoke: Invoke) -> None:
    """The agent the writing commands below work on (writes never create one)."""
    invoke("init", "-a", "al")


def test_init_creates_the_agent_in_the_markus_layout(invoke: Invoke, isolated_home: Path) -> None:
    result = invoke("init", "--agent", "alice", "--json")
    data = as_json(result)
    assert data["agent"] == "alice"
    assert (isolated_home / "agents" / "alice" / "knowledge.md").is_file()
    assert "knowledge.md" in data["files"]


def test_home_option_wins_over_the_environment(invoke: Invoke, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    invoke("--home", str(other), "init", "-a", "bob")
    assert (other / "agents" / "bob" / "knowledge.md").is_file()


def test_save_writes_an_observation_with_type_and_tags(invoke: Invoke) -> None:
    saved = as_json(
        invoke(
            "save",
            "Ana prefers tea",
            "-a",
            "al",
            "--type",
            "insight",
            "--tag",
            "ana",
            "--tag",
            "drinks",
            "--json",
        )
    )
    with open_agent("al") as mem:
        (obs,) = mem.knowledge.observations()
    assert (obs.id, obs.type, obs.tags, obs.content) == (
        saved["id"],
        "insight",
        ("ana", "drinks"),
        "Ana prefers tea",
    )


def test_save_reads_stdin_for_a_dash(invoke: Invoke) -> None:
    invoke("save", "-", "-a", "al", input="line one\nline two\n")
    with open_agent("al") as mem:
        assert mem.knowledge.observations()[0].content == "line one\nline two"


def test_refused_input_exits_2_with_a_message_and_no_traceback(invoke: Invoke) -> None:
    result = invoke("save", "   ", "-a", "al", code=2)
    assert "Error:" in result.output
    assert "Traceback" not in result.output
    result = invoke("save", "x", "-a", "../escape", code=2)
    assert "invalid agent id" in result.output


def test_notebook_set_show_and_clear(invoke: Invoke) -> None:
    invoke("notebook", "set", "plan", "ship the importer", "-a", "al")
    invoke("notebook", "set", "status", "green", "-a", "al", "--managed", "system")
    shown = as_json(invoke("notebook", "show", "-a", "al", "--json"))
    assert [(e["key"], e["managed"], e["text"]) for e in shown] == [
        ("plan", "agent", "ship the importer"),
        ("status", "system", "green"),
    ]
    assert "## status [system]" in invoke("notebook", "show", "-a", "al").output
    assert as_json(invoke("notebook", "clear", "-a", "al", "--json")) == {"removed": 1}
    assert as_json(invoke("notebook", "clear", "status", "-a", "al", "--json")) == {"removed": 1}
    with open_agent("al") as mem:
        assert mem.notebook.entries() == []


def test_notebook_set_reports_an_eviction(invoke: Invoke) -> None:
    for n in range(4):
        invoke("notebook", "set", f"k{n}", "text", "-a", "al")
    result = invoke("notebook", "set", "k4", "text", "-a", "al")
    assert "Evicted" in result.stderr


def test_an_agent_write_over_a_system_entry_needs_force(invoke: Invoke) -> None:
    invoke("notebook", "set", "status", "green", "-a", "al", "--managed", "system")
    invoke("notebook", "set", "status", "mine", "-a", "al", code=1)  # a refused write
    invoke("notebook", "set", "status", "mine", "-a", "al", "--force")
    with open_agent("al") as mem:
        assert mem.notebook.get("status").text == "mine"


def test_knowledge_edit_replace_append_and_show(invoke: Invoke) -> None:
    invoke("knowledge", "edit", "Team", "--content", "Ana leads.", "-a", "al")
    invoke("knowledge", "edit", "Team", "--content", "Bo deploys.", "--append", "-a", "al")
    shown = as_json(invoke("knowledge", "show", "Team", "-a", "al", "--json"))
    assert shown["sections"] == [{"name": "Team", "body": "Ana leads.\nBo deploys."}]
    assert "## Team\nAna leads.\nBo deploys." in invoke("knowledge", "show", "-a", "al").output


def test_knowledge_edit_over_the_section_cap_is_refused_with_exit_1(invoke: Invoke) -> None:
    result = invoke("knowledge", "edit", "Big", "--content", "x" * 3001, "-a", "al", code=1)
    assert "Refused" in result.stderr
    with open_agent("al") as mem:
        assert mem.knowledge.section("Big") is None


def test_knowledge_edit_without_content_off_a_terminal_is_a_usage_error(invoke: Invoke) -> None:
    result = invoke("knowledge", "edit", "Team", "-a", "al", code=2)
    assert "--content" in result.output


def test_knowledge_show_unknown_section_names_the_known_ones(invoke: Invoke) -> None:
    invoke("knowledge", "edit", "Team", "--content", "Ana.", "-a", "al")
    result = invoke("knowledge", "show", "Nope", "-a", "al", code=1)
    assert "Team" in result.output


def test_knowledge_show_lists_observations(invoke: Invoke) -> None:
    invoke("save", "first", "-a", "al")
    invoke("save", "second", "-a", "al")
    shown = as_json(invoke("knowledge", "show", "-a", "al", "--observations", "1", "--json"))
    assert [o["content"] for o in shown["observations"]] == ["second"]


def test_state_set_show_clear(invoke: Invoke) -> None:
    invoke("state", "set", "build", "green", "-a", "al")
    shown = as_json(invoke("state", "show", "-a", "al", "--json"))
    assert [(e["key"], e["content"]) for e in shown] == [("build", "green")]
    invoke("state", "clear", "build", "-a", "al")
    result = invoke("state", "clear", "build", "-a", "al", code=1)
    assert "No state entry" in result.output
