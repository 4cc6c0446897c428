"""The knowledge.md search index: one implementation, the same behaviour and the same ranking
on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import numpy
import pytest
from benchmarks.search_fixture import build

from markus_memory.config import Settings
from markus_memory.layers.knowledge import Observation
from markus_memory.memory import open_agent
from markus_memory.search.corpus import Corpus
from markus_memory.search.vectors import StoredVectors
from markus_memory.storage.knowledge_index import IndexDoc, KnowledgeIndex
from markus_memory.storage.knowledge_schema import open_postgres_index, open_sqlite_index
from tests.storage.pg import postgres_schema_url

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "postgres"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeIndex]:
    if request.param == "sqlite":
        lite = open_sqlite_index(tmp_path / "data.db")
        yield lite
        lite.close()
        return
    with postgres_schema_url() as url:
        pg = open_postgres_index(url)
        yield pg
        pg.close()


def docs(*pairs: tuple[str, str]) -> list[IndexDoc]:
    return [IndexDoc(doc_id, "observation", text) for doc_id, text in pairs]


def ids(index: KnowledgeIndex, query: str, agent: str = "a") -> list[str]:
    return [doc_id for doc_id, _ in index.rank(agent, query)]


def vectors(index: KnowledgeIndex, agent: str, model: str) -> list[tuple[str, bytes]]:
    return [(d, blob) for chunk in index.vector_chunks(agent, model) for d, _, blob in chunk]


def test_sync_adds_updates_removes_and_skips_on_same_version(index: KnowledgeIndex) -> None:
    first = index.sync("a", docs(("o1", "deploy the api"), ("o2", "rotate keys")), "v1")
    assert (first.added, first.updated, first.removed, first.skipped) == (2, 0, 0, False)
    assert index.sync("a", [], "v1").skipped  # same version: nothing read, nothing changed
    assert ids(index, "deploy") == ["o1"]
    second = index.sync("a", docs(("o1", "deploy the web app"), ("o3", "new keys")), "v2")
    assert (second.added, second.updated, second.removed) == (1, 1, 1)
    assert ids(index, "api") == []
    assert ids(index, "keys") == ["o3"]
    assert index.doc_ids("a") == {"o1", "o3"}
    assert index.version("a") == "v2"
    index.sync("a", docs(("o1", "unversioned")))
    assert index.version("a") is None and ids(index, "unversioned") == ["o1"]


def test_agents_stemming_stop_words_and_cjk(index: KnowledgeIndex) -> None:
    index.sync("a", docs(("o1", "we deployed the services"), ("o2", "the queue")))
    index.sync("b", docs(("o1", "gamma")))
    assert ids(index, "deploying service") == ["o1"]
    assert ids(index, "gamma", "a") == []
    assert ids(index, "gamma", "unknown") == []
    assert ids(index, "what is the queue") == ["o2"]
    assert ids(index, "the") == []  # only stop words: about nothing
    index.sync("c", docs(("o1", "我们决定把数据库迁移推迟"), ("o2", "今天天气很好")))
    assert ids(index, "数据库的迁移", "c") == ["o1"]
    assert ids(index, "天气", "c") == ["o2"]
    assert ids(index, "数据", "c") == ["o1"]  # a two-character word inside a longer run
    index.drop("a")
    assert ids(index, "queue") == [] and ids(index, "gamma", "b") == ["o1"]


def test_more_matching_terms_rank_higher(index: KnowledgeIndex) -> None:
    index.sync("a", docs(("o1", "gateway"), ("o2", "gateway timeout retry"), ("o3", "other")))
    hits = index.rank("a", "gateway timeout retry")
    assert [doc_id for doc_id, _ in hits] == ["o2", "o1"]
    assert hits[0][1] > hits[1][1]
    assert index.rank("a", "gateway", limit=0) == []


@pytest.mark.parametrize(
    "query", ['"', "NOT (", "a:b *", "\x00", "'; DROP TABLE x; --", "%_", "?", "\ud800 x"]
)
def test_hostile_queries_never_raise(index: KnowledgeIndex, query: str) -> None:
    index.sync("a", docs(("o1", "plain text x"), ("o2", 'NOT "quoted" near(x) body: *star*')))
    assert isinstance(index.rank("a", query), list)


def test_trimming_leaves_no_ghosts_and_vectors_follow_documents(index: KnowledgeIndex) -> None:
    everything = [(f"obs_{i:04d}", f"entry {i} marker{i}") for i in range(600)]
    index.sync("a", docs(*everything), "v1")
    index.put_vectors("a", "m", [(d.id, d.digest, b"\x00\x00\x80?") for d in docs(*everything)])
    index.sync("a", docs(*everything[100:]), "v2")
    assert len(index.doc_ids("a")) == 500
    assert ids(index, "marker5") == []
    assert ids(index, "marker599") == ["obs_0599"]
    assert index.state("a").unsearchable == 0
    stored = vectors(index, "a", "m")
    assert len(stored) == 500 and stored[0] == ("obs_0100", b"\x00\x00\x80?")
    assert [len(c) for c in index.vector_chunks("a", "m", size=200)] == [200, 200, 100]
    assert set(index.vector_digests("a", "m")) == {f"obs_{i:04d}" for i in range(100, 600)}
    index.put_vectors("a", "other-model", [])
    assert vectors(index, "a", "m") == []  # another model's vectors replace the old ones
    index.rebuild("a", docs(("o1", "one")), "v3")
    assert index.doc_ids("a") == {"o1"}
    index.drop("a")
    assert index.doc_ids("a") == set() and index.version("a") is None


def test_a_vector_of_an_older_text_is_never_scored(index: KnowledgeIndex) -> None:
    old, new = docs(("o1", "first text")), docs(("o1", "edited text"))
    index.sync("a", old, "v1")
    index.sync("a", new, "v2")
    # A process that embedded the old text stores its vector after the edit was synced.
    index.put_vectors("a", "m", [("o1", old[0].digest, b"\x00\x00\x80?")])
    stored, query = StoredVectors(index), numpy.ones(1, dtype=numpy.float32)
    assert stored.nearest("a", "m", query, {"o1": new[0].digest}, 5) == []
    index.put_vectors("a", "m", [("o1", new[0].digest, b"\x00\x00\x80?")])
    assert stored.nearest("a", "m", query, {"o1": new[0].digest}, 5) == [("o1", 1.0)]


def test_nearest_keeps_the_best_across_chunks(index: KnowledgeIndex) -> None:
    values = numpy.arange(2500, dtype=numpy.float32) / 2500
    rows = [(f"d{i:04d}", "x", values[i : i + 1].tobytes()) for i in range(2500)]
    index.put_vectors("a", "m", reversed(rows))
    digests = {doc_id: "x" for doc_id, _, _ in rows if doc_id != "d2499"}
    found = StoredVectors(index).nearest("a", "m", numpy.ones(1, numpy.float32), digests, 3)
    assert [doc_id for doc_id, _ in found] == ["d2498", "d2497", "d2496"]


def test_state_reports_what_doctor_compares(index: KnowledgeIndex) -> None:
    assert index.state("a").version is None
    wanted = docs(("o1", "alpha beta"), ("o2", ""))
    index.sync("a", wanted, "v1")
    state = index.state("a")
    assert state.version == "v1"
    assert state.digests == {d.id: d.digest for d in wanted}
    assert state.unsearchable == 0  # a document without words has no postings, rightly


def test_same_rankings_on_sqlite_and_postgresql(tmp_path: Path) -> None:
    """The labelled store: every query ranks the same documents with the same scores."""
    fixture = build()
    corpus = Corpus(fixture.observations, fixture.sections)
    queries = [q.query for q in fixture.queries] + ["数据", "ERR_CONN_RESET", "the", "？"]
    lite = open_sqlite_index(tmp_path / "data.db")
    with postgres_schema_url() as url:
        pg = open_postgres_index(url)
        try:
            for index in (lite, pg):
                index.sync("a", corpus.docs, "v1")
            for query in queries:
                expected, found = lite.rank("a", query, 30), pg.rank("a", query, 30)
                assert [d for d, _ in found] == [d for d, _ in expected], query
                assert [s for _, s in found] == pytest.approx([s for _, s in expected]), query
        finally:
            pg.close()
            lite.close()


def test_memory_search_uses_postgres_when_a_url_is_set(tmp_path: Path) -> None:
    with postgres_schema_url() as url:
        settings = Settings(home=tmp_path, database_url=url)
        with open_agent("alice", settings=settings) as mem:
            mem.knowledge.add_observations(
                [Observation("obs_1", "fact", "the deploy key rotates monthly", T0)]
            )
            result = mem.search("rotating deploy keys")
            assert [h.id for h in result.hits] == ["obs_1"]
            assert result.method == "bm25"
            index = mem._memory_searcher().index
            assert index is not None and index.database.dialect.name == "postgres"
        assert not (tmp_path / "data.db").exists()


def test_a_tsvector_index_moves_to_postings_and_keeps_its_vectors() -> None:
    import psycopg

    from markus_memory.storage._postgres.conn import PostgresMigrationTarget
    from markus_memory.storage.knowledge_schema import postgres_migrations

    doc = docs(("x", "back again"))[0]
    with postgres_schema_url() as url:
        with psycopg.connect(url, autocommit=True) as conn:
            target = PostgresMigrationTarget(conn)
            postgres_migrations.apply(target, stop_before="m002_analysed_postings")
            conn.execute(
                "INSERT INTO search_docs (agent_id, doc_id, kind, digest, body) "
                "VALUES ('a', %s, %s, %s, to_tsvector('simple', %s))",
                (doc.id, doc.kind, doc.digest, doc.text),
            )
            conn.execute("INSERT INTO search_state (agent_id, version) VALUES ('a', 'v1')")
            conn.execute(
                "INSERT INTO search_vectors (agent_id, doc_id, model, digest, vector) "
                "VALUES ('a', 'x', 'm', %s, %s)",
                (doc.digest, b"\x00\x00\x80?"),
            )
            assert postgres_migrations.apply(target) == ["m002_analysed_postings"]
        index = open_postgres_index(url)
        try:
            assert index.version("a") is None  # the next search re-indexes knowledge.md
            assert index.sync("a", [doc], "v1").added == 1
            assert ids(index, "back") == ["x"]
            assert vectors(index, "a", "m") == [("x", b"\x00\x00\x80?")]
        finally:
            index.close()
