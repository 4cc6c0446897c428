"""The PostgreSQL schema of the episodic store as one migration set (same name as SQLite's).

Logically the same tables and columns as :mod:`._sqlite.schema` (the parity test holds both to
it), with native types: ``timestamptz`` for times, ``jsonb`` for JSON, ``boolean`` for flags,
``bigint`` identities for integer keys. Full-text search uses ``tsvector`` + GIN instead of
FTS5: :data:`PG_ONLY_TABLES` and :data:`PG_ONLY_COLUMNS` name what exists only here, and
:data:`SQLITE_ONLY_TABLES` what exists only on SQLite (its FTS machinery).

Activity search documents hold the one analyser's terms (m016, :mod:`.activity_search`),
written as ``tsvector`` input; no text search configuration takes part in it. The configuration
``markus_fts`` (English snowball stemming without a stop-word list) and ``markus_cjk`` remain
for the migrations before m016 that still use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..migrations import Migrations
from ..recall.index import RecallQueries
from ..recall.schema import add_vector_lists, fold_agent_into_terms, has_agent_column, schema
from ..schema_tables import (
    MARKUS_INDEXES,
    MAX_INDEXED_LOG_CHARS,
    MIGRATION_SET,
    POSTGRES_TYPES,
    conversation_tables,
    markus_tables,
    transcript_record,
)
from .activity_search import index_all
from .dialect import PostgresSql

if TYPE_CHECKING:
    import psycopg

FTS_CONFIG = "markus_fts"
# ts_rank weights {D, C, B, A}: logs 1, summary 2, keywords 3, label 4 (as SQLite's bm25).
ACTIVITY_RANK_WEIGHTS = "{0.25, 0.5, 0.75, 1.0}"

PG_ONLY_TABLES = frozenset({"activity_search"})
PG_ONLY_COLUMNS = frozenset(
    {
        ("agent_decisions", "ord"),  # insertion order (SQLite: rowid)
        ("chat_messages", "ord"),  # insertion order (SQLite: rowid)
    }
)
SQLITE_ONLY_TABLES = frozenset({"agent_slots", "activity_search_docs"})

migrations: Migrations[psycopg.Connection[Any]] = Migrations(MIGRATION_SET)


@migrations()
def m001_markus_tables(conn: psycopg.Connection[Any]) -> None:
    for statement in markus_tables(POSTGRES_TYPES):
        conn.execute(statement)


@migrations()
def m002_add_missing_columns(conn: psycopg.Connection[Any]) -> None:
    # SQLite's m002 upgrades databases made by older Markus versions; a PostgreSQL schema is
    # always created by m001, so there is nothing to add. Kept so both sets share their names.
    return None


@migrations()
def m003_markus_indexes(conn: psycopg.Connection[Any]) -> None:
    for statement in MARKUS_INDEXES:
        conn.execute(statement)


# The CJK character pairs of a text, as analysis.cjk_pairs: indexed after the text, so that a
# two-character word is found inside a run (the parser keeps a run as one token).
CJK_PAIRS_FUNCTION = (
    "CREATE OR REPLACE FUNCTION markus_cjk(t text) RETURNS text LANGUAGE sql IMMUTABLE "
    "PARALLEL SAFE AS $$ SELECT t || COALESCE(E'\\n' || ("
    " SELECT string_agg(substr(m[1], i, 2), ' ' ORDER BY n, i) "
    " FROM regexp_matches(t, '([\\u3040-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff"
    "\\uf900-\\ufaff\\uac00-\\ud7af]+)', 'g') WITH ORDINALITY AS r(m, n), "
    " generate_series(1, greatest(char_length(m[1]) - 1, 1)) AS i), '') $$"
)


@migrations()
def m004_activity_search(conn: psycopg.Connection[Any]) -> None:
    # The text search configuration lives in the store's schema, so each schema is complete.
    conn.execute(CJK_PAIRS_FUNCTION)
    conn.execute(
        "CREATE TEXT SEARCH DICTIONARY markus_english_stem "
        "(TEMPLATE = snowball, Language = english)"
    )
    conn.execute(f"CREATE TEXT SEARCH CONFIGURATION {FTS_CONFIG} (COPY = pg_catalog.simple)")
    conn.execute(
        f"ALTER TEXT SEARCH CONFIGURATION {FTS_CONFIG} ALTER MAPPING FOR "
        "asciiword, asciihword, hword_asciipart, word, hword, hword_part "
        "WITH markus_english_stem"
    )
    # One search document per activity: label (A), keywords (B), summary (C), logs (D).
    # started_at is copied so that "newest first" needs no join. headline (label and keywords
    # only, GIN-indexed) finds the strong matches of a frequent term without a scan.
    conn.execute(
        """CREATE TABLE activity_search (
  activity_id TEXT PRIMARY KEY REFERENCES agent_activities(id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  document TSVECTOR NOT NULL,
  headline TSVECTOR NOT NULL
)"""
    )
    for statement in ACTIVITY_SEARCH_INDEXES:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO activity_search (activity_id, agent_id, started_at, document, headline) "
        "SELECT a.id, a.agent_id, a.started_at, "
        + activity_document_sql("a.label", "a.keywords", "a.summary", _LOGS_OF_A)
        + ", "
        + headline_sql("a.label", "a.keywords")
        + " FROM agent_activities a"
    )


# Also used by benchmarks/_pg_activities.py, which builds the indexes after a bulk load.
ACTIVITY_SEARCH_INDEXES = (
    "CREATE INDEX idx_activity_search_doc ON activity_search USING GIN (document)",
    "CREATE INDEX idx_activity_search_headline ON activity_search USING GIN (headline)",
    # Newest first, fully ordered: a frequent term is read off this index until enough match.
    "CREATE INDEX idx_activity_search_agent "
    "ON activity_search(agent_id, started_at DESC, activity_id DESC)",
)

_LOGS_OF_A = (
    "(SELECT string_agg(content, E'\\n' ORDER BY seq) FROM agent_activity_logs l "
    "WHERE l.activity_id = a.id)"
)


def activity_document_sql(label: str, keywords: str, summary: str, logs: str) -> str:
    """SQL for an activity's weighted tsvector from four SQL expressions."""
    return (
        f"setweight(to_tsvector('{FTS_CONFIG}', markus_cjk(COALESCE({label}, ''))), 'A') || "
        f"setweight(to_tsvector('{FTS_CONFIG}', markus_cjk(COALESCE({keywords}, ''))), 'B') || "
        f"setweight(to_tsvector('{FTS_CONFIG}', markus_cjk(COALESCE({summary}, ''))), 'C') || "
        f"setweight(to_tsvector('{FTS_CONFIG}', "
        f"markus_cjk(left(COALESCE({logs}, ''), {MAX_INDEXED_LOG_CHARS}))), 'D')"
    )


def headline_sql(label: str, keywords: str) -> str:
    """SQL for the tsvector of an activity's label and keywords (the strong fields)."""
    return (
        f"to_tsvector('{FTS_CONFIG}', "
        f"markus_cjk(COALESCE({label}, '') || ' ' || COALESCE({keywords}, '')))"
    )


@migrations()
def m005_transcript(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        f"""CREATE TABLE transcript_messages (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  agent_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  search TSVECTOR GENERATED ALWAYS AS (to_tsvector('{FTS_CONFIG}'::regconfig, content)) STORED,
  UNIQUE (agent_id, session_id, seq)
)"""
    )
    conn.execute(
        "CREATE INDEX idx_transcript_agent_created ON transcript_messages(agent_id, created_at)"
    )
    conn.execute("CREATE INDEX idx_transcript_search ON transcript_messages USING GIN (search)")


@migrations()
def m006_transcript_record(conn: psycopg.Connection[Any]) -> None:
    # As SQLite m006: speaker and metadata of each message, and a per-session mark of how far
    # the store holds the session.
    for statement in transcript_record(POSTGRES_TYPES):
        conn.execute(statement)


@migrations()
def m007_recall_index(conn: psycopg.Connection[Any]) -> None:
    # As SQLite m007: conversation recall ranks in per-agent postings (recall_index.py); the
    # tsvector column and its GIN index it replaces are dropped.

    for statement in schema("BYTEA", ""):
        conn.execute(statement)
    conn.execute("DROP INDEX IF EXISTS idx_transcript_search")
    conn.execute("ALTER TABLE transcript_messages DROP COLUMN IF EXISTS search")
    RecallQueries.rebuild(PostgresSql(conn))


@migrations()
def m008_activity_search_cjk(conn: psycopg.Connection[Any]) -> None:
    # The one text analyser: CJK runs are indexed with their character pairs, as in recall.
    conn.execute(CJK_PAIRS_FUNCTION)
    conn.execute(
        "UPDATE activity_search s SET document = "
        + activity_document_sql("a.label", "a.keywords", "a.summary", _LOGS_OF_A)
        + ", headline = "
        + headline_sql("a.label", "a.keywords")
        + " FROM agent_activities a WHERE a.id = s.activity_id"
    )


@migrations()
def m009_recall_neighbour_keys(conn: psycopg.Connection[Any]) -> None:
    # As SQLite m009: the keys of the turns around each recall candidate, read off the index
    # (an index-only scan once the table is vacuumed).
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_transcript_keys ON transcript_messages"
        "(agent_id, session_id, seq) INCLUDE (id, role, speaker) WHERE trim(content) <> ''"
    )


