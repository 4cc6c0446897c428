"""The ``langgraph`` migration set: the LangGraph items and their search postings, both backends.

``langgraph_items`` holds one row per (agent, namespace, key): the JSON value, the text indexed
for search, an optional vector, TTL bookkeeping, and ``doc``, the item's 63-bit key
(:func:`doc_key`, the same on both backends). ``langgraph_postings`` holds the terms of that
text as :mod:`markus_memory.analysis` makes them (the analyser of knowledge and recall):
(agent key, term key, doc, term frequency, document length), deleted with their item by a
trigger (per row on SQLite, per statement on PostgreSQL), so whatever deletes an item (a put
of ``None``, a TTL sweep, forgetting the agent) deletes its terms.

m001 and m002 are the layouts before postings (FTS5 on SQLite, a ``tsvector`` on PostgreSQL);
m003 drops those indexes and back-fills ``doc``, ``len`` and the postings of every stored item.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..analysis import term_counts, term_key
from ._postgres.dialect import POSTGRES
from .migrations import Migrations

if TYPE_CHECKING:
    import sqlite3

    import psycopg

MIGRATION_SET = "langgraph"
_KEY = "agent_id = ? AND namespace = ? AND key = ?"
POSTING_COLUMNS = (
    ("agent", "bigint"),
    ("term", "bigint"),
    ("doc", "bigint"),
    ("tf", "integer"),
    ("len", "integer"),
)

sqlite_migrations: Migrations[sqlite3.Connection] = Migrations(MIGRATION_SET)
postgres_migrations: Migrations[psycopg.Connection[Any]] = Migrations(MIGRATION_SET)


def agent_key(agent_id: str) -> int:
    """The agent's 63-bit key in ``langgraph_postings``."""
    return term_key("\x00langgraph\x00" + agent_id)


def doc_key(agent_id: str, namespace: str, key: str) -> int:
    """An item's 63-bit key (unique across agents and namespaces)."""
    return term_key(f"\x00langgraph\x00{agent_id}\x00{namespace}\x00{key}")


def postings(agent: int, doc: int, text: str) -> tuple[int, list[tuple[int, int, int, int, int]]]:
    """The length of ``text`` in terms and its posting rows."""
    counts = term_counts(text.encode("utf-8", "replace").decode("utf-8"))
    length = sum(counts.values())
    return length, [(agent, term, doc, tf, length) for term, tf in counts.items()]


def _backfill(
    items: Iterable[Sequence[Any]],
) -> tuple[list[tuple[int, int, str, str, str]], list[tuple[int, int, int, int, int]]]:
    """``(doc, len, agent_id, namespace, key)`` updates and the postings of stored items
    ``(agent_id, namespace, key, text)``."""
    updates: list[tuple[int, int, str, str, str]] = []
    rows: list[tuple[int, int, int, int, int]] = []
    for agent_id, namespace, key, text in items:
        doc = doc_key(agent_id, namespace, key)
        length, found = postings(agent_key(agent_id), doc, text)
        updates.append((doc, length, agent_id, namespace, key))
        rows.extend(found)
    return updates, rows


@sqlite_migrations()
def m001_items(conn: sqlite3.Connection) -> None:
    # IF NOT EXISTS: a data.db from before this set already has the tables (no bookkeeping).
    conn.execute(
        """CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at REAL, ttl_minutes REAL,
    vector TEXT, PRIMARY KEY (agent_id, namespace, key))"""
    )
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS langgraph_items_fts USING fts5("
        "agent_id UNINDEXED, namespace UNINDEXED, key UNINDEXED, text)"
    )


_SQLITE_ITEMS = """CREATE TABLE langgraph_items (
    id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    value TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at REAL,
    ttl_minutes REAL, vector TEXT, text TEXT NOT NULL DEFAULT '',
    UNIQUE (agent_id, namespace, key))"""
_ITEM_COLUMNS = "agent_id, namespace, key, value, created_at, updated_at, expires_at, ttl_minutes"


