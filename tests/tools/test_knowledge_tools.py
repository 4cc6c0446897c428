"""memory_save, memory_search, memory_update and the legacy aliases on a real AgentMemory."""

from __future__ import annotations

import json

import pytest

from markus_memory import AgentMemory, open_agent
from markus_memory.search.embedders import FakeEmbedder
from markus_memory.tools import dispatch, is_tool_error_result

from .conftest import call, files_digest


def test_memory_save_stores_entry_with_string_and_array_tags(memory: AgentMemory) -> None:
    first = call(
        memory,
        "memory_save",
        {"content": "  TS strict mode  ", "type": "insight", "tags": ["lang", " ts ", ""]},
    )
    assert first["status"] == "saved" and first["store"] == "knowledge.md"
    assert first["type"] == "insight" and first["id"].startswith("obs_")
    call(memory, "memory_save", {"content": "second", "tags": "a, b,,c"})
    saved = memory.knowledge.observations()
    assert [o.content for o in saved] == ["TS strict mode", "second"]
    assert saved[0].tags == ("lang", "ts") and saved[1].tags == ("a", "b", "c")
    assert saved[1].type == "fact"
    assert "TS strict mode" in memory.paths.knowledge.read_text()


def test_memory_save_refuses_what_its_schema_does_not_offer(memory: AgentMemory) -> None:
    """The original saved these as facts and ignored extra keys; the schema says otherwise."""
    for args in (
        {"content": "x", "severity": "note"},
        {"content": "y", "type": "task_result"},
        {"content": "z", "summary": "ignored"},
    ):
        assert call(memory, "memory_save", args)["status"] == "error"
    assert memory.knowledge.observations() == []
    assert call(memory, "memory_save", {"content": "n", "type": "note"})["type"] == "note"


def test_A_memory_save_rejects_array_and_does_not_write(memory: AgentMemory) -> None:
    before = files_digest(memory.directory)
    for args in ([{"content": "a"}], json.dumps([{"content": "a"}])):
        result = call(memory, "memory_save", args)
        assert result["status"] == "error" and result["ok"] is False
        assert "array" in result["error"].lower()
        assert 'memory_save {"content"' in result["error"]
    assert files_digest(memory.directory) == before
    assert memory.knowledge.observations() == []


@pytest.mark.parametrize(
    "args",
    [
        {"summary": "no content"},
        {"content": "   "},
        {"content": 5},
        {"content": ["a"]},
        {},
        None,
        "",
        "{}",
    ],
)
def test_A_memory_save_no_empty_write(memory: AgentMemory, args: object) -> None:
    before = files_digest(memory.directory)
    result = call(memory, "memory_save", args)
    assert result["status"] == "error" and result["store"] == "knowledge.md"
    assert "content" in result["error"]
    assert files_digest(memory.directory) == before


def test_memory_search_lists_recent_on_empty_query(memory: AgentMemory) -> None:
    for i in range(4):
        call(memory, "memory_save", {"content": f"entry {i}", "tags": ["t"] if i == 3 else None})
    result = call(memory, "memory_search", {"limit": 2})
    assert result["count"] == 2 and result["store"] == "knowledge.md"
    assert [e["content"] for e in result["entries"]] == ["entry 2", "entry 3"]
    assert "tags" not in result["entries"][0] and result["entries"][1]["tags"] == ["t"]
    assert result["entries"][0]["timestamp"].endswith("Z")


def test_memory_search_finds_observations_and_curated_sections(memory: AgentMemory) -> None:
    call(memory, "memory_save", {"content": "The deploy key lives in vault", "type": "fact"})
    call(memory, "memory_save", {"content": "pasta recipe", "type": "note"})
    call(memory, "memory_update", {"section": "Crypto", "content": "BIP-39 deploy entropy"})
    result = call(memory, "memory_search", {"query": "deploy"})
    assert result["searchMethod"] == "keyword" and result["store"] == "knowledge.md"
    contents = [r["content"] for r in result["results"]]
    assert any("vault" in c for c in contents) and any("BIP-39" in c for c in contents)
    assert not any("pasta" in c for c in contents)
    curated = [r for r in result["results"] if r.get("source") == "curated"]
    assert curated and curated[0]["type"] == "fact"
    only_notes = call(memory, "memory_search", {"query": "deploy", "type": "note"})
    assert only_notes["count"] == 0