@migrations()
def m010_activity_search_agent_terms(conn: psycopg.Connection[Any]) -> None:
    # One GIN index over (agent, document) (btree_gin): a medium-frequency term is found for
    # one agent by intersecting both keys in the index, instead of reading every agent's
    # matches off the document index or walking the agent's activities newest first. The
    # extension goes to ``public``, so that dropping a store's schema never drops it; a server
    # without btree_gin (or a role that may not create it) keeps the two indexes as before.
    import psycopg

    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA public")
    except psycopg.Error:
        return
    conn.execute(ACTIVITY_SEARCH_AGENT_INDEX)


@migrations()
def m011_recall_postings_covering(conn: psycopg.Connection[Any]) -> None:
    # A term's newest postings are read with their tf and len off the key (an index-only walk
    # once vacuumed): without them in the key, each posting cost a heap page of its own, since
    # a term's postings are spread over every batch that used it (recall_rank.rank). A store
    # whose m007 already made the postings of m013 has them so.

    if not has_agent_column(PostgresSql(conn)):
        return
    conn.execute("ALTER TABLE recall_postings DROP CONSTRAINT recall_postings_pkey")
    conn.execute(
        "ALTER TABLE recall_postings ADD CONSTRAINT recall_postings_pkey "
        "PRIMARY KEY (agent, term, doc) INCLUDE (tf, len)"
    )


