"""Inverted lists over a long history's vectors (``storage/recall/vector_lists.py``), on SQLite
and on PostgreSQL without pgvector (the test server): made
at the threshold, a new generation when the vectors double (older vectors stay in their
lists), every vector in a list, a search that reads the nearest lists of every generation
and still finds the exact neighbours of clustered vectors, the lexical candidates always
scored, filters applied, and a store from before the lists upgraded in place. The threshold
is lowered so a test stores hundreds of vectors, not tens of thousands."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.recall import vector_lists
from markus_memory.storage.recall.contract import RecallFilters
from markus_memory.storage.recall.rank import agent_key
from markus_memory.storage.recall.vector_scan import nearest_in_chunks

from .pg import postgres_schema_url

np = pytest.importorskip("numpy")

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
MODEL = "test-model:16"
AGENT = "al"
Store = Any  # a SqliteStore, or a PostgresStore on a server without pgvector


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_lists, "LISTS_FROM", 400)
    monkeypatch.setattr(vector_lists, "MIN_LISTS", 8)
    monkeypatch.setattr(vector_lists, "SAMPLE_CHUNK", 16)  # lists made from several chunks


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens a store on one database: a ``data.db``, or a fresh schema of the test server
    (skipped when that server has pgvector, which searches without lists)."""
    if request.param == "sqlite":
        yield lambda: SqliteStore(tmp_path / "data.db")
        return
    from markus_memory.storage._postgres.store import PostgresStore

    with postgres_schema_url() as url:
        probe = PostgresStore(url)
        has_pgvector = probe.transcripts.vector_schema() is not None
        probe.close()
        if has_pgvector:
            pytest.skip("the test server has pgvector, which searches without lists")
        yield lambda: PostgresStore(url)


@pytest.fixture
def store(opener: Callable[[], Store]) -> Iterator[Store]:
    backend = opener()
    yield backend
    backend.close()


def clustered(rng: np.random.Generator, n: int, centres: int = 24, dim: int = 16) -> np.ndarray:
    middle = rng.standard_normal((centres, dim)).astype(np.float32)
    picked = middle[rng.integers(centres, size=n)]
    out = picked + 0.35 * rng.standard_normal(picked.shape).astype(np.float32)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def add(store: Store, vectors: np.ndarray, first: int = 0, batch: int = 100) -> list[int]:
    """One message per vector (three sessions, round robin), stored in batches as the
    embedder does; their ids."""
    for n in range(first, first + len(vectors)):
        store.transcripts.index_message(
            AGENT, f"s{n % 3}", n, "user", f"message {n}", T0 + timedelta(n)
        )
    ids = [rowid for rowid, _ in store.transcripts.unvectored(AGENT, MODEL, len(vectors) + 1)]
    for at in range(0, len(ids), batch):
        part = zip(ids[at : at + batch], vectors[at : at + batch], strict=True)
        rows = [(i, v.tobytes()) for i, v in part]
        store.transcripts.save_recall_vectors(AGENT, MODEL, rows)
    return ids


def lists_of(store: Store) -> dict[int, int | None]:
    with store.database.read() as conn:
        return dict(conn.execute("SELECT doc, list FROM recall_vectors").fetchall())


def generations(store: Store) -> list[vector_lists.Generation]:
    with store.transcripts._recall() as sql:
        return vector_lists.generations(sql, agent_key(AGENT), MODEL)


def made_from(store: Store) -> list[int]:
    return [generation.made_from for generation in generations(store)]


def exact(store: Store, query: np.ndarray, k: int, **kw: object) -> list[int]:
    chunks = store.transcripts.recall_vectors(AGENT, MODEL, **kw)  # type: ignore[arg-type]
    return [doc for doc, _ in nearest_in_chunks(chunks, query.tobytes(), k)]


def test_below_the_threshold_every_vector_is_scored(store: Store) -> None:
    rng = np.random.default_rng(1)
    add(store, clustered(rng, 399))
    assert made_from(store) == []
    assert set(lists_of(store).values()) == {None}
    query = clustered(rng, 1)[0]
    assert [
        d for d, _ in store.transcripts.recall_nearest(AGENT, MODEL, query.tobytes(), 20)
    ] == exact(store, query, 20)


def test_lists_are_made_at_the_threshold_and_every_vector_joins_one(store: Store) -> None:
    rng = np.random.default_rng(2)
    ids = add(store, clustered(rng, 450))
    assert made_from(store) == [400]  # made by the batch that reached 400
    where = lists_of(store)
    assert set(where) == set(ids) and None not in where.values()
    assert len(set(where.values())) <= vector_lists.list_count(400)
    with store.database.read() as conn:
        (count,) = conn.execute("SELECT count(*) FROM recall_vector_lists").fetchone()
    assert count == vector_lists.list_count(400)


def test_a_vector_stored_later_joins_its_nearest_list(store: Store) -> None:
    rng = np.random.default_rng(3)
    add(store, clustered(rng, 400))
    late = clustered(rng, 30)
    ids = add(store, late, first=400)
    (only,) = generations(store)
    where = lists_of(store)
    assert [where[i] for i in ids] == [int(i) for i in np.argmax(late @ only.centres.T, axis=1)]


