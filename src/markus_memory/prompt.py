"""Memory blocks for the system prompt: capped knowledge, reflex state lines, the notebook.

:func:`render_memory_context` returns the text plus its stable part (``## Your Knowledge`` or,
for reflex, ``## Current State (short)``; cache-friendly, changes only when knowledge does)
and its volatile part (``## Notebook``, last). Given the current user message it recalls what
is relevant into the system-managed ``relevant-context`` notebook entry (automatic recall, as
the original Markus runtime does): shown in the prompt only, or also written to NOTEBOOK.md
when the host asks for that with ``persist_recall=True``. A render changes no file otherwise.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

from .config import Limits
from .errors import MarkusMemoryError
from .layers.notebook import NotebookEntry, age_label
from .tokens import TokenEstimator, default_estimator, largest_prefix_within

if TYPE_CHECKING:
    from .memory import AgentMemory

log = logging.getLogger(__name__)

Profile = Literal["default", "execute", "govern", "converse", "reflex"]
PROFILES: tuple[str, ...] = ("default", "execute", "govern", "converse", "reflex")
RELEVANT_CONTEXT_KEY = "relevant-context"

KNOWLEDGE_HEADING = "## Your Knowledge"
STATE_HEADING = "## Current State (short)"
NOTEBOOK_HEADING = "## Notebook"
TRUNCATED_HINT = (
    "_(Knowledge truncated to fit the prompt: use memory_search, or read knowledge.md, "
    "for the rest.)_"
)
_PART_START = re.compile(r"^(?=#{1,2}[ \t])", re.MULTILINE)
_DEMOTE = re.compile(r"^#{1,2}[ \t]+", re.MULTILINE)
_STALE = re.compile(
    r"compact_\d+|deepseek\s*(api|json)|组织深度静默|静默期验证|故障模式|json\s*解析错误"
    r"|timeout\s*diagnos",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class MemoryContext:
    """The memory part of a system prompt: ``text == stable + volatile`` (blank-line joined)."""

    text: str
    stable: str
    volatile: str
    profile: str
    knowledge_truncated: bool = False
    knowledge_tokens: int = 0
    relevant_context: str | None = None


@dataclass(frozen=True)
class PreparedKnowledge:
    """Curated knowledge cut to a budget: the text, and whether anything was left out."""

    text: str
    truncated: bool


def _is_stale(part: str) -> bool:
    first_line = part.split("\n", 1)[0]
    return bool(_STALE.search(first_line) or _STALE.search(part[:200]))


def prepare_knowledge(
    raw: str, max_tokens: int, max_chars: int, estimator: TokenEstimator
) -> PreparedKnowledge:
    """The original's knowledge preparation (split at headings, stale parts last, fill to the
    cap), measured in tokens as well as chars.

    Parts start at each ``#``/``##`` heading (deeper headings stay with their parent, so a
    subsection never moves away from it); ``#``/``##`` become ``###``; stale parts go last;
    parts are added while the text stays within both caps and the first that does not fit
    is cut to the room left.
    """
    parts = [_DEMOTE.sub("### ", p).rstrip() for p in _PART_START.split(raw) if p.strip()]
    ordered = [p for p in parts if not _is_stale(p)] + [p for p in parts if _is_stale(p)]
    text, truncated = "", False
    for part in ordered:
        candidate = text + part + "\n\n"
        if len(candidate) <= max_chars and estimator.count(candidate) <= max_tokens:
            text = candidate
            continue
        room = largest_prefix_within(candidate, max_tokens, max_chars, estimator)
        if len(room) > len(text):
            line_end = room.rfind("\n", len(text))
            added = len(room) - len(text)
            # end on a whole line when that keeps at least half of what fits
            text = room[:line_end] if line_end - len(text) >= added // 2 else room
        truncated = True
        break
    return PreparedKnowledge(text.rstrip(), truncated)


def knowledge_markdown(memory: AgentMemory) -> str:
    """The curated sections as markdown (``## name`` + body), empty sections left out."""
    blocks = [
        f"## {s.name}\n{s.body.strip()}" for s in memory.knowledge.sections() if s.body.strip()
    ]
    return "\n\n".join(blocks)


def knowledge_char_cap(limits: Limits, max_tokens: int) -> int:
    """``min(8000, tokens × 4)`` chars: the original ceiling, kept next to the token cap."""
    return min(limits.knowledge_prompt_chars, max_tokens * 4)


def render_knowledge(
    memory: AgentMemory, profile: str, estimator: TokenEstimator
) -> tuple[str, PreparedKnowledge | None]:
    """The ``## Your Knowledge`` block for ``profile`` ('' for reflex or no knowledge)."""
    limits = memory.settings.limits
    max_tokens = limits.knowledge_tokens_for(profile)
    if max_tokens <= 0:
        return "", None
    raw = knowledge_markdown(memory)
    if not raw:
        return "", None
    prepared = prepare_knowledge(raw, max_tokens, knowledge_char_cap(limits, max_tokens), estimator)
    if not prepared.text:
        return "", prepared
    lines = [KNOWLEDGE_HEADING, prepared.text]
    if prepared.truncated:
        lines.append(TRUNCATED_HINT)
    return "\n".join(lines), prepared


def render_state_lines(memory: AgentMemory) -> str:
    """Reflex only: ``## Current State (short)`` with the first lines of state.md."""
    max_lines = memory.settings.limits.state_prompt_max_lines_reflex
    snapshot = memory.state.snapshot(max_lines=max_lines).strip()
    if not snapshot:
        return ""
    return f"{STATE_HEADING}\n" + "\n".join(snapshot.splitlines()[:max_lines])


def render_notebook(
    memory: AgentMemory,
    now: datetime | None = None,
    *,
    entries: Sequence[NotebookEntry] | None = None,
) -> str:
    """The ``## Notebook`` block: guidance with budgets, then every entry with age and size.

    ``entries`` replaces the stored entries (a view with this turn's recall in it).
    """
    entries = memory.notebook.entries() if entries is None else list(entries)
    if not entries:
        return ""
    limits = memory.settings.limits
    moment = now if now is not None else memory.settings.clock()
    agent_used = sum(1 for e in entries if e.managed == "agent")
    slots = limits.notebook_max_agent_entries
    curated = memory.knowledge.curated_chars()
    lines = [
        NOTEBOOK_HEADING,
        f"Your workspace, kept across sessions: {agent_used}/{slots} entries of your own used, "
        f"{limits.notebook_max_chars_per_entry} chars each; write with update_notebook, remove "
        "with clear_notebook. When all slots are used a new key evicts your oldest entry. "
        "Entries tagged [system] (written by the runtime) or [cpp] (the context its cognitive "
        "preparation pipeline prepared) are managed for you. "
        f"Curated knowledge (knowledge.md): {curated}/{limits.curated_max_chars} chars.",
        "",
    ]
    for entry in entries:
        cap = (
            limits.notebook_max_chars_per_entry
            if entry.managed == "agent"
            else limits.notebook_max_chars_per_system_entry
        )
        tag = "" if entry.managed == "agent" else f" [{entry.managed}]"
        lines.append(
            f"### {entry.key} ({age_label(entry.updated_at, moment)}){tag} · "
            f"{len(entry.text)}/{cap} chars"
        )
        lines.append(entry.text)
        lines.append("")
    return "\n".join(lines).rstrip()


RELEVANT_MAX_CHARS = 1500
RELEVANT_LINE_CHARS = 300


def _squash(text: str) -> str:
    return " ".join(text.split())


def relevant_lines(
    memory: AgentMemory,
    query: str,
    *,
    shown: str = "",
    max_hits: int | None = None,
    max_chars: int = RELEVANT_MAX_CHARS,
) -> list[str]:
    """``- [date] content`` lines for the observations and curated hits relevant to ``query``.

    Only search hits count (never "the newest facts" regardless of the query, which
    the original added every turn); hits whose text the prompt already shows (``shown``, the
    other notebook entries) are skipped; at most ``max_hits`` lines (the agent's
    ``Limits.memory_search_top_k`` unless given; 0 shows none) and ``max_chars`` chars.
    """
    if max_hits is None:
        max_hits = memory.settings.limits.memory_search_top_k
    if not query.strip() or max_hits <= 0:
        return []
    others = [e.text for e in memory.notebook.entries() if e.key != RELEVANT_CONTEXT_KEY]
    seen_text = _squash("\n".join([shown, *others]))
    found = memory.search(query, limit=max_hits * 2, now=memory.settings.clock())
    lines: list[str] = []
    used = 0
    for hit in found.hits:
        content = _squash(hit.content)
        if not content or content[:200] in seen_text:
            continue
        if len(content) > RELEVANT_LINE_CHARS:
            content = content[: RELEVANT_LINE_CHARS - 1] + "…"
        stamp = getattr(hit, "timestamp", None)
        day = stamp.date().isoformat() if isinstance(stamp, datetime) else ""
        line = f"- [{day}] {content}"
        if line in lines or used + len(line) + 1 > max_chars:
            continue
        lines.append(line)
        used += len(line) + 1
        if len(lines) >= max_hits:
            break
    return lines


def refresh_relevant_context(memory: AgentMemory, query: str, *, shown: str = "") -> str | None:
    """Rewrite (or remove) the system-managed ``relevant-context`` entry for this turn."""
    lines = relevant_lines(memory, query, shown=shown)
    current = memory.notebook.get(RELEVANT_CONTEXT_KEY)
    if not lines:
        if current is not None:
            memory.notebook.clear(key=RELEVANT_CONTEXT_KEY, allow_system=True)
        return None
    text = "\n".join(lines)
    if current is None or current.text != text or current.managed != "system":
        memory.notebook.upsert(RELEVANT_CONTEXT_KEY, text, managed="system")
    return text


def recalled_entries(
    memory: AgentMemory, query: str, *, shown: str = ""
) -> tuple[str | None, list[NotebookEntry]]:
    """This turn's recall and the notebook as it would read after a refresh, writing nothing.

    The ``relevant-context`` entry is replaced in place, added last, or left out when nothing
    is relevant: exactly what :func:`refresh_relevant_context` would store.
    """
    lines = relevant_lines(memory, query, shown=shown)
    entries = memory.notebook.entries()
    index = next((i for i, e in enumerate(entries) if e.key == RELEVANT_CONTEXT_KEY), None)
    if not lines:
        return None, [e for e in entries if e.key != RELEVANT_CONTEXT_KEY]
    cap = memory.settings.limits.notebook_max_chars_per_system_entry
    text = "\n".join(lines)[:cap].rstrip()
    current = entries[index] if index is not None else None
    if current is None or current.text != text or current.managed != "system":
        stamp = memory.settings.clock().astimezone(timezone.utc)
        entry = NotebookEntry(RELEVANT_CONTEXT_KEY, text, "system", stamp)
        if index is None:
            entries.append(entry)
        else:
            entries[index] = entry
    return text, entries


def render_memory_context(
    memory: AgentMemory,
    profile: Profile | str = "default",
    *,
    query: str | None = None,
    auto_recall: bool = True,
    persist_recall: bool = False,
    estimator: TokenEstimator | None = None,
    now: datetime | None = None,
) -> MemoryContext:
    """The memory blocks of one turn's system prompt, stable part first, notebook last.

    ``query`` is the current user message: with ``auto_recall`` what is relevant to it is
    shown as the system-managed ``relevant-context`` notebook entry (left out when nothing
    is). The render writes nothing unless ``persist_recall=True``, which also stores that
    entry in NOTEBOOK.md (or removes it), as the original runtime did every turn. With
    ``query=None`` a stored entry is shown as it is.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown prompt profile {profile!r}; use one of {', '.join(PROFILES)}")
    if not isinstance(persist_recall, bool):
        raise TypeError(f"persist_recall must be True or False, got {persist_recall!r}")
    counter = estimator if estimator is not None else default_estimator()
    knowledge, prepared = render_knowledge(memory, profile, counter)
    stable = knowledge if profile != "reflex" else render_state_lines(memory)
    relevant, entries = None, None
    if auto_recall and query is not None:
        try:
            if persist_recall:
                relevant = refresh_relevant_context(memory, query, shown=stable)
            else:
                relevant, entries = recalled_entries(memory, query, shown=stable)
        except MarkusMemoryError:  # a failing index must not cost the agent its turn
            log.warning("automatic recall failed; relevant-context left as it was", exc_info=True)
    volatile = render_notebook(memory, now, entries=entries)
    text = "\n\n".join(block for block in (stable, volatile) if block)
    return MemoryContext(
        text=text,
        stable=stable,
        volatile=volatile,
        profile=profile,
        knowledge_truncated=prepared.truncated if prepared else False,
        knowledge_tokens=counter.count(prepared.text) if prepared else 0,
        relevant_context=relevant,
    )
