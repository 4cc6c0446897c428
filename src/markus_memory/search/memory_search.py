"""``memory_search``: keyword, BM25 and vector candidates over knowledge.md, fused by RRF.

:class:`MemorySearcher` takes the agent's observations and curated sections as data (AgentMemory
reads them from the knowledge layer) together with an opaque ``version`` of that data (the file
signature). Per version it prepares the corpus once and keeps the derived indexes in sync.

Every query runs the original keyword scoring (substring OR-match, phrase bonus, curated boost).
With the store's knowledge index (:mod:`markus_memory.storage.knowledge_index`) the BM25
ranking is fused with it; with an :class:`Embedder` the cosine ranking joins the fusion. An
index or embedder failure degrades to what still works and says so in
:attr:`SearchResult.fallback`; it never raises to the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..analysis import STOP_WORDS
from ..config import Settings
from ..errors import InvalidInputError, MarkusMemoryError
from ..storage.knowledge_index import KnowledgeIndex
from .corpus import Corpus, SearchHit
from .embedders import Embedder
from .hybrid import RRF_K as RRF_K_DEFAULT
from .hybrid import ranked, rrf
from .keyword import (
    DEFAULT_CURATED_BOOST,
    DEFAULT_PREVIEW_CHARS,
    SOURCE_OBSERVATION,
    ObservationLike,
    SectionLike,
    tokenize,
)
from .temporal import DATE_BOOST, question_times, temporal_boost
from .vectors import StoredVectors, embed_matrix, model_key, sync_vectors

log = logging.getLogger(__name__)

RRF_K = RRF_K_DEFAULT
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
        self.vectors = None if index is None else StoredVectors(index)
        self.embedder = embedder
        self.curated_boost = curated_boost
        self.preview_chars = preview_chars
        self.min_similarity = min_similarity
        self.rrf_k = rrf_k
        self.weights = weights
        self.embed_budget = embed_budget
        self._corpus: tuple[str, Corpus] | None = None

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
            self._embed(corpus)

    def rebuild(self, corpus: Corpus, version: str | None) -> None:
        """Re-derive every index of this agent from ``corpus``."""
        if self.index is None:
            return
        self.index.rebuild(self.agent_id, corpus.docs, version)
        if self.embedder is not None:
            self._embed(corpus)

    def search(
        self,
        query: str | None,
        observations: Sequence[ObservationLike],
        sections: Sequence[SectionLike] = (),
        *,
        version: str | None = None,
        limit: int = 10,
        type: str | None = None,
        now: datetime | None = None,
    ) -> SearchResult:
        """Hits for ``query`` (an empty query lists the most recent observations).

        A query naming a time ("on 2026-05-01", "in March 2026"; with ``now``, when it is
        asked, also "yesterday" or "last week") lifts the hits written then or speaking of it,
        as recall's time stage does (:func:`.temporal.temporal_boost`)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
        text = query or ""
        if not text.strip():
            return SearchResult(recent(observations, limit, type), METHOD_RECENT, text)
        tokens = [token for token in tokenize(text) if token not in STOP_WORDS]
        if not tokens:  # only stop words: about nothing the memory holds
            return SearchResult([], METHOD_KEYWORD, text)
        corpus = self.corpus(observations, sections, version)

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
                bm25 = self.index.search(self.agent_id, corpus.docs, version, text, depth * 2)
                ranked = corpus.owners([doc_id for doc_id, _ in bm25])
                rankings.append([i for i in ranked if allowed(i)][:depth])
                weights.append(self.weights[1])
                method = METHOD_BM25
            except MarkusMemoryError as exc:
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
        fused = _dated(text, fused, corpus, now)
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

    def _embed(self, corpus: Corpus, budget: int | None = None) -> None:
        """Store the vectors ``corpus`` lacks (at most ``budget``). Checked against the stored
        digests every time (one read): another host's rebuild or embedder can drop vectors
        without changing knowledge.md, so "this version was complete" is never remembered."""
        assert self.vectors is not None and self.embedder is not None
        sync_vectors(self.vectors, self.agent_id, self.embedder, corpus.docs, budget)

    def _semantic(
        self,
        corpus: Corpus,
        version: str | None,
        text: str,
        depth: int,
        allowed: Callable[[str], bool],
    ) -> dict[str, float]:
        assert self.embedder is not None
        assert self.vectors is not None
        self._embed(corpus, self.embed_budget)
        query = embed_matrix(self.embedder, [text])[0]
        best: dict[str, float] = {}
        key = model_key(self.embedder)
        found = self.vectors.nearest(self.agent_id, key, query, corpus.digests, depth * 2)
        for doc_id, sim in found:
            if sim < self.min_similarity:
                break
            owner = corpus.owner.get(doc_id)
            if owner is not None and owner not in best and allowed(owner):
                best[owner] = sim  # best-first, so a section keeps its best chunk
        return best


def _dated(
    query: str, fused: list[tuple[str, float]], corpus: Corpus, now: datetime | None
) -> list[tuple[str, float]]:
    """``fused`` with the time stage applied: an observation counts by its text and tags and
    when it was written, a curated section by its whole text."""
    wanted = question_times(query, now) if fused else []
    if not wanted:
        return fused

    def said(doc_id: str) -> tuple[str, datetime | None]:
        entry = corpus.entries[doc_id]
        return entry.hay, entry.hit.timestamp

    scores = temporal_boost(wanted, dict(fused), said, date_boost=DATE_BOOST)
    order = {doc_id: place for place, (doc_id, _) in enumerate(fused)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


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
