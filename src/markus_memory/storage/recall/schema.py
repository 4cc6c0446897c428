"""The recall tables' schema, and the upgrade of an index written with the agent in every key.

Until migration m013 the postings were keyed (agent, term, doc) and the document frequencies
(agent, term); now both are keyed by the agent's own key of the term
(:func:`~.rank.agent_term`: the term's key XOR the agent's), which drops one 8-byte key
column from every posting, the row written for every distinct word of every message.
"""

from __future__ import annotations

from .fetch import Sql


def schema(blob: str, without_rowid: str) -> list[str]:
    """CREATE statements of the recall tables (``blob``: BLOB or BYTEA; ``without_rowid`` is
    SQLite's table option, "" on PostgreSQL).

    ``term`` in the postings and document frequencies is the agent's own key of a term
    (:func:`~.rank.agent_term`), so a posting is (term, message, tf, message length):
    one key column less to write for every word of every message than (agent, term, ...).
    On SQLite a term's document frequency is a rowid row; on PostgreSQL the postings key
    carries tf and len (a term's newest postings are read off the index alone), and the
    document frequencies leave room on each page for their next version (an update stays on
    its page: no new index entry).
    """
    sqlite = bool(without_rowid)
    return [
        "CREATE TABLE recall_postings (term BIGINT NOT NULL, doc BIGINT NOT NULL, "
        "tf INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY (term, doc)"
        + (f"){without_rowid}" if sqlite else " INCLUDE (tf, len))"),
        f"CREATE TABLE recall_terms (term {'INTEGER' if sqlite else 'BIGINT'} PRIMARY KEY, "
        "agent BIGINT NOT NULL, docs BIGINT NOT NULL)"
        + ("" if sqlite else f" WITH (fillfactor = {TERMS_FILLFACTOR})"),
        "CREATE TABLE recall_agents (agent BIGINT PRIMARY KEY, docs BIGINT NOT NULL, "
        "tokens BIGINT NOT NULL)",
        "CREATE TABLE recall_speakers (agent BIGINT NOT NULL, word TEXT NOT NULL, "
        f"PRIMARY KEY (agent, word)){without_rowid}",
        *vector_tables(blob, without_rowid),
    ]


def vector_tables(blob: str, without_rowid: str) -> list[str]:
    """CREATE statements (IF NOT EXISTS) of the recall vectors and their lists
    (:mod:`.vector_lists`): one vector per message with the list it belongs to (NULL until
    its agent has lists), and each list's centroid with the vector count it was made from."""
    return [
        "CREATE TABLE IF NOT EXISTS recall_vectors (doc BIGINT PRIMARY KEY, "
        f"agent BIGINT NOT NULL, model TEXT NOT NULL, vector {blob} NOT NULL, list BIGINT)",
        "CREATE INDEX IF NOT EXISTS idx_recall_vectors_agent ON recall_vectors(agent, model, doc)",
        "CREATE INDEX IF NOT EXISTS idx_recall_vectors_list "
        "ON recall_vectors(agent, model, list, doc)",
        "CREATE TABLE IF NOT EXISTS recall_vector_lists (agent BIGINT NOT NULL, "
        "model TEXT NOT NULL, list BIGINT NOT NULL, made_from BIGINT NOT NULL, "
        f"centroid {blob} NOT NULL, PRIMARY KEY (agent, model, list)){without_rowid}",
    ]


def add_vector_lists(sql: Sql, blob: str, without_rowid: str) -> None:
    """The recall vectors with their lists, whatever was there: migration m014 on either
    backend (a vector table made before it gains the ``list`` column), and a rebuild of the
    recall tables (vectors are kept: they cost an embedder to make)."""
    create, *rest = vector_tables(blob, without_rowid)
    sql.run(create)
    if not _has_column(sql, "recall_vectors", "list"):
        sql.run("ALTER TABLE recall_vectors ADD COLUMN list BIGINT")
    for statement in rest:
        sql.run(statement)


TERMS_FILLFACTOR = 50
"""How full PostgreSQL fills a page of ``recall_terms`` (every batch rewrites its terms' rows)."""


def fold_agent_into_terms(sql: Sql, without_rowid: str) -> None:
    """Migration m013 on either backend: rewrite ``recall_postings`` and ``recall_terms`` keyed
    by the agent's term keys, in key order (nothing to do where they already are: a store
    created by this version)."""
    if not has_agent_column(sql):
        return
    sqlite = bool(without_rowid)
    # SQLite has no XOR operator: for two non-negative 63-bit keys a ^ b = (a | b) - (a & b).
    folded = "(agent | term) - (agent & term)" if sqlite else "agent # term"
    postings, terms = schema("", without_rowid)[:2]
    sql.run(postings.replace("recall_postings", "recall_postings_m013", 1))
    sql.run(terms.replace("recall_terms", "recall_terms_m013", 1))
    sql.run(
        f"INSERT INTO recall_postings_m013 (term, doc, tf, len) SELECT {folded}, doc, tf, len "
        "FROM recall_postings ORDER BY 1, 2"
    )
    sql.run(
        f"INSERT INTO recall_terms_m013 (term, agent, docs) SELECT {folded}, agent, docs "
        "FROM recall_terms ORDER BY 1"
    )
    for table in ("recall_postings", "recall_terms"):
        sql.run(f"DROP TABLE {table}")
        sql.run(f"ALTER TABLE {table}_m013 RENAME TO {table}")
        if not sqlite:  # the key keeps the name a new store gives it
            sql.run(f"ALTER TABLE {table} RENAME CONSTRAINT {table}_m013_pkey TO {table}_pkey")


def has_agent_column(sql: Sql) -> bool:
    """Whether ``recall_postings`` is keyed as before m013 (with an ``agent`` column)."""
    return _has_column(sql, "recall_postings", "agent")


def _has_column(sql: Sql, table: str, column: str) -> bool:
    if sql.dialect.name == "sqlite":
        return any(r[1] == column for r in sql.rows(f"PRAGMA table_info({table})"))
    return bool(
        sql.rows(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ? AND column_name = ?",
            (table, column),
        )
    )
