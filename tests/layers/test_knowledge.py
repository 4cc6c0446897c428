"""KnowledgeFile: observations, curated sections, caps and fixes of the original's bugs."""

from __future__ import annotations

import os
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory.errors import InvalidInputError
from markus_memory.layers.knowledge import CuratedSection, KnowledgeFile, Observation, WriteResult

from .knowledge_support import StepClock, make_knowledge

UTC = timezone.utc


def fresh(root: Path) -> KnowledgeFile:
    """A new handle on the same directory: what the next process would see."""
    return make_knowledge(root, StepClock(datetime(2030, 1, 1, tzinfo=UTC)))


# ---- observation buffer (the original's test cases) --------------------------------------


def test_save_persists_and_a_new_handle_reads_it(kf: KnowledgeFile, root: Path) -> None:
    obs = kf.save_observation("  TypeScript is the main language  ", "fact", ["lang"])
    assert obs.content == "TypeScript is the main language"
    assert obs.id.startswith("obs_")
    assert fresh(root).observations() == [obs]
    assert kf.store_name == "knowledge.md"
    assert (root / "knowledge.md").exists()


def test_observation_id_format(kf: KnowledgeFile) -> None:
    obs = kf.save_observation("x")
    prefix, ms, rand = obs.id.split("_")
    assert prefix == "obs" and ms == str(int(obs.timestamp.timestamp() * 1000))
    assert len(rand) == 6 and rand.isalnum() and rand == rand.lower()


def test_filter_by_type_and_limit_returns_the_last_in_order(kf: KnowledgeFile) -> None:
    for i in range(10):
        kf.save_observation(f"item {i}", "fact" if i < 2 else "note")
    assert len(kf.observations(type="fact")) == 2
    assert len(kf.observations(type="note")) == 8
    assert kf.observations(type="task_result") == []
    assert [o.content for o in kf.observations(limit=3)] == ["item 7", "item 8", "item 9"]
    assert len(kf.observations(limit=0)) == 10


def test_invalid_type_becomes_note(kf: KnowledgeFile) -> None:
    assert kf.save_observation("x", "INVALID").type == "note"
    assert kf.save_observation("y", "task_result").type == "task_result"


def test_tags_filter_and_remove_by_tag(kf: KnowledgeFile, root: Path) -> None:
    kf.save_observation("a", "insight", ["insight", "temp"])
    kf.save_observation("b", "insight", ["insight", "domain:ts", "temp"])
    kf.save_observation("c", "fact", ["keep"])
    assert len(kf.observations_by_tag("insight")) == 2
    assert len(kf.observations_by_tag("domain:ts")) == 1
    assert kf.observations_by_tag("unknown") == []
    assert kf.remove_observations_by_tag("temp") == 2
    assert [o.content for o in fresh(root).observations()] == ["c"]


def test_remove_by_ids_persists_and_unknown_ids_do_not_write(kf: KnowledgeFile, root: Path) -> None:
    ids = [kf.save_observation(f"e{i}").id for i in range(3)]
    assert kf.remove_observations([ids[0]]) == 1
    assert [o.id for o in fresh(root).observations()] == ids[1:]
    before = os.stat(root / "knowledge.md")
    assert kf.remove_observations(["nope"]) == 0
    assert os.stat(root / "knowledge.md").st_ino == before.st_ino


def test_replace_removes_and_adds_in_one_write(kf: KnowledgeFile, root: Path) -> None:
    e1, e2, e3 = (kf.save_observation(f"e{i}") for i in range(3))
    merged = Observation("merged_1", "insight", "e1+e2", datetime(2026, 2, 1, tzinfo=UTC))
    kf.replace_observations([e1.id, e2.id], merged)
    assert {o.id for o in fresh(root).observations()} == {e3.id, "merged_1"}


def test_buffer_keeps_the_newest_max_observations(root: Path) -> None:
    kf = make_knowledge(root, max_observations=5)
    for i in range(7):
        kf.save_observation(f"n{i}")
    assert [o.content for o in fresh(root).observations()] == [f"n{i}" for i in range(2, 7)]


def test_empty_observations_in_a_hand_written_file_are_dropped(root: Path) -> None:
    (root / "knowledge.md").write_text(
        "# Knowledge\n\n## _observations\n<!-- c -->\n\n### obs_empty\n<!-- type: fact -->\n\n"
        "### obs_ok\n<!-- type: insight -->\nkept\n"
    )
    kf = make_knowledge(root)
    assert [(o.id, o.type) for o in kf.observations()] == [("obs_ok", "insight")]


def test_add_observations_merges_skips_duplicates_and_cleans_tags(kf: KnowledgeFile) -> None:
    late = kf.save_observation("already here")
    early = datetime(2020, 1, 1, tzinfo=UTC)
    added = kf.add_observations(
        [
            Observation("old_1", "bogus", " legacy ", early, ("a,b", "x-->y", "")),
            Observation(late.id, "fact", "duplicate id", early),
            Observation("old_2", "fact", "   ", early),
        ]
    )
    assert added == 1
    first, second = kf.observations()
    assert (first.id, first.type, first.content, first.tags) == (
        "old_1",
        "note",
        "legacy",
        ("a b", "x->y"),
    )
    assert second == late


