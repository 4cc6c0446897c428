"""update/clear_notebook, working-memory aliases, state_update/state_clear."""

from __future__ import annotations

import pytest

from markus_memory import AgentMemory

from .conftest import call, files_digest


def test_update_notebook_upserts_and_reports_its_store(memory: AgentMemory) -> None:
    result = call(memory, "update_notebook", {"key": "plan", "content": "step 1"})
    assert result == {"status": "updated", "key": "plan", "store": "NOTEBOOK.md"}
    assert memory.notebook.get("plan").text == "step 1"
    assert "## plan" in memory.paths.notebook.read_text()


def test_fifth_key_evicts_the_oldest_agent_entry(memory: AgentMemory) -> None:
    for i in range(4):
        call(memory, "update_notebook", {"key": f"k{i}", "content": f"v{i}"})
    result = call(memory, "update_notebook", {"key": "k4", "content": "v4"})
    assert result["evicted"] == "k0"
    assert [e.key for e in memory.notebook.entries()] == ["k1", "k2", "k3", "k4"]


def test_long_content_is_truncated_and_says_so(memory: AgentMemory) -> None:
    result = call(memory, "update_notebook", {"key": "big", "content": "x" * 7000})
    assert result["truncated"] is True and result["limit"] == 6000
    assert len(memory.notebook.get("big").text) == 6000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"content": "x"}, '"key" is required'),
        ({"key": "", "content": "x"}, '"key" must not be blank'),
        ({"key": "k"}, '"content" is required'),
        ({"key": "k", "content": 7}, '"content" must be a string, got 7'),
    ],
)
def test_update_notebook_validation(memory: AgentMemory, args: dict, message: str) -> None:
    result = call(memory, "update_notebook", args)
    assert result["status"] == "error" and result["error"].startswith(message)
    assert "update_notebook {" in result["error"] and result["store"] == "NOTEBOOK.md"
    assert not memory.paths.notebook.exists()


def test_update_working_memory_alias(memory: AgentMemory) -> None:
    assert call(memory, "update_working_memory", {"key": "k"})["error"].startswith(
        '"content" is required'
    )
    assert (
        call(memory, "update_working_memory", {"key": "k", "content": "c"})["status"] == "updated"
    )
    assert memory.notebook.get("k").managed == "agent"


def test_system_entries_are_not_the_agents_to_change(memory: AgentMemory) -> None:
    """In the original, agents could overwrite or delete system keys."""
    memory.notebook.upsert("ops-banner", "Decision: item 1", managed="cpp")
    before = files_digest(memory.directory)
    for name, args in [
        ("update_notebook", {"key": "ops-banner", "content": "mine"}),
        ("clear_notebook", {"key": "ops-banner"}),
        ("clear_working_memory", {"key": "ops-banner"}),
    ]:
        result = call(memory, name, args)
        assert result["status"] == "error" and "managed by the system (cpp)" in result["error"]
    assert files_digest(memory.directory) == before


def test_clear_notebook_never_wipes_system_entries(memory: AgentMemory) -> None:
    """In the original, clear without key (or all) wiped system and cpp entries."""
    memory.notebook.upsert("relevant-context", "- fact", managed="system")
    call(memory, "update_notebook", {"key": "a", "content": "1"})
    call(memory, "update_notebook", {"key": "b", "content": "2"})
    assert call(memory, "clear_notebook", {"key": "a"}) == {
        "status": "cleared",
        "cleared": 1,
        "store": "NOTEBOOK.md",
    }
    assert call(memory, "clear_notebook", {"key": "zzz"})["cleared"] == 0
    assert call(memory, "clear_working_memory", {"all": True})["cleared"] == 1
    assert [e.key for e in memory.notebook.entries()] == ["relevant-context"]
    assert call(memory, "clear_notebook", {"all": True})["cleared"] == 0
    assert call(memory, "clear_notebook", {"all": "yes"})["status"] == "error"


def test_state_update_and_clear(memory: AgentMemory) -> None:
    result = call(memory, "state_update", {"key": "freeze", "content": "no deploys"})
    assert result == {"status": "updated", "key": "freeze", "store": "state.md"}
    text = memory.paths.state.read_text()
    assert "## freeze" in text and "no deploys" in text and "updatedAt" in text
    assert call(memory, "state_clear", {"key": "freeze"}) == {
        "status": "cleared",
        "key": "freeze",
        "cleared": 1,
        "store": "state.md",
    }
    assert call(memory, "state_clear", {"key": "freeze"})["cleared"] == 0
    bad = call(memory, "state_update", {"key": "k"})
    assert bad["status"] == "error" and bad["store"] == "state.md" and "content" in bad["error"]


@pytest.mark.parametrize("key", ["relevant-context", "triage-decision", "reflection"])
def test_system_keys_are_reserved_even_when_absent(memory: AgentMemory, key: str) -> None:
    result = call(memory, "update_notebook", {"key": key, "content": "mine"})
    assert result["status"] == "error" and "reserved" in result["error"]
    assert not memory.paths.notebook.exists()


@pytest.mark.parametrize(
    "args", [{}, {"key": ""}, {"key": "   "}, {"all": False}, {"key": "", "all": False}, None]
)
@pytest.mark.parametrize("name", ["clear_notebook", "clear_working_memory"])
def test_item9_clear_notebook_empty_args_clears_nothing(
    memory: AgentMemory, name: str, args: object
) -> None:
    """#12 item 9: no key and no ``all: true`` wiped every agent entry."""
    call(memory, "update_notebook", {"key": "plan", "content": "ship it"})
    call(memory, "update_notebook", {"key": "notes", "content": "ask Ana"})
    before = files_digest(memory.directory)
    result = call(memory, name, args)
    assert result["status"] == "error" and result["store"] == "NOTEBOOK.md"
    assert '"all":true' in result["error"] and '"key":"current-task"' in result["error"]
    assert files_digest(memory.directory) == before
    assert [e.key for e in memory.notebook.entries()] == ["plan", "notes"]


def test_item9_clear_notebook_all_true_clears_only_the_agents_entries(
    memory: AgentMemory,
) -> None:
    memory.notebook.upsert("relevant-context", "- fact", managed="system")
    call(memory, "update_notebook", {"key": "plan", "content": "ship it"})
    both = call(memory, "clear_notebook", {"key": "plan", "all": True})
    assert both["status"] == "error" and "not both" in both["error"]
    assert call(memory, "clear_notebook", {"key": "plan", "all": False})["cleared"] == 1
    call(memory, "update_notebook", {"key": "plan", "content": "again"})
    assert call(memory, "clear_notebook", {"all": True})["cleared"] == 1
    assert [e.key for e in memory.notebook.entries()] == ["relevant-context"]
