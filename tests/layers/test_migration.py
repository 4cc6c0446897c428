"""Legacy migration: MEMORY.md split, memories.json import, and its misrouting fixed."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from markus_memory import MigrationError, Settings, open_agent
from markus_memory.layers.migration import (
    StateChunk,
    is_state_heading,
    merge_state,
    parse_memories_json,
    split_legacy_memory,
)

UTC = timezone.utc
TODAY = date(2026, 7, 1)

LEGACY = """# MEMORY

Intro line.

## Stack
TypeScript, pnpm. Use the current LTS of Node.

## Current progress
- 2026-06-28 Silent day 3 of the migration

## Norms
Review every PR.

## _observations
<!-- This section is the observation buffer. -->
<!-- Dream cycle consolidates recurring patterns into curated sections above. -->

### obs_1718000000000_k3j9qz
<!-- type: fact -->
Migrated observation.
"""


def agent_dir(home: Path, agent: str = "alice") -> Path:
    path = home / "agents" / agent
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---- the split rule (pure) -----------------------------------------------------------


def test_A_knowledge_cap_split_legacy_memory() -> None:
    split = split_legacy_memory(LEGACY, TODAY)
    assert "## Stack" in split.knowledge and "## _observations" in split.knowledge
    assert "## Norms" in split.knowledge
    assert "Current progress" not in split.knowledge
    assert [c.key for c in split.state] == ["Current progress"]
    assert split.state[0].updated == date(2026, 6, 28)


@pytest.mark.parametrize(
    "heading",
    [
        "Current progress",
        "Status",
        "Silent day 3",
        "Day 12",
        "WIP",
        "当前进度",
        "2026-06-01 standup",
    ],
)
def test_state_headings(heading: str) -> None:
    assert is_state_heading(heading)


@pytest.mark.parametrize(
    "heading", ["Stack", "Norms", "Currency rules", "Progressive enhancement", "Holiday plans"]
)
def test_knowledge_headings(heading: str) -> None:
    assert not is_state_heading(heading)


def test_prose_in_a_body_never_routes_to_state() -> None:
    text = (
        "## Tooling\nUse the current LTS; progress is tracked in Jira.\n"
        "- 2024-01-01 adopted pnpm\nWe were silent on day 3.\n"
    )
    split = split_legacy_memory(text, TODAY)
    assert split.state == ()
    assert "Use the current LTS" in split.knowledge


def test_observations_go_last_whatever_their_position() -> None:
    text = (
        "## _observations\n<!-- a -->\n<!-- b -->\n\n### obs_1\n<!-- type: fact -->\nx\n"
        "## After the block\nvisible"
    )
    knowledge = split_legacy_memory(text, TODAY).knowledge
    assert knowledge.index("## After the block") < knowledge.index("## _observations")
    assert knowledge.startswith("# Knowledge\n")


def test_merge_state_keeps_existing_and_is_idempotent() -> None:
    existing = "# State\n\n## deploy\n<!-- updatedAt: 2026-06-30 -->\nblue/green\n"
    chunks = (
        StateChunk("notes", "### sub\n\\ backslash", date(2026, 6, 29)),
        StateChunk("deploy", "canary", date(2026, 6, 29)),
        StateChunk("Current progress", "step 2", date(2026, 6, 29)),
    )
    merged = merge_state(existing, chunks)
    assert merged is not None and merged.startswith(existing.rstrip())
    assert "## deploy (from MEMORY.md)\n<!-- updatedAt: 2026-06-29 -->\ncanary" in merged
    assert "## Current progress\n<!-- updatedAt: 2026-06-29 -->\nstep 2" in merged
    assert "## notes\n<!-- updatedAt: 2026-06-29 -->\n\\### sub\n\\\\ backslash" in merged
    assert merge_state(merged, chunks) is None


def test_parse_memories_json_sanitizes_malformed_items() -> None:
    fallback = datetime(2025, 5, 5, tzinfo=UTC)
    raw = json.dumps(
        [
            {
                "id": "m1",
                "type": "fact",
                "content": "valid",
                "timestamp": "2024-01-02T03:04:05.000Z",
            },
            {"id": "m2", "type": "INVALID", "content": "odd type", "metadata": {"tags": ["t", 3]}},
            {"id": "", "type": "fact", "content": "no id"},
            "not-an-object",
        ]
    )
    items = parse_memories_json(raw, fallback)
    assert [(i.id, i.type) for i in items] == [("m1", "fact"), ("m2", "note")]
    assert items[0].timestamp == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert items[1].timestamp == fallback and items[1].tags == ("t", "3")


@pytest.mark.parametrize("raw", ["{not json", '{"id": "x"}', ""])
def test_parse_memories_json_rejects_non_arrays(raw: str) -> None:
    with pytest.raises(MigrationError):
        parse_memories_json(raw, datetime.now(UTC))


# ---- applied by AgentMemory on open --------------------------------------------------


def test_migrates_memory_md_to_knowledge_and_state(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "MEMORY.md").write_text(LEGACY)
    with open_agent("alice") as mem:
        assert mem.knowledge.section("Norms") == "Review every PR."
        assert mem.knowledge.section("Stack") is not None
        assert [o.content for o in mem.knowledge.observations()] == ["Migrated observation."]
        (entry,) = mem.state.entries()
        assert entry.key == "Current progress" and entry.updated == date(2026, 6, 28)
        assert entry.content == "- 2026-06-28 Silent day 3 of the migration"
    state = (root / "state.md").read_text()
    assert state.startswith("# State\n")
    assert "## Current progress\n<!-- updatedAt: 2026-06-28 -->" in state
    assert "Norms" in (root / "knowledge.md").read_text()


def test_golden_memory_md_migrates_to_the_expected_files(isolated_home: Path) -> None:
    golden = Path(__file__).parent.parent / "golden" / "migration"
    root = agent_dir(isolated_home)
    (root / "MEMORY.md").write_bytes((golden / "MEMORY.md").read_bytes())
    settings = Settings(home=isolated_home, clock=lambda: datetime(2026, 7, 1, tzinfo=UTC))
    open_agent("alice", settings=settings).close()
    assert (root / "knowledge.md").read_bytes() == (golden / "knowledge.md").read_bytes()
    assert (root / "state.md").read_bytes() == (golden / "state.md").read_bytes()
    assert (root / "MEMORY.md").read_bytes() == (golden / "MEMORY.md").read_bytes()


def test_A_legacy_memory_not_written(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "MEMORY.md").write_text(LEGACY)
    original = (root / "MEMORY.md").read_bytes()
    with open_agent("alice") as mem:
        mem.knowledge.update_section("conventions", "new curated text")
        mem.knowledge.save_observation("new observation")
    with open_agent("alice") as mem:
        assert mem.knowledge.section("conventions") == "new curated text"
        assert "new observation" in [o.content for o in mem.knowledge.observations()]
    assert (root / "MEMORY.md").read_bytes() == original


def test_memory_md_is_ignored_once_knowledge_exists(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "knowledge.md").write_text("# Knowledge\n\n## mine\nkeep\n")
    (root / "MEMORY.md").write_text(LEGACY)
    with open_agent("alice") as mem:
        assert [s.name for s in mem.knowledge.sections()] == ["mine"]
    assert not (root / "state.md").exists()


def test_new_agent_gets_an_empty_knowledge_file(isolated_home: Path) -> None:
    with open_agent("bob") as mem:
        assert mem.knowledge.text() == "# Knowledge\n"


def test_existing_state_is_merged_not_clobbered(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "MEMORY.md").write_text(LEGACY)
    existing = "# State\n\n## release\n<!-- updatedAt: 2026-06-30 -->\nfrozen until Monday\n"
    (root / "state.md").write_text(existing)
    open_agent("alice").close()
    state = (root / "state.md").read_text()
    assert state.startswith(existing) and "## Current progress" in state


def test_memories_json_merges_with_migrated_observations(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "MEMORY.md").write_text(LEGACY)
    items = [
        {
            "id": "j1",
            "type": "fact",
            "content": "from json",
            "timestamp": "2023-01-01T00:00:00.000Z",
        },
        {"id": "j2", "type": "INVALID", "content": "odd"},
        {"id": "", "content": "dropped"},
        "not-an-object",
    ]
    (root / "memories.json").write_text(json.dumps(items))
    with open_agent("alice") as mem:
        got = [(o.id, o.type, o.content) for o in mem.knowledge.observations()]
    assert ("obs_1718000000000_k3j9qz", "fact", "Migrated observation.") in got
    assert ("j1", "fact", "from json") in got and ("j2", "note", "odd") in got
    assert len(got) == 3 and got[0][0] == "j1"
    assert not (root / "memories.json").exists()


def test_memories_json_with_lone_surrogates_is_imported_cleaned(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    raw = '[{"id": "s\\ud800", "content": "bad \\udfff text", "metadata": {"tags": ["t\\ud800"]}}]'
    (root / "memories.json").write_text(raw)
    with open_agent("alice") as mem:
        (obs,) = mem.knowledge.observations()
    assert obs.id == "s?" and obs.content == "bad ? text" and obs.tags == ("t?",)
    assert not (root / "memories.json").exists()


def test_malformed_memories_json_deletes_nothing(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "knowledge.md").write_text("# Knowledge\n")
    (root / "memories.json").write_text("[{broken")
    with pytest.raises(MigrationError, match="kept"):
        open_agent("alice")
    assert (root / "memories.json").read_text() == "[{broken"
    assert (root / "knowledge.md").read_text() == "# Knowledge\n"


def test_failed_knowledge_write_keeps_memories_json(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "knowledge.md").write_bytes(b"# Knowledge\n\xff\n")
    (root / "memories.json").write_text(json.dumps([{"id": "j1", "content": "x"}]))
    with pytest.raises(MigrationError, match="nothing was deleted"):
        open_agent("alice")
    assert (root / "memories.json").exists()
    assert (root / "knowledge.md").read_bytes() == b"# Knowledge\n\xff\n"


def test_invalid_utf8_memory_md_is_a_migration_error_and_writes_nothing(
    isolated_home: Path,
) -> None:
    root = agent_dir(isolated_home)
    (root / "MEMORY.md").write_bytes(b"## a\n\xff\n")
    with pytest.raises(MigrationError):
        open_agent("alice")
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["MEMORY.md"]


def test_reopening_after_migration_changes_nothing(isolated_home: Path) -> None:
    root = agent_dir(isolated_home)
    (root / "MEMORY.md").write_text(LEGACY)
    open_agent("alice").close()
    snapshot = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    open_agent("alice").close()
    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == snapshot
