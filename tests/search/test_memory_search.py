from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.errors import InvalidInputError
from markus_memory.search.corpus import chunks
from markus_memory.search.memory_search import MemorySearcher, SearchResult, fuse_rrf
from markus_memory.storage.knowledge_index import KnowledgeIndex
from markus_memory.storage.knowledge_schema import open_sqlite_index

from .fakes import FakeEmbedder, FakeKnowledge, Sec, WrongWidthEmbedder


@pytest.fixture
def index(tmp_path: Path) -> KnowledgeIndex:
    return open_sqlite_index(tmp_path / "data.db")


@pytest.fixture
def knowledge() -> FakeKnowledge:
    k = FakeKnowledge(sections=[Sec("crypto", "seed phrases and entropy checks")])
    k.add("the deploy script lives in ops/deploy.sh", tags=("ops",))
    k.add("user prefers dark mode", type="note")
    k.add("bip-39 seed words must be verified", tags=("crypto",))
    k.add("database migrations run before deploy", type="insight")
    return k


def run(
    searcher: MemorySearcher, k: FakeKnowledge, query: str | None, **kw: object
) -> SearchResult:
    return searcher.search(query, k.observations, k.sections, version=k.version, **kw)  # type: ignore[arg-type]


def ids(result: SearchResult) -> list[str]:
    return [hit.id for hit in result.hits]


def test_empty_query_lists_recent_observations(
    index: KnowledgeIndex, knowledge: FakeKnowledge
) -> None:
    searcher = MemorySearcher("a", index)
    result = run(searcher, knowledge, "   ", limit=2)
    assert result.method == "recent" and result.search_method is None
    assert ids(result) == ["obs_000002", "obs_000003"]  # last two, oldest first
    assert ids(run(searcher, knowledge, None, type="note")) == ["obs_000001"]


def test_keyword_only_without_index_matches_the_original(knowledge: FakeKnowledge) -> None:
    result = run(MemorySearcher("a"), knowledge, "seed")
    assert result.method == "keyword" and result.search_method == "keyword"
    assert ids(result) == ["curated_crypto", "obs_000002"]
    curated = result.hits[0]
    assert (curated.source, curated.type, curated.timestamp) == ("curated", "fact", None)
    assert result.hits[1].source == "observation"
    assert result.hits[1].tags == ("crypto",)


def test_bm25_fusion_and_type_filter(index: KnowledgeIndex, knowledge: FakeKnowledge) -> None:
    searcher = MemorySearcher("a", index)
    result = run(searcher, knowledge, "deploy")
    assert result.method == "bm25" and result.search_method == "keyword"
    assert set(ids(result)) == {"obs_000000", "obs_000003"}
    assert ids(run(searcher, knowledge, "deploy", type="insight")) == ["obs_000003"]
    # curated hits have type fact: kept by a fact filter, dropped by any other
    assert "curated_crypto" in ids(run(searcher, knowledge, "seed", type="fact"))
    assert "curated_crypto" not in ids(run(searcher, knowledge, "seed", type="note"))


def test_limit_applies_and_must_be_positive(
    index: KnowledgeIndex, knowledge: FakeKnowledge
) -> None:
    searcher = MemorySearcher("a", index)
    assert len(run(searcher, knowledge, "deploy seed dark", limit=2).hits) == 2
    with pytest.raises(InvalidInputError):
        run(searcher, knowledge, "x", limit=0)


def test_query_without_tokens_returns_nothing(
    index: KnowledgeIndex, knowledge: FakeKnowledge
) -> None:
    assert run(MemorySearcher("a", index), knowledge, "?").hits == []


def test_hand_edit_is_picked_up_at_next_search(
    index: KnowledgeIndex, knowledge: FakeKnowledge
) -> None:
    searcher = MemorySearcher("a", index, FakeEmbedder())
    assert "obs_000001" in ids(run(searcher, knowledge, "dark mode"))
    knowledge.edit("obs_000001", "user prefers light themes")
    assert "obs_000001" not in ids(run(searcher, knowledge, "dark mode"))
    assert "obs_000001" in ids(run(searcher, knowledge, "light themes"))