def test_a_new_generation_when_the_vectors_double_and_the_older_stay_put(
    store: Store,
) -> None:
    rng = np.random.default_rng(4)
    first = add(store, clustered(rng, 700))
    before = lists_of(store)
    late = add(store, clustered(rng, 150), first=700)
    assert made_from(store) == [400, 800]
    older, newer = generations(store)
    where = lists_of(store)
    assert {i: where[i] for i in first} == before  # no vector row rewritten
    assert newer.first == vector_lists.GENERATION_IDS
    assert len(newer.centres) == vector_lists.list_count(800)
    # the batch that reached 800 joined the first generation; those after it the second
    assert {where[i] >= newer.first for i in late} == {False, True}
    assert None not in where.values()
    query = clustered(rng, 1)[0].tobytes()
    probed = vector_lists.to_probe([older, newer], query)
    assert len(probed) == vector_lists.probes(len(older.centres)) + vector_lists.probes(
        len(newer.centres)
    )


def test_the_search_reads_the_nearest_lists_and_finds_the_exact_neighbours(
    store: Store,
) -> None:
    rng = np.random.default_rng(5)
    add(store, clustered(rng, 1200))
    assert made_from(store) == [400, 800]
    found = []
    for query in clustered(rng, 40):
        listed = [d for d, _ in store.transcripts.recall_nearest(AGENT, MODEL, query.tobytes(), 10)]
        found.append(len(set(listed) & set(exact(store, query, 10))) / 10)
    assert np.mean(found) >= 0.9


def test_the_candidates_are_scored_whatever_their_list(store: Store) -> None:
    rng = np.random.default_rng(6)
    ids = add(store, clustered(rng, 500))
    query = clustered(rng, 1)[0]
    probed = set(vector_lists.to_probe(generations(store), query.tobytes()))
    where = lists_of(store)
    far = next(i for i in ids if where[i] not in probed)
    nearest = dict(
        store.transcripts.recall_nearest(AGENT, MODEL, query.tobytes(), 1000, candidates=[far])
    )
    assert far in nearest
    assert far not in dict(store.transcripts.recall_nearest(AGENT, MODEL, query.tobytes(), 1000))
    vector = np.frombuffer(
        next(iter(store.transcripts.recall_vectors(AGENT, MODEL, ids=[far])))[0][1], "<f4"
    )
    assert nearest[far] == pytest.approx(float(vector @ query), abs=1e-6)


def test_filters_apply_to_the_search_through_lists(store: Store) -> None:
    rng = np.random.default_rng(7)
    add(store, clustered(rng, 600))
    query = clustered(rng, 1)[0].tobytes()
    only = RecallFilters(session_id="s1")
    hits = store.transcripts.recall_nearest(AGENT, MODEL, query, 50, only)
    assert hits
    keys = {k.id: k.session_id for k in store.transcripts.recall_keys(AGENT, [d for d, _ in hits])}
    assert set(keys.values()) == {"s1"}


def test_the_lists_outlive_the_process(store: Store, opener: Callable[[], Store]) -> None:
    rng = np.random.default_rng(8)
    add(store, clustered(rng, 450))
    before = lists_of(store)
    store.close()
    again = opener()
    try:
        assert lists_of(again) == before
        assert made_from(again) == [400]
        query = clustered(rng, 1)[0].tobytes()
        assert again.transcripts.recall_nearest(AGENT, MODEL, query, 5)
    finally:
        again.close()


def test_a_store_from_before_the_lists_gains_them(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    store = SqliteStore(tmp_path / "data.db")
    add(store, clustered(rng, 300))
    store.close()
    conn = sqlite3.connect(tmp_path / "data.db")
    with conn:  # the layout before m014
        conn.execute("DROP INDEX idx_recall_vectors_list")
        conn.execute("DROP TABLE recall_vector_lists")
        conn.execute("ALTER TABLE recall_vectors DROP COLUMN list")
        conn.execute("DELETE FROM _markus_migrations WHERE name = 'm014_recall_vector_lists'")
    conn.close()
    store = SqliteStore(tmp_path / "data.db")
    try:
        assert set(lists_of(store).values()) == {None}
        add(store, clustered(rng, 150), first=300)  # past the threshold: every vector joins
        assert made_from(store) == [400]
        assert None not in lists_of(store).values()
    finally:
        store.close()


def test_training_gives_unit_centroids_deterministically() -> None:
    rng = np.random.default_rng(10)
    sample = clustered(rng, 500)
    first, second = vector_lists.train(sample, 12), vector_lists.train(sample, 12)
    assert first.shape == (12, 16)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, second)
    assert vector_lists.train(sample[:5], 12).shape == (5, 16)  # no more lists than vectors


def test_training_leaves_damaged_vectors_out() -> None:
    rng = np.random.default_rng(11)
    sample = clustered(rng, 300)
    damaged = sample.copy()
    damaged[::7, 3] = np.nan
    centres = vector_lists.train(damaged, 10)
    assert np.isfinite(centres).all()
    assert np.array_equal(centres, vector_lists.train(sample[np.isfinite(damaged).all(axis=1)], 10))
    assert vector_lists.train(np.full((4, 16), np.nan, dtype=np.float32), 10).shape == (0, 16)


def test_a_generation_that_another_writer_made_first_is_not_stored_twice(
    store: Store,
) -> None:
    rng = np.random.default_rng(12)
    add(store, clustered(rng, 450))
    (only,) = generations(store)
    with store.transcripts._recall(write=True) as sql:
        assert not vector_lists.add_generation(sql, agent_key(AGENT), MODEL, 400, only.centres)
        assert not vector_lists.add_generation(sql, agent_key(AGENT), MODEL, 800, only.centres[:0])
    assert made_from(store) == [400]
