"""LangGraph store search in SQL: the library's analyser, filters, order and paging, on both
backends, with the real langgraph package."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import PutOp, SearchOp

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.integrations.langgraph import MarkusStore
from markus_memory.memory import AgentMemory
from markus_memory.storage.kv import Where
from tests.integrations.test_langgraph import Clock
from tests.postgres_support import new_agent_id, postgres_url  # noqa: F401


@pytest.fixture(params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AgentMemory]:
    settings = Settings.from_env(home=tmp_path)
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        settings = dataclasses.replace(settings, database_url=url, documents="files")
    settings = dataclasses.replace(settings, clock=Clock())
    with open_agent(new_agent_id(), settings=settings) as mem:
        yield mem


@pytest.fixture
def store(memory: AgentMemory) -> Iterator[MarkusStore]:
    store = MarkusStore(memory, embedder=None)
    assert store.embedder is None
    yield store
    store.close()


WORDS = [
    ("drink", "Ana drinks green tea"),
    ("drinks", "she will drink it"),
    ("run", "Running every morning"),
    ("Running", "a long run"),
    ("数据", "我们的数据很重要"),
    ("绿茶", "安娜喜欢喝绿茶"),
    ("नमस्ते", "नमस्ते दुनिया"),
]


@pytest.mark.parametrize(("query", "text"), WORDS)
def test_a_query_finds_what_the_librarys_analyser_finds(
    store: MarkusStore, query: str, text: str
) -> None:
    store.put(("n",), "hit", {"text": text})
    store.put(("n",), "miss", {"text": "the budget report is late"})
    hits = store.search(("n",), query=query)
    assert [h.key for h in hits] == ["hit"]
    assert hits[0].score is not None and hits[0].score > 0


def test_an_emoji_marker_is_found(store: MarkusStore) -> None:
    store.put(("n",), "hit", {"text": "launch 🚀 today"})
    store.put(("n",), "miss", {"text": "launch postponed"})
    assert [h.key for h in store.search(("n",), query="🚀")] == ["hit"]


def test_a_stop_word_query_matches_nothing(store: MarkusStore) -> None:
    store.put(("n",), "a", {"text": "what is it"})
    assert store.search(("n",), query="what is it?") == []


def test_without_a_query_the_last_updated_comes_first(memory: AgentMemory) -> None:
    clock = memory.settings.clock
    assert isinstance(clock, Clock)
    store = MarkusStore(memory, embedder=None)
    try:
        for key in ("a", "b", "c", "d"):
            store.put(("o",), key, {"k": key})
            clock.now += timedelta(seconds=1)
        store.put(("o",), "b", {"k": "b2"})
        assert [i.key for i in store.search(("o",))] == ["b", "d", "c", "a"]
        assert [i.key for i in store.search(("o",), limit=2, offset=1)] == ["d", "c"]
        assert all(i.score is None for i in store.search(("o",)))
    finally:
        store.close()


def test_ties_are_ordered_by_namespace_and_key(store: MarkusStore) -> None:
    store.batch([PutOp(("t", ns), key, {"text": "same tea"}) for ns in "ba" for key in "yx"])
    order = [(i.namespace[1], i.key) for i in store.search(("t",))]
    assert order == [("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")]


def test_ranked_ties_keep_one_order_across_pages(store: MarkusStore) -> None:
    store.batch([PutOp(("t", str(n % 3)), f"k{n}", {"text": "same tea"}) for n in range(300)])
    whole = [(i.namespace, i.key) for i in store.search(("t",), query="tea", limit=300)]
    pages = [store.search(("t",), query="tea", limit=7, offset=o) for o in range(0, 300, 7)]
    assert [(i.namespace, i.key) for page in pages for i in page] == whole
    assert len(set(whole)) == 300
    only = [(i.namespace, i.key) for i in store.search(("t", "1"), query="tea", limit=300)]
    assert only == [found for found in whole if found[0] == ("t", "1")]


def test_ranked_pages_follow_each_other(store: MarkusStore) -> None:
    store.batch(
        [PutOp(("p",), f"k{i:02}", {"text": "tea " * (1 + i % 5) + f"note {i}"}) for i in range(23)]
    )
    whole = [(h.key, h.score) for h in store.search(("p",), query="tea", limit=100)]
    assert len(whole) == 23
    assert [s for _, s in whole] == sorted((s for _, s in whole), reverse=True)  # type: ignore[type-var]
    pages = [store.search(("p",), query="tea", limit=5, offset=o) for o in range(0, 25, 5)]
    assert [(h.key, h.score) for page in pages for h in page] == whole


def test_the_prefix_is_a_whole_label(store: MarkusStore) -> None:
    store.put(("users", "ana"), "1", {"text": "tea"})
    store.put(("users", "anabel"), "2", {"text": "tea"})
    store.put(("users", "ana", "notes"), "3", {"text": "tea"})
    for query in (None, "tea"):
        found = {i.key for i in store.search(("users", "ana"), query=query)}
        assert found == {"1", "3"}


def test_a_query_and_a_filter_combine(store: MarkusStore) -> None:
    store.put(("f",), "1", {"text": "green tea", "kind": "habit", "n": 3})
    store.put(("f",), "2", {"text": "black tea", "kind": "fact", "n": 5})
    store.put(("f",), "3", {"text": "coffee", "kind": "habit", "n": 7})
    assert [h.key for h in store.search(("f",), query="tea", filter={"kind": "habit"})] == ["1"]
    found = store.search(("f",), query="tea", filter={"n": {"$gte": 4}})
    assert [h.key for h in found] == ["2"]


def test_numbers_and_strings_compare_as_json_types(store: MarkusStore) -> None:
    store.put(("j",), "num", {"v": 7, "day": "2026-03-01"})
    store.put(("j",), "text", {"v": "7", "day": "2025-12-31"})
    store.put(("j",), "flag", {"v": True})
    assert [i.key for i in store.search(("j",), filter={"v": {"$gt": 4}})] == ["num"]
    assert [i.key for i in store.search(("j",), filter={"v": {"$gt": "6"}})] == ["text"]
    assert [i.key for i in store.search(("j",), filter={"v": 7})] == ["num"]
    assert [i.key for i in store.search(("j",), filter={"v": True})] == ["flag"]
    assert [i.key for i in store.search(("j",), filter={"day": {"$gte": "2026-01-01"}})] == ["num"]
    with pytest.raises(ValueError, match="number or a string"):
        store.search(("j",), filter={"v": {"$gt": None}})
    with pytest.raises(ValueError, match="Unsupported operator"):
        store.search(("j",), filter={"v": {"$in": [1]}})


def test_a_bad_filter_in_a_batch_writes_nothing(store: MarkusStore) -> None:
    with pytest.raises(ValueError):
        store.batch([PutOp(("b",), "k", {"v": 1}), SearchOp(("b",), filter={"v": {"$gt": [1]}})])
    assert store.get(("b",), "k") is None


def test_a_batch_put_of_many_items_lands_whole(store: MarkusStore) -> None:
    ops = [PutOp(("many", str(i % 7)), f"k{i}", {"text": f"item {i} cargo"}) for i in range(2500)]
    store.batch(ops)
    assert len(store.search(("many",), query="cargo", limit=3000)) == 2500
    store.batch([PutOp(("many", str(i % 7)), f"k{i}", None) for i in range(0, 2500, 2)])
    assert len(store.search(("many",), limit=3000)) == 1250
    assert len(store.search(("many",), query="cargo", limit=3000)) == 1250


def test_a_batch_re_put_replaces_the_terms(store: MarkusStore) -> None:
    store.batch([PutOp(("r",), "k", {"text": "kiwi"}), PutOp(("r",), "k", {"text": "mango"})])
    assert store.search(("r",), query="kiwi") == []
    assert [h.key for h in store.search(("r",), query="mango")] == ["k"]
    store.put(("r",), "k", {"text": "papaya"})
    assert store.search(("r",), query="mango") == []


def test_only_the_page_is_decoded(tmp_path: Path) -> None:
    settings = Settings.from_env(home=tmp_path)
    with open_agent("agent-1", settings=settings) as memory:
        store = MarkusStore(memory, embedder=None)
        try:
            store.put(("d",), "old", {"text": "tea"})
            store.put(("d",), "new", {"text": "tea tea"})
            conn = sqlite3.connect(settings.database_path, isolation_level=None)
            try:  # a value no JSON parser reads, outside the first page
                conn.execute("UPDATE langgraph_items SET value = '{' WHERE key = 'old'")
            finally:
                conn.close()
            assert [i.key for i in store.search(("d",), limit=1)] == ["new"]
            assert [i.key for i in store.search(("d",), query="tea", limit=1)] == ["new"]
            with pytest.raises(json.JSONDecodeError):
                store.search(("d",), limit=2)
        finally:
            store.close()


def test_abatch_runs_in_a_worker_thread(store: MarkusStore) -> None:
    store.put(("a",), "k", {"text": "tea"})
    seen: list[int] = []
    original = store.batch

    def spy(ops: Any) -> Any:
        seen.append(threading.get_ident())
        return original(ops)

    store.batch = spy  # type: ignore[method-assign]
    found = asyncio.run(store.asearch(("a",), query="tea"))
    assert [i.key for i in found] == ["k"] and seen and seen[0] != threading.get_ident()


def test_a_filter_passing_only_low_ranked_items_still_fills_the_page(store: MarkusStore) -> None:
    ops = [PutOp(("w",), f"k{n}", {"text": "tea " * (1 + n // 100), "n": n}) for n in range(600)]
    store.batch(ops)
    found = store.search(("w",), query="tea", filter={"n": {"$lt": 3}}, limit=5)
    assert sorted(i.key for i in found) == ["k0", "k1", "k2"]
    top = store.search(("w",), query="tea", filter={"n": {"$lt": 50}}, limit=5, offset=40)
    assert len(top) == 5 and all(i.value["n"] < 50 for i in top)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_deleting_the_agent_deletes_the_terms_of_its_items(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from markus_memory.agents import delete_agent
    from markus_memory.storage.kv import KVTable

    settings = Settings.from_env(home=tmp_path)
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        settings = dataclasses.replace(settings, database_url=url, documents="files")
    agent, other = new_agent_id(), new_agent_id()
    for name in (agent, other):
        with open_agent(name, settings=settings) as memory:
            store = MarkusStore(memory)
            store.put(("n",), "k", {"text": "secret plans"})
            store.close()
    delete_agent(settings, agent)
    with open_agent(other, settings=settings) as memory:
        table: KVTable = memory.backend.kv_table(agent)
        try:
            with table.database.read() as conn:
                sql = table.dialect.bind(conn)
                left = sql.rows(
                    "SELECT count(*) FROM langgraph_postings WHERE agent = ? UNION ALL "
                    "SELECT count(*) FROM langgraph_terms WHERE agent = ? UNION ALL "
                    "SELECT count(*) FROM langgraph_stats WHERE agent_id = ?",
                    (table.agent, table.agent, agent),
                )
            assert left == [(0,), (0,), (0,)]
            assert table.ranked(Where("", None, 0.0), "secret", 10, 0) == []
        finally:
            table.close()
        store = MarkusStore(memory)
        assert [i.key for i in store.search(("n",), query="secret")] == ["k"]
        store.close()


def test_field_names_are_not_words_of_the_item(store: MarkusStore) -> None:
    store.put(("v",), "whole", {"text": "green tea", "kind": "habit", "tags": ["morning"], "n": 7})
    store.put(("v",), "braced", {"text": "{not json", "kind": "x"}, index=["text"])
    store.put(("v",), "nested", {"meta": {"note": "brewing"}}, index=["meta"])
    assert store.search(("v",), query="kind text") == []
    assert [h.key for h in store.search(("v",), query="habit morning")] == ["whole"]
    assert [h.key for h in store.search(("v",), query="json")] == ["braced"]
    assert [h.key for h in store.search(("v",), query="brew")] == ["nested"]
    assert store.search(("v",), query="note") == []


def test_a_large_batch_over_stored_items_updates_them(memory: AgentMemory) -> None:
    clock = memory.settings.clock
    assert isinstance(clock, Clock)
    store = MarkusStore(memory)
    try:
        store.batch([PutOp(("u",), f"k{n}", {"text": "kiwi", "n": n}) for n in range(300)])
        before = store.get(("u",), "k7")
        clock.now += timedelta(minutes=1)
        store.batch([PutOp(("u",), f"k{n}", {"text": "mango", "n": -n}) for n in range(300)])
        after = store.get(("u",), "k7")
        assert (
            before is not None and after is not None and after.value == {"text": "mango", "n": -7}
        )
        assert after.created_at == before.created_at and after.updated_at > before.updated_at
        assert store.search(("u",), query="kiwi") == []
        assert len(store.search(("u",), query="mango", limit=500)) == 300
    finally:
        store.close()


def _counts(table: Any) -> tuple[list[Any], list[Any]]:
    """The kept statistics of the table's agent and the same recomputed from its rows."""
    with table.database.read() as conn:
        sql = table.dialect.bind(conn)
        kept = sql.rows(
            "SELECT docs, tokens FROM langgraph_stats WHERE agent_id = ? UNION ALL "
            "SELECT term, df FROM langgraph_terms WHERE agent = ? AND df > 0 ORDER BY 1, 2",
            (table.agent_id, table.agent),
        )
        fresh = sql.rows(
            "SELECT count(*), COALESCE(SUM(len), 0) FROM langgraph_items WHERE agent_id = ? "
            "UNION ALL SELECT term, count(*) FROM langgraph_postings WHERE agent = ? "
            "GROUP BY term ORDER BY 1, 2",
            (table.agent_id, table.agent),
        )
    return [tuple(int(v) for v in r) for r in kept], [tuple(int(v) for v in r) for r in fresh]