# ---- curated sections -----------------------------------------------------------------


def test_B1_update_section_returns_ok_true_on_a_normal_write(kf: KnowledgeFile) -> None:
    result = kf.update_section("conventions", "Use snake_case.")
    assert result.ok is True and result.reason is None
    assert result.section_chars == len("Use snake_case.")
    assert (result.section_limit, result.curated_limit) == (3000, 15000)
    assert "## conventions\nUse snake_case." in kf.curated_text()


def test_B1_update_section_refuses_when_full_and_changes_nothing(kf: KnowledgeFile) -> None:
    kf.save_observation("an observation")
    results = []
    for i in range(12):
        before = kf.text()
        result = kf.update_section(f"section-{i}", "x" * 3000)
        results.append(result)
        if not result.ok:
            assert kf.text() == before
    refused = [r for r in results if not r.ok]
    assert refused and all(isinstance(r.reason, str) and r.reason for r in refused)
    assert "memory_save" in (refused[0].reason or "")
    assert refused[0].curated_chars > 15000


def test_A_knowledge_cap_five_2500_char_sections_fit_and_the_sixth_is_refused(
    kf: KnowledgeFile,
) -> None:
    kf.update_section("procedures", "")
    for i in range(5):
        assert kf.update_section(f"s{i}", "y" * 2500).ok
    curated = kf.curated_text()
    sixth = kf.update_section("s5", "y" * 2500)
    assert not sixth.ok and sixth.curated_chars > 15000
    assert kf.curated_text() == curated
    assert kf.section("s0") == "y" * 2500


def test_section_over_its_cap_is_refused_never_truncated(kf: KnowledgeFile) -> None:
    kf.update_section("big", "keep me")
    result = kf.update_section("big", "z" * 5000)
    assert result == WriteResult(
        ok=False,
        reason=result.reason,
        section="big",
        section_chars=5000,
        section_limit=3000,
        curated_chars=result.curated_chars,
        curated_limit=15000,
    )
    assert "3000" in (result.reason or "")
    assert kf.section("big") == "keep me"
    assert kf.update_section("big", "z" * 3000).ok


def test_replace_and_patch_and_the_append_alias(kf: KnowledgeFile) -> None:
    kf.update_section("steps", "Step 1")
    kf.update_section("steps", "Step 2", mode="patch")
    assert kf.section("steps") == "Step 1\nStep 2"
    kf.update_section("steps", "Step 3", mode="append")
    assert kf.section("steps") == "Step 1\nStep 2\nStep 3"
    kf.update_section("steps", "Only")
    assert kf.section("steps") == "Only"
    kf.update_section("fresh", "first", mode="patch")
    assert kf.section("fresh") == "first"
    assert kf.section("missing") is None


def test_curated_text_excluding_sections(kf: KnowledgeFile) -> None:
    kf.save_observation("not curated")
    kf.update_section("procedures", "p")
    kf.update_section("lessons", "l")
    kf.update_section("architecture", "a")
    text = kf.curated_text(exclude=["lessons", "architecture"])
    assert text == "# Knowledge\n\n## procedures\np"
    assert kf.curated_text(exclude="procedures").endswith("## architecture\na")
    assert "not curated" not in kf.curated_text()


def test_A_section_no_h2_bleed(kf: KnowledgeFile) -> None:
    kf.update_section("lessons", "## Key Lessons\nbody\n## _observations\nnot a block")
    text = kf.text()
    assert "## lessons\n" in text
    assert "### Key Lessons" in text
    lines = text.split("\n")
    assert "## Key Lessons" not in lines and "## _observations" not in lines
    assert [s.name for s in kf.sections()] == ["lessons"]
    assert kf.observations() == []


def test_transaction_writes_once_and_an_error_writes_nothing(kf: KnowledgeFile, root: Path) -> None:
    kf.save_observation("one")
    with kf.transaction() as doc:
        doc.observations.clear()
        doc.sections.append(CuratedSection("merged", "## x"))
    assert kf.observations() == [] and kf.section("merged") == "### x"
    before = (root / "knowledge.md").read_bytes()
    with pytest.raises(RuntimeError), kf.transaction() as doc:
        doc.sections.clear()
        raise RuntimeError("boom")
    assert (root / "knowledge.md").read_bytes() == before


def test_transaction_refuses_growth_past_the_curated_cap(root: Path) -> None:
    kf = make_knowledge(root, curated_max_chars=100)
    before = (root / "knowledge.md").read_bytes() if (root / "knowledge.md").exists() else None
    with pytest.raises(InvalidInputError, match="over the limit"), kf.transaction() as doc:
        doc.sections.append(CuratedSection("big", "q" * 200))
    after = (root / "knowledge.md").read_bytes() if (root / "knowledge.md").exists() else None
    assert after == before


def test_threads_sharing_one_handle_lose_nothing(kf: KnowledgeFile, root: Path) -> None:
    def work(worker: int) -> None:
        for i in range(25):
            kf.save_observation(f"thread {worker} save {i}")
            if i % 5 == 0:
                kf.update_section(f"t{worker}", f"round {i}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reread = fresh(root)
    assert len({o.id for o in reread.observations()}) == 100
    assert [reread.section(f"t{n}") for n in range(4)] == ["round 20"] * 4
