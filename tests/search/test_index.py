from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.errors import StorageError
from markus_memory.search.index import (
    IndexDoc,
    SearchIndex,
    ensure_schema,
    fts_terms,
    fts_text,
    open_index,
)
from markus_memory.search.keyword import tokenize


@pytest.fixture
def index(tmp_path: Path) -> SearchIndex:
    return open_index(tmp_path / "data.db")


def docs(*pairs: tuple[str, str]) -> list[IndexDoc]:
    return [IndexDoc(doc_id, "observation", text) for doc_id, text in pairs]


def ids(index: SearchIndex, query: str, agent: str = "a") -> list[str]:
    return [doc_id for doc_id, _ in index.bm25(agent, tokenize(query))]


def test_sync_adds_updates_removes_and_skips_on_same_version(index: SearchIndex) -> None:
    first = index.sync("a", docs(("o1", "deploy the api"), ("o2", "rotate keys")), "v1")
    assert (first.added, first.updated, first.removed, first.skipped) == (2, 0, 0, False)
    assert index.sync("a", [], "v1").skipped  # same version: nothing read, nothing changed
    assert ids(index, "deploy") == ["o1"]
    second = index.sync("a", docs(("o1", "deploy the web app"), ("o3", "new keys")), "v2")
    assert (second.added, second.updated, second.removed) == (1, 1, 1)
    assert ids(index, "api") == []
    assert ids(index, "keys") == ["o3"]
    assert index.doc_ids("a") == {"o1", "o3"}


def test_agents_are_separate(index: SearchIndex) -> None:
    index.sync("a", docs(("o1", "alpha beta")))
    index.sync("b", docs(("o1", "gamma alpha")))
    assert ids(index, "beta", "a") == ["o1"]
    assert ids(index, "beta", "b") == []
    assert ids(index, "alpha", "unknown") == []
    index.drop("a")
    assert ids(index, "alpha", "a") == []
    assert ids(index, "alpha", "b") == ["o1"]


def test_porter_stemming_matches_word_forms(index: SearchIndex) -> None:
    index.sync("a", docs(("o1", "we deployed the services"), ("o2", "unrelated")))
    assert ids(index, "deploying service") == ["o1"]


def test_stop_words_dropped_unless_nothing_else(index: SearchIndex) -> None:
    index.sync("a", docs(("o1", "the cache is warm"), ("o2", "the queue")))
    assert ids(index, "what is the cache") == ["o1"]
    assert set(ids(index, "the")) == {"o1", "o2"}


def test_cjk_text_is_indexed_as_bigrams(index: SearchIndex) -> None:
    assert fts_text("用数据库") == " 用数 数据 据库 "
    index.sync("a", docs(("o1", "我们决定把数据库迁移推迟"), ("o2", "今天天气很好")))
    assert ids(index, "数据库的迁移") == ["o1"]
    assert ids(index, "天气") == ["o2"]


def test_fts_terms_are_quoted() -> None:
    assert fts_terms(["bip-39", "near", "or"]) == ['"bip 39"', '"near"']
    assert fts_terms(['x"y']) == ['"x y"']
    assert fts_terms(['"', "*"]) == []


HOSTILE = st.one_of(
    st.text(),
    st.lists(
        st.sampled_from(
            [
                '"',
                "'",
                "*",
                "^",
                ":",
                "(",
                ")",
                "NOT",
                "AND",
                "OR",
                "NEAR",
                "NEAR(",
                "-",
                "+",
                "body:",
                "{",
                "}",
                "\\",
                "\x00",
                "数据",
                "🙂",
                "a",
                "ab",
            ]
        ),
        max_size=8,
    ).map(" ".join),
)


