"""NOTEBOOK.md: the agent's keyed working notes (4 agent slots, system/cpp entries, eviction).

Format (the original Markus one)::

    # Notebook

    ## <key>
    <!-- updated: <ISO> -->
    <!-- managed: agent|system|cpp -->
    <text>

Entry text is stored stripped and escaped with :func:`escape_body`, so a text that starts with
``## …`` (the triage-decision block) or contains a metadata-looking line reloads unchanged
(in the original such a body turned into phantom entries after a restart). Files written by
the original read as the original read them, except
that CRLF headings and metadata are recognised and a body line starting with a backslash loses
that one backslash (the escape marker).

Decisions where the original was silent or buggy:

* Text over the per-entry cap is **cut** (as the original does) and reported with
  ``UpsertResult.truncated=True`` and ``stored_chars``/``limit``, so the tool can tell the model.
  System/cpp entries are capped too (the original left them
  uncapped). Inputs over :data:`MAX_INPUT_CHARS` are refused.
* An ``agent`` write or a ``clear(key)`` on a system/cpp key raises :class:`RefusedError` (an
  :class:`InvalidInputError`) unless ``allow_system=True`` is passed (the original let agents
  overwrite system keys). ``clear()`` removes agent entries only.
* Every write persists before returning (no debounce), under the agent lock, atomically.
* An entry without ``<!-- updated -->`` is dated by the file's mtime, never "now" (the
  original's "now" made such entries never the eviction victim).
* A hand-written preamble (text before the first entry) is kept; duplicate keys in a hand-written
  file resolve like the original's map: the later text wins, the first position is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Literal

from .._docs import DocumentStore
from .._fs import validate_key
from .._fs_docs import FileDocuments
from .._lock import AgentLock
from .._markdown import escape_body, h2_name, meta_line, render_meta, unescape_body
from ..config import AgentPaths, Clock, Limits, iso_ms, parse_iso
from ..errors import CorruptFileError, InvalidInputError, RefusedError

Managed = Literal["agent", "system", "cpp"]
MANAGED_VALUES: tuple[Managed, ...] = ("agent", "system", "cpp")
DEFAULT_PREAMBLE = "# Notebook"
MAX_INPUT_CHARS = 1_000_000
"""Text longer than this is a caller bug, refused outright rather than cut to the entry cap."""


@dataclass(frozen=True)
class NotebookEntry:
    """One ``## key`` entry: stripped, unescaped text and its metadata."""

    key: str
    text: str
    managed: Managed
    updated_at: datetime


@dataclass(frozen=True)
class NotebookDoc:
    """A parsed NOTEBOOK.md: the preamble (``# Notebook``) and the entries in file order."""

    preamble: str
    entries: tuple[NotebookEntry, ...]


@dataclass(frozen=True)
class UpsertResult:
    """What an upsert did: the evicted agent key, if any, and whether the text was cut."""

    key: str
    evicted: str | None
    truncated: bool
    stored_chars: int = 0
    limit: int = 0


def parse_notebook(text: str, default_time: datetime) -> NotebookDoc:
    """Parse NOTEBOOK.md text; entries without ``updated`` get ``default_time``."""
    preamble_lines: list[str] = []
    order: list[str] = []
    found: dict[str, NotebookEntry] = {}
    current: tuple[str, list[str], Managed, datetime] | None = None
    default_time = _to_ms(default_time)

    def finish() -> None:
        if current is None:
            return
        key, body, managed, updated = current
        text = unescape_body("\n".join(body).strip()).strip()
        entry = NotebookEntry(key, text, managed, updated)
        if key not in found:
            order.append(key)
        found[key] = entry

    for line in text.split("\n"):
        name = h2_name(line)
        if name is not None:
            finish()
            current = (name, [], "agent", default_time)
            continue
        if current is None:
            preamble_lines.append(line)
            continue
        meta = meta_line(line)
        if meta is not None and meta[0] == "updated":
            moment = parse_iso(meta[1])
            if moment is not None and moment.year >= 1000:  # iso_ms writes 4-digit years
                current = (current[0], current[1], current[2], _to_ms(moment))
            continue
        if meta is not None and meta[0] == "managed":
            if meta[1] in MANAGED_VALUES:
                current = (current[0], current[1], meta[1], current[3])
            continue
        current[1].append(line)
    finish()
    preamble = "\n".join(preamble_lines).rstrip() or DEFAULT_PREAMBLE
    return NotebookDoc(preamble, tuple(found[key] for key in order))


