"""The SQLite schema of ``data.db`` as one migration set: Markus tables, search and transcripts.

Existing Markus databases have the tables but no bookkeeping rows, so every migration here is
written to be correct on both a fresh file and a Markus-created one (``IF NOT EXISTS``, add a
column only when missing, backfill the search index from existing rows).
"""

from __future__ import annotations

import sqlite3

from ...analysis import term_text
from ..migrations import Migrations
from ..recall.index import RecallQueries
from ..recall.schema import add_vector_lists, fold_agent_into_terms, schema
from ..schema_tables import (
    MARKUS_INDEXES,
    MAX_INDEXED_LOG_CHARS,
    MIGRATION_SET,
    SQLITE_TYPES,
    conversation_tables,
    markus_tables,
    transcript_record,
)
from .dialect import SqliteSql

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
# The activity index holds the analyser's terms joined by spaces (analysis.term_text): its
# tokenizer only splits them again. "ascii" keeps every non-ASCII character (CJK, Devanagari
# marks, emoji) inside its token; the dot of a dotted name ("a.b.c") is a token character.
ACTIVITY_FTS_TOKENIZER = "ascii tokenchars '.'"
# bm25 column weights of activity_fts(label, summary, keywords, logs): a hit in the label or the
# keywords says more about the episode than one line somewhere in its tool output.
ACTIVITY_FTS_WEIGHTS = (4.0, 2.0, 3.0, 1.0)
# Search-document rowids are (agent slot << SLOT_SHIFT) | n; see m004.
SLOT_SHIFT = 32

migrations: Migrations[sqlite3.Connection] = Migrations(MIGRATION_SET)


@migrations()
def m001_markus_tables(conn: sqlite3.Connection) -> None:
    for statement in markus_tables(SQLITE_TYPES):
        conn.execute(statement)


# Columns Markus added to older databases with "add column if missing".
_LATE_COLUMNS = (
    ("agent_activities", "mailbox_item_id", "TEXT"),
    ("agent_activities", "summary", "TEXT DEFAULT ''"),
    ("agent_activities", "keywords", "TEXT DEFAULT ''"),
    ("chat_sessions", "is_main", "INTEGER NOT NULL DEFAULT 0"),
    ("chat_sessions", "metadata", "TEXT"),
    ("mailbox_items", "retry_count", "INTEGER DEFAULT 0"),
)


@migrations()
def m002_add_missing_columns(conn: sqlite3.Connection) -> None:
    for table, column, declaration in _LATE_COLUMNS:
        existing = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in existing:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


@migrations()
def m003_markus_indexes(conn: sqlite3.Connection) -> None:
    for statement in MARKUS_INDEXES:
        conn.execute(statement)


@migrations()
def m004_activity_search(conn: sqlite3.Connection) -> None:
    # Each agent owns a slot; its search documents (activities here, transcript messages in
    # m005) get rowids slot << 32 | n, n growing with time. An agent filter is then a rowid
    # range, which FTS5 applies inside its posting lists (no join), and "newest first" is
    # rowid DESC. The integer rowid is also stable, unlike the implicit rowid of
    # agent_activities (TEXT key), which VACUUM may renumber.
    fill_activity_search(conn)


ACTIVITY_SEARCH_TABLES = ("activity_search_docs", "activity_fts")


def fill_activity_search(conn: sqlite3.Connection) -> None:
    """(Re)create the activity search tables and fill them from ``agent_activities``, oldest
    first within each agent (m004; ``reindex`` runs it again to repair them)."""
    for table in ACTIVITY_SEARCH_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'agent_slots'").fetchone():
        conn.execute(
            """CREATE TABLE agent_slots (
  agent_id TEXT PRIMARY KEY,
  slot INTEGER NOT NULL UNIQUE
)"""
        )
        # Transcript rows keep their ids: their agents get back the slots those ids are in.
        if conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'transcript_messages'"
        ).fetchone():
            conn.execute(
                "INSERT OR IGNORE INTO agent_slots (agent_id, slot) "
                f"SELECT agent_id, MIN(id >> {SLOT_SHIFT}) FROM transcript_messages "
                "GROUP BY agent_id"
            )
    conn.execute(
        """CREATE TABLE activity_search_docs (
  rowid INTEGER PRIMARY KEY,
  activity_id TEXT NOT NULL UNIQUE REFERENCES agent_activities(id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL
)"""
    )
    conn.execute(
        "CREATE VIRTUAL TABLE activity_fts USING fts5("
        f'label, summary, keywords, logs, tokenize="{ACTIVITY_FTS_TOKENIZER}")'
    )
    conn.execute(
        "INSERT OR IGNORE INTO agent_slots (agent_id, slot) "
        "SELECT agent_id, (SELECT COALESCE(MAX(slot), 0) FROM agent_slots) "
        " + ROW_NUMBER() OVER (ORDER BY agent_id) "
        "FROM (SELECT DISTINCT agent_id FROM agent_activities "
        " WHERE agent_id NOT IN (SELECT agent_id FROM agent_slots))"
    )
    conn.execute(
        "INSERT INTO activity_search_docs (rowid, activity_id, agent_id) "
        f"SELECT (s.slot << {SLOT_SHIFT}) + ROW_NUMBER() OVER "
        " (PARTITION BY a.agent_id ORDER BY a.started_at, a.id), a.id, a.agent_id "
        "FROM agent_activities a JOIN agent_slots s ON s.agent_id = a.agent_id"
    )
    conn.create_function("markus_terms", 1, term_text, deterministic=True)
    conn.execute(
        "INSERT INTO activity_fts (rowid, label, summary, keywords, logs) "
        "SELECT d.rowid, markus_terms(COALESCE(a.label, '')), "
        " markus_terms(COALESCE(a.summary, '')), markus_terms(COALESCE(a.keywords, '')), "
        " markus_terms(COALESCE(substr((SELECT group_concat(content, char(10)) FROM "
        "  (SELECT content FROM agent_activity_logs l WHERE l.activity_id = a.id ORDER BY seq)),"
        f"  1, {MAX_INDEXED_LOG_CHARS}), '')) "
        "FROM activity_search_docs d JOIN agent_activities a ON a.id = d.activity_id"
    )


