"""SQLite specifics: pragmas, exact schema, upgrading a Markus database, threads, processes."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from markus_memory.errors import ClosedError, StorageError
from markus_memory.storage._sqlite import schema as sqlite_schema
from markus_memory.storage._sqlite.conn import fts_match, quote_fts
from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.migrations import Migrations
from markus_memory.storage.repos.activities import Activity

GOLDEN = Path(__file__).with_name("fresh_schema.sql")
T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def schema_dump(path: Path) -> str:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
    ).fetchall()
    conn.close()
    return "".join(f"-- {t} {n} ON {tbl}\n{sql};\n\n" for t, n, tbl, sql in rows)


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def test_connection_pragmas(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db")
    conn = store.database.connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    store.close()


def test_fresh_database_has_exactly_the_golden_schema(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "data.db").close()
    assert schema_dump(tmp_path / "data.db") == GOLDEN.read_text()


def test_markus_tables_have_the_original_column_names(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db")
    conn = store.database.connection()
    assert columns(conn, "agent_activities") == [
        "id",
        "agent_id",
        "mailbox_item_id",
        "type",
        "label",
        "task_id",
        "started_at",
        "ended_at",
        "total_tokens",
        "total_tools",
        "success",
        "summary",
        "keywords",
        "created_at",
    ]
    assert columns(conn, "agent_activity_logs") == [
        "id",
        "activity_id",
        "seq",
        "type",
        "content",
        "metadata",
        "created_at",
    ]
    assert columns(conn, "chat_sessions") == [
        "id",
        "agent_id",
        "user_id",
        "title",
        "is_main",
        "metadata",
        "created_at",
        "last_message_at",
    ]
    assert columns(conn, "chat_messages") == [
        "id",
        "session_id",
        "agent_id",
        "role",
        "content",
        "metadata",
        "tokens_used",
        "created_at",
    ]
    assert set(columns(conn, "mailbox_items")) >= {"priority", "status", "retry_count"}
    assert columns(conn, "agent_decisions") == [
        "id",
        "agent_id",
        "decision_type",
        "mailbox_item_id",
        "context",
        "reasoning",
        "outcome",
        "created_at",
    ]
    store.close()


OLD_MARKUS_SCHEMA = """
CREATE TABLE agents (id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE agent_activities (
  id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, type TEXT NOT NULL, label TEXT NOT NULL,
  task_id TEXT, started_at TEXT NOT NULL, ended_at TEXT, total_tokens INTEGER DEFAULT 0,
  total_tools INTEGER DEFAULT 0, success INTEGER DEFAULT 1,
  created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX idx_agent_activities_agent ON agent_activities(agent_id, started_at DESC);
CREATE TABLE agent_activity_logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  activity_id TEXT NOT NULL REFERENCES agent_activities(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL, type TEXT NOT NULL, content TEXT NOT NULL DEFAULT '',
  metadata TEXT DEFAULT '{}', created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE chat_sessions (
  id TEXT PRIMARY KEY, agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
  user_id TEXT, title TEXT, created_at TEXT, last_message_at TEXT);
CREATE TABLE chat_messages (
  id TEXT PRIMARY KEY, session_id TEXT REFERENCES chat_sessions(id) ON DELETE CASCADE,
  agent_id TEXT, role TEXT, content TEXT, metadata TEXT, tokens_used INTEGER DEFAULT 0,
  created_at TEXT);
CREATE TABLE mailbox_items (
  id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, source_type TEXT NOT NULL,
  priority INTEGER DEFAULT 2, status TEXT DEFAULT 'queued', payload TEXT, metadata TEXT,
  queued_at TEXT NOT NULL, started_at TEXT, completed_at TEXT, deferred_until TEXT,
  merged_into TEXT);
CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT);
INSERT INTO agents VALUES ('agent-7', 'Seven');
INSERT INTO agent_activities (id, agent_id, type, label, task_id, started_at, ended_at)
  VALUES ('act-agent-7-1700000000000-ab12', 'agent-7', 'task', 'Fix login bug', 'T-9',
          '2023-11-14T22:13:20.000Z', '2023-11-14T22:20:00.000Z');
INSERT INTO agent_activity_logs (activity_id, seq, type, content, metadata, created_at)
  VALUES ('act-agent-7-1700000000000-ab12', 1, 'tool_start', 'shell_execute',
          '{"arguments":{"cmd":"pytest"}}', '2023-11-14T22:14:00.000Z'),
         ('act-agent-7-1700000000000-ab12', 2, 'text', 'The oauth callback was fixed',
          '{}', '2023-11-14T22:19:00.000Z');
INSERT INTO chat_sessions VALUES ('cs_00000000000000aa', 'agent-7', 'u1', 'Old chat',
  '2023-11-14T10:00:00.000Z', '2023-11-14T10:05:00.000Z');
INSERT INTO chat_messages VALUES ('cm_1', 'cs_00000000000000aa', 'agent-7', 'user', 'hello',
  NULL, 0, '2023-11-14T10:00:00.000Z'),
  ('cm_2', 'cs_00000000000000aa', 'agent-7', 'assistant', 'hi there', '{"x":1}', 12,
  '2023-11-14T10:05:00.000Z');
INSERT INTO mailbox_items (id, agent_id, source_type, queued_at)
  VALUES ('mb-old', 'agent-7', 'chat', '2023-11-14T10:00:00.000Z');
"""


def test_an_existing_markus_database_opens_and_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    old = sqlite3.connect(path)
    old.executescript(OLD_MARKUS_SCHEMA)
    old.close()

    store = SqliteStore(path)
    conn = store.database.connection()
    assert {"mailbox_item_id", "summary", "keywords"} <= set(columns(conn, "agent_activities"))
    assert {"is_main", "metadata"} <= set(columns(conn, "chat_sessions"))
    assert "retry_count" in columns(conn, "mailbox_items")
    assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 0  # left alone

    old_act = store.activities.get_activity("agent-7", "act-agent-7-1700000000000-ab12")
    assert old_act is not None
    assert (old_act.label, old_act.task_id, old_act.summary) == ("Fix login bug", "T-9", "")
    assert [log.seq for log in store.activities.activity_logs("agent-7", old_act.id)] == [1, 2]
    # Old rows were backfilled into the search index, log content included.
    assert [
        h.activity.id for h in store.activities.search_activities("agent-7", "oauth callback")
    ] == [old_act.id]
    assert [m.content for m in store.chats.chat_messages("agent-7", "cs_00000000000000aa")] == [
        "hello",
        "hi there",
    ]
    session = store.chats.get_chat_session("agent-7", "cs_00000000000000aa")
    assert session is not None and session.is_main is False
    item = store.mailbox.get_mailbox_item("agent-7", "mb-old")
    assert item is not None and item.retry_count == 0
    # New writes work on the upgraded file, and a second open changes nothing.
    store.activities.insert_activity(
        Activity(id="act-agent-7-2", agent_id="agent-7", type="chat", label="New", started_at=T0)
    )
    store.close()
    before = schema_dump(path)
    SqliteStore(path).close()
    assert schema_dump(path) == before


def test_search_index_can_add_its_own_migration_set(tmp_path: Path) -> None:
    extra: Migrations[sqlite3.Connection] = Migrations("search-index")

    @extra()
    def m001_vectors(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE vectors (id INTEGER PRIMARY KEY, embedding BLOB)")

    store = SqliteStore(tmp_path / "data.db", extra_migrations=[extra])
    rows = (
        store.database.connection()
        .execute("SELECT migration_set, COUNT(*) FROM _markus_migrations GROUP BY migration_set")
        .fetchall()
    )
    assert dict(rows) == {"markus": len(sqlite_schema.migrations.migrations), "search-index": 1}
    assert store.database.migrate(extra) == []
    store.close()


def test_closed_store_raises_closed_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db")
    store.close()
    store.close()
    with pytest.raises(ClosedError, match="closed"):
        store.activities.query_activities("a1")


def test_a_sqlite_failure_surfaces_as_storage_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db")
    activity = Activity(id="dup", agent_id="a1", type="task", label="x", started_at=T0)
    store.activities.insert_activity(activity)
    with pytest.raises(StorageError, match="UNIQUE"):
        store.activities.insert_activity(activity)
    assert not store.database.connection().in_transaction
    store.close()


def test_threads_appending_to_one_activity_get_distinct_seqs(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db")
    store.activities.insert_activity(
        Activity(id="x", agent_id="a1", type="task", label="x", started_at=T0)
    )
    seqs: list[int] = []
    guard = threading.Lock()

    def worker(n: int) -> None:
        for i in range(25):
            seq = store.activities.append_log("a1", "x", "text", f"{n}-{i}", {}, T0)
            assert seq is not None
            with guard:
                seqs.append(seq)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seqs) == list(range(1, 151))
    assert [log.seq for log in store.activities.activity_logs("a1", "x")] == list(range(1, 151))
    store.close()


def _write_events(path: str, worker: int, count: int) -> None:
    store = SqliteStore(path)
    activity_id = f"act-w{worker}"
    store.activities.insert_activity(
        Activity(id=activity_id, agent_id=f"w{worker}", type="task", label="load", started_at=T0)
    )
    for i in range(count - 1):
        store.activities.append_log(f"w{worker}", activity_id, "text", f"event {i}", {"i": i}, T0)
    store.close()


@pytest.mark.slow
def test_four_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "data.db")
    SqliteStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_events, args=(path, w, 1000)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    conn = sqlite3.connect(path)
    activities = conn.execute("SELECT COUNT(*) FROM agent_activities").fetchone()[0]
    logs = conn.execute("SELECT COUNT(*) FROM agent_activity_logs").fetchone()[0]
    assert activities + logs == 4000
    per_worker = conn.execute(
        "SELECT activity_id, COUNT(*), MAX(seq) FROM agent_activity_logs GROUP BY activity_id"
    ).fetchall()
    assert sorted(per_worker) == [(f"act-w{w}", 999, 999) for w in range(4)]


@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=6), st.booleans())
@settings(max_examples=200, deadline=None)
def test_quoted_terms_always_form_a_valid_match(terms: list[str], any_term: bool) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(a)")
    conn.execute("INSERT INTO f VALUES ('NOT OR AND near ( ) * : \" text')")
    rows = conn.execute(
        "SELECT rowid FROM f WHERE f MATCH ?", (fts_match(terms, any_term=any_term),)
    )
    assert isinstance(rows.fetchall(), list)
    assert quote_fts('say "hi"') == '"say ""hi"""'


def test_a_match_set_over_the_candidate_bound_is_ordered_by_recency(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db", search_candidates=3)
    labels = ["routine deploy", "Deploy api", "routine", "deploy notes", "deploy deploy", "x"]
    for i, label in enumerate(labels):
        store.activities.insert_activity(
            Activity(
                id=f"a{i}",
                agent_id="a1",
                type="task",
                label=label if i != 2 else "routine",
                started_at=T0 + timedelta(minutes=i),
                summary="deploy" if i == 2 else "",
            )
        )
    store.activities.insert_activity(
        Activity(id="other", agent_id="a2", type="task", label="deploy", started_at=T0)
    )
    # 5 of a1's activities match "deploy" (> 3 candidates): label/keyword hits newest first,
    # then the summary-only hit; never the other agent's.
    hits = store.activities.search_activities("a1", "deploy", limit=10)
    assert [h.activity.id for h in hits] == ["a4", "a3", "a1", "a0", "a2"]
    assert all(h.score == 0.0 for h in hits)
    # Under the bound the ranking is bm25: the label-dense hit first.
    small = SqliteStore(tmp_path / "data.db", search_candidates=100)
    ranked = small.activities.search_activities("a1", "deploy", limit=10)
    assert {h.activity.id for h in ranked} == {"a0", "a1", "a2", "a3", "a4"}
    assert ranked[-1].activity.id == "a2"
    assert all(h.score > 0 for h in ranked)
    small.close()
    store.close()


def test_agent_spans_keep_each_agents_documents_apart(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "data.db")
    for agent in ("b", "a", "b", "c", "a"):
        n = len(store.activities.query_activities(agent))
        store.activities.insert_activity(
            Activity(
                id=f"{agent}{n}",
                agent_id=agent,
                type="t",
                label="shared words",
                started_at=T0 + timedelta(minutes=n),
            )
        )
    for agent, expected in (("a", {"a0", "a1"}), ("b", {"b0", "b1"}), ("c", {"c0"})):
        assert {
            h.activity.id for h in store.activities.search_activities(agent, "shared")
        } == expected
    assert store.activities.search_activities("nobody", "shared") == []
    store.close()
