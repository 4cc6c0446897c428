"""Deliberation memory_updates and the fixes of the original's argument handling."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory import AgentMemory, open_agent
from markus_memory.tools import apply_memory_updates, is_tool_error_result

from .conftest import files_digest


def test_working_and_longterm_updates(memory: AgentMemory) -> None:
    memory.knowledge.update_section("procedures", "step 1")
    results = apply_memory_updates(
        memory,
        [
            {"type": "working", "key": "plan", "content": "ship v2"},
            {"type": "longterm", "key": "procedures", "content": "step 2"},
        ],
    )
    assert [json.loads(r)["status"] for r in results] == ["updated", "updated"]
    assert memory.notebook.get("plan").text == "ship v2"
    assert memory.knowledge.section("procedures") == "step 1\nstep 2"


def test_longterm_updates_patch_and_report_refusals(memory: AgentMemory) -> None:
    """The original replaced whole sections and ignored refusals."""
    results = apply_memory_updates(
        memory,
        [
            {"type": "longterm", "key": "big", "content": "x" * 3500},
            {"type": "longterm", "key": "s", "content": "new", "mode": "replace"},
        ],
    )
    refused = json.loads(results[0])
    assert is_tool_error_result(results[0]) and refused["sectionChars"] == 3500
    assert memory.knowledge.section("big") is None
    assert memory.knowledge.section("s") == "new"


def test_bad_items_are_errors_and_write_nothing(memory: AgentMemory) -> None:
    before = files_digest(memory.directory)
    results = apply_memory_updates(
        memory,
        [
            {"type": "episodic", "key": "k", "content": "c"},
            "text",
            {"type": "working"},
            {"type": "longterm", "key": "k"},
        ],
    )
    assert all(is_tool_error_result(r) for r in results) and len(results) == 4
    assert all(is_tool_error_result(r) for r in apply_memory_updates(memory, "{not json"))
    assert all(is_tool_error_result(r) for r in apply_memory_updates(memory, {"type": "x"}))
    assert files_digest(memory.directory) == before


def test_fuzz_memory_updates_never_raise(tmp_path) -> None:
    leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
    item = st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["working", "longterm", "x"]) | leaf,
            "key": leaf,
            "content": leaf,
            "mode": leaf,
        },
    )
    with open_agent("agt_delib", home=tmp_path / "d") as mem:

        @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(st.lists(item | leaf, max_size=4) | leaf)
        def run(updates: object) -> None:
            for result in apply_memory_updates(mem, updates):
                assert isinstance(json.loads(result), dict)

        run()
