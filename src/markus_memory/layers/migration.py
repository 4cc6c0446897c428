"""Legacy migration planning: MEMORY.md → knowledge.md + state.md, memories.json → observations.

This module only reads files and computes what to write; :class:`~markus_memory.memory.AgentMemory`
applies the plan under the agent lock (a layer never imports another layer). It fixes the
original's migration bugs (state words anywhere in a section
sent it to state.md, later sections could land after ``## _observations``, memories.json
replaced migrated observations, and it was deleted even when the write failed):

* **State routing is decided by the heading only.** A MEMORY.md section goes to state.md when its
  ``## `` heading contains a state word (:data:`STATE_WORDS`: current, progress, status, silent,
  silence, today, wip, "day N", and the CJK 当前 进度 状态 静默 今天 今日) or starts with an ISO
  date (``## 2024-05-01 stand-up``). Prose in a body ("use the current LTS", a dated changelog
  line) never moves a section: knowledge that is misrouted to state expires after 7 days, state
  that stays in knowledge only costs a few tokens.
* Each state section gets a ``<!-- updatedAt: YYYY-MM-DD -->`` first body line (the newest ISO
  date in the section, else today) and an escaped body: the entry format of the state layer
  (as the original writes state.md), so ``mem.state`` reads it like its own entries.
* An existing state.md is merged, never clobbered: a key already present with the same body is
  skipped, one with a different body is added as ``<key> (from MEMORY.md)``. Re-running a
  half-finished migration therefore adds nothing twice.
* ``## _observations`` goes last in knowledge.md wherever it was in MEMORY.md.
* memories.json items are sanitised as the original does and later *merged* with the observations
  already in knowledge.md; malformed JSON raises :class:`MigrationError` and deletes nothing.

MEMORY.md is only ever read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime

from .._docs import DocumentStore
from .._fs import MAX_ID_CHARS
from .._fs_docs import FileDocuments
from .._lock import AgentLock
from .._markdown import Section, escape_body, join_h2, split_h2
from ..config import OBSERVATION_TYPES, AgentPaths, from_epoch_ms, parse_iso
from ..errors import CorruptFileError, MigrationError

STATE_WORDS = re.compile(
    r"(?<![A-Za-z0-9_])(?:silent|silence|current|currently|progress|status|today|wip|day\s*\d+)"
    r"(?![A-Za-z0-9_])|当前|进度|状态|静默|今天|今日",
    re.IGNORECASE,
)
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_LEGACY_TITLE = re.compile(r"\s*#\s*memory(?:\.md)?[ \t]*(?:\r?\n|\Z)", re.IGNORECASE)
FROM_LEGACY = " (from MEMORY.md)"


@dataclass(frozen=True)
class LegacyObservation:
    """One sanitised memories.json item, ready to become an observation."""

    id: str
    type: str
    content: str
    timestamp: datetime
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class StateChunk:
    """A MEMORY.md section routed to state.md."""

    key: str
    body: str
    updated: date


@dataclass(frozen=True)
class LegacySplit:
    knowledge: str
    state: tuple[StateChunk, ...]


@dataclass(frozen=True)
class MigrationPlan:
    """What to write. ``None`` means "leave that file alone"."""

    knowledge_text: str | None = None
    state_text: str | None = None
    observations: tuple[LegacyObservation, ...] | None = None

    @property
    def empty(self) -> bool:
        return self.knowledge_text is None and self.state_text is None and self.observations is None


def is_state_heading(name: str) -> bool:
    """Whether a MEMORY.md section heading marks transient state (see the module docstring)."""
    return bool(STATE_WORDS.search(name) or _ISO_DAY.match(name))


def _latest_day(text: str) -> date | None:
    days = []
    for match in _ISO_DAY.finditer(text):
        try:
            days.append(date.fromisoformat(match.group(0)))
        except ValueError:
            continue
    return max(days) if days else None


def _ended(section: Section) -> Section:
    """``section`` whose text ends with a newline, so the next one starts on its own line."""
    return (
        section
        if section.tail.endswith("\n")
        else Section(section.name, section.heading, section.tail + "\n")
    )


def split_legacy_memory(text: str, today: date) -> LegacySplit:
    """Route the sections of MEMORY.md to knowledge or state; observations go last."""
    preamble, sections = split_h2(text)
    curated: list[Section] = []
    observations: list[Section] = []
    state: list[StateChunk] = []
    for section in sections:
        if section.name == "_observations":
            observations.append(_ended(section))
        elif is_state_heading(section.name):
            body = section.body.strip()
            state.append(StateChunk(section.name, body, _latest_day(section.render()) or today))
        else:
            curated.append(_ended(section))
    title = _LEGACY_TITLE.match(preamble)
    if title:  # "# MEMORY" becomes the knowledge.md title; the rest of the preamble stays
        preamble = preamble[title.end() :]
    preamble = (
        "# Knowledge\n\n" + preamble.lstrip("\n") if title or not preamble.strip() else preamble
    )
    if preamble.strip() and not preamble.endswith("\n"):
        preamble += "\n"
    return LegacySplit(join_h2(preamble, curated + observations), tuple(state))


def merge_state(existing: str | None, chunks: tuple[StateChunk, ...]) -> str | None:
    """state.md text with ``chunks`` added after what is there; None when nothing changes."""
    _, present = split_h2(existing or "")
    bodies = {s.name: _without_updated(s.body) for s in present}
    added = []
    for chunk in chunks:
        escaped = escape_body(chunk.body)
        for key in (chunk.key, chunk.key + FROM_LEGACY):
            if bodies.get(key) == escaped:
                break
            if key not in bodies:
                bodies[key] = escaped
                body = f"<!-- updatedAt: {chunk.updated.isoformat()} -->\n{escaped}".rstrip()
                added.append(f"## {key}\n{body}\n")
                break
    if not added:
        return None
    head = (existing or "# State\n").rstrip()
    return head + "\n\n" + "\n".join(added)


def _without_updated(body: str) -> str:
    lines = body.strip().split("\n")
    if lines and lines[0].startswith("<!-- updatedAt:"):
        lines = lines[1:]
    return "\n".join(lines).strip()


def parse_memories_json(raw: str, fallback: datetime) -> tuple[LegacyObservation, ...]:
    """Sanitise a memories.json array as the original does: keep objects with a non-empty string
    ``id``; an invalid type becomes ``note``; a missing or bad timestamp becomes ``fallback``.
    """
    try:
        items = json.loads(raw)
    except ValueError as exc:
        raise MigrationError(f"memories.json is not valid JSON ({exc}); it was kept") from exc
    if not isinstance(items, list):
        raise MigrationError("memories.json is not a JSON array; it was kept")
    found = []
    for item in items:
        if not isinstance(item, dict):
            continue
        obs_id = item.get("id")
        if not isinstance(obs_id, str) or not obs_id.strip():
            continue
        kind = item.get("type")
        content = item.get("content")
        stamp = item.get("timestamp")
        metadata = item.get("metadata")
        tags = metadata.get("tags") if isinstance(metadata, dict) else None
        found.append(
            LegacyObservation(
                id="_".join(obs_id.encode("utf-8", "replace").decode().split())[:MAX_ID_CHARS],
                type=kind if kind in OBSERVATION_TYPES else "note",
                content=content if isinstance(content, str) else "",
                timestamp=(parse_iso(stamp) if isinstance(stamp, str) else None) or fallback,
                tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
            )
        )
    return tuple(found)


def plan_migration(
    paths: AgentPaths, now: datetime, *, documents: DocumentStore | None = None
) -> MigrationPlan:
    """Read the legacy files of one agent (call under the agent lock) and plan the migration.

    ``documents`` is where the agent's documents live (default: the files under ``paths``).
    """
    docs = documents if documents is not None else FileDocuments(paths.root, AgentLock(paths.lock))
    try:
        knowledge_text = state_text = None
        if not docs.exists(paths.knowledge.name):
            legacy = docs.read(paths.legacy_memory.name)
            if legacy is not None:
                split = split_legacy_memory(legacy, now.date())
                knowledge_text = split.knowledge
                state_text = merge_state(docs.read(paths.state.name), split.state)
        observations = None
        raw = docs.read(paths.legacy_memories_json.name)
        if raw is not None:
            sig = docs.version(paths.legacy_memories_json.name)
            fallback = from_epoch_ms(sig.modified_ns // 1_000_000) if sig else now
            observations = parse_memories_json(raw, fallback)
    except CorruptFileError as exc:
        raise MigrationError(f"legacy migration stopped, nothing was changed: {exc}") from exc
    return MigrationPlan(knowledge_text, state_text, observations)
