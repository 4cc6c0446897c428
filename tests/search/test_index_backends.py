"""The knowledge.md search index behaves the same on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory.config import Settings
from markus_memory.layers.knowledge import Observation
from markus_memory.memory import open_agent
from markus_memory.search.index import IndexDoc, KnowledgeIndex, open_index
from markus_memory.search.keyword import tokenize
from tests.storage.pg import postgres_schema_url

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["sqlite", "postgres"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeIndex]:
    if request.param == "sqlite":
        lite = open_index(tmp_path / "data.db")
        yield lite
        lite.close()
        return
    from markus_memory.search.pg_index import PostgresSearchIndex

    with postgres_schema_url() as url:
        pg = PostgresSearchIndex(url)
        yield pg
        pg.close()


def docs(*pairs: tuple[str, str]) -> list[IndexDoc]:
    return [IndexDoc(doc_id, "observation", text) for doc_id, text in pairs]


def ids(index: KnowledgeIndex, query: str, agent: str = "a") -> list[str]:
    return [doc_id for doc_id, _ in index.bm25(agent, tokenize(query))]


def test_sync_adds_updates_removes_and_skips_on_same_version(index: KnowledgeIndex) -> None:
    first = index.sync("a", docs(("o1", "deploy the api"), ("o2", "rotate keys")), "v1")
    assert (first.added, first.updated, first.removed, first.skipped) == (2, 0, 0, False)
    assert index.sync("a", [], "v1").skipped
    assert ids(index, "deploy") == ["o1"]
    second = index.sync("a", docs(("o1", "deploy the web app"), ("o3", "new keys")), "v2")
    assert (second.added, second.updated, second.removed) == (1, 1, 1)
    assert ids(index, "api") == []
    assert ids(index, "keys") == ["o3"]
    assert index.doc_ids("a") == {"o1", "o3"}
    assert index.version("a") == "v2"


def test_agents_stemming_stop_words_and_cjk(index: KnowledgeIndex) -> None:
    index.sync("a", docs(("o1", "we deployed the services"), ("o2", "the queue")))
    index.sync("b", docs(("o1", "gamma")))
    assert ids(index, "deploying service") == ["o1"]
    assert ids(index, "gamma", "a") == []
    assert ids(index, "what is the queue") == ["o2"]
    assert set(ids(index, "the")) == {"o1", "o2"}
    index.sync("c", docs(("o1", "我们决定把数据库迁移推迟"), ("o2", "今天天气很好")))
    assert ids(index, "数据库的迁移", "c") == ["o1"]
    assert ids(index, "天气", "c") == ["o2"]


def test_more_matching_terms_rank_higher(index: KnowledgeIndex) -> None:
    index.sync("a", docs(("o1", "gateway"), ("o2", "gateway timeout retry"), ("o3", "other")))
    hits = index.bm25("a", tokenize("gateway timeout retry"))
    assert [doc_id for doc_id, _ in hits] == ["o2", "o1"]
    assert hits[0][1] > hits[1][1]


@pytest.mark.parametrize("query", ['"', "NOT (", "a:b *", "\x00", "'; DROP TABLE x; --", "%_"])
def test_hostile_queries_never_raise(index: KnowledgeIndex, query: str) -> None:
    index.sync("a", docs(("o1", "plain text")))
    assert isinstance(index.bm25("a", tokenize(query)), list)


def test_trimming_leaves_no_ghosts_and_vectors_follow_documents(index: KnowledgeIndex) -> None:
    everything = [(f"obs_{i:04d}", f"entry {i} marker{i}") for i in range(600)]
    index.sync("a", docs(*everything), "v1")
    index.put_vectors("a", "m", [(d.id, d.digest, b"\x00\x00\x80?") for d in docs(*everything)])
    index.sync("a", docs(*everything[100:]), "v2")
    assert len(index.doc_ids("a")) == 500
    assert ids(index, "marker5") == []
    assert ids(index, "marker599") == ["obs_0599"]
    stored = index.vectors("a", "m")
    assert len(stored) == 500 and stored[0] == ("obs_0100", b"\x00\x00\x80?")
    assert set(index.vector_digests("a", "m")) == {f"obs_{i:04d}" for i in range(100, 600)}
    index.put_vectors("a", "other-model", [])
    assert index.vectors("a", "m") == []  # another model's vectors replace the old ones
    index.rebuild("a", docs(("o1", "one")), "v3")
    assert index.doc_ids("a") == {"o1"}
    index.drop("a")
    assert index.doc_ids("a") == set() and index.version("a") is None


def test_memory_search_uses_postgres_when_a_url_is_set(tmp_path: Path) -> None:
    from markus_memory.search.pg_index import PostgresSearchIndex

    with postgres_schema_url() as url:
        settings = Settings(home=tmp_path, database_url=url)
        with open_agent("alice", settings=settings) as mem:
            mem.knowledge.add_observations(
                [Observation("obs_1", "fact", "the deploy key rotates monthly", T0)]
            )
            result = mem.search("rotating deploy keys")
            assert [h.id for h in result.hits] == ["obs_1"]
            assert result.method == "bm25"
            assert isinstance(mem._memory_searcher().index, PostgresSearchIndex)
        assert not (tmp_path / "data.db").exists()