@sqlite_migrations()
def m002_item_text(conn: sqlite3.Connection) -> None:
    # The indexed text moved into the item row (as on PostgreSQL), the FTS5 table became an
    # external-content index of that column kept in step by triggers (until m003).
    texts = conn.execute(
        "SELECT text, agent_id, namespace, key FROM langgraph_items_fts"
    ).fetchall()
    conn.execute(_SQLITE_ITEMS.replace("langgraph_items", "langgraph_items_new", 1))
    conn.execute(
        f"INSERT INTO langgraph_items_new ({_ITEM_COLUMNS}, vector) "
        f"SELECT {_ITEM_COLUMNS}, vector FROM langgraph_items"
    )
    conn.executemany(f"UPDATE langgraph_items_new SET text = ? WHERE {_KEY}", texts)
    conn.execute("DROP TABLE langgraph_items")
    conn.execute("DROP TABLE langgraph_items_fts")
    conn.execute("ALTER TABLE langgraph_items_new RENAME TO langgraph_items")
    conn.execute(
        "CREATE VIRTUAL TABLE langgraph_items_fts USING fts5(text, "
        "content='langgraph_items', content_rowid='id')"
    )
    conn.execute("INSERT INTO langgraph_items_fts (langgraph_items_fts) VALUES ('rebuild')")
    drop = (
        "INSERT INTO langgraph_items_fts (langgraph_items_fts, rowid, text) "
        "VALUES ('delete', old.id, old.text);"
    )
    add = "INSERT INTO langgraph_items_fts (rowid, text) VALUES (new.id, new.text);"
    for name, event, body in (
        ("langgraph_items_ai", "INSERT", add),
        ("langgraph_items_ad", "DELETE", drop),
        ("langgraph_items_au", "UPDATE OF text", f"{drop} {add}"),
    ):
        conn.execute(f"CREATE TRIGGER {name} AFTER {event} ON langgraph_items BEGIN {body} END")


_POSTINGS_DDL = """CREATE TABLE langgraph_postings (
    agent {int} NOT NULL, term {int} NOT NULL, doc {int} NOT NULL,
    tf INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY (agent, term, doc)){tail}"""


