"""The knowledge index on SQLite: hostile queries, migrations of older indexes, processes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.storage._sqlite.conn import open_sqlite
from markus_memory.storage.knowledge_index import IndexDoc, KnowledgeIndex
from markus_memory.storage.knowledge_schema import open_sqlite_index, sqlite_migrations
from markus_memory.storage.migrations import SqliteMigrationTarget


def docs(*pairs: tuple[str, str]) -> list[IndexDoc]:
    return [IndexDoc(doc_id, "observation", text) for doc_id, text in pairs]


def ids(index: KnowledgeIndex, query: str, agent: str = "a") -> list[str]:
    return [doc_id for doc_id, _ in index.rank(agent, query)]


HOSTILE = st.one_of(
    st.text(),
    st.lists(
        st.sampled_from(
            ['"', "'", "*", "^", ":", "(", ")", "NOT", "AND", "OR", "NEAR", "NEAR(", "-", "+"]
            + ["body:", "{", "}", "\\", "\x00", "数据", "🙂", "a", "ab", "?", "%s", "\ud800"]
        ),
        max_size=8,
    ).map(" ".join),
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    index = open_sqlite_index(tmp_path_factory.mktemp("hostile") / "data.db")
    index.sync("a", docs(("o1", 'NOT "quoted" text OR near(x) body: *star*'), ("o2", "数据库")))
    return index


@given(query=HOSTILE)
@settings(max_examples=300, deadline=None)
def test_hostile_query_syntax_never_raises(shared: KnowledgeIndex, query: str) -> None:
    for doc_id, score in shared.rank("a", query):
        assert doc_id in {"o1", "o2"}
        assert isinstance(score, float) and score > 0


def test_schema_is_versioned_and_reopening_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    open_sqlite_index(path).sync("a", docs(("o1", "kept")), "v1")
    again = open_sqlite_index(path)
    assert ids(again, "kept") == ["o1"]
    conn = open_sqlite(path)[0]
    rows = conn.execute(
        "SELECT name FROM _markus_migrations WHERE migration_set = 'search-index'"
    ).fetchall()
    assert rows == [("m001_knowledge_index",), ("m002_agent_slots",), ("m003_analysed_postings",)]
    assert sqlite_migrations.apply(SqliteMigrationTarget(conn)) == []
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "search_fts" not in names and "search_agents" not in names
    conn.close()


def test_an_fts5_index_moves_to_postings_and_keeps_its_vectors(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    conn = open_sqlite(path)[0]
    target = SqliteMigrationTarget(conn)
    sqlite_migrations.apply(target, stop_before="m003_analysed_postings")
    doc = docs(("x", "back again"))[0]
    conn.execute(
        "INSERT INTO search_docs (rowid, agent_id, doc_id, kind, digest) VALUES (?, ?, ?, ?, ?)",
        (1 << 32, "a", doc.id, doc.kind, doc.digest),
    )
    conn.execute("INSERT INTO search_fts (rowid, body) VALUES (?, ?)", (1 << 32, doc.text))
    conn.execute("INSERT INTO search_state (agent_id, version) VALUES ('a', 'v1')")
    conn.execute(
        "INSERT INTO search_vectors (agent_id, doc_id, model, digest, vector) "
        "VALUES ('a', 'x', 'm', ?, ?)",
        (doc.digest, b"\x00\x00\x80?"),
    )
    assert sqlite_migrations.apply(target) == ["m003_analysed_postings"]
    conn.close()
    index = open_sqlite_index(path)
    assert index.version("a") is None  # the next search re-indexes knowledge.md
    assert index.sync("a", [doc], "v1").added == 1
    assert ids(index, "back") == ["x"]
    assert [row for chunk in index.vector_chunks("a", "m") for row in chunk] == [
        ("x", doc.digest, b"\x00\x00\x80?")
    ]


def _sync_many(path: str, worker: int) -> None:
    index = open_sqlite_index(path)
    for round_ in range(15):
        texts = [(f"o{i}", f"worker{worker} round{round_} item{i}") for i in range(20)]
        index.sync("a", docs(*texts), f"w{worker}r{round_}")
        index.rank("a", f"worker{worker} item3")


@pytest.mark.slow
def test_processes_syncing_one_agent_never_corrupt_the_index(tmp_path: Path) -> None:
    import multiprocessing

    path = str(tmp_path / "data.db")
    open_sqlite_index(path).close()  # migrations applied once up front
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_sync_many, args=(path, n)) for n in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    index = open_sqlite_index(path)
    final = [(f"o{i}", f"final item{i}") for i in range(5)]
    index.sync("a", docs(*final), "final")
    assert index.doc_ids("a") == {f"o{i}" for i in range(5)}
    assert index.state("a").unsearchable == 0
    assert ids(index, "item3") == ["o3"]
