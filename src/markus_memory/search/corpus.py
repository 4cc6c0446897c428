"""One version of an agent's searchable knowledge: the hits it can return and the documents it
indexes (observations whole, curated sections cut into chunks).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from ..storage.knowledge_index import IndexDoc
from .keyword import (
    CURATED_TYPE,
    DEFAULT_PREVIEW_CHARS,
    SOURCE_CURATED,
    SOURCE_OBSERVATION,
    Haystacks,
    KeywordHit,
    ObservationLike,
    SectionLike,
    curated_ids,
    observation_haystack,
    preview,
    section_haystack,
)

CHUNK_CHARS = 400


@dataclass(frozen=True)
class SearchHit(KeywordHit):
    """One result of :meth:`MemorySearcher.search` (``source`` is ``"curated"`` for sections),
    with its cosine ``similarity`` when vectors found it."""

    similarity: float | None = None


@dataclass(frozen=True)
class _Entry:
    hit: SearchHit
    hay: str


class Corpus:
    """One version of an agent's searchable documents, prepared for scoring and indexing."""

    def __init__(
        self,
        observations: Sequence[ObservationLike],
        sections: Sequence[SectionLike],
        *,
        preview_chars: int = DEFAULT_PREVIEW_CHARS,
    ) -> None:
        self.observations = list(observations)
        self.entries: dict[str, _Entry] = {}
        self.docs: list[IndexDoc] = []
        self.owner: dict[str, str] = {}
        self._haystacks: Haystacks | None = None
        self._entry_list: list[_Entry] | None = None
        for obs in self.observations:
            text = observation_haystack(obs)
            hit = SearchHit(
                obs.id,
                obs.type,
                obs.content,
                obs.timestamp,
                tuple(obs.tags),
                SOURCE_OBSERVATION,
                0.0,
            )
            if obs.id not in self.entries:
                self.entries[obs.id] = _Entry(hit, text.lower())
                self.docs.append(IndexDoc(obs.id, SOURCE_OBSERVATION, text))
                self.owner[obs.id] = obs.id
        for hit_id, section in curated_ids(sections):
            text = section_haystack(section)
            hit = SearchHit(
                hit_id,
                CURATED_TYPE,
                preview(text, preview_chars),
                None,
                (),
                SOURCE_CURATED,
                0.0,
                section=section.name.strip(),
            )
            if hit_id not in self.entries:
                self.entries[hit_id] = _Entry(hit, text.lower())
                for n, chunk in enumerate(chunks(section.body.strip())):
                    chunk_id = f"{hit_id}#{n}"
                    header = "## " + section.name.strip() + "\n"
                    self.docs.append(IndexDoc(chunk_id, SOURCE_CURATED, header + chunk))
                    self.owner[chunk_id] = hit_id

    @property
    def _order(self) -> list[_Entry]:
        if self._entry_list is None:
            self._entry_list = list(self.entries.values())
        return self._entry_list

    @functools.cached_property
    def digests(self) -> dict[str, str]:
        """The digest of each indexed document, by id."""
        return {doc.id: doc.digest for doc in self.docs}

    def owners(self, ranked: Sequence[str]) -> list[str]:
        """Index document ids (curated chunks) mapped to hit ids, first occurrence kept."""
        seen: set[str] = set()
        out: list[str] = []
        for doc_id in ranked:
            owner = self.owner.get(doc_id)
            if owner is not None and owner not in seen:
                seen.add(owner)
                out.append(owner)
        return out

    def keyword(self, query: str, tokens: Sequence[str], boost: float) -> list[tuple[str, float]]:
        """The original keyword ranking: ``(id, score)``, score desc, ties by id."""
        if self._haystacks is None:
            self._haystacks = Haystacks([entry.hay for entry in self.entries.values()])
        scored: list[tuple[str, float]] = []
        for which, score in self._haystacks.scores(tokens, query).items():
            entry = self._order[which]
            extra = boost if entry.hit.source == SOURCE_CURATED else 0.0
            scored.append((entry.hit.id, score + extra))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored


def chunks(body: str, size: int = CHUNK_CHARS) -> list[str]:
    """A curated body cut at line ends into pieces of about ``size`` characters (at least one).

    BM25 length normalisation buries a 3000-char section under short observations, and an
    embedding model reads only its first ~256 tokens; chunks are scored on their own and the
    section takes its best chunk.
    """
    pieces: list[str] = []
    current: list[str] = []
    length = 0
    for line in body.split("\n"):
        if current and length + len(line) > size:
            pieces.append("\n".join(current))
            current, length = [], 0
        current.append(line)
        length += len(line) + 1
    pieces.append("\n".join(current))
    return pieces
