"""The dream request as the original phrases it: consolidation instructions, observation batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..config import Limits
from ..search.keyword import ObservationLike

HEADER = "[MEMORY CONSOLIDATION — Dream Cycle]"
KNOWLEDGE_HEADING = "## Existing curated knowledge (do not duplicate it)"


ObservationView = ObservationLike
"""What the dream reads of an observation (``layers.knowledge.Observation`` fits)."""


@dataclass(frozen=True)
class DreamRequest:
    """The messages to send and the batch they describe (id → full content)."""

    messages: tuple[dict[str, str], ...]
    batch: dict[str, str]
    total: int


def entry_line(index: int, obs: ObservationView, preview_chars: int) -> str:
    tags = f" [tags: {', '.join(obs.tags)}]" if obs.tags else ""
    date = obs.timestamp.strftime("%Y-%m-%d") if obs.timestamp else "?"
    head = f"[{index}] id={obs.id} type={obs.type} date={date}{tags}"
    return f"{head}\n{obs.content[:preview_chars]}"


def build_request(
    observations: Sequence[ObservationView], curated: str, limits: Limits
) -> DreamRequest:
    """The dream prompt for the most recent ``dream_max_entries_for_llm`` observations."""
    batch = list(observations)[-limits.dream_max_entries_for_llm :]
    total = len(observations)
    count = (
        f"{total} observations (showing the most recent {len(batch)} of {total})"
        if len(batch) < total
        else f"{total} observations"
    )
    entries = "\n\n".join(
        entry_line(i + 1, obs, limits.dream_entry_preview_chars) for i, obs in enumerate(batch)
    )
    knowledge = curated.strip()[: limits.dream_knowledge_preview_chars]
    parts = [HEADER, "", f"Your observation buffer holds {count}.", "", _instructions(limits)]
    if knowledge:
        parts += ["", KNOWLEDGE_HEADING, knowledge]
    parts += ["", "## Observations", entries]
    message = {"role": "user", "content": "\n".join(parts)}
    system = {
        "role": "system",
        "content": "You consolidate an agent's memory. You answer with one JSON object only.",
    }
    return DreamRequest((system, message), {o.id: o.content for o in batch}, total)


def _instructions(limits: Limits) -> str:
    return f"""Phase 1 — clean up:
- remove exact duplicates and entries superseded by newer information
  (at most {limits.dream_max_remove} removals);
- merge entries about the same topic into one entry that keeps all of their unique information
  (at most {limits.dream_max_merge} merge groups).
Phase 2 — learn:
- when {limits.dream_min_promote_sources} or more observations share a theme, write one synthesised
  insight into a curated section (use your own section names, e.g. procedures, lessons-learned)
  and list those observations as its sources; they are removed once the insight is written
  (at most {limits.dream_max_promote} promotions, each at most {limits.section_max_chars} chars).

Rules: be conservative — only remove what you are sure is redundant; a wrong removal is worse
than a duplicate. Use only ids from the list below. Each id may appear in one place only.
Reply with ONLY this JSON object, no code fences, no commentary (empty lists when nothing to do):
{{"remove": ["id1"],
 "merge": [{{"removeIds": ["id2", "id3"], "mergedContent": "combined text", "tags": ["t"]}}],
 "promote": [{{"sourceIds": ["id4", "id5", "id6"], "section": "procedures",
              "content": "synthesised insight"}}]}}"""
