"""state.md: short-lived status snapshots, one ``## key`` section each, pruned after a TTL.

Sections written here look like (the original's state.md entry format)::

    ## <key>
    <!-- updatedAt: YYYY-MM-DD -->
    <content, stripped and escaped with escape_body>

The rest of the file is free markdown that people (and the legacy migration) write by hand:
:func:`split_h2`/:func:`join_h2` keep every section that is not touched byte-for-byte.

Expiry (C-dream-state-ttl): a section written here is dated by its ``updatedAt`` line only, so a
date quoted in its content never expires it; a hand-written section is dated by the original
rule (first ``updatedAt: <date>``, else the first ``YYYY-MM-DD`` anywhere, heading included;
no date or an impossible date never expires). Decision: the preamble (text before the first
``## ``, normally ``# State``) is the file's header, not a snapshot, and is never pruned, even
when it mentions an old date (the original could delete it by accident of its chunking).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from .._docs import DocumentStore
from .._fs import validate_key
from .._fs_docs import FileDocuments
from .._lock import AgentLock
from .._markdown import (
    Section,
    escape_body,
    join_h2,
    meta_line,
    render_meta,
    split_h2,
    unescape_body,
)
from ..config import AgentPaths, Clock, Limits
from ..errors import InvalidInputError

DEFAULT_TEXT = "# State\n"
NEW_FILE_TEXT = "# State\n\n"
MAX_INPUT_CHARS = 1_000_000
"""Content longer than this is refused: state.md holds short snapshots."""

SNAPSHOT_CHARS = 200
"""Longest content of one reflex state line."""

_UPDATED_AT = re.compile(r"updatedAt[:\s]+(\d{4}-\d{2}-\d{2})", re.IGNORECASE)
_ANY_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class StateEntry:
    """One section: its key, its content (unescaped, stripped) and the date that ages it."""

    key: str
    content: str
    updated: date | None


def _to_date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def chunk_date(chunk: str) -> date | None:
    """The original's date of a hand-made chunk: ``updatedAt: D`` first, else any ``YYYY-MM-DD``."""
    match = _UPDATED_AT.search(chunk) or _ANY_DATE.search(chunk)
    if match is None:
        return None
    return _to_date(match.group(1) if match.re is _UPDATED_AT else match.group(0))


def _own_date(section: Section) -> date | None | bool:
    """The date of a section written here; False when the section is hand-written."""
    first = section.body.split("\n", 1)[0]
    meta = meta_line(first)
    if meta is None or meta[0] != "updatedAt":
        return False
    return _to_date(meta[1].strip())


def parse_state_entry(section: Section) -> StateEntry:
    """The entry a section holds (written here or by hand)."""
    own = _own_date(section)
    if own is False:
        return StateEntry(section.name, section.body.strip(), chunk_date(section.render()))
    rest = section.body.split("\n", 1)[1] if "\n" in section.body else ""
    updated = own if isinstance(own, date) else None
    return StateEntry(section.name, unescape_body(rest.strip()).strip(), updated)


def snapshot_line(entry: StateEntry) -> str:
    """``- key (YYYY-MM-DD): content`` on one line (no date when the entry has none)."""
    content = " ".join(entry.content.split())
    if len(content) > SNAPSHOT_CHARS:
        content = content[: SNAPSHOT_CHARS - 1] + "\u2026"
    dated = f" ({entry.updated.isoformat()})" if entry.updated else ""
    return f"- {entry.key}{dated}: {content}"


def render_state_entry(entry: StateEntry) -> Section:
    """The section for ``entry``; :func:`parse_state_entry` inverts it."""
    stamp = entry.updated.isoformat() if entry.updated else ""
    body = render_meta("updatedAt", stamp) + "\n" + escape_body(entry.content) + "\n"
    return Section.build(entry.key, body)


def prune_text(text: str, today: datetime, ttl_days: int) -> tuple[str, list[str]]:
    """Drop sections dated before ``today - ttl_days``; returns the new text and removed keys."""
    cutoff = today - timedelta(days=ttl_days)
    preamble, sections = split_h2(text)
    kept: list[Section] = []
    removed: list[str] = []
    for section in sections:
        updated = parse_state_entry(section).updated
        if updated is not None and _midnight(updated) < cutoff:
            removed.append(section.name)
        else:
            kept.append(section)
    return join_h2(preamble, kept), removed


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc)


