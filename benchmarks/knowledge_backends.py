"""memory_search on both backends: quality on the labelled store, latency, and agreement.

Run: ``python benchmarks/knowledge_backends.py [postgresql://…]`` (default: the URL in
``MARKUS_TEST_POSTGRES_URL``; without one only SQLite is measured). The knowledge index is
opened the way an agent opens it (:meth:`Backend.knowledge_index`), on a fresh ``data.db``
and on a fresh PostgreSQL schema (dropped afterwards). Prints, per backend, MRR@10, hit@1 and
hit@5 of the 48 lexical queries (and MRR@10 of the 12 paraphrases) for the BM25 ranking alone
and for the default ``memory_search`` (keyword + BM25), then the median and p95 latency of a
search (default and hybrid with the deterministic hash embedder of ``bench_search``), rounds
interleaved so machine load hits every case alike, and how many queries rank the same top 10
on both backends.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_search import HashEmbedder, measure  # noqa: E402
from benchmarks.search_fixture import Fixture, build  # noqa: E402
from benchmarks.search_quality import evaluate  # noqa: E402
from markus_memory.backend import Backend  # noqa: E402
from markus_memory.config import Settings  # noqa: E402
from markus_memory.search.memory_search import MemorySearcher  # noqa: E402

VERSION = "v1"


@contextmanager
def postgres_url(server: str) -> Iterator[str]:
    """``server`` with its search_path on a fresh schema, dropped on exit."""
    import psycopg

    schema = f"knowledge_engine_bench_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in server else "?"
    try:
        yield f"{server}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def searchers(settings: Settings, fixture: Fixture) -> dict[str, MemorySearcher]:
    index = Backend(settings).knowledge_index()
    assert index is not None, "the knowledge index did not open"
    out = {
        "bm25 alone": MemorySearcher("a", index, weights=(0.0, 1.0, 0.0)),
        "memory_search default": MemorySearcher("a", index),
        "hybrid (hash embedder)": MemorySearcher("h", index, HashEmbedder()),  # type: ignore[arg-type]
    }
    for searcher in out.values():
        searcher.sync(searcher.corpus(fixture.observations, fixture.sections, VERSION), VERSION)
    return out


def ranker(searcher: MemorySearcher, fixture: Fixture) -> Callable[[str], list[str]]:
    def rank(query: str) -> list[str]:
        result = searcher.search(
            query, fixture.observations, fixture.sections, version=VERSION, limit=10
        )
        return [hit.id for hit in result.hits if hit.score > 0]

    return rank


def report(name: str, found: dict[str, MemorySearcher], fixture: Fixture) -> None:
    for label in ("bm25 alone", "memory_search default"):
        rank = ranker(found[label], fixture)
        q = evaluate(fixture, rank)
        p = evaluate(fixture, rank, paraphrase=True)
        print(
            f"{name:9s} {label:24s} MRR@10 {q.mrr:.3f}  hit@1 {q.hit1:.2f}  hit@5 {q.hit5:.2f}"
            f"   paraphrases MRR@10 {p.mrr:.3f}"
        )


def main() -> None:
    fixture = build()
    server = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MARKUS_TEST_POSTGRES_URL")
    tmp = Path(tempfile.mkdtemp())
    backends: dict[str, dict[str, MemorySearcher]] = {
        "sqlite": searchers(Settings(home=tmp / "home"), fixture)
    }
    with postgres_url(server) if server else _nothing() as url:
        if url:
            settings = Settings(home=tmp / "pg-home", database_url=url)
            backends["postgres"] = searchers(settings, fixture)
        print(
            f"{len(fixture.observations)} observations + {len(fixture.sections)} curated "
            f"sections; {len(fixture.queries)} labelled queries"
        )
        for name, found in backends.items():
            report(name, found, fixture)
        _agreement(backends, fixture)
        queries = [q.query for q in fixture.queries]
        cases: dict[str, Callable[[str], object]] = {}
        for name, found in backends.items():
            for label in ("memory_search default", "hybrid (hash embedder)"):
                cases[f"{name} {label}"] = ranker(found[label], fixture)
        for label, (median, p95) in measure(cases, queries).items():
            print(f"latency {label:40s} median {median:7.3f} ms  p95 {p95:7.3f} ms")
        for found in backends.values():
            next(iter(found.values())).close()


def _agreement(backends: dict[str, dict[str, MemorySearcher]], fixture: Fixture) -> None:
    if len(backends) < 2:
        return
    lite, pg = (ranker(b["bm25 alone"], fixture) for b in backends.values())
    same = sum(lite(q.query) == pg(q.query) for q in fixture.queries)
    print(f"bm25 top 10 identical on both backends: {same} of {len(fixture.queries)} queries")


@contextmanager
def _nothing() -> Iterator[Any]:
    yield None


if __name__ == "__main__":
    main()