def test_the_kept_counts_equal_the_rows_after_every_kind_of_write(memory: AgentMemory) -> None:
    clock = memory.settings.clock
    assert isinstance(clock, Clock)
    store = MarkusStore(memory)
    table = memory.backend.kv_table(memory.agent_id)
    try:
        words = ["tea", "green tea", "coffee beans", "run running", "数据库", ""]
        store.batch([PutOp(("c", str(n % 3)), f"k{n}", {"t": words[n % 6]}) for n in range(250)])
        store.batch([PutOp(("c", "0"), f"k{n}", {"t": "bike"}) for n in range(0, 250, 3)])
        store.batch([PutOp(("c", "1"), f"k{n}", None) for n in range(1, 250, 3)])
        store.put(("c", "x"), "short", {"t": "tea tea"}, ttl=1)
        store.put(("c", "x"), "plain", {"t": "tea"}, index=False)
        clock.now += timedelta(minutes=2)
        assert store.sweep_ttl() == 1
        kept, fresh = _counts(table)
        assert kept == fresh
    finally:
        table.close()
        store.close()


def test_an_expired_item_is_not_found_by_a_query(memory: AgentMemory) -> None:
    clock = memory.settings.clock
    assert isinstance(clock, Clock)
    store = MarkusStore(memory)
    try:
        store.put(("e",), "brief", {"text": "launch plans"}, ttl=1)
        store.put(("e",), "kept", {"text": "launch day"})
        clock.now += timedelta(minutes=2)
        assert [h.key for h in store.search(("e",), query="launch")] == ["kept"]
        assert [h.key for h in store.search(("e",), query="plans")] == []
    finally:
        store.close()