@migrations()
def m012_recall_keys_by_id(conn: psycopg.Connection[Any]) -> None:
    # Recall fetches the keys of its candidates by id (recall_fetch.turns_by_id): read off this
    # index (index-only once vacuumed) instead of a heap page per candidate.
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_transcript_id_keys ON transcript_messages"
        "(id) INCLUDE (agent_id, session_id, seq, role, speaker)"
    )


@migrations()
def m013_recall_agent_terms(conn: psycopg.Connection[Any]) -> None:
    # As SQLite m013: postings and document frequencies keyed by the agent's own key of each
    # term; the document frequencies, rewritten by every batch, leave room on each page for
    # their next version (recall/schema.py).

    fold_agent_into_terms(PostgresSql(conn), "")


@migrations()
def m014_recall_vector_lists(conn: psycopg.Connection[Any]) -> None:
    # As SQLite m014: the list of each recall vector and the lists' centroids. A server with
    # pgvector searches with its index instead, and its vectors stay in no list.

    add_vector_lists(PostgresSql(conn), "BYTEA", "")


@migrations()
def m015_conversations(conn: psycopg.Connection[Any]) -> None:
    # Conversations the store holds (framework histories; Markus sessions on PostgreSQL),
    # each message exactly as given, and the daily logs of a shared deployment.
    for statement in conversation_tables(POSTGRES_TYPES):
        conn.execute(statement)


@migrations()
def m016_activity_search_analyser(conn: psycopg.Connection[Any]) -> None:
    # As SQLite m016: activities are searched with the one analyser. Every document and
    # headline is rewritten from the analyser's terms (activity_search.py); queries are
    # tsqueries of its terms, so no text search configuration is used any more.
    index_all(conn)


# Also rebuilt by benchmarks/_pg_activities.py after its bulk load.
ACTIVITY_SEARCH_AGENT_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_activity_search_agent_doc "
    "ON activity_search USING GIN (agent_id, document)"
)
