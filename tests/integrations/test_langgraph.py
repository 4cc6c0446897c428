"""The LangGraph store and tools, on SQLite and PostgreSQL, with the real langgraph package."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.integrations.langgraph import MarkusStore, memory_tools
from markus_memory.memory import AgentMemory
from markus_memory.search.embedders import FakeEmbedder
from markus_memory.tools import is_tool_error_result
from tests.postgres_support import new_agent_id, postgres_url  # noqa: F401


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


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
    store = MarkusStore(memory)
    yield store
    store.close()


def test_a_compiled_graph_puts_searches_and_deletes_through_the_store(
    store: MarkusStore,
) -> None:
    class State(TypedDict):
        found: list[str]
        after: list[str]

    def node(state: State, *, store: BaseStore) -> dict[str, Any]:
        ns = ("users", "ana", "memories")
        store.put(ns, "tea", {"text": "Ana drinks green tea every morning", "kind": "habit"})
        store.put(ns, "bike", {"text": "Ana rides a bike to work", "kind": "habit"})
        found = [i.key for i in store.search(("users", "ana"), query="tea morning")]
        store.delete(ns, "tea")
        after = [i.key for i in store.search(("users",), filter={"kind": "habit"})]
        return {"found": found, "after": after}

    graph = StateGraph(State).add_node("remember", node)
    graph.add_edge(START, "remember").add_edge("remember", END)
    app = graph.compile(store=store)
    assert app.invoke({"found": [], "after": []}) == {"found": ["tea"], "after": ["bike"]}
    assert store.get(("users", "ana", "memories"), "tea") is None
    assert store.get(("users", "ana", "memories"), "bike") is not None


def test_the_store_persists_across_handles(memory: AgentMemory) -> None:
    first = MarkusStore(memory)
    first.put(("docs",), "a", {"n": 1})
    first.close()
    second = MarkusStore(memory)
    item = second.get(("docs",), "a")
    second.close()
    assert item is not None and item.value == {"n": 1} and item.namespace == ("docs",)


def _seed(store: BaseStore) -> None:
    rows = [
        (("docs", "a"), "1", {"score": 5, "color": "red", "meta": {"lang": "en"}}),
        (("docs", "a"), "2", {"score": 3, "color": "blue", "meta": {"lang": "fr"}}),
        (("docs", "b"), "3", {"score": 4.5, "color": "red", "tags": ["x", "y"]}),
        (("docs", "b", "v1"), "4", {"score": 7, "color": "green"}),
        (("cache", "x", "v1"), "5", {"color": "red", "score": 0}),
        (("users",), "6", {"score": 1}),
    ]
    for ns, key, value in rows:
        store.put(ns, key, value)


FILTERS: list[dict[str, Any]] = [
    {},
    {"color": "red"},
    {"color": {"$ne": "red"}},
    {"score": {"$gt": 4}},
    {"score": {"$gte": 4.5}},
    {"score": {"$lt": 4}},
    {"score": {"$lte": 3, "$gt": 1}},
    {"score": {"$eq": 5}},
    {"meta": {"lang": "en"}},
    {"tags": ["x", "y"]},
    {"color": "red", "score": {"$gte": 5}},
]


@pytest.mark.parametrize("filter", FILTERS)
def test_filters_match_the_frameworks_in_memory_store(store: MarkusStore, filter: Any) -> None:
    reference = InMemoryStore()
    _seed(store)
    _seed(reference)
    for prefix in [(), ("docs",), ("docs", "b")]:
        ours = {(i.namespace, i.key) for i in store.search(prefix, filter=filter, limit=100)}
        theirs = {(i.namespace, i.key) for i in reference.search(prefix, filter=filter, limit=100)}
        assert ours == theirs, (prefix, filter)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"prefix": ("docs",)},
        {"suffix": ("v1",)},
        {"prefix": ("docs", "*")},
        {"prefix": ("*", "*", "v1")},
        {"max_depth": 1},
        {"max_depth": 2, "prefix": ("docs",)},
        {"limit": 2},
        {"limit": 2, "offset": 2},
    ],
)
def test_list_namespaces_matches_the_frameworks_in_memory_store(
    store: MarkusStore, kwargs: dict[str, Any]
) -> None:
    reference = InMemoryStore()
    _seed(store)
    _seed(reference)
    assert store.list_namespaces(**kwargs) == reference.list_namespaces(**kwargs)


def test_limit_offset_pages_without_overlap(store: MarkusStore) -> None:
    for i in range(7):
        store.put(("p",), f"k{i}", {"i": i})
    pages = [store.search(("p",), limit=3, offset=o) for o in (0, 3, 6)]
    keys = [i.key for page in pages for i in page]
    assert sorted(keys) == [f"k{i}" for i in range(7)] and [len(p) for p in pages] == [3, 3, 1]


def test_full_text_query_ranks_matching_items_only(store: MarkusStore) -> None:
    store.put(("n",), "a", {"text": "the quarterly report is due friday"})
    store.put(("n",), "b", {"text": "report report report on the budget"})
    store.put(("n",), "c", {"text": "lunch with Ana"})
    hits = store.search(("n",), query="budget report")
    assert [h.key for h in hits] == ["b", "a"]
    assert all(h.score is not None for h in hits) and hits[0].score > hits[1].score  # type: ignore[operator]
    assert store.search(("n",), query="nothing matches this") == []
    store.put(("n",), "b", {"text": "changed"})
    assert [h.key for h in store.search(("n",), query="budget")] == []


def test_vectors_rank_when_an_embedder_is_given(memory: AgentMemory) -> None:
    store = MarkusStore(memory, embedder=FakeEmbedder(), fields=["text"])
    try:
        store.put(("n",), "a", {"text": "green tea in the morning"})
        store.put(("n",), "b", {"text": "a bike ride to work"})
        store.put(("n",), "c", {"text": "unindexed"}, index=False)
        hits = store.search(("n",), query="morning tea")
        assert [h.key for h in hits] == ["a", "b", "c"]
        assert hits[0].score is not None and hits[0].score > (hits[1].score or 0)
        assert hits[2].score is None
    finally:
        store.close()


def test_reads_of_a_batch_see_the_state_before_it(store: MarkusStore) -> None:
    store.put(("b",), "k", {"v": 1})
    results = store.batch(
        [
            PutOp(("b",), "k", {"v": 2}),
            GetOp(("b",), "k"),
            PutOp(("b",), "new", {"v": 3}),
            SearchOp(("b",)),
            ListNamespacesOp(),
            PutOp(("b",), "k", None),
        ]
    )
    assert results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in results[3]] == ["k"]  # type: ignore[union-attr]
    assert results[4] == [("b",)]
    assert store.get(("b",), "k") is None  # the last put of a key wins
    assert store.get(("b",), "new").value == {"v": 3}  # type: ignore[union-attr]
    assert asyncio.run(store.abatch([GetOp(("b",), "new")]))[0].value == {"v": 3}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "bad",
    [
        PutOp(("",), "k", {"v": 1}),
        PutOp(("a.b",), "k", {"v": 1}),
        PutOp(("langgraph", "x"), "k", {"v": 1}),
        PutOp((), "k", {"v": 1}),
        PutOp(("ok",), "k", {"v": float("nan")}),
        PutOp(("ok",), "k", {"v": object()}),
        PutOp(("ok",), "k", {"v": 1}, ttl=-1),
        SearchOp(("a\x00",)),
    ],
)
def test_a_bad_op_raises_before_anything_is_written(store: MarkusStore, bad: Any) -> None:
    with pytest.raises((InvalidNamespaceError, TypeError, ValueError)):
        store.batch([PutOp(("ok",), "first", {"v": 1}), bad])
    assert store.get(("ok",), "first") is None


def test_the_framework_validates_namespaces_as_its_own_stores(store: MarkusStore) -> None:
    reference = InMemoryStore()
    for target in (store, reference):
        with pytest.raises(InvalidNamespaceError):
            target.put(("langgraph",), "k", {})
        with pytest.raises(InvalidNamespaceError):
            target.put(("a.b",), "k", {})


def test_ttl_in_minutes_expires_and_refreshes_on_read(memory: AgentMemory) -> None:
    clock = memory.settings.clock
    assert isinstance(clock, Clock)
    store = MarkusStore(memory, ttl={"default_ttl": 10, "refresh_on_read": True})
    try:
        store.put(("t",), "short", {"v": 1}, ttl=1)
        store.put(("t",), "default", {"v": 2})
        store.put(("t",), "forever", {"v": 3}, ttl=None)
        clock.now += timedelta(seconds=50)
        assert store.get(("t",), "short") is not None  # read at 50 s: expires at 110 s now
        clock.now += timedelta(seconds=50)
        assert store.get(("t",), "short", refresh_ttl=False) is not None
        clock.now += timedelta(seconds=20)
        assert store.get(("t",), "short") is None
        assert sorted(i.key for i in store.search(("t",))) == ["default", "forever"]
        clock.now += timedelta(minutes=11)
        assert [i.key for i in store.search(("t",))] == ["forever"]
        assert store.sweep_ttl() == 2
        assert store.list_namespaces() == [("t",)]
    finally:
        store.close()


def test_memory_tools_run_in_a_tool_node(tmp_path: Path) -> None:
    with open_agent("graph", tmp_path) as mem:
        tools = memory_tools(mem, scenario="converse")
        call = AIMessage(
            content="",
            tool_calls=[
                {"name": "memory_save", "args": {"content": "Ana likes tea"}, "id": "1"},
                {"name": "update_notebook", "args": {"key": "k"}, "id": "2"},
            ],
        )
        graph = StateGraph(MessagesState).add_node("tools", ToolNode(tools))
        graph.add_edge(START, "tools").add_edge("tools", END)
        out = graph.compile().invoke({"messages": [call]})["messages"][1:]
        results = {m.tool_call_id: m.content for m in out}
        assert not is_tool_error_result(results["1"])
        assert is_tool_error_result(results["2"]) and "Traceback" not in results["2"]
        assert json.loads(results["2"])["ok"] is False
        assert [h.content for h in mem.search("tea").hits] == ["Ana likes tea"]


def test_a_comparison_on_a_missing_or_text_value_is_false_not_an_error(store: MarkusStore) -> None:
    # The framework's in-memory store raises TypeError here; PostgreSQL's JSONB just skips.
    store.put(("m",), "none", {"other": 1})
    store.put(("m",), "text", {"score": "high"})
    store.put(("m",), "num", {"score": 9})
    assert [i.key for i in store.search(("m",), filter={"score": {"$gt": 4}})] == ["num"]