def _to_ms(moment: datetime) -> datetime:
    """UTC, cut to the millisecond: what the file can hold."""
    utc = moment.astimezone(timezone.utc)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def utf8_damage(data: bytes, most: int = 1000) -> list[tuple[int, int, int]]:
    """``(line, column, byte)`` (1-based; the column counts bytes) of every byte of ``data``
    that is not part of valid UTF-8, at most ``most`` of them."""
    found: list[tuple[int, int, int]] = []
    position = 0
    while len(found) < most:
        try:
            data[position:].decode("utf-8")
        except UnicodeDecodeError as exc:
            for at in range(position + exc.start, position + exc.end):
                line_start = data.rfind(b"\n", 0, at) + 1
                found.append((data.count(b"\n", 0, at) + 1, at - line_start + 1, data[at]))
            position += exc.end
        else:
            break
    return found[:most]


def repair_utf8(data: bytes) -> bytes:
    """``data`` with each invalid UTF-8 sequence replaced by U+FFFD; every other byte kept."""
    return data.decode("utf-8", errors="replace").encode("utf-8")


def render_notebook(doc: NotebookDoc) -> str:
    """The exact Markus layout; ``parse_notebook(render_notebook(d), t) == d`` for stored docs."""
    lines = [doc.preamble, ""]
    for entry in doc.entries:
        lines += [
            "## " + entry.key,
            render_meta("updated", iso_ms(entry.updated_at)),
            render_meta("managed", entry.managed),
            escape_body(entry.text),
            "",
        ]
    return "\n".join(lines)


def age_label(updated_at: datetime, now: datetime) -> str:
    """The original's age label: ``just now``, ``recent``, ``~1h ago``, ``5h ago`` (JS rounding)."""
    age_ms = (now - updated_at).total_seconds() * 1000
    hours = math.floor(age_ms / 3_600_000 + 0.5)
    if age_ms < 5 * 60_000:
        return "just now"
    if age_ms < 30 * 60_000:
        return "recent"
    if age_ms < 2 * 3_600_000:
        return f"~{hours}h ago"
    return f"{hours}h ago"


def _check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > MAX_INPUT_CHARS:
        raise InvalidInputError(
            f"{what} is {len(value)} characters; inputs over {MAX_INPUT_CHARS} are refused"
        )
    stripped = value.strip()
    if not stripped:
        raise InvalidInputError(f"{what} is required (got an empty string)")
    return stripped


def _check_managed(value: object) -> Managed:
    if value not in MANAGED_VALUES:
        raise InvalidInputError(f"managed must be one of agent, system, cpp; got {value!r}")
    return value


def _check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be a boolean, got {type(value).__name__}")
    return value


