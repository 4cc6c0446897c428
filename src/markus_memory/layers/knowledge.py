"""knowledge.md: curated sections and the ``## _observations`` buffer of one agent (semantic layer).

Every write takes the agent lock, re-reads the file, changes the parsed :class:`KnowledgeDoc`,
renders it and replaces the file atomically, so a person's edit to any part of the file survives
the next save (the original's cache overwrote hand edits to the observations). Reads use a
parse cache that is valid only while the document's version (:meth:`DocumentStore.version`)
is unchanged.

Caps (the original capped the whole file, then truncated the observations): they apply to the
curated part only, and a write that breaks one is refused (:mod:`._knowledge_caps`); the
observation block is never touched by a curated write. The observation buffer keeps the newest
``Limits.max_observations`` entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from .._docs import DocumentStore
from .._fs_docs import FileDocuments
from .._lock import AgentLock
from .._markdown import sanitize_h2
from ..config import AgentPaths, Clock, Limits, from_epoch_ms
from ..errors import InvalidInputError
from ._knowledge_caps import (
    Refused,
    WriteResult,
    check_section_name,
    demoted_note,
    imported_observation,
    measure,
    new_observation,
    validated,
)
from ._knowledge_format import (
    CuratedSection,
    KnowledgeDoc,
    Memo,
    Observation,
    check_text,
    curated_size,
    curated_text,
    parse_knowledge,
    render_knowledge,
)

__all__ = [
    "CuratedSection",
    "KnowledgeDoc",
    "KnowledgeFile",
    "Observation",
    "WriteResult",
    "curated_size",
    "parse_knowledge",
    "render_knowledge",
]

NEW_FILE_PREAMBLE = "# Knowledge"
WRITE_MODES = ("replace", "patch", "append")
_T = TypeVar("_T")


def _check_limit(limit: object) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise InvalidInputError(f"limit must be a non-negative integer, got {limit!r}")
    return limit


class KnowledgeFile:
    """The knowledge.md of one agent."""

    store_name = "knowledge.md"

    def __init__(
        self,
        paths: AgentPaths,
        lock: AgentLock,
        limits: Limits,
        clock: Clock,
        *,
        documents: DocumentStore | None = None,
    ) -> None:
        self.path = paths.knowledge
        self.documents = documents if documents is not None else FileDocuments(paths.root, lock)
        self._limits = limits
        self._clock = clock
        self._cache: tuple[object, str, KnowledgeDoc] | None = None
        self._memo: Memo = {}

    # ---- reading -------------------------------------------------------------------------

    def _load(self, *, verify_text: bool) -> KnowledgeDoc:
        """The parsed file (empty doc when absent). Callers get a copy they may change."""
        sig = self.documents.version(self.store_name)
        cached = self._cache
        if cached is not None and cached[0] == sig and sig is not None and not verify_text:
            return cached[2].copy()
        text = self.documents.read(self.store_name)
        if text is None:
            self._cache = None
            return KnowledgeDoc(NEW_FILE_PREAMBLE)
        if cached is not None and cached[1] == text:
            doc = cached[2]
        else:
            fallback = from_epoch_ms(sig.modified_ns // 1_000_000) if sig else self._clock()
            doc = parse_knowledge(text, fallback)
        self._cache = (sig, text, doc)
        return doc.copy()

    def read(self) -> KnowledgeDoc:
        return self._load(verify_text=False)

    def text(self) -> str:
        return self.documents.read(self.store_name) or ""

    def exists(self) -> bool:
        return self.documents.exists(self.store_name)

    def observations(self, type: str | None = None, limit: int | None = None) -> list[Observation]:
        """Observations in chronological order, optionally of one type; the last ``limit``."""
        found = [o for o in self.read().observations if type is None or o.type == type]
        return found[-_check_limit(limit) :] if limit else found

    def observations_by_tag(self, tag: str, limit: int | None = None) -> list[Observation]:
        found = [o for o in self.read().observations if tag in o.tags]
        return found[-_check_limit(limit) :] if limit else found

    def sections(self) -> list[CuratedSection]:
        return self.read().sections

    def section(self, name: str) -> str | None:
        """The stripped body of the section whose heading is exactly ``name``; None if absent."""
        doc = self.read()
        index = doc.section_index(name)
        return None if index is None else doc.sections[index].body.strip()

    def curated_text(self, exclude: Iterable[str] = ()) -> str:
        """The curated part (preamble and sections, no observation block), right-stripped;
        sections named in ``exclude`` are left out (the original's ``…Excluding(names)``).
        """
        doc = self.read()
        skip = {exclude} if isinstance(exclude, str) else set(exclude)
        doc.sections = [s for s in doc.sections if s.name not in skip]
        return curated_text(doc).rstrip()

    def curated_chars(self) -> int:
        """The size of the curated part, as every cap, command, prompt and page reports it."""
        return curated_size(self.read())

    # ---- writing -------------------------------------------------------------------------

    def _write(self, change: Callable[[KnowledgeDoc], _T]) -> _T:
        """Lock, re-read, ``change`` the doc in place, write once; return ``change``'s result."""
        with self.documents.lock():
            for _attempt in range(3):
                seen = self.documents.version(self.store_name)
                doc = self._load(verify_text=True)
                result = change(doc)
                doc.observations = doc.observations[-self._limits.max_observations :]
                text = render_knowledge(doc, self._memo)
                # An editor that does not take the lock may have saved meanwhile: start again.
                if self.documents.version(self.store_name) == seen:
                    break
            self.documents.write(self.store_name, text)
            self._cache = (self.documents.version(self.store_name), text, doc.copy())
            return result

    def save_observation(
        self,
        content: str,
        type: str = "fact",
        tags: Sequence[str] = (),
        *,
        id: str | None = None,
        timestamp: datetime | None = None,
    ) -> Observation:
        """Append one observation (content stripped; an unknown type becomes ``note``).

        Raises :class:`InvalidInputError` before writing anything for content that is not a
        non-empty string, tags that are not strings or contain a comma, ``-->`` or a control
        character, or an id with white space.
        """
        obs = new_observation(content, type, tags, id, timestamp, self._clock)
        self._write(lambda doc: doc.observations.append(obs))
        return obs

    def add_observations(self, observations: Iterable[Observation]) -> int:
        """Bulk import (legacy migration): skip empty content and ids already present, clean
        tags and invalid Unicode instead of refusing them, keep the buffer chronological.
        Returns how many were added.
        """
        incoming = [o for o in map(imported_observation, observations) if o is not None]

        def change(doc: KnowledgeDoc) -> int:
            known = {o.id for o in doc.observations}
            fresh = []
            for obs in incoming:
                if obs.id not in known:
                    known.add(obs.id)
                    fresh.append(obs)
            doc.observations = sorted(doc.observations + fresh, key=lambda o: o.timestamp)
            return len(fresh)

        return self._write(change) if incoming else 0

    def remove_observations(self, ids: Iterable[str]) -> int:
        """Remove every observation whose id is in ``ids``; writes only if something matched."""
        if isinstance(ids, str):
            raise InvalidInputError("ids must be a list of observation ids, not one string")
        wanted = set(ids)
        return self._remove(lambda o: o.id in wanted)

    def remove_observations_by_tag(self, tag: str) -> int:
        return self._remove(lambda o: tag in o.tags)

    def _remove(self, matches: Callable[[Observation], bool]) -> int:
        with self.documents.lock():
            if not any(matches(o) for o in self.read().observations):
                return 0

            def change(doc: KnowledgeDoc) -> int:
                kept = [o for o in doc.observations if not matches(o)]
                removed = len(doc.observations) - len(kept)
                doc.observations = kept
                return removed

            return self._write(change)

    def replace_observations(self, remove_ids: Iterable[str], new: Observation) -> Observation:
        """Remove ``remove_ids`` and append ``new`` (a merge) in one atomic write."""
        obs = new_observation(new.content, new.type, new.tags, new.id, new.timestamp, self._clock)
        wanted = set(remove_ids)

        def change(doc: KnowledgeDoc) -> None:
            doc.observations = [o for o in doc.observations if o.id not in wanted] + [obs]

        self._write(change)
        return obs

    def update_section(self, name: str, content: str, mode: str = "replace") -> WriteResult:
        """Replace a curated section, or patch it (``existing + "\\n" + content``).

        ``mode="append"`` is the tool layer's alias of ``"patch"``. A new section goes above the
        observation block. ``## `` line starts in ``content`` become ``### ``; everything else
        (``$1``, ``\\1`` …) is stored verbatim. A write that breaks a cap returns ``ok=False``.
        """
        section = check_section_name(name)
        if not isinstance(content, str):
            raise InvalidInputError(
                f"section content must be a string, got {type(content).__name__}"
            )
        check_text("section content", content)
        if mode not in WRITE_MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(WRITE_MODES)}; got {mode!r}")

        def change(doc: KnowledgeDoc) -> WriteResult:
            before = curated_size(doc)
            index = doc.section_index(section)
            existing = doc.sections[index].body.strip() if index is not None else ""
            text = existing + "\n" + content if mode != "replace" and existing else content
            body = sanitize_h2(text).strip("\n").rstrip()
            new = CuratedSection(section, body)
            if index is None:
                doc.sections.append(new)
            else:
                doc.sections[index] = new
            result = measure(self._limits, section, len(body), curated_size(doc), before)
            if not result.ok:
                raise Refused(result)
            return replace(result, note=demoted_note(content))

        try:
            return self._write(change)
        except Refused as refusal:
            return refusal.result

    def create(self, text: str = "# Knowledge\n") -> bool:
        """Write ``text`` (normalised through the parser) as knowledge.md if there is none yet."""
        with self.documents.lock():
            if self.documents.exists(self.store_name):
                return False
            self.documents.write(
                self.store_name, render_knowledge(parse_knowledge(text, self._clock()))
            )
            return True

    @contextmanager
    def transaction(self) -> Iterator[KnowledgeDoc]:
        """A locked, fresh doc to change freely; validated and written once when the block ends.

        Bodies are sanitised (``## `` → ``### ``) and the observation cap applied. An invalid
        observation or section name, a changed section over its cap, or a curated part grown
        past its cap raises :class:`InvalidInputError` and writes nothing; so does an exception
        inside the block. Keep the block short (no model calls inside): the lock is held
        throughout, and an editor that ignores the lock and saves meanwhile is overwritten.
        """
        with self.documents.lock():
            original = self._load(verify_text=True)
            doc = original.copy()
            yield doc
            checked = validated(original, doc, self._limits, self._clock)
            self._write(lambda current: _assign(current, checked))


def _assign(target: KnowledgeDoc, source: KnowledgeDoc) -> None:
    target.preamble, target.sections = source.preamble, source.sections
    target.observations = source.observations
