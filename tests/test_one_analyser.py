"""One analyser for every layer: the same words are found in knowledge (curated sections and
observations, ``memory_search``), conversations (``recall_conversation``) and activities
(``recall_activity`` / ``search_activities``), on SQLite and on PostgreSQL; a query of stop
words alone finds nothing anywhere."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory import AgentMemory, open_agent
from markus_memory.config import Settings
from markus_memory.storage._sqlite.schema import migrations as sqlite_migrations
from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.migrations import SqliteMigrationTarget
from markus_memory.storage.repos.activities import Activity
from markus_memory.tools import dispatch
from tests.postgres_support import new_agent_id, postgres_url
from tests.storage.pg import postgres_schema_url

__all__ = ["postgres_url"]

# (stored text, query): the query's words are found in the text by every layer.
CASES = {
    "drinks/drink": ("Anna drinks green tea every morning", "drink"),
    "drink/drinks": ("Anna will drink green tea tomorrow", "drinks"),
    "Running/run": ("Running the migration took an hour", "run"),
    "run/Running": ("We run the migration at night", "Running"),
    "cjk": ("我们的数据很重要", "数据"),
    "hindi": ("कल हम दिल्ली जाएंगे", "दिल्ली"),
    "emoji": ("deploy marker 🚀 set on the release", "🚀"),
    "dotted": ("upgrade the service to a.b.c tonight", "a.b.c"),
}
# Stored beside each case: shares no term with any query above (nor with "a.b.c" its letters).
DISTRACTOR = "Lunch was pasta with the letters a, b and c at noon; दिल खुश है"
STOP_WORDS_ONLY = "what is the"

MIGRATION = "m016_activity_search_analyser"


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if request.param == "sqlite":
        return Settings(home=tmp_path / "home")
    url = request.getfixturevalue("postgres_url")
    return Settings(home=tmp_path / "home", database_url=url)


def _fill(mem: AgentMemory, text: str) -> tuple[str, str]:
    """The text and the distractor in every layer; the ids of the activities holding the text
    in their label and in a log line."""
    mem.knowledge.update_section("Notes", text)
    mem.knowledge.update_section("Other", DISTRACTOR)
    mem.knowledge.save_observation(text)
    mem.knowledge.save_observation(DISTRACTOR)
    sid = mem.sessions.create().id
    mem.sessions.append(sid, {"role": "user", "content": text})
    mem.sessions.append(sid, {"role": "assistant", "content": DISTRACTOR})
    in_label = mem.activities.start("task", text)
    mem.activities.end(in_label)
    in_log = mem.activities.start("task", "nightly job")
    mem.activities.log(in_log, "tool", text)
    mem.activities.end(in_log)
    other = mem.activities.start("task", DISTRACTOR)
    mem.activities.end(other)
    return in_label, in_log


def _curated(mem: AgentMemory, query: str, text: str, ids: tuple[str, str]) -> None:
    assert [h.section for h in mem.search(query).hits if h.source == "curated"] == ["Notes"]


def _observations(mem: AgentMemory, query: str, text: str, ids: tuple[str, str]) -> None:
    assert [h.content for h in mem.search(query).hits if h.source == "observation"] == [text]


def _conversations(mem: AgentMemory, query: str, text: str, ids: tuple[str, str]) -> None:
    recalled = mem.recall_conversation(query, neighbours=0)
    assert recalled and recalled[0].text == text


def _activities(mem: AgentMemory, query: str, text: str, ids: tuple[str, str]) -> None:
    # The label weighs more than a log line: both found, the label's first.
    assert [h.activity.id for h in mem.activities.search(query)] == list(ids)
    found = mem.store.activities.search_activities(mem.agent_id, query)
    assert [h.activity.id for h in found] == list(ids)
    tool = json.loads(dispatch(mem, "recall_activity", {"query": query}))
    assert [a["id"] for a in tool["activities"]] == list(ids)


LAYERS = {
    "curated": _curated,
    "observations": _observations,
    "conversations": _conversations,
    "activities": _activities,
}


@pytest.mark.parametrize("layer", list(LAYERS))
@pytest.mark.parametrize("case", list(CASES))
def test_the_same_words_are_found_in_every_layer(settings: Settings, case: str, layer: str) -> None:
    text, query = CASES[case]
    with open_agent(new_agent_id(), settings=settings) as mem:
        LAYERS[layer](mem, query, text, _fill(mem, text))


def test_stop_words_alone_find_nothing_in_any_layer(settings: Settings) -> None:
    with open_agent(new_agent_id(), settings=settings) as mem:
        _fill(mem, "What is the status page of the service?")
        assert mem.search(STOP_WORDS_ONLY).hits == []
        assert mem.recall_conversation(STOP_WORDS_ONLY) == []
        assert mem.activities.search(STOP_WORDS_ONLY) == []
        tool = json.loads(dispatch(mem, "recall_activity", {"query": STOP_WORDS_ONLY}))
        assert tool["activities"] == []


def test_a_cjk_word_is_found_inside_a_run_and_a_missing_one_is_not(settings: Settings) -> None:
    text = CASES["cjk"][0]
    with open_agent(new_agent_id(), settings=settings) as mem:
        _fill(mem, text)
        assert mem.recall_conversation("数据很", neighbours=0)[0].text == text
        assert len(mem.activities.search("数据很")) == 2
        for query in ("数学", "重数"):
            assert mem.recall_conversation(query, neighbours=0) == []
            assert mem.activities.search(query) == []
            assert mem.search(query).hits == []


def _activity(agent: str, label: str) -> Activity:
    moment = datetime(2026, 1, 2, tzinfo=timezone.utc)
    return Activity(
        id=f"act-{agent}-1", agent_id=agent, type="task", label=label, started_at=moment
    )


def test_m016_reindexes_the_activities_of_an_existing_sqlite_database(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    conn = sqlite3.connect(path, isolation_level=None)
    sqlite_migrations.apply(SqliteMigrationTarget(conn), stop_before=MIGRATION)
    # The activity index as the engine's own tokenizer kept it before m016.
    conn.execute("DROP TABLE activity_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE activity_fts USING fts5(label, summary, keywords, logs, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO agent_slots (agent_id, slot) VALUES ('al', 1)")
    conn.execute(
        "INSERT INTO agent_activities (id, agent_id, type, label, started_at, created_at) "
        "VALUES ('act-al-1', 'al', 'task', 'deploy 🚀 to a.b.c', '2026-01-02T00:00:00.000Z', "
        "'2026-01-02T00:00:00.000Z')"
    )
    conn.execute(
        "INSERT INTO activity_search_docs (rowid, activity_id, agent_id) "
        "VALUES (4294967297, 'act-al-1', 'al')"
    )
    conn.execute(
        "INSERT INTO activity_fts (rowid, label, summary, keywords, logs) "
        "VALUES (4294967297, 'deploy 🚀 to a.b.c', '', '', '')"
    )
    conn.close()
    store = SqliteStore(path)
    try:
        for query in ("🚀", "a.b.c", "deploying"):
            assert [h.activity.id for h in store.activities.search_activities("al", query)] == [
                "act-al-1"
            ]
    finally:
        store.close()


def test_m016_reindexes_the_activities_of_an_existing_postgres_schema() -> None:
    import psycopg

    from markus_memory.storage._postgres.conn import PostgresMigrationTarget
    from markus_memory.storage._postgres.schema import activity_document_sql, headline_sql
    from markus_memory.storage._postgres.schema import migrations as pg_migrations
    from markus_memory.storage._postgres.store import PostgresStore

    with postgres_schema_url("markus_m016") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            pg_migrations.apply(PostgresMigrationTarget(conn), stop_before=MIGRATION)
            conn.execute(
                "INSERT INTO agent_activities (id, agent_id, type, label, started_at, "
                "created_at) VALUES ('act-al-1', 'al', 'task', 'deploy 🚀 to a.b.c', "
                "'2026-01-02', '2026-01-02')"
            )
            # The document as the text search configuration made it before m016.
            conn.execute(
                "INSERT INTO activity_search (activity_id, agent_id, started_at, document, "
                "headline) SELECT id, agent_id, started_at, "
                + activity_document_sql("label", "keywords", "summary", "NULL")
                + ", "
                + headline_sql("label", "keywords")
                + " FROM agent_activities"
            )
        store = PostgresStore(url)
        try:
            for query in ("🚀", "a.b.c", "deploying"):
                found = store.activities.search_activities("al", query)
                assert [h.activity.id for h in found] == ["act-al-1"]
        finally:
            store.close()


def test_activity_writes_keep_the_analysed_document_current(settings: Settings) -> None:
    with open_agent(new_agent_id(), settings=settings) as mem:
        store = mem.store
        store.activities.insert_activity(_activity(mem.agent_id, "nightly job"))
        activity_id = f"act-{mem.agent_id}-1"
        assert store.activities.search_activities(mem.agent_id, "🚀") == []
        mem.activities.log(activity_id, "tool", "marker 🚀 on v1.2.3")
        mem.activities.end(activity_id)
        for query in ("🚀", "v1.2.3", "markers"):
            assert [
                h.activity.id for h in store.activities.search_activities(mem.agent_id, query)
            ] == [activity_id]


def test_rebuilding_the_derived_indexes_refills_the_activity_search(settings: Settings) -> None:
    # What `markus-memory reindex` runs after an analyser change, on either backend.
    with open_agent(new_agent_id(), settings=settings) as mem:
        activity = mem.activities.start("task", "deploy marker 🚀")
        mem.activities.end(activity)
        table = "activity_search" if settings.database_url else "activity_fts"
        with mem.store.database.write() as conn:  # type: ignore[attr-defined]
            conn.execute(f"DELETE FROM {table}")
        assert mem.activities.search("🚀") == []
        mem.store.rebuild_derived()
        assert [h.activity.id for h in mem.activities.search("🚀")] == [activity]
