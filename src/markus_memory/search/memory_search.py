"""``memory_search``: keyword, BM25 and vector candidates over knowledge.md, fused by RRF.

:class:`MemorySearcher` takes the agent's observations and curated sections as data (AgentMemory
reads them from the knowledge layer) together with an opaque ``version`` of that data (the file
signature). Per version it prepares the corpus once and keeps the derived indexes in sync.

Every query runs the original keyword scoring (substring OR-match, phrase bonus, curated boost).
With a :class:`SearchIndex` the BM25 ranking is fused with it; with an :class:`Embedder` the
cosine ranking joins the fusion. An index or embedder failure degrades to what still works and
says so in :attr:`SearchResult.fallback`; it never raises to the caller.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..config import Settings
from ..errors import InvalidInputError, MarkusMemoryError
from .embedders import Embedder
from .hybrid import RRF_K as RRF_K_DEFAULT
from .hybrid import ranked, rrf
from .index import IndexDoc, KnowledgeIndex
from .keyword import (
    CURATED_TYPE,
    DEFAULT_CURATED_BOOST,
    DEFAULT_PREVIEW_CHARS,
    SOURCE_CURATED,
    SOURCE_OBSERVATION,
    Haystacks,
    ObservationLike,
    SectionLike,
    Source,
    curated_ids,
    observation_haystack,
    preview,
    section_haystack,
    tokenize,
)
from .vectors import VectorSet, embed_matrix, model_key, sync_vectors

log = logging.getLogger(__name__)

RRF_K = RRF_K_DEFAULT
CHUNK_CHARS = 400
# Fusion weights of the keyword, BM25 and vector rankings. On the labelled store in
# benchmarks/search_quality.py the original keyword ranking fused at weight 1 lowers MRR@10 from
# 0.958 (BM25 alone) to 0.938; at 0.25 it keeps 0.958 and still contributes the hits BM25 cannot
# see (substrings such as "postgres" in "PostgreSQL"), ranked after every BM25 hit.
# With all-MiniLM-L6-v2 (int8) vectors at weight 1 and the original 0.3 similarity floor, the 12
# paraphrase queries (no word shared with their target) go from MRR@10 0.19 (BM25) to 0.49 while
# the lexical ones stay at 0.958; weight 2 gains paraphrases (0.51) but costs lexical (0.924),
# floors 0-0.2 cost both.
KEYWORD_WEIGHT = 0.25
# Documents embedded inside one search call (newest first): the first hybrid search of a full
# store would otherwise embed ~550 texts (10-20 s with MiniLM on 2 busy cores). The rest follow
# over the next searches, or at once with sync()/rebuild() (AgentMemory.rebuild_search_index).
EMBED_BUDGET = 64
BM25_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0
DEFAULT_MIN_SIMILARITY = 0.3
# Methods and the original ``searchMethod`` strings they map to in the original tool result.
SearchMethod = Literal["recent", "keyword", "bm25", "hybrid"]
"""How a search found its hits: the newest observations (no query), the keyword fallback,
BM25, or BM25 fused with vectors."""
METHOD_RECENT: SearchMethod = "recent"
METHOD_KEYWORD: SearchMethod = "keyword"
METHOD_BM25: SearchMethod = "bm25"
METHOD_HYBRID: SearchMethod = "hybrid"


@dataclass(frozen=True)
class SearchHit:
    """One result of :meth:`MemorySearcher.search` (``source`` is ``"curated"`` for sections)."""

    id: str
    type: str
    content: str
    timestamp: datetime | None
    tags: tuple[str, ...]
    source: Source
    score: float
    section: str | None = None
    similarity: float | None = None


@dataclass(frozen=True)
class SearchResult:
    """Hits best first, and how they were found."""

    hits: list[SearchHit]
    method: SearchMethod
    query: str
    fallback: str | None = None

    @property
    def search_method(self) -> str | None:
        """The original tool's ``searchMethod`` (None for the empty-query listing)."""
        if self.method == METHOD_RECENT:
            return None
        if self.method == METHOD_HYBRID:
            lexical = any(hit.similarity is None for hit in self.hits)
            return "semantic+keyword" if lexical else "semantic"
        return "keyword"


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