@pytest.mark.parametrize("limit", [0, -1, 51, "5", 2.5, True, [3]])
def test_memory_search_validates_limit(memory: AgentMemory, limit: object) -> None:
    result = call(memory, "memory_search", {"query": "x", "limit": limit})
    assert result["status"] == "error" and "limit" in result["error"]
    assert "memory_search {" in result["error"]


def test_memory_search_accepts_whole_float_limit_and_rejects_bad_type(memory: AgentMemory) -> None:
    assert call(memory, "memory_search", {"query": "x", "limit": 3.0})["count"] == 0
    bad = call(memory, "memory_search", {"query": "x", "type": "bogus"})
    assert bad["status"] == "error" and "insight" in bad["error"]


def test_A_tool_result_store_path_on_memory_update(memory: AgentMemory) -> None:
    result = call(memory, "memory_update", {"section": "conventions", "content": "use ruff"})
    assert result == {
        "status": "updated",
        "section": "conventions",
        "mode": "replace",
        "store": "knowledge.md",
    }
    assert memory.knowledge.section("conventions") == "use ruff"


def test_A_memory_update_append_alias(memory: AgentMemory) -> None:
    call(memory, "memory_update_longterm", {"section": "notes", "content": "Existing note"})
    result = call(
        memory, "memory_update_longterm", {"section": "notes", "content": " more", "mode": "append"}
    )
    assert result["mode"] == "patch" and result["status"] == "updated"
    assert memory.knowledge.section("notes") == "Existing note\n more"
    result = call(memory, "memory_update", {"section": "notes", "content": "x", "mode": "append"})
    assert result["mode"] == "patch"


def test_memory_update_longterm_replace_and_patch(memory: AgentMemory) -> None:
    call(memory, "memory_update_longterm", {"section": "s", "content": "one"})
    call(memory, "memory_update_longterm", {"section": "s", "content": "two", "mode": "patch"})
    assert memory.knowledge.section("s") == "one\ntwo"
    call(memory, "memory_update_longterm", {"section": "s", "content": "## Key Lessons\nthree"})
    assert memory.knowledge.section("s") == "### Key Lessons\nthree"


def test_replace_without_content_never_wipes_the_section(
    memory: AgentMemory,
) -> None:
    """The original: replace with no content wiped the section in the original."""
    call(memory, "memory_update", {"section": "procedures", "content": "step 1"})
    before = files_digest(memory.directory)
    for args in (
        {"section": "procedures"},
        {"section": "procedures", "content": ""},
        {"section": "procedures", "mode": "patch", "content": "  "},
    ):
        result = call(memory, "memory_update", args)
        assert result["status"] == "error" and "content" in result["error"]
    assert files_digest(memory.directory) == before
    assert memory.knowledge.section("procedures") == "step 1"


def test_longterm_without_content_or_with_delete_is_refused(
    memory: AgentMemory,
) -> None:
    """The original threw on missing content and treated delete as replace."""
    call(memory, "memory_update_longterm", {"section": "s", "content": "keep me"})
    before = files_digest(memory.directory)
    assert call(memory, "memory_update_longterm", {"section": "s"})["status"] == "error"
    deleted = call(
        memory, "memory_update_longterm", {"section": "s", "mode": "delete", "content": "x"}
    )
    assert deleted["status"] == "error" and "memory_update" in deleted["error"]
    assert files_digest(memory.directory) == before


@pytest.mark.parametrize("mode", ["overwrite", 3, "", "del"])
def test_unknown_modes_are_refused_not_echoed(memory: AgentMemory, mode: object) -> None:
    """In the original, unknown modes were echoed back and ran as replace."""
    before = files_digest(memory.directory)
    result = call(memory, "memory_update", {"section": "s", "content": "x", "mode": mode})
    assert result["status"] == "error" and "replace, patch, append, delete" in result["error"]
    assert files_digest(memory.directory) == before