def test_item30_no_ghost_hits_after_trimming_and_deletion(
    index: KnowledgeIndex,
) -> None:
    k = FakeKnowledge()
    for i in range(520):
        k.add(f"observation {i} about topic{i % 7} token{i}")
    embedder = FakeEmbedder()
    searcher = MemorySearcher("a", index, embedder)
    searcher.sync(searcher.corpus(k.observations, k.sections, k.version), k.version)
    assert run(searcher, k, "token3").hits
    k.trim(500)
    live = {o.id for o in k.observations}
    for query in ("token3", "token0", "topic1 observation", "token519"):
        result = run(searcher, k, query, limit=50)
        assert set(ids(result)) <= live, query
    assert index.doc_ids("a") == live
    vector_ids = {d for chunk in index.vector_chunks("a", "fake:256") for d, _, _ in chunk}
    assert vector_ids == live


def test_embedding_inside_search_is_bounded_and_backfills(
    index: KnowledgeIndex,
) -> None:
    k = FakeKnowledge()
    for i in range(150):
        k.add(f"observation {i} token{i}")
    embedder = FakeEmbedder()
    searcher = MemorySearcher("a", index, embedder, embed_budget=64)
    assert run(searcher, k, "token149").method == "hybrid"
    assert embedder.texts_embedded == 64 + 1  # the 64 newest documents, then the query
    stored = set(index.vector_digests("a", "fake:256"))
    assert "obs_000149" in stored and "obs_000000" not in stored
    run(searcher, k, "token1")
    run(searcher, k, "token2")
    assert len(index.vector_digests("a", "fake:256")) == 150
    run(searcher, k, "token3")
    assert embedder.texts_embedded == 150 + 4  # nothing embedded twice


def test_hybrid_uses_vectors_and_reports_methods(
    index: KnowledgeIndex, knowledge: FakeKnowledge
) -> None:
    searcher = MemorySearcher("a", index, FakeEmbedder(), min_similarity=0.1)
    result = run(searcher, knowledge, "deploy")
    assert result.method == "hybrid"
    assert any(hit.similarity is not None for hit in result.hits)
    assert result.search_method in {"semantic", "semantic+keyword"}


def test_vectors_are_embedded_once_per_document_version(
    index: KnowledgeIndex, knowledge: FakeKnowledge
) -> None:
    embedder = FakeEmbedder()
    searcher = MemorySearcher("a", index, embedder)
    run(searcher, knowledge, "deploy")
    docs = len(knowledge.observations) + len(knowledge.sections)
    assert embedder.texts_embedded == docs + 1  # every doc + the query
    run(MemorySearcher("a", index, embedder), knowledge, "seed")  # a fresh process, same db
    assert embedder.texts_embedded == docs + 2
    knowledge.add("one more deploy fact")
    run(searcher, knowledge, "deploy")
    assert embedder.texts_embedded == docs + 2 + 1 + 1


def test_model_or_dimension_change_reembeds_and_never_mixes(
    index: KnowledgeIndex, knowledge: FakeKnowledge
) -> None:
    docs = len(knowledge.observations) + len(knowledge.sections)
    run(MemorySearcher("a", index, FakeEmbedder("m1", 64)), knowledge, "deploy")
    wider = FakeEmbedder("m1", 32)
    result = run(MemorySearcher("a", index, wider), knowledge, "deploy")
    assert wider.texts_embedded == docs + 1
    assert result.method == "hybrid"
    other = FakeEmbedder("m2", 64)
    run(MemorySearcher("a", index, other), knowledge, "deploy")
    assert other.texts_embedded == docs + 1
    assert index.vector_digests("a", "m1:32") == {}
    assert len(index.vector_digests("a", "m2:64")) == docs


def test_broken_embedder_degrades_to_bm25(index: KnowledgeIndex, knowledge: FakeKnowledge) -> None:
    for embedder in (FakeEmbedder(fail=True), WrongWidthEmbedder()):
        result = run(MemorySearcher("a", index, embedder), knowledge, "deploy")
        assert result.method == "bm25"
        assert result.fallback is not None and "vectors unavailable" in result.fallback
        assert set(ids(result)) == {"obs_000000", "obs_000003"}


