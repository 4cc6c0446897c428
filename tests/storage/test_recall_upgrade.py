"""A recall index written with the agent in every key (before m013) upgrades in place.

The index of a fresh store is taken back to the layout of the earlier migrations (checked
against the rows that layout held: the agent's key, the term's key, message, tf and length),
the bookkeeping forgets m013 (and on PostgreSQL m011 too), and reopening the store must give
back exactly the rows the current code writes, the same ranking, and a store that keeps
indexing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from markus_memory.analysis import analyse, term_key
from markus_memory.storage.episodic import EpisodicStore
from markus_memory.storage.recall.rank import agent_key
from markus_memory.storage.repos.transcripts import TranscriptMessage

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
TEXTS = {
    "alice": ["the lake was cold and the lake was deep", "camping by the lake", "   "],
    "bob": ["lake camping gear", "cold coffee", "a tent for the lake trip"],
}
OLD_TABLES = {
    "sqlite": [
        "CREATE TABLE recall_postings (agent BIGINT NOT NULL, term BIGINT NOT NULL, "
        "doc BIGINT NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL, "
        "PRIMARY KEY (agent, term, doc)) WITHOUT ROWID",
        "CREATE TABLE recall_terms (agent BIGINT NOT NULL, term BIGINT NOT NULL, "
        "docs BIGINT NOT NULL, PRIMARY KEY (agent, term)) WITHOUT ROWID",
    ],
    "postgres": [  # as m007 made them (m011 then put tf and len into the key)
        "CREATE TABLE recall_postings (agent BIGINT NOT NULL, term BIGINT NOT NULL, "
        "doc BIGINT NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL, "
        "PRIMARY KEY (agent, term, doc))",
        "CREATE TABLE recall_terms (agent BIGINT NOT NULL, term BIGINT NOT NULL, "
        "docs BIGINT NOT NULL, PRIMARY KEY (agent, term))",
    ],
}
FORGOTTEN = {"sqlite": ("m013_recall_agent_terms",), "postgres": ("m011", "m013")}


class Raw:
    """Plain SQL on the store's database, outside the store."""

    def __init__(self, backend: str, where: Any) -> None:
        self.backend = backend
        if backend == "sqlite":
            import sqlite3

            self.conn: Any = sqlite3.connect(where, isolation_level=None)
        else:
            import psycopg

            self.conn = psycopg.connect(where, autocommit=True)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in self.conn.execute(sql).fetchall())

    def xor(self, a: str, b: str) -> str:
        return f"({a} | {b}) - ({a} & {b})" if self.backend == "sqlite" else f"{a} # {b}"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    if request.param == "sqlite":
        yield "sqlite", tmp_path / "data.db"
    else:
        yield "postgres", request.getfixturevalue("pg_url")


def _open(backend: str, where: Any) -> EpisodicStore:
    if backend == "sqlite":
        from markus_memory.storage._sqlite.store import SqliteStore

        return SqliteStore(where)
    from markus_memory.storage._postgres.store import PostgresStore

    return PostgresStore(where)


def _fill(store: EpisodicStore) -> None:
    for agent, texts in TEXTS.items():
        batch = [
            TranscriptMessage(agent, "s", i, "user", text, T0, None, None)
            for i, text in enumerate(texts)
        ]
        store.transcripts.import_transcript(agent, "s", batch, synced_at=T0)


def _old_rows(raw: Raw) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The postings and document frequencies as the layout before m013 held them."""
    postings: list[tuple[Any, ...]] = []
    df: dict[tuple[int, int], int] = {}
    for doc, agent, content in raw.rows("SELECT id, agent_id, content FROM transcript_messages"):
        freqs = analyse(content)
        if not content.strip():
            continue
        for term, tf in freqs.items():
            key = (agent_key(agent), term_key(term))
            postings.append((*key, doc, tf, sum(freqs.values())))
            df[key] = df.get(key, 0) + 1
    return sorted(postings), sorted((*key, n) for key, n in df.items())


def _downgrade(raw: Raw) -> None:
    c = raw.conn
    folded = raw.xor("t.agent", "p.term")
    c.execute(
        "CREATE TABLE old_p AS SELECT t.agent AS agent, "
        f"{folded} AS term, p.doc AS doc, p.tf AS tf, p.len AS len "
        "FROM recall_postings p JOIN recall_terms t ON t.term = p.term"
    )
    c.execute(
        f"CREATE TABLE old_t AS SELECT agent, {raw.xor('agent', 'term')} AS term, "
        "docs FROM recall_terms"
    )
    c.execute("DROP TABLE recall_postings")
    c.execute("DROP TABLE recall_terms")
    for statement in OLD_TABLES[raw.backend]:
        c.execute(statement)
    c.execute("INSERT INTO recall_postings SELECT * FROM old_p")
    c.execute("INSERT INTO recall_terms SELECT * FROM old_t")
    c.execute("DROP TABLE old_p")
    c.execute("DROP TABLE old_t")
    for name in FORGOTTEN[raw.backend]:
        c.execute(f"DELETE FROM _markus_migrations WHERE name LIKE '{name}%'")


def _snapshot(raw: Raw) -> tuple[list[tuple[Any, ...]], ...]:
    return tuple(
        raw.rows(f"SELECT * FROM {table}")
        for table in ("recall_postings", "recall_terms", "recall_agents", "recall_speakers")
    )


def _hits(store: EpisodicStore) -> list[list[tuple[str, int, float]]]:
    return [
        [
            (h.session_id, h.seq, round(h.score, 9))
            for h in store.transcripts.search_transcript(a, q)
        ]
        for a in TEXTS
        for q in ("lake", "cold lake camping", "tent trip", "coffee")
    ]


def test_an_index_keyed_by_agent_and_term_upgrades_in_place(
    backend: tuple[str, Any],
) -> None:
    kind, where = backend
    store = _open(kind, where)
    _fill(store)
    hits = _hits(store)
    store.close()
    raw = Raw(kind, where)
    now = _snapshot(raw)
    _downgrade(raw)
    postings, terms = _old_rows(raw)
    assert raw.rows("SELECT * FROM recall_postings") == postings
    assert raw.rows("SELECT * FROM recall_terms") == terms

    store = _open(kind, where)  # applies m013 (and on PostgreSQL m011 first)
    try:
        assert _snapshot(raw) == now
        assert _hits(store) == hits
        assert store.transcripts.reindex_recall() == 6
        assert _snapshot(raw) == now
        message = TranscriptMessage("bob", "s", 3, "user", "lake kayaks", T0, None, None)
        store.transcripts.import_transcript("bob", "s", [message], synced_at=T0)
        assert [h.seq for h in store.transcripts.search_transcript("bob", "kayaks")] == [3]
        assert store.transcripts.forget_session("alice", "s") == 3
        assert store.transcripts.search_transcript("alice", "lake") == []
        assert store.transcripts.search_transcript("bob", "lake")
    finally:
        store.close()
        raw.conn.close()
