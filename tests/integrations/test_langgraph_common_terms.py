"""A LangGraph query over a very common term: each term is ranked over its densest postings
(the bound on a query's cost), and a page too few of those fill is ranked over all of them."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import PutOp

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.integrations.langgraph import MarkusStore
from markus_memory.memory import AgentMemory
from markus_memory.storage import kv
from markus_memory.storage.kv import KVTable, Where
from markus_memory.storage.migrations import SqliteMigrationTarget
from tests.postgres_support import new_agent_id, postgres_url  # noqa: F401

FILLER = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()


@pytest.fixture(params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AgentMemory]:
    settings = Settings.from_env(home=tmp_path)
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        settings = dataclasses.replace(settings, database_url=url, documents="files")
    with open_agent(new_agent_id(), settings=settings) as mem:
        yield mem


@pytest.fixture
def table(memory: AgentMemory) -> Iterator[KVTable]:
    """The store's table, its items: ``k00``…``k29`` hold "coffee" once in 1 + n % 10 filler
    words (k00, k10, k20 the densest), odd ones "tea" too; ``n`` and ``even`` in the value."""
    store = MarkusStore(memory, embedder=None)
    store.batch(
        [
            PutOp(
                ("c", str(n % 2)),
                f"k{n:02}",
                {
                    "text": " ".join(["coffee", *FILLER[: n % 10], *(["tea"] if n % 2 else [])]),
                    "n": n,
                    "even": n % 2 == 0,
                },
            )
            for n in range(30)
        ]
    )
    store.close()
    found = memory.backend.kv_table(memory.agent_id)
    yield found
    found.close()


def _keys(table: KVTable, query: str, limit: int, offset: int = 0, **where: object) -> list[str]:
    condition = Where(str(where.get("prefix", "")), where.get("filter"), 0.0)  # type: ignore[arg-type]
    return [row.key for row, _ in table.ranked(condition, query, limit, offset)]


def test_a_common_term_is_ranked_over_its_densest_postings(table: KVTable) -> None:
    exact = _keys(table, "coffee", 30)
    assert len(exact) == 30
    table.per_term = 6
    # At one "coffee" an item, the densest are the best: the page is the exact one…
    assert _keys(table, "coffee", 3) == exact[:3]
    assert _keys(table, "coffee", 6) == exact[:6]
    # …and a page past the bound walks as far as the page goes.
    assert _keys(table, "coffee", 4, offset=4) == exact[4:8]
    assert _keys(table, "coffee", 12) == exact[:12]


def _scores(table: KVTable, query: str, limit: int) -> dict[str, float]:
    return {row.key: score for row, score in table.ranked(Where("", None, 0.0), query, limit, 0)}


def test_an_item_scores_the_terms_it_is_among_the_densest_of(table: KVTable) -> None:
    coffee, tea = _scores(table, "coffee", 30), _scores(table, "tea", 30)
    walked = {"coffee": list(coffee)[:6], "tea": list(tea)[:6]}
    table.per_term = 6
    bounded = table.ranked(Where("", None, 0.0), "coffee tea", 6, 0)
    assert len(bounded) == 6
    for row, score in bounded:
        assert row.key in walked["coffee"] or row.key in walked["tea"]
        expected = (coffee[row.key] if row.key in walked["coffee"] else 0.0) + (
            tea[row.key] if row.key in walked["tea"] else 0.0
        )
        assert score == pytest.approx(expected)
    assert [s for _, s in bounded] == sorted((s for _, s in bounded), reverse=True)


def test_a_filter_passing_none_of_the_densest_ranks_every_posting(table: KVTable) -> None:
    table.per_term = 6
    # None of the six densest "coffee" items have n >= 25 but k25..k29 do.
    found = _keys(table, "coffee", 3, filter={"n": {"$gte": 25}})
    table.per_term = 1000
    assert found == _keys(table, "coffee", 3, filter={"n": {"$gte": 25}})
    assert len(found) == 3


def test_bounded_pages_follow_each_other(table: KVTable) -> None:
    table.per_term = 8
    whole = _keys(table, "coffee", 8)
    pages = [_keys(table, "coffee", 2, offset=o) for o in range(0, 8, 2)]
    assert [key for page in pages for key in page] == whole


def test_a_database_at_m004_gets_its_postings_in_density_order(tmp_path: Path) -> None:
    settings = Settings.from_env(home=tmp_path)
    conn = sqlite3.connect(settings.database_path, isolation_level=None)
    try:
        kv.sqlite_migrations.apply(SqliteMigrationTarget(conn), stop_before="m003_postings")
        for n in range(12):
            text = " ".join(["coffee", *FILLER[:n]])
            conn.execute(
                "INSERT INTO langgraph_items (agent_id, namespace, key, value, created_at, "
                "updated_at, text) VALUES ('agent-1', 'notes', ?, ?, ?, ?, ?)",
                (f"k{n:02}", json.dumps({"text": text}), "2026-01-01", "2026-01-01", text),
            )
        kv.sqlite_migrations.apply(
            SqliteMigrationTarget(conn), stop_before="m005_postings_by_density"
        )
    finally:
        conn.close()
    with open_agent("agent-1", settings=settings) as memory:
        table = memory.backend.kv_table("agent-1")
        try:
            table.per_term = 3
            assert _keys(table, "coffee", 3) == ["k00", "k01", "k02"]
            store = MarkusStore(memory)
            store.delete(("notes",), "k00")
            store.close()
            assert _keys(table, "coffee", 3) == ["k01", "k02", "k03"]
        finally:
            table.close()