@given(query=HOSTILE)
@settings(max_examples=300, deadline=None)
def test_hostile_fts_syntax_never_raises(query: str) -> None:
    index = SearchIndex(_memory_conn())
    index.sync("a", docs(("o1", 'NOT "quoted" text OR near(x) body: *star*'), ("o2", "数据库")))
    for doc_id, score in index.bm25("a", tokenize(query)):
        assert doc_id in {"o1", "o2"}
        assert isinstance(score, float)
    for doc_id, _ in index.bm25("a", [query]):
        assert doc_id in {"o1", "o2"}


def _memory_conn() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    ensure_schema(conn)
    return conn


def test_item30_trimming_to_500_leaves_no_ghosts(index: SearchIndex) -> None:
    everything = [(f"obs_{i:04d}", f"entry {i} marker{i}") for i in range(600)]
    index.sync("a", docs(*everything), "v1")
    kept = everything[100:]
    index.sync("a", docs(*kept), "v2")
    assert len(index.doc_ids("a")) == 500
    assert ids(index, "marker5") == []
    assert ids(index, "marker599") == ["obs_0599"]
    rows = index.conn.execute("SELECT count(*) FROM search_fts").fetchone()
    assert rows[0] == 500  # nothing left behind in the FTS table either


def test_rebuild_is_always_possible(index: SearchIndex) -> None:
    index.sync("a", docs(("o1", "one")), "v1")
    index.conn.execute("DELETE FROM search_fts")  # a damaged derived index
    assert ids(index, "one") == []
    report = index.rebuild("a", docs(("o1", "one")), "v1")
    assert report.added == 1
    assert ids(index, "one") == ["o1"]


def test_schema_is_versioned_and_reopening_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    open_index(path).sync("a", docs(("o1", "kept")), "v1")
    again = open_index(path)
    assert ids(again, "kept") == ["o1"]
    rows = again.conn.execute(
        "SELECT name FROM _markus_migrations WHERE migration_set = 'search-index'"
    ).fetchall()
    assert rows == [("m001_knowledge_index",), ("m002_agent_slots",)]
    assert ensure_schema(again.conn) == []


def test_m002_empties_an_m001_index_and_the_next_sync_refills_it(tmp_path: Path) -> None:
    from markus_memory.search.index import connect, migrations
    from markus_memory.storage.migrations import SqliteMigrationTarget

    conn = connect(tmp_path / "old.db")
    migrations.apply(SqliteMigrationTarget(conn), stop_before="m002_agent_slots")
    conn.execute(
        "INSERT INTO search_docs (agent_id, doc_id, kind, digest) VALUES ('a','x','k','d')"
    )
    conn.execute("INSERT INTO search_state (agent_id, version) VALUES ('a', 'v1')")
    assert ensure_schema(conn) == ["m002_agent_slots"]
    index = SearchIndex(conn)
    assert index.version("a") is None and index.doc_ids("a") == set()
    assert index.sync("a", docs(("x", "back again")), "v1").added == 1
    assert ids(index, "again") == ["x"]


def test_needs_autocommit_connection() -> None:
    with pytest.raises(StorageError):
        SearchIndex(sqlite3.connect(":memory:"))


def _sync_many(path: str, worker: int) -> None:
    index = open_index(path)
    for round_ in range(15):
        texts = [(f"o{i}", f"worker{worker} round{round_} item{i}") for i in range(20)]
        index.sync("a", docs(*texts), f"w{worker}r{round_}")
        index.bm25("a", tokenize(f"worker{worker} item3"))


@pytest.mark.slow
def test_processes_syncing_one_agent_never_corrupt_the_index(tmp_path: Path) -> None:
    import multiprocessing

    path = str(tmp_path / "data.db")
    open_index(path)  # migrations applied once up front
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_sync_many, args=(path, n)) for n in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    index = open_index(path)
    final = [(f"o{i}", f"final item{i}") for i in range(5)]
    index.sync("a", docs(*final), "final")
    assert index.doc_ids("a") == {f"o{i}" for i in range(5)}
    assert index.conn.execute("SELECT count(*) FROM search_fts").fetchone()[0] == 5
    assert ids(index, "item3") == ["o3"]