@sqlite_migrations()
def m003_postings(conn: sqlite3.Connection) -> None:
    # Search ranks by BM25 over the analyser's terms (stems, CJK pairs), in SQL, the same on
    # both backends; the FTS5 index and its triggers go.
    for trigger in ("langgraph_items_ai", "langgraph_items_ad", "langgraph_items_au"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute("DROP TABLE IF EXISTS langgraph_items_fts")
    conn.execute("ALTER TABLE langgraph_items ADD COLUMN doc INTEGER")
    conn.execute("ALTER TABLE langgraph_items ADD COLUMN len INTEGER NOT NULL DEFAULT 0")
    updates, rows = _backfill(
        conn.execute("SELECT agent_id, namespace, key, text FROM langgraph_items").fetchall()
    )
    conn.executemany(f"UPDATE langgraph_items SET doc = ?, len = ? WHERE {_KEY}", updates)
    conn.execute("CREATE UNIQUE INDEX langgraph_items_doc ON langgraph_items (doc)")
    conn.execute(
        "CREATE INDEX langgraph_items_recent ON langgraph_items "
        "(agent_id, updated_at DESC, namespace, key)"
    )
    conn.execute(_POSTINGS_DDL.format(int="INTEGER", tail=" WITHOUT ROWID"))
    conn.execute("CREATE INDEX langgraph_postings_doc ON langgraph_postings (doc)")
    conn.execute(
        "CREATE TRIGGER langgraph_items_terms AFTER DELETE ON langgraph_items BEGIN "
        "DELETE FROM langgraph_postings WHERE doc = old.doc; END"
    )
    conn.executemany("INSERT INTO langgraph_postings VALUES (?, ?, ?, ?, ?)", rows)


@postgres_migrations(name="m001_items")
def pg_m001_items(conn: psycopg.Connection[Any]) -> None:
    # IF NOT EXISTS: a schema from before this set already has the table (no bookkeeping).
    conn.execute(
        """CREATE TABLE IF NOT EXISTS langgraph_items (
    agent_id TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL, value JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL,
    expires_at DOUBLE PRECISION, ttl_minutes DOUBLE PRECISION, vector JSONB,
    text TEXT NOT NULL DEFAULT '',
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
    PRIMARY KEY (agent_id, namespace, key))"""
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS langgraph_items_tsv ON langgraph_items USING GIN (tsv)"
    )


@postgres_migrations(name="m002_item_text")
def pg_m002_item_text(conn: psycopg.Connection[Any]) -> None:
    # SQLite m002 moves the text into the item row; PostgreSQL has kept it there from m001.
    del conn


@postgres_migrations(name="m003_postings")
def pg_m003_postings(conn: psycopg.Connection[Any]) -> None:
    # As SQLite's m003: postings from the analyser replace the 'simple' tsvector.
    conn.execute("DROP INDEX IF EXISTS langgraph_items_tsv")
    conn.execute(
        "ALTER TABLE langgraph_items DROP COLUMN IF EXISTS tsv, ADD COLUMN doc BIGINT, "
        "ADD COLUMN len INTEGER NOT NULL DEFAULT 0"
    )
    updates, rows = _backfill(
        conn.execute("SELECT agent_id, namespace, key, text FROM langgraph_items").fetchall()
    )
    with conn.cursor() as cursor:
        cursor.executemany(
            "UPDATE langgraph_items SET doc = %s, len = %s "
            "WHERE agent_id = %s AND namespace = %s AND key = %s",
            updates,
        )
    conn.execute("ALTER TABLE langgraph_items ALTER COLUMN doc SET NOT NULL")
    conn.execute("CREATE UNIQUE INDEX langgraph_items_doc ON langgraph_items (doc)")
    conn.execute(
        "CREATE INDEX langgraph_items_recent ON langgraph_items "
        '(agent_id, updated_at DESC, namespace COLLATE "C", key COLLATE "C")'
    )
    conn.execute(_POSTINGS_DDL.format(int="BIGINT", tail=""))
    conn.execute("CREATE INDEX langgraph_postings_doc ON langgraph_postings (doc)")
    # Once per DELETE statement, over the rows it deleted (a foreign key would check every
    # inserted posting, one lookup each: most of the cost of a batch put).
    conn.execute(
        "CREATE FUNCTION langgraph_items_terms() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "DELETE FROM langgraph_postings p USING gone g WHERE p.doc = g.doc; RETURN NULL; END $$"
    )
    conn.execute(
        "CREATE TRIGGER langgraph_items_terms AFTER DELETE ON langgraph_items "
        "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
        "EXECUTE FUNCTION langgraph_items_terms()"
    )
    POSTGRES.bind(conn).insert("langgraph_postings", POSTING_COLUMNS, sorted(rows))


_COUNT_TABLES = (
    "CREATE TABLE langgraph_stats (agent_id TEXT PRIMARY KEY, docs BIGINT NOT NULL, "
    "tokens BIGINT NOT NULL)",
    "CREATE TABLE langgraph_terms (agent BIGINT NOT NULL, term BIGINT NOT NULL, "
    "df INTEGER NOT NULL, PRIMARY KEY (agent, term)){tail}",
    "INSERT INTO langgraph_stats (agent_id, docs, tokens) SELECT agent_id, count(*), "
    "COALESCE(SUM(len), 0) FROM langgraph_items GROUP BY agent_id",
    "INSERT INTO langgraph_terms (agent, term, df) SELECT agent, term, count(*) "
    "FROM langgraph_postings GROUP BY agent, term",
)
TERM_COLUMNS = (("agent", "bigint"), ("term", "bigint"), ("df", "integer"))
ADD_TERMS = " ON CONFLICT (agent, term) DO UPDATE SET df = langgraph_terms.df + excluded.df"
"""What the writer of new postings appends to its insert of their ``TERM_COLUMNS`` counts."""


@sqlite_migrations()
def m004_counts(conn: sqlite3.Connection) -> None:
    # BM25's statistics without reading the agent's items or postings: item and token counts
    # per agent and document frequencies per term, kept by triggers (the writer of postings
    # adds their counts in one statement; every delete, whatever makes it, subtracts, and a
    # count that reaches zero is deleted: forgetting an agent leaves none of its rows).
    for statement in _COUNT_TABLES:
        conn.execute(statement.format(tail=" WITHOUT ROWID"))
    for name, event, body in (
        (
            "langgraph_items_count_ai",
            "INSERT",
            "INSERT INTO langgraph_stats VALUES (new.agent_id, 1, new.len) ON CONFLICT "
            "(agent_id) DO UPDATE SET docs = docs + 1, tokens = tokens + excluded.tokens;",
        ),
        (
            "langgraph_items_count_au",
            "UPDATE OF len",
            "UPDATE langgraph_stats SET tokens = tokens - old.len + new.len "
            "WHERE agent_id = new.agent_id;",
        ),
        (
            "langgraph_items_count_ad",
            "DELETE",
            "UPDATE langgraph_stats SET docs = docs - 1, tokens = tokens - old.len "
            "WHERE agent_id = old.agent_id; DELETE FROM langgraph_stats "
            "WHERE agent_id = old.agent_id AND docs <= 0;",
        ),
    ):
        conn.execute(f"CREATE TRIGGER {name} AFTER {event} ON langgraph_items BEGIN {body} END")
    conn.execute(
        "CREATE TRIGGER langgraph_postings_count_ad AFTER DELETE ON langgraph_postings BEGIN "
        "UPDATE langgraph_terms SET df = df - 1 WHERE agent = old.agent AND term = old.term; "
        "DELETE FROM langgraph_terms WHERE agent = old.agent AND term = old.term AND df <= 0; END"
    )


_PG_COUNT_TRIGGERS = (
    (
        "langgraph_items_added",
        "INSERT ON langgraph_items REFERENCING NEW TABLE AS added",
        "INSERT INTO langgraph_stats (agent_id, docs, tokens) SELECT agent_id, count(*), "
        "SUM(len) FROM added GROUP BY agent_id ON CONFLICT (agent_id) DO UPDATE SET "
        "docs = langgraph_stats.docs + excluded.docs, "
        "tokens = langgraph_stats.tokens + excluded.tokens;",
    ),
    (
        "langgraph_items_changed",
        "UPDATE ON langgraph_items REFERENCING OLD TABLE AS was NEW TABLE AS now_is",
        "UPDATE langgraph_stats s SET tokens = s.tokens + d.delta FROM (SELECT agent_id, "
        "SUM(len) AS delta FROM (SELECT agent_id, len FROM now_is UNION ALL "
        "SELECT agent_id, -len FROM was) c GROUP BY agent_id) d "
        "WHERE s.agent_id = d.agent_id AND d.delta <> 0;",
    ),
    (
        "langgraph_items_removed",
        "DELETE ON langgraph_items REFERENCING OLD TABLE AS gone",
        "UPDATE langgraph_stats s SET docs = s.docs - g.n, tokens = s.tokens - g.t FROM "
        "(SELECT agent_id, count(*) AS n, SUM(len) AS t FROM gone GROUP BY agent_id) g "
        "WHERE s.agent_id = g.agent_id; DELETE FROM langgraph_stats s USING "
        "(SELECT DISTINCT agent_id FROM gone) g WHERE s.agent_id = g.agent_id AND s.docs <= 0;",
    ),
    (
        "langgraph_postings_removed",
        "DELETE ON langgraph_postings REFERENCING OLD TABLE AS gone",
        "UPDATE langgraph_terms t SET df = t.df - g.n FROM (SELECT agent, term, count(*) AS n "
        "FROM gone GROUP BY agent, term) g WHERE t.agent = g.agent AND t.term = g.term; "
        "DELETE FROM langgraph_terms t USING (SELECT DISTINCT agent, term FROM gone) g "
        "WHERE t.agent = g.agent AND t.term = g.term AND t.df <= 0;",
    ),
)


@postgres_migrations(name="m004_counts")
def pg_m004_counts(conn: psycopg.Connection[Any]) -> None:
    # As SQLite's m004, with triggers once per statement over the rows it changed.
    for statement in _COUNT_TABLES:
        conn.execute(statement.format(tail=""))
    for name, event, body in _PG_COUNT_TRIGGERS:
        conn.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} "
            "RETURN NULL; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER {name} AFTER {event} FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
        )