class Notebook:
    """NOTEBOOK.md of one agent. Every method re-reads the file; every write is durable."""

    store_name = "NOTEBOOK.md"

    def __init__(
        self,
        paths: AgentPaths,
        lock: AgentLock,
        limits: Limits,
        clock: Clock,
        *,
        documents: DocumentStore | None = None,
    ) -> None:
        self.path = paths.notebook
        self.documents = documents if documents is not None else FileDocuments(paths.root, lock)
        self._lock = lock
        self._limits = limits
        self._clock = clock
        self._cache: tuple[object, NotebookDoc] | None = None

    # reading

    def read(self) -> NotebookDoc:
        """The parsed file (cached while its signature is unchanged)."""
        return self._load(use_cache=True)

    def _load(self, *, use_cache: bool) -> NotebookDoc:
        sig = self.documents.version(self.store_name)
        if use_cache and sig is not None and self._cache is not None and self._cache[0] == sig:
            return self._cache[1]
        text = self._read()
        if text is None:
            return NotebookDoc(DEFAULT_PREAMBLE, ())
        modified = sig.modified_ns if sig else 0
        default_time = datetime.fromtimestamp(modified / 1e9, tz=timezone.utc)
        doc = parse_notebook(text, default_time)
        self._cache = (sig, doc)
        return doc

    def entries(self) -> list[NotebookEntry]:
        return list(self.read().entries)

    def get(self, key: str) -> NotebookEntry | None:
        validate_key("notebook key", key)
        return next((e for e in self.read().entries if e.key == key), None)

    def text(self) -> str:
        """The file as stored, or ``""`` when there is none."""
        return self._read() or ""

    def _read(self) -> str | None:
        """The stored text; bytes that are not UTF-8 are reported with their line."""
        try:
            return self.documents.read(self.store_name)
        except CorruptFileError as exc:
            if not isinstance(exc.__cause__, UnicodeDecodeError):
                raise
            try:
                damage = utf8_damage(exc.path.read_bytes())
            except OSError:
                raise exc from None
            if not damage:
                raise
            line, column, byte = damage[0]
            raise CorruptFileError(
                exc.path,
                f"line {line}, column {column}: byte 0x{byte:02x} is not valid UTF-8 "
                f"({len(damage)} bad byte(s) in all); `markus-memory doctor --fix` replaces "
                "them and keeps every other byte",
            ) from exc.__cause__

    # writing

    def upsert(
        self, key: str, text: str, managed: Managed = "agent", *, allow_system: bool = False
    ) -> UpsertResult:
        """Insert or replace ``key``; an existing key keeps its position.

        A new agent key beyond the agent-slot limit evicts the agent entry with the oldest
        ``updated_at`` (ties: the earliest in the file). An agent write over a system/cpp key
        raises InvalidInputError unless ``allow_system=True``.
        """
        validate_key("notebook key", key)
        body = _check_text(text, "content")
        kind = _check_managed(managed)
        _check_flag(allow_system, "allow_system")
        limit = (
            self._limits.notebook_max_chars_per_entry
            if kind == "agent"
            else self._limits.notebook_max_chars_per_system_entry
        )
        truncated = len(body) > limit
        if truncated:
            body = body[:limit].rstrip()
        with self.documents.lock():
            doc = self._load(use_cache=False)  # writes never trust a cache
            entries = list(doc.entries)
            index = next((i for i, e in enumerate(entries) if e.key == key), None)
            if index is not None and kind == "agent" and entries[index].managed != "agent":
                if not allow_system:
                    raise RefusedError(
                        f"notebook key {key!r} is managed by the {entries[index].managed}; "
                        "choose another key (agent writes never replace system entries)"
                    )
            evicted = None
            becomes_agent = kind == "agent" and (index is None or entries[index].managed != "agent")
            agents = [e for e in entries if e.managed == "agent" and e.key != key]
            if becomes_agent and agents and len(agents) >= self._limits.notebook_max_agent_entries:
                victim = min(agents, key=lambda e: e.updated_at)  # min keeps the first tie
                evicted = victim.key
                entries = [e for e in entries if e.key != victim.key]
                index = next((i for i, e in enumerate(entries) if e.key == key), None)
            entry = NotebookEntry(key, body, kind, self._now())
            if index is None:
                entries.append(entry)
            else:
                entries[index] = entry
            self._write(replace(doc, entries=tuple(entries)))
        return UpsertResult(key, evicted, truncated, len(body), limit)

    def clear(
        self, key: str | None = None, all: bool = False, *, allow_system: bool = False
    ) -> int:
        """Remove one entry (``key``), every agent entry (no key) or everything (``all=True``).

        Returns how many entries were removed; the file is written only when that is > 0.
        """
        _check_flag(all, "all")
        _check_flag(allow_system, "allow_system")
        if key is not None:
            validate_key("notebook key", key)
            if all:
                raise InvalidInputError("pass either key or all=True, not both")
        with self.documents.lock():
            doc = self._load(use_cache=False)  # writes never trust a cache
            if key is not None:
                match = next((e for e in doc.entries if e.key == key), None)
                if match is not None and match.managed != "agent" and not allow_system:
                    raise RefusedError(
                        f"notebook key {key!r} is managed by the {match.managed}; "
                        "pass allow_system=True to remove it"
                    )
            kept = tuple(e for e in doc.entries if not _doomed(e, key, all))
            removed = len(doc.entries) - len(kept)
            if removed:
                self._write(replace(doc, entries=kept))
        return removed

    def _now(self) -> datetime:
        return _to_ms(self._clock())

    def _write(self, doc: NotebookDoc) -> None:
        self.documents.write(self.store_name, render_notebook(doc))
        self._cache = None  # re-stat on the next read: another process may write right after


def _doomed(entry: NotebookEntry, key: str | None, everything: bool) -> bool:
    if key is not None:
        return entry.key == key
    return everything or entry.managed == "agent"
