"""The transcript index (every recorded session message, its marks and search): written once.

:class:`Transcripts` is constructed with the database it uses (``read``/``write`` and the
:class:`~.dialect.Dialect`) and the engine's :data:`AddMessages`, the one thing that stays per
backend: how new rows get their ids. SQLite numbers them inside the agent's rowid span
(``_sqlite/schema.py`` m004), PostgreSQL takes them from the identity column and skips a
message another writer inserted first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from ._records import MARK_COLUMNS, TRANSCRIPT_COLUMNS, import_top
from ._sql import DialectSql
from .base import JsonObject
from .dialect import Database, Dialect
from .recall.contract import RecallFilters
from .recall.index import Doc, RecallQueries, index_docs
from .recall.rank import search_hits
from .repos.transcripts import TranscriptHit, TranscriptMark, TranscriptMessage

_DOC_COLUMNS = "id, content, speaker, role"
_SESSION = "agent_id = ? AND session_id = ?"


def stored_message(d: Dialect, m: TranscriptMessage) -> tuple[Any, ...]:
    """``(session_id, seq, role, content, created_at, speaker, metadata, body)`` as stored."""
    return (
        m.session_id,
        int(m.seq),
        d.text(m.role),
        d.text(m.content),
        d.time(m.created_at),
        d.opt_text(m.speaker),
        d.json(m.metadata),
        m.body,
    )


AddMessages = Callable[[DialectSql, str, Sequence[TranscriptMessage]], list[Doc]]
"""The engine's insert of new transcript messages (at least one) whose seq the session did
not hold when read, inside a write: the stored rows of those actually inserted, to index."""


class Transcripts(RecallQueries):
    """The transcript index (:class:`~.repos.transcripts.TranscriptIndex`) and its recall index
    over one database; ``add_messages`` is the engine's insert of new rows (how they get their
    ids), shared with :class:`~.conversations.Conversations`."""

    def __init__(
        self, database: Database, add_messages: AddMessages, *, search_candidates: int
    ) -> None:
        super().__init__(database)
        self.add_messages = add_messages
        self.search_candidates = search_candidates

    def _held(self, sql: DialectSql, agent_id: str, session_id: str, seq: int) -> Doc | None:
        rows = sql.rows(
            f"SELECT {_DOC_COLUMNS} FROM transcript_messages WHERE {_SESSION} AND seq = ?"
            + self.dialect.lock_rows,
            (agent_id, session_id, seq),
        )
        return Doc(*rows[0]) if rows else None

    def _raise_mark(
        self,
        sql: DialectSql,
        agent_id: str,
        session_id: str,
        next_seq: int,
        synced_at: datetime,
        *,
        create: bool = True,
    ) -> None:
        """Raise the session's mark to ``(next_seq, synced_at)`` (never lower it); without
        ``create``, only a mark that exists and reaches ``next_seq - 1`` (no gap)."""
        d = self.dialect
        top = d.greatest
        values = (int(next_seq), d.time(synced_at))
        if not create:
            sql.run(
                f"UPDATE transcript_marks SET next_seq = {top}(next_seq, ?), "
                f"synced_at = {top}(synced_at, ?) WHERE {_SESSION} AND next_seq >= ?",
                (*values, agent_id, session_id, int(next_seq) - 1),
            )
            return
        # WHERE TRUE: SQLite parses an upsert on INSERT … SELECT only with a WHERE clause.
        sql.run(
            "INSERT INTO transcript_marks (agent_id, session_id, next_seq, synced_at) "
            "SELECT ?, ?, ?, ? WHERE TRUE ON CONFLICT (agent_id, session_id) DO UPDATE SET "
            f"next_seq = {top}(transcript_marks.next_seq, excluded.next_seq), "
            f"synced_at = {top}(transcript_marks.synced_at, excluded.synced_at)",
            (agent_id, session_id, *values),
        )

    def index_message(
        self,
        agent_id: str,
        session_id: str,
        seq: int,
        role: str,
        content: str,
        created_at: datetime,
        *,
        speaker: str | None = None,
        metadata: JsonObject | None = None,
        appended_at: datetime | None = None,
    ) -> None:
        message = TranscriptMessage(
            agent_id, session_id, int(seq), role, content, created_at, speaker, metadata
        )
        with self.database.write() as conn:
            sql = self.dialect.bind(conn)
            old = self._held(sql, agent_id, session_id, message.seq)
            added = [] if old is not None else self.add_messages(sql, agent_id, [message])
            if old is None and not added:  # another writer inserted it first
                old = self._held(sql, agent_id, session_id, message.seq)
            if old is not None:
                self._rewrite(sql, agent_id, old, message)
            index_docs(sql, agent_id, added)
            # The mark advances only while the session is held without a gap (base.py).
            self._raise_mark(
                sql,
                agent_id,
                session_id,
                message.seq + 1,
                appended_at or created_at,
                create=message.seq == 0,
            )

    def _rewrite(
        self, sql: DialectSql, agent_id: str, old: Doc, message: TranscriptMessage
    ) -> None:
        d = self.dialect
        values = stored_message(d, message)[2:7]
        index_docs(sql, agent_id, [old], sign=-1)
        sql.run(
            "UPDATE transcript_messages SET role = ?, content = ?, created_at = ?, "
            f"speaker = ?, metadata = ?{d.json_cast} WHERE id = ?",
            (*values, old.id),
        )
        index_docs(sql, agent_id, [Doc(old.id, values[1], values[3], values[0])])

    def import_transcript(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[TranscriptMessage],
        *,
        synced_at: datetime,
    ) -> int:
        top = import_top(agent_id, session_id, messages)
        with self.database.write() as conn:
            sql = self.dialect.bind(conn)
            held = {
                int(r[0])
                for r in sql.rows(
                    f"SELECT seq FROM transcript_messages WHERE {_SESSION}", (agent_id, session_id)
                )
            }
            fresh = {int(m.seq): m for m in messages if int(m.seq) not in held}
            added = (
                self.add_messages(sql, agent_id, [fresh[s] for s in sorted(fresh)]) if fresh else []
            )
            index_docs(sql, agent_id, added)
            self._raise_mark(sql, agent_id, session_id, top, synced_at)
            return len(added)

    def transcript_messages(
        self, agent_id: str, *, session_id: str | None = None
    ) -> list[TranscriptMessage]:
        d = self.dialect
        query = f"SELECT {TRANSCRIPT_COLUMNS} FROM transcript_messages WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if session_id is not None:
            query += " AND session_id = ?"
            params.append(session_id)
        query += f" ORDER BY {d.bytewise('session_id')}, seq"
        rows = self.select(query, params)
        return [d.decode.transcript_message(r) for r in rows]

    def transcript_metadata_strings(
        self, agent_id: str, session_id: str, path: Sequence[str]
    ) -> list[str]:
        d = self.dialect
        if d.name == "sqlite":
            value, kind = "json_extract(metadata, ?)", "json_type(metadata, ?) = 'text'"
            where: Any = "$" + "".join(f'."{key}"' for key in path)
        else:
            value, kind = "metadata #>> ?::text[]", "jsonb_typeof(metadata #> ?::text[]) = 'string'"
            where = list(path)
        query = f"SELECT {value} FROM transcript_messages WHERE {_SESSION} AND {kind} ORDER BY seq"
        rows = self.select(query, (where, agent_id, session_id, where))
        return [str(r[0]) for r in rows]

    def transcript_marks(self, agent_id: str) -> dict[str, TranscriptMark]:
        d = self.dialect
        rows = self.select(
            f"SELECT {MARK_COLUMNS} FROM transcript_marks WHERE agent_id = ?", (agent_id,)
        )
        return d.decode.transcript_marks(rows)

    def forget_session(self, agent_id: str, session_id: str) -> int:
        with self.database.write() as conn:
            sql = self.dialect.bind(conn)
            sql.run(f"DELETE FROM transcript_marks WHERE {_SESSION}", (agent_id, session_id))
            sql.run(f"DELETE FROM conversations WHERE {_SESSION}", (agent_id, session_id))
            gone = sql.rows(
                f"DELETE FROM transcript_messages WHERE {_SESSION} RETURNING {_DOC_COLUMNS}",
                (agent_id, session_id),
            )
            index_docs(sql, agent_id, [Doc(*r) for r in gone], sign=-1)
            return len(gone)

    def search_transcript(
        self,
        agent_id: str,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 20,
    ) -> list[TranscriptHit]:
        """Messages containing any query term, best BM25 first (the recall index's ranking
        without its re-ranking stages)."""
        filters = RecallFilters(session_id, role, since, until)
        with self._recall() as sql:
            return search_hits(
                sql,
                agent_id,
                query,
                filters,
                limit,
                self._when,
                self._message,
                self.search_candidates,
            )
