"""Retrieval quality of memory_search variants on the labelled synthetic store.

Run: ``python benchmarks/search_quality.py [--minilm]``. Prints MRR@10, hit@1 and hit@5 for
the original keyword ranking, the store's BM25 (the knowledge index in a fresh ``data.db``,
terms from the one analyser) and keyword+BM25 fusion; with ``--minilm`` the vector variants.
``benchmarks/knowledge_backends.py`` measures the same on PostgreSQL.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from benchmarks.search_fixture import Fixture, build  # noqa: E402
from markus_memory.search.corpus import Corpus  # noqa: E402
from markus_memory.search.embedders import Embedder  # noqa: E402
from markus_memory.search.keyword import tokenize  # noqa: E402
from markus_memory.search.memory_search import (  # noqa: E402
    BM25_WEIGHT,
    KEYWORD_WEIGHT,
    MemorySearcher,
    fuse_rrf,
)
from markus_memory.search.vectors import embed_matrix, model_key  # noqa: E402
from markus_memory.storage.knowledge_index import KnowledgeIndex  # noqa: E402
from markus_memory.storage.knowledge_schema import open_sqlite_index  # noqa: E402

Ranker = Callable[[str], list[str]]


@dataclass(frozen=True)
class Quality:
    mrr: float
    hit1: float
    hit5: float


def evaluate(fixture: Fixture, ranker: Ranker, *, paraphrase: bool = False) -> Quality:
    """Quality over the lexical queries, or over the paraphrase subset."""
    chosen = [q for q in fixture.queries if q.paraphrase == paraphrase]
    rr = h1 = h5 = 0.0
    for labelled in chosen:
        ranked = ranker(labelled.query)[:10]
        if labelled.relevant in ranked:
            position = ranked.index(labelled.relevant) + 1
            rr += 1 / position
            h1 += position == 1
            h5 += position <= 5
    n = len(chosen)
    return Quality(rr / n, h1 / n, h5 / n)


def bm25_index(fixture: Fixture) -> KnowledgeIndex:
    index = open_sqlite_index(Path(tempfile.mkdtemp()) / "data.db")
    index.sync("a", Corpus(fixture.observations, fixture.sections).docs)
    return index


def rankers(fixture: Fixture, embedder: Embedder | None = None) -> dict[str, Ranker]:
    corpus = Corpus(fixture.observations, fixture.sections)
    out: dict[str, Ranker] = {}

    def keyword(query: str) -> list[str]:
        return [i for i, _ in corpus.keyword(query, tokenize(query), 0.25)]

    out["keyword (original)"] = keyword
    default = bm25_index(fixture)
    out["bm25"] = _bm25_ranker(default, corpus)
    for weight in (1.0, 0.5, 0.25):
        out[f"rrf(keyword x{weight}, bm25)"] = _fused(keyword, out["bm25"], weight)
    out["MemorySearcher default"] = lambda q: [
        h.id
        for h in MemorySearcher("a", default).search(q, fixture.observations, fixture.sections).hits
    ]
    if embedder is not None:
        hybrid = MemorySearcher("a", default, embedder)
        hybrid.sync(hybrid.corpus(fixture.observations, fixture.sections, "v"), "v")
        out["vectors only (min similarity 0)"] = lambda q: _vector_ranking(hybrid, fixture, q)
        for weight in (1.0, 0.5):
            searcher = MemorySearcher(
                "a", default, embedder, weights=(KEYWORD_WEIGHT, BM25_WEIGHT, weight)
            )
            out[f"hybrid, vector weight {weight}"] = _searcher_ranker(searcher, fixture)
    return out


def _searcher_ranker(searcher: MemorySearcher, fixture: Fixture) -> Ranker:
    return lambda q: [
        h.id for h in searcher.search(q, fixture.observations, fixture.sections, version="v").hits
    ]


def _vector_ranking(searcher: MemorySearcher, fixture: Fixture, query: str) -> list[str]:
    corpus = searcher.corpus(fixture.observations, fixture.sections, "v")
    assert searcher.embedder is not None and searcher.vectors is not None
    vector = embed_matrix(searcher.embedder, [query])[0]
    key = model_key(searcher.embedder)
    top = searcher.vectors.nearest(searcher.agent_id, key, vector, corpus.digests, 60)
    return corpus.owners([doc_id for doc_id, _ in top])


def _bm25_ranker(index: KnowledgeIndex, corpus: Corpus) -> Ranker:
    return lambda q: corpus.owners([i for i, _ in index.rank("a", q, 60)])


def _fused(first: Ranker, second: Ranker, weight: float) -> Ranker:
    return lambda q: [i for i, _ in fuse_rrf([first(q), second(q)[:30]], weights=[weight, 1.0])]


def main(embedder: Embedder | None = None) -> None:
    fixture = build()
    if embedder is None and "--minilm" in sys.argv:
        from markus_memory.search.embedders import MiniLMEmbedder

        embedder = MiniLMEmbedder()
    print(
        f"{len(fixture.queries)} labelled queries over {len(fixture.observations)} "
        f"observations + {len(fixture.sections)} curated sections "
        f"({fixture.curated_chars} curated chars)"
    )
    print(f"{'':40s} {'lexical queries':>22s} {'paraphrases (no shared word)':>30s}")
    print(
        f"{'variant':40s} {'MRR@10':>7s} {'hit@1':>6s} {'hit@5':>6s}   {'MRR@10':>7s} {'hit@5':>6s}"
    )
    for name, ranker in rankers(fixture, embedder).items():
        q = evaluate(fixture, ranker)
        p = evaluate(fixture, ranker, paraphrase=True)
        print(f"{name:40s} {q.mrr:7.3f} {q.hit1:6.2f} {q.hit5:6.2f}   {p.mrr:7.3f} {p.hit5:6.2f}")


if __name__ == "__main__":
    main()
