"""apply_plan on an in-memory KnowledgeDoc: all of a part or none of it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from markus_memory.config import Limits
from markus_memory.dream.apply import apply_plan
from markus_memory.dream.plan import Merge, Plan, Promotion
from markus_memory.layers.knowledge import CuratedSection, KnowledgeDoc, Observation

T = datetime(2026, 11, 30, tzinfo=timezone.utc)


def doc_with(*contents: str) -> KnowledgeDoc:
    observations = [
        Observation(f"o{i}", "fact", c, T + timedelta(minutes=i), ("t",))
        for i, c in enumerate(contents)
    ]
    return KnowledgeDoc("# Knowledge", [CuratedSection("procedures", "old")], observations)


def test_empty_observations_are_dropped_and_reported() -> None:
    doc = doc_with("a", "  ", "b")
    applied = apply_plan(doc, Plan(), Limits(), T)
    assert [o.id for o in doc.observations] == ["o0", "o2"]
    assert [o.id for o in applied.dropped_empty] == ["o1"]


def test_merged_entry_takes_the_newest_sources_place() -> None:
    doc = doc_with("a", "b", "c", "d")
    applied = apply_plan(doc, Plan(merge=(Merge(("o0", "o2"), "a c"),)), Limits(), T)
    assert [o.id for o in doc.observations] == ["o1", applied.merged[0].result.id, "o3"]
    assert applied.merged[0].result.timestamp == T + timedelta(minutes=2)
    assert applied.merged[0].result.tags == ("t",)


def test_a_part_is_applied_whole_or_not_at_all() -> None:
    doc = doc_with("a", "b", "c", "d")
    limits = Limits(section_max_chars=10)
    plan = Plan(promote=(Promotion(("o0", "o1", "o2"), "procedures", "far too long content"),))
    before = doc.copy()
    applied = apply_plan(doc, plan, limits, T, hygiene=False)
    assert applied.promoted == () and len(applied.rejections) == 1
    assert doc.observations == before.observations and doc.sections == before.sections


def test_new_sections_are_appended_to_the_curated_part() -> None:
    doc = doc_with("a", "b", "c")
    apply_plan(doc, Plan(promote=(Promotion(("o0", "o1", "o2"), "部署", "周五部署"),)), Limits(), T)
    assert [s.name for s in doc.sections] == ["procedures", "部署"]
    assert doc.observations == []
