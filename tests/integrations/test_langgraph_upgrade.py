"""The LangGraph items table is a migration set of data.db: old layouts upgrade in place and
``doctor`` checks it."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.integrations.langgraph import MarkusStore
from markus_memory.storage import kv
from markus_memory.storage._sqlite.checks import (
    DATA_DB_MIGRATIONS,
    database_checks,
    pending_migrations,
)
from markus_memory.storage.migrations import SqliteMigrationTarget

# The table as the LangGraph store created it before it was a migration set.
OLD_LAYOUT = """
CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at REAL, ttl_minutes REAL,
    vector TEXT, PRIMARY KEY (agent_id, namespace, key));
CREATE VIRTUAL TABLE IF NOT EXISTS langgraph_items_fts USING fts5(
    agent_id UNINDEXED, namespace UNINDEXED, key UNINDEXED, text);
"""
THEN = datetime(2025, 6, 1, 9, 30, 0, 123456, tzinfo=timezone.utc)


def _old_database(path: Path, agent: str) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(OLD_LAYOUT)
    for key, text in (("a", "quarterly budget report"), ("b", "lunch with Ana")):
        conn.execute(
            "INSERT INTO langgraph_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                agent,
                "notes",
                key,
                json.dumps({"text": text}),
                THEN.isoformat(),
                THEN.isoformat(),
                None,
                None,
                None,
            ),
        )
        conn.execute(
            "INSERT INTO langgraph_items_fts VALUES (?, ?, ?, ?)", (agent, "notes", key, text)
        )
    conn.commit()
    conn.close()


def test_the_items_table_is_in_the_data_db_registry() -> None:
    assert kv.sqlite_migrations in DATA_DB_MIGRATIONS


def test_an_old_layout_upgrades_in_place_and_keeps_items_and_their_search(tmp_path: Path) -> None:
    settings = Settings.from_env(home=tmp_path)
    _old_database(settings.database_path, "agent-1")
    with open_agent("agent-1", settings=settings) as memory:
        store = MarkusStore(memory)
        try:
            item = store.get(("notes",), "a")
            assert item is not None and item.value == {"text": "quarterly budget report"}
            assert item.created_at == THEN
            assert [h.key for h in store.search(("notes",), query="budgets")] == ["a"]
            store.put(("notes",), "a", {"text": "moved to the archive"})
            assert store.search(("notes",), query="budget") == []
            assert [h.key for h in store.search(("notes",), query="archive")] == ["a"]
            store.delete(("notes",), "b")
            assert store.search(("notes",), query="lunch") == []
        finally:
            store.close()
    conn = sqlite3.connect(settings.database_path, isolation_level=None)
    try:
        assert pending_migrations(SqliteMigrationTarget(conn)) == []
        docs = conn.execute("SELECT DISTINCT doc FROM langgraph_postings").fetchall()
        assert len(docs) == 1  # the terms of the one item left, none of the deleted one
    finally:
        conn.close()
    assert all(c.ok for c in database_checks(settings.database_path))


def test_doctor_reports_a_langgraph_migration_that_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        kv.sqlite_migrations.apply(SqliteMigrationTarget(conn), stop_before="m002_item_text")
    finally:
        conn.close()
    schema = [c for c in database_checks(path) if c.check == "schema current"]
    assert schema and not schema[0].ok
    assert "langgraph/m002_item_text" in schema[0].detail


# The table as the LangGraph store created it in PostgreSQL before it was a migration set.
OLD_PG_LAYOUT = """
CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
    expires_at DOUBLE PRECISION, ttl_minutes DOUBLE PRECISION, vector JSONB,
    text TEXT NOT NULL DEFAULT '',
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    PRIMARY KEY (agent_id, namespace, key));
CREATE INDEX IF NOT EXISTS langgraph_items_tsv ON langgraph_items USING GIN (tsv);
"""


def test_an_old_postgres_layout_is_adopted_with_its_items(tmp_path: Path) -> None:
    psycopg = pytest.importorskip("psycopg")
    from tests.storage.pg import postgres_schema_url

    with postgres_schema_url("markus_test_engine_dedupe") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(OLD_PG_LAYOUT)
            conn.execute(
                "INSERT INTO langgraph_items (agent_id, namespace, key, value, created_at, "
                "updated_at, text) VALUES ('agent-1', 'notes', 'a', %s::jsonb, %s, %s, %s)",
                (json.dumps({"text": "budget"}), THEN, THEN, "quarterly budget"),
            )
        settings = dataclasses.replace(
            Settings.from_env(home=tmp_path), database_url=url, documents="files"
        )
        with open_agent("agent-1", settings=settings) as memory:
            store = MarkusStore(memory)
            try:
                item = store.get(("notes",), "a")
                assert item is not None and item.value == {"text": "budget"}
                assert [h.key for h in store.search(("notes",), query="quarterly")] == ["a"]
                assert [h.key for h in store.search(("notes",), query="budgets")] == ["a"]
            finally:
                store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            names = conn.execute(
                "SELECT name FROM _markus_migrations WHERE migration_set = 'langgraph'"
            ).fetchall()
        assert sorted(n for (n,) in names) == [
            "m001_items",
            "m002_item_text",
            "m003_postings",
            "m004_counts",
        ]


def test_search_survives_sweeps_and_vacuum(tmp_path: Path) -> None:
    settings = Settings.from_env(home=tmp_path)
    with open_agent("agent-1", settings=settings) as memory:
        store = MarkusStore(memory)
        try:
            for n in range(6):
                store.put(("n",), f"k{n}", {"text": f"note {n} kiwi" if n % 2 else f"note {n}"})
            store.delete(("n",), "k1")
            conn = sqlite3.connect(settings.database_path, isolation_level=None)
            try:
                conn.execute("VACUUM")  # may renumber implicit rowids; the item key is explicit
            finally:
                conn.close()
            assert sorted(h.key for h in store.search(("n",), query="kiwi")) == ["k3", "k5"]
            store.put(("n",), "k3", {"text": "note 3"})
            assert [h.key for h in store.search(("n",), query="kiwi")] == ["k5"]
        finally:
            store.close()


def test_a_database_at_m002_gets_the_postings_of_its_items(tmp_path: Path) -> None:
    settings = Settings.from_env(home=tmp_path)
    conn = sqlite3.connect(settings.database_path, isolation_level=None)
    try:
        kv.sqlite_migrations.apply(SqliteMigrationTarget(conn), stop_before="m003_postings")
        for key, text in (("tea", "安娜喜欢喝绿茶"), ("run", "Running drinks")):
            conn.execute(
                "INSERT INTO langgraph_items (agent_id, namespace, key, value, created_at, "
                "updated_at, text) VALUES ('agent-1', 'notes', ?, ?, ?, ?, ?)",
                (key, json.dumps({"text": text}), THEN.isoformat(), THEN.isoformat(), text),
            )
    finally:
        conn.close()
    with open_agent("agent-1", settings=settings) as memory:
        store = MarkusStore(memory)
        try:
            assert [h.key for h in store.search(("notes",), query="绿茶")] == ["tea"]
            assert [h.key for h in store.search(("notes",), query="run drink")] == ["run"]
            store.delete(("notes",), "run")
            assert store.search(("notes",), query="drink") == []
        finally:
            store.close()
    assert all(c.ok for c in database_checks(settings.database_path))