def fuse_rrf(
    rankings: Sequence[Sequence[str]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion (:func:`hybrid.rrf`) as ``(id, score)`` best first; ties
    keep the order of first appearance."""
    scores = rrf(rankings, k=k, weights=weights)
    return [(doc_id, scores[doc_id]) for doc_id in ranked(scores)]


def recent(
    observations: Sequence[ObservationLike], limit: int, type: str | None = None
) -> list[SearchHit]:
    """The last ``limit`` observations (of ``type``), oldest first, as in ``get_entries``."""
    chosen = [o for o in observations if type is None or o.type == type]
    return [
        SearchHit(o.id, o.type, o.content, o.timestamp, tuple(o.tags), SOURCE_OBSERVATION, 0.0)
        for o in chosen[-limit:]
    ]


class MemorySearcher:
    """``memory_search`` for one agent over a BM25 index and optional embedder."""

    def __init__(
        self,
        agent_id: str,
        index: KnowledgeIndex | None = None,
        embedder: Embedder | None = None,
        *,
        curated_boost: float = DEFAULT_CURATED_BOOST,
        preview_chars: int = DEFAULT_PREVIEW_CHARS,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        rrf_k: int = RRF_K,
        weights: tuple[float, float, float] = (KEYWORD_WEIGHT, BM25_WEIGHT, VECTOR_WEIGHT),
        embed_budget: int | None = EMBED_BUDGET,
    ) -> None:
        self.agent_id = agent_id
        self.index = index
        self.embedder = embedder
        self.curated_boost = curated_boost
        self.preview_chars = preview_chars
        self.min_similarity = min_similarity
        self.rrf_k = rrf_k
        self.weights = weights
        self.embed_budget = embed_budget
        self._corpus: tuple[str, Corpus] | None = None
        self._vectors: tuple[str, str, VectorSet] | None = None

    def close(self) -> None:
        if self.index is not None:
            self.index.close()

    def corpus(
        self,
        observations: Sequence[ObservationLike],
        sections: Sequence[SectionLike],
        version: str | None,
    ) -> Corpus:
        """The prepared corpus, reused while ``version`` is unchanged."""
        if version is not None and self._corpus is not None and self._corpus[0] == version:
            return self._corpus[1]
        corpus = Corpus(observations, sections, preview_chars=self.preview_chars)
        self._corpus = None if version is None else (version, corpus)
        return corpus

    def sync(self, corpus: Corpus, version: str | None) -> None:
        """Bring the BM25 index (and vectors, with an embedder) up to ``corpus``."""
        if self.index is None:
            return
        self.index.sync(self.agent_id, corpus.docs, version)
        if self.embedder is not None:
            self._vector_set(corpus, version)

    def rebuild(self, corpus: Corpus, version: str | None) -> None:
        """Re-derive every index of this agent from ``corpus``."""
        if self.index is None:
            return
        self._vectors = None
        self.index.rebuild(self.agent_id, corpus.docs, version)
        if self.embedder is not None:
            self._vector_set(corpus, version)

    def search(
        self,
        query: str | None,
        observations: Sequence[ObservationLike],
        sections: Sequence[SectionLike] = (),
        *,
        version: str | None = None,
        limit: int = 10,
        type: str | None = None,
    ) -> SearchResult:
        """Hits for ``query`` (an empty query lists the most recent observations)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
        text = query or ""
        if not text.strip():
            return SearchResult(recent(observations, limit, type), METHOD_RECENT, text)
        corpus = self.corpus(observations, sections, version)
        tokens = tokenize(text)
        if not tokens:
            return SearchResult([], METHOD_KEYWORD, text)

        def allowed(doc_id: str) -> bool:
            return type is None or corpus.entries[doc_id].hit.type == type

        keyword = [
            (i, s) for i, s in corpus.keyword(text, tokens, self.curated_boost) if allowed(i)
        ]
        rankings: list[list[str]] = [[doc_id for doc_id, _ in keyword]]
        weights = [self.weights[0]]
        method, fallback = METHOD_KEYWORD, None
        depth = max(3 * limit, 30)
        similarity: dict[str, float] = {}
        if self.index is not None:
            try:
                self.index.sync(self.agent_id, corpus.docs, version)
                bm25 = self.index.bm25(self.agent_id, tokens, depth * 2)
                ranked = corpus.owners([doc_id for doc_id, _ in bm25])
                rankings.append([i for i in ranked if allowed(i)][:depth])
                weights.append(self.weights[1])
                method = METHOD_BM25
            except (sqlite3.Error, MarkusMemoryError) as exc:
                log.warning("BM25 index unavailable, keyword search only: %s", exc)
                fallback = f"bm25 unavailable: {exc}"
        if self.embedder is not None and self.index is not None and method == METHOD_BM25:
            try:
                similarity = self._semantic(corpus, version, text, depth, allowed)
            except Exception as exc:  # an embedder adapter may fail in any way; degrade
                log.warning("vector search unavailable, lexical search only: %s", exc)
                fallback = f"vectors unavailable: {exc}"
            if similarity:
                rankings.append(list(similarity))
                weights.append(self.weights[2])
                method = METHOD_HYBRID
        if len(rankings) == 1:
            fused = keyword
        else:
            fused = fuse_rrf(rankings, self.rrf_k, weights)
        hits = []
        for doc_id, score in fused[:limit]:
            base = corpus.entries[doc_id].hit
            hits.append(
                SearchHit(
                    base.id,
                    base.type,
                    base.content,
                    base.timestamp,
                    base.tags,
                    base.source,
                    score,
                    base.section,
                    similarity.get(doc_id),
                )
            )
        return SearchResult(hits, method, text, fallback)

    def _vector_set(
        self, corpus: Corpus, version: str | None, budget: int | None = None
    ) -> VectorSet:
        assert self.index is not None and self.embedder is not None
        key = model_key(self.embedder)
        cached = self._vectors
        if version is not None and cached is not None and cached[:2] == (version, key):
            return cached[2]
        vectors = sync_vectors(self.index, self.agent_id, self.embedder, corpus.docs, budget)
        self._vectors = None
        if version is not None and vectors.complete:
            self._vectors = (version, key, vectors)
        return vectors

    def _semantic(
        self,
        corpus: Corpus,
        version: str | None,
        text: str,
        depth: int,
        allowed: Callable[[str], bool],
    ) -> dict[str, float]:
        assert self.embedder is not None
        vectors = self._vector_set(corpus, version, self.embed_budget)
        query = embed_matrix(self.embedder, [text])[0]
        best: dict[str, float] = {}
        for doc_id, sim in vectors.top(query, depth * 2, self.min_similarity):
            owner = corpus.owner.get(doc_id)
            if owner is not None and owner not in best and allowed(owner):
                best[owner] = sim  # best-first, so a section keeps its best chunk
        return best


def open_memory_searcher(
    settings: Settings, agent_id: str, embedder: Embedder | None, index: KnowledgeIndex | None
) -> MemorySearcher:
    """The ``memory_search`` of one agent, with the settings' limits and ``index`` (the
    backend's knowledge index; keyword search only when it is None)."""
    limits = settings.limits
    return MemorySearcher(
        agent_id,
        index,
        embedder,
        curated_boost=limits.curated_search_boost,
        preview_chars=limits.curated_hit_preview_chars,
    )
