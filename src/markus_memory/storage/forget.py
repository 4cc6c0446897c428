"""Forget one agent's rows in an episodic store: written once for both backends.

Used by ``delete_agent`` (every trace of an agent) and by ``import --replace`` (the
destination's rows before the source's are written). The transcript goes session by session
through ``forget_session``, which takes each message's postings and counts out of the recall
index and drops its vector; activities through ``prune_activities``, which drops their search
documents; what is left of the agent in the recall tables (terms, speakers, vector lists) and
the plain tables is deleted by agent.
"""

from __future__ import annotations

from datetime import datetime, timezone

from .dialect import Database
from .episodic import EpisodicStore
from .recall.index import clear
from .recall.rank import agent_key

_FAR_FUTURE = datetime(9999, 1, 1, tzinfo=timezone.utc)
_BY_AGENT = (
    "chat_messages",
    "chat_sessions",
    "mailbox_items",
    "agent_decisions",
    "transcript_marks",
    "conversations",
    "daily_log_entries",
)
SIDE_TABLES = ("dream_runs", "langgraph_items", "documents")
"""Tables beside the episodic store that hold an agent's rows by ``agent_id``: the dream
audit, the LangGraph items and (PostgreSQL) the markdown documents."""


def forget_agent(store: EpisodicStore, agent_id: str) -> int:
    """Delete every row ``agent_id`` has in ``store`` (its derived index entries and vectors
    with them); the number of activities and transcript messages removed."""
    transcripts, database = store.transcripts, store.database
    sessions = {m.session_id for m in transcripts.transcript_messages(agent_id)}
    sessions |= set(transcripts.transcript_marks(agent_id))
    sessions |= {head.session_id for head in store.conversations.conversations(agent_id)}
    removed = sum(transcripts.forget_session(agent_id, sid) for sid in sorted(sessions))
    removed += store.activities.prune_activities(agent_id, before=_FAR_FUTURE)
    agent = agent_key(agent_id)
    with database.write() as conn:
        sql = database.dialect.bind(conn)
        clear(sql, agent_id)
        sql.run("DELETE FROM recall_vectors WHERE agent = ?", (agent,))
        sql.run("DELETE FROM recall_vector_lists WHERE agent = ?", (agent,))
        for table in _BY_AGENT:
            sql.run(f"DELETE FROM {table} WHERE agent_id = ?", (agent_id,))
        if database.dialect.name == "sqlite":
            sql.run("DELETE FROM agent_slots WHERE agent_id = ?", (agent_id,))
    return removed


def forget_in(database: Database, agent_id: str, tables: tuple[str, ...] = SIDE_TABLES) -> int:
    """Delete ``agent_id``'s rows from those of ``tables`` that ``database`` has; how many."""
    dialect = database.dialect
    exists = (
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        if dialect.name == "sqlite"
        else "SELECT to_regclass(?) IS NOT NULL WHERE to_regclass(?) IS NOT NULL"
    )
    removed = 0
    with database.write() as conn:
        sql = dialect.bind(conn)
        for table in tables:
            params = (table,) if dialect.name == "sqlite" else (table, table)
            if sql.rows(exists, params):
                removed += sql.run(f"DELETE FROM {table} WHERE agent_id = ?", (agent_id,))
    return removed