def test_broken_index_degrades_to_keyword(tmp_path: Path, knowledge: FakeKnowledge) -> None:
    index = open_sqlite_index(tmp_path / "x.db")
    with index.database.write() as conn:
        conn.execute("DROP TABLE search_postings")
    result = run(MemorySearcher("a", index), knowledge, "seed")
    assert result.method == "keyword" and result.fallback is not None
    assert ids(result) == ["curated_crypto", "obs_000002"]


def test_rrf_fusion() -> None:
    fused = fuse_rrf([["a", "b", "c"], ["b", "c"]], k=60)
    assert [doc_id for doc_id, _ in fused] == ["b", "c", "a"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


@given(query=st.text(), type=st.sampled_from([None, "fact", "note", "insight"]))
@settings(max_examples=150, deadline=None)
def test_any_query_never_raises(query: str, type: str | None) -> None:
    k = FakeKnowledge(sections=[Sec("数据库", 'NOT "x" OR near(y)'), Sec("c++", "body: *")])
    k.add('quoted "text" AND more', tags=("x",))
    k.add("中文内容 数据库迁移", type="note")
    searcher = MemorySearcher("a", _shared_index(), FakeEmbedder(), min_similarity=0.0)
    result = searcher.search(query, k.observations, k.sections, version=k.version, type=type)
    for hit in result.hits:
        assert type is None or hit.type == type


_INDEX: list[KnowledgeIndex] = []


def _shared_index() -> KnowledgeIndex:
    if not _INDEX:
        import tempfile

        _INDEX.append(open_sqlite_index(Path(tempfile.mkdtemp()) / "data.db"))
    return _INDEX[0]


def test_long_curated_section_found_by_a_late_chunk(index: KnowledgeIndex) -> None:
    filler = "\n".join(f"- routine entry {i} about services and deploys" for i in range(60))
    k = FakeKnowledge(sections=[Sec("architecture", filler + "\n- events flow through Kafka")])
    for i in range(30):
        k.add(f"service {i} deploy note")
    result = run(MemorySearcher("a", index), k, "kafka events")
    assert ids(result)[0] == "curated_architecture"
    assert result.hits[0].content.startswith("## architecture\n- routine entry 0")
    assert {d.split("#")[0] for d in index.doc_ids("a")} >= {"curated_architecture"}


def test_keyword_hits_back_up_bm25_for_substrings(index: KnowledgeIndex) -> None:
    k = FakeKnowledge()
    k.add("PostgreSQL 15 runs the warehouse")
    k.add("the postgres role is read-only")
    result = run(MemorySearcher("a", index), k, "postgres")
    # BM25 only knows the token "postgres"; the substring hit still comes, after it
    assert ids(result) == ["obs_000001", "obs_000000"]


def test_chunks_cut_at_line_ends() -> None:
    body = "\n".join(["x" * 150] * 7)
    pieces = chunks(body, 400)
    assert "\n".join(pieces) == body
    assert all(len(p) <= 400 for p in pieces)
    assert chunks("") == [""]


ANY_CHAR = st.text(st.characters(blacklist_categories=()), max_size=30)


@given(contents=st.lists(ANY_CHAR, min_size=1, max_size=4), query=ANY_CHAR)
@settings(max_examples=100, deadline=None)
def test_any_content_and_query_never_raise(contents: list[str], query: str) -> None:
    k = FakeKnowledge(sections=[Sec("s", contents[0])])
    for content in contents:
        k.add(content)
    searcher = MemorySearcher("prop", _shared_index(), FakeEmbedder(), min_similarity=0.0)
    result = searcher.search(query, k.observations, k.sections, version=k.version)
    assert result.fallback is None


def test_a_curated_section_that_speaks_of_the_named_day_is_lifted(index: KnowledgeIndex) -> None:
    k = FakeKnowledge(
        sections=[
            Sec("releases", "v2 of the billing service shipped on 2026-03-04 after review"),
            Sec("billing", "the billing service ships weekly; billing owns invoices and billing"),
        ]
    )
    searcher = MemorySearcher("a", index)
    assert ids(run(searcher, k, "billing service"))[0] == "curated_billing"
    assert ids(run(searcher, k, "billing service on 2026-03-04"))[0] == "curated_releases"
