"""The conversations the store holds, written once for both backends.

One record of every conversation: ``transcript_messages`` holds each message once, keyed
(agent, session, seq), never compacted. A session the store *owns* also has a
``conversations`` row (its head): its kind, its times, the next seq, and for a Markus session
the compaction of its view. Two kinds, told apart in the data:

- ``markus``: a Markus session kept in the database (PostgreSQL deployments, so every host sees
  it). Its view is the Markus session: compaction moves ``view_from`` and stores the summary that
  stands for the messages before it; their rows stay, for recall.
- ``history``: a conversation a framework owns (the OpenAI Agents SDK session, the PydanticAI
  store, the Claude Agent SDK store): never compacted, read back exactly as written, by page.

An append takes the head's row (``FOR UPDATE`` on PostgreSQL; SQLite's write transaction
holds the file), numbers the messages after its ``next_seq``, stores them with their recall
postings and commits: acknowledged means durable and indexed, on every host.

:class:`Conversations` is constructed with the database and the
:class:`~.transcripts.Transcripts` repository whose rows its messages are.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..errors import InvalidInputError, NotFoundError
from ._records import EPOCH, RowDecoder
from ._sql import DialectSql
from .base import JsonObject
from .dialect import Database, Repository
from .recall.index import Doc, index_docs
from .repos.conversations import ConversationHead, NewEntry, StoredEntry
from .repos.transcripts import TranscriptMessage
from .transcripts import Transcripts

KINDS = ("markus", "history")
PIPELINED_ENTRIES = 32
"""Appends of up to this many messages send their statements pipelined on PostgreSQL."""
_HEAD_COLUMNS = (
    "session_id, kind, started_at, last_activity_at, first_seq, next_seq, view_from, summary, "
    "title, details"
)
_SESSION = "agent_id = ? AND session_id = ?"
_ENTRY_COLUMNS = "seq, role, content, created_at, metadata, body"
_INSERT_HEAD = (
    "INSERT INTO conversations (agent_id, session_id, kind, started_at, last_activity_at, "
    "first_seq, next_seq, view_from, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class Conversations(Repository):
    """Conversation heads and messages on one database; their messages are the rows of the
    ``transcripts`` repository (its engine's insert numbers them, its index keeps them)."""

    def __init__(self, database: Database, transcripts: Transcripts) -> None:
        super().__init__(database)
        self.transcripts = transcripts

    def forget_session(self, agent_id: str, session_id: str) -> int:
        """Drop a conversation with its messages and mark (the transcript's
        :meth:`~.transcripts.Transcripts.forget_session`); the number of messages removed."""
        return self.transcripts.forget_session(agent_id, session_id)

    # -- heads ---------------------------------------------------------------------------------

    def _head(
        self, sql: DialectSql, agent_id: str, session_id: str, *, lock: bool
    ) -> ConversationHead | None:
        rows = sql.rows(
            f"SELECT {_HEAD_COLUMNS} FROM conversations WHERE {_SESSION}"
            + (self.dialect.lock_rows if lock else ""),
            (agent_id, session_id),
        )
        return self._decode_head(rows[0]) if rows else None

    def _decode_head(self, r: Sequence[Any]) -> ConversationHead:
        decode = self.dialect.decode
        return ConversationHead(
            session_id=r[0],
            kind=r[1],
            started_at=decode.when(r[2]) or EPOCH,
            last_activity_at=decode.when(r[3]) or EPOCH,
            first_seq=int(r[4]),
            next_seq=int(r[5]),
            view_from=int(r[6]),
            summary=r[7],
            title=r[8],
            details=None if r[9] is None else decode.obj(r[9]),
        )

    def _create_head(
        self, sql: DialectSql, agent_id: str, session_id: str, kind: str, at: datetime
    ) -> ConversationHead:
        """The conversation's head, created if absent (its seqs continue past any message the
        transcript already holds under this id), locked for the caller's transaction."""
        head = self._head(sql, agent_id, session_id, lock=True)
        if head is None:
            d = self.dialect
            rows = sql.rows(
                f"SELECT MAX(seq) FROM transcript_messages WHERE {_SESSION}",
                (agent_id, session_id),
            )
            first = 0 if not rows or rows[0][0] is None else int(rows[0][0]) + 1
            sql.run(
                f"{_INSERT_HEAD} ON CONFLICT (agent_id, session_id) DO NOTHING",
                (agent_id, session_id, kind, d.time(at), d.time(at), first, first, first, None),
            )
            head = self._head(sql, agent_id, session_id, lock=True)
            assert head is not None  # inserted, or another writer's row we now lock
        if head.kind != kind:
            raise InvalidInputError(
                f"session {session_id!r} is a {head.kind} conversation, not a {kind} one"
            )
        return head

    def conversation(self, agent_id: str, session_id: str) -> ConversationHead | None:
        """The head of a conversation the store holds, None if it holds none by that id."""
        with self.database.read() as conn:
            return self._head(self.dialect.bind(conn), agent_id, session_id, lock=False)

    def start_conversation(
        self, agent_id: str, session_id: str, kind: str, at: datetime
    ) -> ConversationHead:
        """The conversation, created empty if the store holds none by that id;
        InvalidInputError when it is the other kind."""
        with self.database.write() as conn:
            return self._create_head(self.dialect.bind(conn), agent_id, session_id, kind, at)

    def conversations(self, agent_id: str, kind: str | None = None) -> list[ConversationHead]:
        """The conversations of an agent (of one kind), latest activity first."""
        where, params = "agent_id = ?", [agent_id]
        if kind is not None:
            where += " AND kind = ?"
            params.append(kind)
        rows = self.select(
            f"SELECT {_HEAD_COLUMNS} FROM conversations WHERE {where} "
            f"ORDER BY last_activity_at DESC, {self.dialect.bytewise('session_id')}",
            params,
        )
        return [self._decode_head(r) for r in rows]

    def set_conversation_details(
        self,
        agent_id: str,
        session_id: str,
        *,
        title: str | None,
        details: JsonObject | None,
    ) -> bool:
        """Replace a conversation's title and details; False if the store holds none."""
        d = self.dialect
        with self.database.write() as conn:
            return (
                d.bind(conn).run(
                    f"UPDATE conversations SET title = ?, details = ?{d.json_cast} "
                    f"WHERE {_SESSION}",
                    (title, d.json(details), agent_id, session_id),
                )
                > 0
            )

    # -- messages ------------------------------------------------------------------------------

    def append_conversation(
        self,
        agent_id: str,
        session_id: str,
        kind: str,
        entries: Sequence[NewEntry],
        at: datetime,
        *,
        create: bool = True,
        describe: tuple[str | None, JsonObject | None] | None = None,
    ) -> ConversationHead:
        """Append ``entries`` in order and index them, in one transaction; the head as it was
        before (its ``next_seq`` is the first entry's seq). The conversation is created if
        absent, or without ``create`` NotFoundError. InvalidInputError for the other kind.
        ``describe`` is a title and details the head takes in the same transaction."""
        d = self.dialect
        with self.database.write() as conn:
            sql = d.bind(conn)
            # A few messages pipelined on PostgreSQL: their index statements go out together,
            # not one round trip each, so the head's row lock is held for less time (a large
            # batch is its data's cost, and its postings go faster by COPY).
            with sql.pipeline() if len(entries) <= PIPELINED_ENTRIES else nullcontext():
                return self._append_rows(
                    sql, agent_id, session_id, kind, entries, at, create, describe
                )

    def _append_rows(
        self,
        sql: DialectSql,
        agent_id: str,
        session_id: str,
        kind: str,
        entries: Sequence[NewEntry],
        at: datetime,
        create: bool,
        describe: tuple[str | None, JsonObject | None] | None,
    ) -> ConversationHead:
        head = self._advance(sql, agent_id, session_id, kind, len(entries), at)
        if head is None:  # absent (or the other kind): one more look, under the lock
            if not create:
                raise NotFoundError(f"Session not found: {session_id}")
            self._create_head(sql, agent_id, session_id, kind, at)
            head = self._advance(sql, agent_id, session_id, kind, len(entries), at)
            assert head is not None  # created (or found) with this kind, and locked
        if describe is not None:
            d = self.dialect
            sql.run(
                f"UPDATE conversations SET title = ?, details = ?{d.json_cast} WHERE {_SESSION}",
                (describe[0], d.json(describe[1]), agent_id, session_id),
            )
        first = head.next_seq
        if not entries:
            return head
        messages = [
            TranscriptMessage(
                agent_id,
                session_id,
                first + n,
                e.role,
                e.text,
                e.created_at,
                e.speaker,
                e.metadata,
                e.body,
            )
            for n, e in enumerate(entries)
        ]
        added = self.transcripts.add_messages(sql, agent_id, messages)
        if len(added) != len(messages):  # a row under a seq the head had not counted
            raise RuntimeError(f"conversation {session_id!r}: seqs out of step with its head")
        index_docs(sql, agent_id, added)
        return head

    def _advance(
        self, sql: DialectSql, agent_id: str, session_id: str, kind: str, n: int, at: datetime
    ) -> ConversationHead | None:
        """Count ``n`` messages into the head in one statement (which takes its row lock);
        the head as it was before, None when there is none of this kind."""
        rows = sql.rows(
            "UPDATE conversations SET next_seq = next_seq + ?, last_activity_at = ? "
            f"WHERE {_SESSION} AND kind = ? RETURNING {_HEAD_COLUMNS}",
            (n, self.dialect.time(at), agent_id, session_id, kind),
        )
        if not rows:
            return None
        after = self._decode_head(rows[0])
        return replace(after, next_seq=after.next_seq - n)

    def _entry(self, r: Sequence[Any], decode: RowDecoder | None = None) -> StoredEntry:
        """A message from the ``_ENTRY_COLUMNS`` of its row (``decode``: the dialect's, looked
        up once for many rows)."""
        decode = decode or self.dialect.decode
        return StoredEntry(
            seq=int(r[0]),
            role=r[1],
            text=r[2],
            created_at=decode.when(r[3]) or EPOCH,
            metadata=None if r[4] is None else decode.obj(r[4]),
            body=r[5],
        )

    def forget_conversation_head(self, agent_id: str, session_id: str) -> None:
        """Stop holding a conversation, keeping its rows (a transfer then takes it over with
        another view)."""
        with self.database.write() as conn:
            self.dialect.bind(conn).run(
                f"DELETE FROM conversations WHERE {_SESSION}", (agent_id, session_id)
            )

    def conversation_entries(
        self,
        agent_id: str,
        session_id: str,
        *,
        start: int = 0,
        stop: int | None = None,
        limit: int | None = None,
    ) -> list[StoredEntry]:
        """The held messages with ``start <= seq < stop``, in order (at most ``limit``)."""
        where, params = f"{_SESSION} AND seq >= ?", [agent_id, session_id, int(start)]
        if stop is not None:
            where += " AND seq < ?"
            params.append(int(stop))
        tail = "" if limit is None else f" LIMIT {int(limit)}"
        d = self.dialect
        rows = self.select(
            f"SELECT {_ENTRY_COLUMNS} FROM transcript_messages WHERE {where} ORDER BY seq{tail}",
            params,
        )
        decode = d.decode
        return [self._entry(r, decode) for r in rows]

    def compact_conversation(
        self, agent_id: str, session_id: str, view_from: int, summary: str
    ) -> bool:
        """Start a Markus session's view at ``view_from`` with ``summary`` standing for the
        messages before it (never moving it back); False if nothing changed."""
        with self.database.write() as conn:
            return (
                self.dialect.bind(conn).run(
                    "UPDATE conversations SET view_from = ?, summary = ? "
                    f"WHERE {_SESSION} AND kind = 'markus' AND view_from < ?",
                    (int(view_from), summary, agent_id, session_id, int(view_from)),
                )
                > 0
            )

    def drop_last_entry(self, agent_id: str, session_id: str) -> StoredEntry | None:
        """Remove the newest message of a held conversation (its postings and vector with
        it); the message removed, None when it held none."""
        d = self.dialect
        with self.database.write() as conn:
            sql = d.bind(conn)
            head = self._head(sql, agent_id, session_id, lock=True)
            if head is None or head.count == 0:
                return None
            rows = sql.rows(
                f"DELETE FROM transcript_messages WHERE {_SESSION} AND seq = ? "
                f"RETURNING id, content, speaker, role, {_ENTRY_COLUMNS}",
                (agent_id, session_id, head.next_seq - 1),
            )
            sql.run(
                f"UPDATE conversations SET next_seq = next_seq - 1 WHERE {_SESSION}",
                (agent_id, session_id),
            )
            if not rows:
                return None
            r = rows[0]
            index_docs(sql, agent_id, [Doc(r[0], r[1], r[2], r[3])], sign=-1)
            return self._entry(r[4:])

    def adopt_entries(
        self,
        agent_id: str,
        session_id: str,
        kind: str,
        *,
        started_at: datetime,
        last_activity_at: datetime,
        first_seq: int,
        next_seq: int,
        view_from: int,
        summary: str | None,
        bodies: Sequence[tuple[int, str]],
        details: JsonObject | None = None,
    ) -> bool:
        """Make the store hold a session whose messages it already records (a session file
        being moved in): its head as given (``details``: what else its file held), and the
        exact bodies of the messages by seq. Idempotent: a head already there is left as it
        is (False)."""
        d = self.dialect
        with self.database.write() as conn:
            sql = d.bind(conn)
            if self._head(sql, agent_id, session_id, lock=True) is not None:
                return False
            sql.run(
                _INSERT_HEAD,
                (
                    agent_id,
                    session_id,
                    kind,
                    d.time(started_at),
                    d.time(last_activity_at),
                    int(first_seq),
                    int(next_seq),
                    int(view_from),
                    summary,
                ),
            )
            if details is not None:
                sql.run(
                    f"UPDATE conversations SET details = ?{d.json_cast} WHERE {_SESSION}",
                    (d.json(details), agent_id, session_id),
                )
            sql.many(
                f"UPDATE transcript_messages SET body = ? WHERE {_SESSION} AND seq = ? "
                "AND body IS NULL",
                [(body, agent_id, session_id, int(seq)) for seq, body in bodies],
            )
            return True