def _check_content(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"content must be a string, got {type(value).__name__}")
    if len(value) > MAX_INPUT_CHARS:
        raise InvalidInputError(
            f"content is {len(value)} characters; state.md takes at most {MAX_INPUT_CHARS}"
        )
    if not value.strip():
        raise InvalidInputError("content is required (got an empty string)")
    return value.strip()


class StateFile:
    """state.md of one agent: upsert/clear snapshots, read them back, prune expired ones."""

    store_name = "state.md"

    def __init__(
        self,
        paths: AgentPaths,
        lock: AgentLock,
        limits: Limits,
        clock: Clock,
        *,
        documents: DocumentStore | None = None,
    ) -> None:
        self.path = paths.state
        self.documents = documents if documents is not None else FileDocuments(paths.root, lock)
        self._lock = lock
        self._limits = limits
        self._clock = clock

    def text(self) -> str:
        """The file as stored, or ``""`` when there is none."""
        return self.documents.read(self.store_name) or ""

    def entries(self) -> list[StateEntry]:
        return [parse_state_entry(s) for s in split_h2(self.text())[1]]

    def get(self, key: str) -> StateEntry | None:
        validate_key("state key", key)
        return next((e for e in self.entries() if e.key == key), None)

    def snapshot(self, max_lines: int | None = None) -> str:
        """The reflex prompt's state lines: one ``- key (date): content`` line for each of the
        first ``max_lines`` entries, content on one line and cut to :data:`SNAPSHOT_CHARS`.

        The original injected the first lines of the raw file, which spent them on the
        ``# State`` heading and the ``updatedAt`` comments; these lines carry the entries.
        """
        limit = self._limits.state_prompt_max_lines_reflex if max_lines is None else max_lines
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidInputError(f"max_lines must be a non-negative integer, got {limit!r}")
        return "\n".join(snapshot_line(entry) for entry in self.entries()[:limit])

    def update(
        self, key: str, content: str, *, day: date | None = None, undated: bool = False
    ) -> StateEntry:
        """Upsert ``## key`` dated ``day`` (default today, UTC; ``undated``: no date, so it
        never expires); an existing section keeps its position. The date ages the entry: it
        is pruned ``state_ttl_days`` after it."""
        validate_key("state key", key)
        if day is not None and (undated or not isinstance(day, date)):
            raise InvalidInputError("day must be a date, and not given with undated=True")
        today = self._clock().astimezone(timezone.utc).date()
        entry = StateEntry(key, _check_content(content), None if undated else day or today)
        with self.documents.lock():
            preamble, sections = split_h2(self.documents.read(self.store_name) or NEW_FILE_TEXT)
            fresh = render_state_entry(entry)
            index = next((i for i, s in enumerate(sections) if s.name == key), None)
            if index is not None:
                sections[index] = fresh
            else:
                if sections:
                    last = sections[-1]
                    sections[-1] = Section(last.name, last.heading, _ends_line(last.tail))
                elif preamble:
                    preamble = _ends_line(preamble)
                sections.append(fresh)
            self.documents.write(self.store_name, join_h2(preamble, sections))
        return entry

    def clear(self, key: str) -> bool:
        """Remove every ``## key`` section; False (and no write) when there is none."""
        validate_key("state key", key)
        with self.documents.lock():
            text = self.documents.read(self.store_name)
            if text is None:
                return False
            preamble, sections = split_h2(text)
            kept = [s for s in sections if s.name != key]
            if len(kept) == len(sections):
                return False
            self.documents.write(self.store_name, join_h2(preamble, kept) or DEFAULT_TEXT)
        return True

    def prune(self, ttl_days: int | None = None) -> list[str]:
        """Remove sections older than ``ttl_days`` (default ``Limits.state_ttl_days``)."""
        days = self._limits.state_ttl_days if ttl_days is None else ttl_days
        if isinstance(days, bool) or not isinstance(days, int) or days < 0:
            raise InvalidInputError(f"ttl_days must be a non-negative integer, got {days!r}")
        with self.documents.lock():
            text = self.documents.read(self.store_name)
            if text is None:
                return []
            pruned, removed = prune_text(text, self._clock(), days)
            if removed:
                self.documents.write(self.store_name, pruned if pruned.strip() else DEFAULT_TEXT)
        return removed


def _ends_line(text: str) -> str:
    """``text`` ending with a newline, so that an appended heading starts its own line."""
    return text if text.endswith("\n") else text + "\n"
