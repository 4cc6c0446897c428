"""Applying a validated plan to a KnowledgeDoc in memory: all of a part or none of it.

The caller (``cycle``) does this inside ``KnowledgeFile.transaction()``, so the new knowledge.md
is computed here and written once, atomically. Parts whose ids left the buffer since the model
read it, and promotions that would break a knowledge cap, are rejected with a reason; their
observations stay. Promoted observations go only when their section write is in the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..config import Limits, epoch_ms, rand36
from ..layers.knowledge import CuratedSection, KnowledgeDoc, Observation, curated_size
from .hygiene import HygieneAction, clean_curated
from .plan import DEFAULT_MERGE_TAGS, Merge, Plan, Promotion, Rejection


@dataclass(frozen=True)
class MergeApplied:
    sources: tuple[Observation, ...]
    result: Observation


@dataclass(frozen=True)
class PromotionApplied:
    section: str
    content: str
    sources: tuple[Observation, ...]
    body_before: str | None
    body_after: str


@dataclass(frozen=True)
class Applied:
    """What an application changed, with full before/after content (for the audit)."""

    removed: tuple[Observation, ...] = ()
    merged: tuple[MergeApplied, ...] = ()
    promoted: tuple[PromotionApplied, ...] = ()
    rejections: tuple[Rejection, ...] = ()
    hygiene: tuple[HygieneAction, ...] = ()
    dropped_empty: tuple[Observation, ...] = ()


def curated_chars(preamble: str, sections: Sequence[tuple[str, str]]) -> int:
    """Size of the curated part as the knowledge layer measures it."""
    doc = KnowledgeDoc(preamble.rstrip(), [CuratedSection(n, b.rstrip()) for n, b in sections])
    return curated_size(doc)


def apply_plan(
    doc: KnowledgeDoc, plan: Plan, limits: Limits, now: datetime, *, hygiene: bool = True
) -> Applied:
    """Change ``doc`` in place according to ``plan``; return what was done and refused."""
    state = _Application(doc, limits, now)
    for index, obs_id in enumerate(plan.remove):
        state.remove(index, obs_id)
    for index, group in enumerate(plan.merge):
        state.merge(index, group)
    for index, promotion in enumerate(plan.promote):
        state.promote(index, promotion)
    actions: list[HygieneAction] = []
    if hygiene:
        preamble, sections, actions = clean_curated(
            doc.preamble, [(s.name, s.body) for s in doc.sections], limits, curated_chars
        )
        doc.preamble = preamble
        doc.sections = [CuratedSection(n, b) for n, b in sections]
    empty = tuple(o for o in doc.observations if not o.content.strip())
    doc.observations = [o for o in doc.observations if o.content.strip()]
    return Applied(
        tuple(state.removed),
        tuple(state.merged),
        tuple(state.promoted),
        tuple(state.rejections),
        tuple(actions),
        empty,
    )


class _Application:
    def __init__(self, doc: KnowledgeDoc, limits: Limits, now: datetime) -> None:
        self.doc = doc
        self.limits = limits
        self.now = now
        self.removed: list[Observation] = []
        self.merged: list[MergeApplied] = []
        self.promoted: list[PromotionApplied] = []
        self.rejections: list[Rejection] = []

    def _present(self, part: str, index: int, ids: Sequence[str]) -> list[Observation] | None:
        by_id = {o.id: o for o in self.doc.observations}
        missing = [i for i in ids if i not in by_id]
        if missing:
            reason = f"ids no longer in the buffer: {missing[:5]}"
            self.rejections.append(Rejection(part, index, reason, tuple(ids)))
            return None
        return [by_id[i] for i in ids]

    def _drop(self, ids: Sequence[str]) -> None:
        gone = set(ids)
        self.doc.observations = [o for o in self.doc.observations if o.id not in gone]

    def remove(self, index: int, obs_id: str) -> None:
        found = self._present("remove", index, [obs_id])
        if found is not None:
            self._drop([obs_id])
            self.removed.extend(found)

    def merge(self, index: int, group: Merge) -> None:
        sources = self._present("merge", index, group.remove_ids)
        if sources is None:
            return
        newest = max(sources, key=lambda o: o.timestamp)
        tags = tuple(dict.fromkeys(t for o in sources for t in o.tags)) + group.tags
        kinds = {o.type for o in sources}
        result = Observation(
            self._new_id(),
            kinds.pop() if len(kinds) == 1 else "note",
            group.content,
            newest.timestamp,
            tuple(dict.fromkeys(tags)) or DEFAULT_MERGE_TAGS,
        )
        # The merged entry takes the newest source's place, so the buffer stays chronological.
        position = self.doc.observations.index(newest)
        self.doc.observations[position] = result
        self._drop([i for i in group.remove_ids if i != newest.id])
        self.merged.append(MergeApplied(tuple(sources), result))

    def _new_id(self) -> str:
        taken = {o.id for o in self.doc.observations}
        while True:
            candidate = f"merged_{epoch_ms(self.now)}_{rand36(4)}"
            if candidate not in taken:
                return candidate

    def promote(self, index: int, promotion: Promotion) -> None:
        sources = self._present("promote", index, promotion.source_ids)
        if sources is None:
            return
        sections = self.doc.sections
        at = _find_section(sections, promotion.section)
        before = sections[at].body.strip() if at is not None else None
        body = f"{before}\n{promotion.content}" if before else promotion.content
        name = sections[at].name if at is not None else promotion.section
        candidate = [(s.name, s.body) for s in sections]
        if at is None:
            candidate.append((name, body))
        else:
            candidate[at] = (name, body)
        reason = self._cap_problem(name, body, candidate)
        if reason is not None:
            self.rejections.append(Rejection("promote", index, reason, promotion.source_ids))
            return
        if at is None:
            sections.append(CuratedSection(name, body))
        else:
            sections[at] = CuratedSection(name, body)
        self._drop(promotion.source_ids)
        self.promoted.append(
            PromotionApplied(name, promotion.content, tuple(sources), before, body)
        )

    def _cap_problem(self, name: str, body: str, candidate: list[tuple[str, str]]) -> str | None:
        limits = self.limits
        if len(body) > limits.section_max_chars:
            return (
                f"section {name!r} would have {len(body)} chars "
                f"(limit {limits.section_max_chars}); its sources were kept"
            )
        after = curated_chars(self.doc.preamble, candidate)
        if after > limits.curated_max_chars:
            return (
                f"curated knowledge would total {after} chars "
                f"(limit {limits.curated_max_chars}); its sources were kept"
            )
        return None


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")


def _find_section(sections: Sequence[CuratedSection], name: str) -> int | None:
    """Exact heading first; else one whose slug matches (so "Deploy Tips" finds deploy-tips)."""
    for index, section in enumerate(sections):
        if section.name == name:
            return index
    slug = _slug(name)
    for index, section in enumerate(sections):
        if slug and _slug(section.name) == slug:
            return index
    return None