def test_memory_update_delete_by_ids(memory: AgentMemory) -> None:
    ids = [call(memory, "memory_save", {"content": f"c{i}"})["id"] for i in range(3)]
    missing = call(memory, "memory_update", {"section": "x", "mode": "delete"})
    assert missing["status"] == "error" and missing["error"].startswith("Provide ids to delete.")
    no_section = call(memory, "memory_update", {"mode": "delete", "ids": ids[:1]})
    assert no_section["status"] == "error" and '"section" is required' in no_section["error"]
    many = call(memory, "memory_update", {"section": "x", "mode": "delete", "ids": ["i"] * 21})
    assert many["status"] == "error" and "at most 20" in many["error"]
    args = {"section": "x", "mode": "delete", "ids": ids[:2] + ["nope"]}
    result = call(memory, "memory_update", args)
    assert result == {"status": "deleted", "removed": 2, "store": "knowledge.md"}
    assert [o.id for o in memory.knowledge.observations()] == ids[2:]


def test_memory_update_requires_a_section(memory: AgentMemory) -> None:
    for args in ({"content": "x"}, {"section": "  ", "content": "x"}, {"section": 5}):
        result = call(memory, "memory_update", args)
        assert result["status"] == "error" and "section" in result["error"]


def test_B1_refusal_carries_ok_false_reason_and_sizes(memory: AgentMemory) -> None:
    for i in range(5):
        assert (
            call(memory, "memory_update", {"section": f"s{i}", "content": "x" * 2900})["status"]
            == "updated"
        )
    before = files_digest(memory.directory)
    text = dispatch(memory, "memory_update", {"section": "s9", "content": "y" * 2900})
    result = json.loads(text)
    assert is_tool_error_result(text)
    assert result["status"] == "error" and result["ok"] is False
    assert result["reason"] == result["error"] and "15000" in result["reason"]
    assert result["curatedLimit"] == 15000 and result["curatedChars"] > 15000
    assert result["sectionLimit"] == 3000 and result["section"] == "s9"
    assert result["mode"] == "replace" and result["store"] == "knowledge.md"
    assert files_digest(memory.directory) == before


def test_oversized_section_is_refused_with_sizes(memory: AgentMemory) -> None:
    result = call(memory, "memory_update", {"section": "big", "content": "z" * 3500})
    assert result["status"] == "error" and result["sectionChars"] == 3500
    assert memory.knowledge.section("big") is None


def test_memory_list_and_delete(memory: AgentMemory) -> None:
    ids = [
        call(memory, "memory_save", {"content": f"c{i}", "tags": ["temp"] if i else ["keep"]})["id"]
        for i in range(3)
    ]
    listed = call(memory, "memory_list", {})
    assert listed["count"] == 3 and "tags" not in listed["entries"][0]
    assert call(memory, "memory_list", {"limit": 0})["status"] == "error"
    assert call(memory, "memory_delete", {})["error"].startswith("Provide ids or tag.")
    assert call(memory, "memory_delete", {"ids": [ids[1]]}) == {
        "status": "deleted",
        "removed": 1,
        "store": "knowledge.md",
    }
    assert call(memory, "memory_delete", {"tag": "temp"})["removed"] == 1
    assert [o.id for o in memory.knowledge.observations()] == [ids[0]]


def test_awkward_tags_are_cleaned_not_refused(memory: AgentMemory) -> None:
    result = call(memory, "memory_save", {"content": "c", "tags": ["a-->b", "x\ny", "3", "a-->b"]})
    assert result["status"] == "saved"
    assert memory.knowledge.observations()[0].tags == ("a->b", "x y", "3")


def test_memory_search_reports_the_semantic_method_with_an_embedder(tmp_path) -> None:
    """As the original: with an embedder searchMethod is semantic(+keyword) and hits carry it."""
    with open_agent("agt_sem", home=tmp_path / "sem", embedder=FakeEmbedder()) as mem:
        call(mem, "memory_save", {"content": "the staging cluster runs kubernetes 1.30"})
        call(mem, "memory_save", {"content": "lunch menu for friday"})
        result = call(mem, "memory_search", {"query": "staging kubernetes cluster"})
    assert result["searchMethod"] in ("semantic", "semantic+keyword")
    assert result["results"][0]["content"].startswith("the staging cluster")
    assert all(r["type"] == "fact" for r in result["results"])