@migrations()
def m005_transcript(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE transcript_messages (
  id INTEGER PRIMARY KEY,
  agent_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (agent_id, session_id, seq)
)"""
    )
    conn.execute(
        "CREATE INDEX idx_transcript_agent_created ON transcript_messages(agent_id, created_at)"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE transcript_fts USING fts5(content, "
        f"content='transcript_messages', content_rowid='id', tokenize='{FTS_TOKENIZER}')"
    )
    # External-content FTS: the triggers keep the index in step with the table.
    conn.execute(
        "CREATE TRIGGER transcript_ai AFTER INSERT ON transcript_messages BEGIN "
        "INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content); END"
    )
    conn.execute(
        "CREATE TRIGGER transcript_ad AFTER DELETE ON transcript_messages BEGIN "
        "INSERT INTO transcript_fts (transcript_fts, rowid, content) "
        "VALUES ('delete', old.id, old.content); END"
    )
    conn.execute(
        "CREATE TRIGGER transcript_au AFTER UPDATE ON transcript_messages BEGIN "
        "INSERT INTO transcript_fts (transcript_fts, rowid, content) "
        "VALUES ('delete', old.id, old.content); "
        "INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content); END"
    )


@migrations()
def m006_transcript_record(conn: sqlite3.Connection) -> None:
    # The transcript becomes the durable record of every session message: who spoke and the
    # message metadata, plus a per-session mark of how far the store holds the session (to
    # import session files written before the store, or past it, once).
    for statement in transcript_record(SQLITE_TYPES):
        conn.execute(statement)


@migrations()
def m007_recall_index(conn: sqlite3.Connection) -> None:
    # Conversation recall ranks inside the store with each agent's own statistics
    # (recall_index.py); the shared FTS5 table it replaces is dropped with its triggers.

    for statement in schema("BLOB", " WITHOUT ROWID"):
        conn.execute(statement)
    for trigger in ("transcript_ai", "transcript_ad", "transcript_au"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute("DROP TABLE IF EXISTS transcript_fts")
    RecallQueries.rebuild(SqliteSql(conn))


@migrations()
def m008_activity_search_cjk(conn: sqlite3.Connection) -> None:
    # The one text analyser: CJK runs are indexed with their character pairs, as in recall.
    fill_activity_search(conn)


@migrations()
def m009_recall_neighbour_keys(conn: sqlite3.Connection) -> None:
    # Recall's neighbour stage reads the keys of the turns with text around each candidate
    # (recall_fetch.keys_near): a compact index of just those, instead of the unique one.
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_transcript_keys ON transcript_messages"
        "(agent_id, session_id, seq, role, speaker) WHERE trim(content) <> ''"
    )


@migrations()
def m010_activity_search_agent_terms(conn: sqlite3.Connection) -> None:
    # PostgreSQL m010 adds a combined (agent, document) GIN index. Nothing to change here: the
    # FTS5 activity index already ranks one agent's matches (slotted rowids, m004); the
    # migration is recorded so that both backends keep the same migration set.
    del conn


@migrations()
def m011_recall_postings_covering(conn: sqlite3.Connection) -> None:
    # PostgreSQL m011 puts tf and len into the postings key. Nothing to change here: the
    # postings table has no rowid, so its key already holds every column; the migration is
    # recorded so that both backends keep the same migration set.
    del conn


@migrations()
def m012_recall_keys_by_id(conn: sqlite3.Connection) -> None:
    # PostgreSQL m012 adds a covering index of the recall keys by id. Nothing to change here:
    # the id is the rowid, so a row found by id is read with its keys; the migration is
    # recorded so that both backends keep the same migration set.
    del conn


@migrations()
def m013_recall_agent_terms(conn: sqlite3.Connection) -> None:
    # The postings and document frequencies are keyed by the agent's own key of each term
    # (recall/schema.py): one key column less in the row written for every word of every
    # message. The rows are rewritten as they are; no message is analysed again.

    fold_agent_into_terms(SqliteSql(conn), " WITHOUT ROWID")


@migrations()
def m014_recall_vector_lists(conn: sqlite3.Connection) -> None:
    # A long history's vectors are searched through lists (vector_lists.py): each vector row
    # names its list, and the lists' centroids get a table. Vectors stored before join lists
    # when their agent next stores vectors past the threshold.

    add_vector_lists(SqliteSql(conn), "BLOB", " WITHOUT ROWID")


@migrations()
def m015_conversations(conn: sqlite3.Connection) -> None:
    # Conversations the store holds (framework histories; Markus sessions on PostgreSQL),
    # each message exactly as given, and the daily logs of a shared deployment.
    for statement in conversation_tables(SQLITE_TYPES):
        conn.execute(statement)


@migrations()
def m016_activity_search_analyser(conn: sqlite3.Connection) -> None:
    # Activities are searched with the one analyser, as knowledge and conversations: the FTS5
    # index is refilled with each field's analysed terms (stems, CJK pairs, Devanagari words,
    # emoji, dotted names) under a tokenizer that only splits them at spaces.
    fill_activity_search(conn)
