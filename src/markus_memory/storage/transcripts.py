"""The transcript index (every recorded session message, its marks and search): written once.

A store mixes :class:`TranscriptTables` in after its database class (``SqliteDatabase`` or
``PostgresDatabase``), which supplies ``read``/``write`` and the :class:`~.dialect.Dialect`.
What stays per backend is how new rows get their ids (:meth:`TranscriptTables._add_messages`):
SQLite numbers them inside the agent's rowid span (``_sqlite/schema.py`` m004), PostgreSQL takes
them from the identity column and skips a message another writer inserted first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._records import EPOCH, MARK_COLUMNS, TRANSCRIPT_COLUMNS, import_top
from ._sql import DialectSql
from .base import JsonObject
from .recall.contract import RecallFilters
from .recall.index import Doc, RecallQueries, index_docs
from .recall.rank import search_hits
from .repos.transcripts import TranscriptHit, TranscriptMark, TranscriptMessage

if TYPE_CHECKING:
    from .dialect import Dialect

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


class TranscriptTables(RecallQueries):
    """The transcript index (:class:`~.repos.transcripts.TranscriptIndex`) and its recall index."""

    search_candidates: int

    if TYPE_CHECKING:

        @property
        def dialect(self) -> Dialect: ...
        def read(self) -> AbstractContextManager[Any]: ...
        def write(self) -> AbstractContextManager[Any]: ...
        def _add_messages(
            self, sql: DialectSql, agent_id: str, messages: Sequence[TranscriptMessage]
        ) -> list[Doc]:
            """Insert messages (at least one) whose seq the session did not hold when read
            (inside a write); the stored rows of those actually inserted, to index."""
            ...

    @contextmanager
    def _recall(self, *, write: bool = False) -> Iterator[DialectSql]:
        held = None if write else getattr(self._recall_reads(), "sql", None)
        if held is not None:
            yield held
            return
        with self.write() if write else self.read() as conn:
            yield self.dialect.bind(conn)

    @contextmanager
    def recall_session(self) -> Iterator[None]:
        """The recall reads of this thread inside share one connection: one pool checkout
        (and, on PostgreSQL, one health check) for a whole recall instead of one per read.
        Each statement still runs on its own, as outside."""
        local = self._recall_reads()
        if getattr(local, "sql", None) is not None:  # nested: the outer session holds it
            yield
            return
        with self.read() as conn:
            local.sql = self.dialect.bind(conn)
            try:
                yield
            finally:
                local.sql = None

    def _recall_reads(self) -> threading.local:
        """This store's per-thread held reader (made at first use)."""
        reads = self.__dict__.get("_held_reads")
        if reads is None:  # once per store; setdefault keeps the first if two threads race
            reads = self.__dict__.setdefault("_held_reads", threading.local())
        return reads  # type: ignore[no-any-return]

    def _when(self, moment: datetime) -> Any:
        return self.dialect.time(moment)

    def _message(self, row: Sequence[Any]) -> TranscriptMessage:
        return self.dialect.decode.transcript_message(row)

    def _time(self, value: Any) -> datetime:
        return self.dialect.decode.when(value) or EPOCH

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
        with self.write() as conn:
            sql = self.dialect.bind(conn)
            old = self._held(sql, agent_id, session_id, message.seq)
            added = [] if old is not None else self._add_messages(sql, agent_id, [message])
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
        with self.write() as conn:
            sql = self.dialect.bind(conn)
            held = {
                int(r[0])
                for r in sql.rows(
                    f"SELECT seq FROM transcript_messages WHERE {_SESSION}", (agent_id, session_id)
                )
            }
            fresh = {int(m.seq): m for m in messages if int(m.seq) not in held}
            added = (
                self._add_messages(sql, agent_id, [fresh[s] for s in sorted(fresh)])
                if fresh
                else []
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
        with self.read() as conn:
            rows = d.bind(conn).rows(query, params)
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
        with self.read() as conn:
            rows = d.bind(conn).rows(query, (where, agent_id, session_id, where))
        return [str(r[0]) for r in rows]

    def transcript_marks(self, agent_id: str) -> dict[str, TranscriptMark]:
        d = self.dialect
        with self.read() as conn:
            rows = d.bind(conn).rows(
                f"SELECT {MARK_COLUMNS} FROM transcript_marks WHERE agent_id = ?", (agent_id,)
            )
        return d.decode.transcript_marks(rows)

    def forget_session(self, agent_id: str, session_id: str) -> int:
        with self.write() as conn:
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
