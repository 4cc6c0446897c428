"""The search queries use the indexes made for them (plans, not timings)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from markus_memory.storage.episodic import EpisodicStore
from markus_memory.storage.recall.contract import RecallFilters as Filters
from markus_memory.storage.recall.fetch import keys_near, turns_around
from markus_memory.storage.repos.transcripts import TranscriptMessage

from .conftest import StoreFactory
from .test_conformance import act

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


class Explain:
    """A recall :class:`Sql` that records the plan of each query before running it."""

    def __init__(self, sql: Any, postgres: bool) -> None:
        self.sql = sql
        self.postgres = postgres
        self.plans: list[str] = []
        self.dialect = sql.dialect

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        prefix = "EXPLAIN " if self.postgres else "EXPLAIN QUERY PLAN "
        self.plans.append("\n".join(str(r) for r in self.sql.rows(prefix + sql, params)))
        return list(self.sql.rows(sql, params))


def _fill(store: EpisodicStore) -> None:
    texts = ["hello there", "   ", "we went camping", "", "the lake was cold"]
    batch = [
        TranscriptMessage("alice", "s1", i, "user", text, T0, None, None)
        for i, text in enumerate(texts)
    ]
    store.transcripts.import_transcript("alice", "s1", batch, synced_at=T0)


def test_neighbour_keys_come_from_the_partial_keys_index(store_factory: StoreFactory) -> None:
    store = store_factory()
    _fill(store)
    postgres = type(store).__name__.startswith("Postgres")
    # In a transaction, so that SET LOCAL holds (outside one it is ignored with a warning and
    # the plan followed the table's statistics: the test failed once autovacuum had run).
    with store.transcripts._recall(write=True) as sql:  # type: ignore[attr-defined]
        if postgres:  # a tiny table is scanned whole; ask whether the index can serve it
            # Only index-only scans are left, so the answer does not hang on statistics an
            # earlier test of the session left on the table (the primary key could serve the
            # rows too, but not from its index alone: content is not in it).
            sql.run("SET LOCAL enable_seqscan = off")
            sql.run("SET LOCAL enable_bitmapscan = off")
            sql.run("SET LOCAL enable_indexscan = off")
        (hit,) = [
            r[0]
            for r in turns_around(sql, "alice", [("s1", 2, 2)], Filters(), store.transcripts._when)
        ]  # type: ignore[attr-defined]
        explain = Explain(sql, postgres)
        rows = keys_near(explain, "alice", [hit], 2, Filters(), store.transcripts._when)  # type: ignore[attr-defined]
    assert sorted(r[2] for r in rows) == [0, 2, 4]  # the turns without text are left out
    assert "idx_transcript_keys" in explain.plans[0]
    if postgres:
        assert "Index Only Scan" in explain.plans[0]


def test_postgres_activity_probe_can_use_the_agent_and_document_index(pg_url: str) -> None:
    import psycopg

    from markus_memory.storage._postgres.store import PostgresStore

    store = PostgresStore(pg_url)
    try:
        store.activities.insert_activity(act(1, label="Build feature X"))
        store.activities.insert_activity(act(1, "a2", label="Build feature Y"))
        assert [h.activity.id for h in store.activities.search_activities("a1", "feature")] == [
            "act-a1-1"
        ]
    finally:
        store.close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("SET enable_seqscan = off")
        # Without the one-key indexes (a tiny table would take either), is the pair usable?
        conn.execute("DROP INDEX idx_activity_search_agent, idx_activity_search_doc")
        plan = "\n".join(
            str(r[0])
            for r in conn.execute(
                "EXPLAIN SELECT activity_id FROM activity_search WHERE agent_id = 'a1' AND "
                "document @@ 'featur'::tsquery "
                "ORDER BY started_at DESC, activity_id DESC LIMIT 10"
            )
        )
    assert "idx_activity_search_agent_doc" in plan and "Seq Scan" not in plan
