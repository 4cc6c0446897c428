"""SqliteStore: the default episodic backend in ``<home>/data.db``, composed for SQLite.

It opens the file (:class:`~.conn.SqliteDatabase`: connections, transactions, migrations) and
builds the repositories written once for both backends over it (:class:`~..store.Store`),
giving them SQLite's own pieces: the ids of new transcript messages inside the agent's rowid
span (:func:`add_messages`) and the FTS5 activity search (:mod:`.activity_search`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from .._sql import SEARCH_CANDIDATES, DialectSql
from ..migrations import Migrations
from ..recall.index import Doc
from ..repos.transcripts import TranscriptMessage
from ..store import Store
from ..transcripts import Transcripts, stored_message
from .activity_search import SqliteActivitySearch
from .conn import SqliteDatabase, next_rowid
from .dialect import SQLITE
from .schema import fill_activity_search


def add_messages(
    sql: DialectSql, agent_id: str, messages: Sequence[TranscriptMessage]
) -> list[Doc]:
    """Insert new transcript messages (an :data:`~..transcripts.AddMessages`).

    The write transaction holds the file: nothing else can insert meanwhile, and the ids
    continue the agent's span (schema.py m004), so its rows stay together."""
    first = next_rowid(sql.conn, "transcript_messages", "id", agent_id)
    rows = [(first + n, agent_id, *stored_message(SQLITE, m)) for n, m in enumerate(messages)]
    sql.many(
        "INSERT INTO transcript_messages (id, agent_id, session_id, seq, role, content, "
        "created_at, speaker, metadata, body) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    return [Doc(r[0], r[5], r[7], r[4]) for r in rows]


class SqliteStore(Store):
    """Activities, mailbox, chat history and the transcript index in one SQLite file."""

    def __init__(
        self,
        path: Path | str,
        *,
        extra_migrations: Sequence[Migrations[sqlite3.Connection]] = (),
        search_candidates: int = SEARCH_CANDIDATES,
    ) -> None:
        database = SqliteDatabase(path, extra_migrations=extra_migrations)
        super().__init__(
            database,
            Transcripts(database, add_messages, search_candidates=search_candidates),
            SqliteActivitySearch(database, search_candidates),
        )
        self.database: SqliteDatabase = database

    def rebuild_derived(self) -> int:
        """Recreate and refill everything derived from the stored rows: the activity search
        and the recall index (one transaction); the number of messages indexed."""
        with self.database.write() as conn:
            fill_activity_search(conn)
            sql = SQLITE.bind(conn)
            Transcripts.recreate(sql, "BLOB", " WITHOUT ROWID")
            return Transcripts.rebuild(sql)
