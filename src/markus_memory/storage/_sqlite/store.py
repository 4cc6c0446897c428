"""SqliteStore: the default episodic backend in ``<home>/data.db``; activities and their search.

Connections, transactions and migrations live in :mod:`.conn`. Written once for both
backends over the :class:`~.dialect.Dialect`: activity reads and writes (:mod:`.activity_reads`,
:mod:`.activity_writes`), mailbox and chat history (:mod:`.side_tables`), the transcript index
(:mod:`.transcripts`). What stays here is SQLite's own: the FTS5 activity search and its
documents (the one analyser's terms, :mod:`markus_memory.analysis`), and the ids of new
transcript messages inside the agent's rowid span.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ...analysis import term_text
from .._records import ACTIVITY_COLUMNS
from .._sql import DialectSql
from ..activity_reads import ActivityReads
from ..activity_writes import DOOMED, ActivityWrites
from ..base import search_terms
from ..conversations import ConversationTables
from ..daily_logs import DailyLogTables
from ..recall.index import Doc
from ..repos.activities import Activity, ActivityHit
from ..repos.transcripts import TranscriptMessage
from ..schema_tables import MAX_INDEXED_LOG_CHARS
from ..side_tables import SideTables
from ..transcripts import TranscriptTables, stored_message
from .conn import SqliteDatabase, agent_span, bounded_rank, fts_match, next_rowid
from .dialect import DECODE
from .schema import ACTIVITY_FTS_WEIGHTS, fill_activity_search


def _analysed(*texts: str) -> tuple[str, ...]:
    """Search-document fields as the one analyser's terms (see ACTIVITY_FTS_TOKENIZER)."""
    return tuple(term_text(text) for text in texts)


def _new_doc(conn: sqlite3.Connection, activity_id: str, agent_id: str) -> int:
    """Register a search document for an activity: the next rowid in its agent's span."""
    rowid = next_rowid(conn, "activity_search_docs", "rowid", agent_id)
    conn.execute(
        "INSERT INTO activity_search_docs (rowid, activity_id, agent_id) VALUES (?, ?, ?)",
        (rowid, activity_id, agent_id),
    )
    return rowid


def _log_text(conn: sqlite3.Connection, activity_id: str) -> str:
    """The first MAX_INDEXED_LOG_CHARS of an activity's log, lines in order."""
    logs: list[str] = []
    size = 0
    for (content,) in conn.execute(
        "SELECT content FROM agent_activity_logs WHERE activity_id = ? ORDER BY seq",
        (activity_id,),
    ):
        text = str(content or "")
        logs.append(text)
        size += len(text) + 1
        if size >= MAX_INDEXED_LOG_CHARS:
            break
    return "\n".join(logs)[:MAX_INDEXED_LOG_CHARS]


class SqliteStore(
    SqliteDatabase,
    TranscriptTables,
    ConversationTables,
    DailyLogTables,
    ActivityReads,
    ActivityWrites,
    SideTables,
):
    """Activities, mailbox, chat history and the transcript index in one SQLite file."""

    # -- transcripts (TranscriptTables) ------------------------------------------------------

    def _add_messages(
        self, sql: DialectSql, agent_id: str, messages: Sequence[TranscriptMessage]
    ) -> list[Doc]:
        # The write transaction holds the file: nothing else can insert meanwhile, and the
        # ids continue the agent's span (schema.py m004), so its rows stay together.
        first = next_rowid(sql.conn, "transcript_messages", "id", agent_id)
        rows = [
            (first + n, agent_id, *stored_message(self.dialect, m)) for n, m in enumerate(messages)
        ]
        sql.many(
            "INSERT INTO transcript_messages (id, agent_id, session_id, seq, role, content, "
            "created_at, speaker, metadata, body) VALUES (?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        return [Doc(r[0], r[5], r[7], r[4]) for r in rows]

    def rebuild_derived(self) -> int:
        """Recreate and refill everything derived from the stored rows: the activity search
        and the recall index (one transaction); the number of messages indexed."""
        with self.write() as conn:
            fill_activity_search(conn)
            sql = self.dialect.bind(conn)
            self.recreate(sql, "BLOB", " WITHOUT ROWID")
            return self.rebuild(sql)

    # -- activity search documents (ActivityWrites keeps them current) ------------------------

    def _index_activity(
        self, conn: sqlite3.Connection, activity_id: str, *, fresh: bool = False
    ) -> None:
        # The document holds the label, summary and keywords and the first
        # MAX_INDEXED_LOG_CHARS of the log text, in the agent's rowid span (m004).
        row = conn.execute(
            "SELECT label, summary, keywords, agent_id FROM agent_activities WHERE id = ?",
            (activity_id,),
        ).fetchone()
        values = (row["label"], row["summary"] or "", row["keywords"] or "")
        doc = None
        if not fresh:
            doc = conn.execute(
                "SELECT rowid FROM activity_search_docs WHERE activity_id = ?", (activity_id,)
            ).fetchone()
        log_text = "" if fresh else _log_text(conn, activity_id)
        if doc is None:
            rowid = _new_doc(conn, activity_id, str(row["agent_id"]))
        else:
            rowid = doc[0]
            conn.execute("DELETE FROM activity_fts WHERE rowid = ?", (rowid,))
        conn.execute(
            "INSERT INTO activity_fts (rowid, label, summary, keywords, logs) "
            "VALUES (?, ?, ?, ?, ?)",
            (rowid, *_analysed(*values, log_text)),
        )

    def _drop_search_documents(self, conn: sqlite3.Connection, params: tuple[Any, ...]) -> None:
        # FTS5 rows have no foreign key: they go by the rowids of their documents.
        conn.execute(
            "DELETE FROM activity_fts WHERE rowid IN (SELECT rowid FROM "
            f"activity_search_docs WHERE activity_id IN ({DOOMED}))",
            params,
        )
        conn.execute(f"DELETE FROM activity_search_docs WHERE activity_id IN ({DOOMED})", params)

    def search_activities(self, agent_id: str, query: str, *, limit: int = 10) -> list[ActivityHit]:
        """All terms first (AND); if that finds fewer than ``limit``, any term (OR) fills up.

        The terms are the one analyser's (:func:`~.base.search_terms`), each a quoted literal:
        a query of stop words alone finds nothing. Ranking is bm25 (label 4, keywords 3,
        summary 2, logs 1, newer first on ties) over all of the agent's matches when there are
        at most :attr:`search_candidates` of them. A match set larger than that (a term in a
        large share of the agent's history) says little about relevance and would cost a scan of
        millions of postings to score, so it is ordered by recency instead: the newest
        activities matching in label or keywords, then the newest matching anywhere (``score``
        0.0).
        """
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        with self.read() as conn:
            span = agent_span(conn, agent_id)
            if span is None:
                return []
            hits = self._ranked(conn, span, fts_match(terms), limit)
            if len(hits) < limit and len(terms) > 1:
                seen = {rowid for rowid, _ in hits}
                extra = self._ranked(conn, span, fts_match(terms, any_term=True), limit)
                hits += [h for h in extra if h[0] not in seen][: limit - len(hits)]
            if not hits:
                return []
            ids = dict(
                conn.execute(
                    "SELECT rowid, activity_id FROM activity_search_docs "
                    f"WHERE rowid IN ({','.join('?' * len(hits))})",
                    [rowid for rowid, _ in hits],
                ).fetchall()
            )
        by_id = self._activities_by_ids(agent_id, list(ids.values()))
        return [
            ActivityHit(by_id[ids[rowid]], score)
            for rowid, score in hits
            if rowid in ids and ids[rowid] in by_id
        ]

    def _ranked(
        self, conn: sqlite3.Connection, span: tuple[int, int], match: str, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, score) best first, within one agent's rowid span."""
        ranked, newest = bounded_rank(
            conn,
            fts="activity_fts",
            match=match,
            span=span,
            limit=limit,
            candidates=self.search_candidates,
            weights=", ".join(str(w) for w in ACTIVITY_FTS_WEIGHTS),
        )
        if newest is None:
            return ranked
        strong = [
            int(r[0])
            for r in conn.execute(
                "SELECT rowid FROM activity_fts WHERE activity_fts MATCH ? "
                "AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?",
                ("{label keywords} : (" + match + ")", *span, limit),
            )
        ]
        seen = set(strong)
        ordered = strong + [r for r in newest if r not in seen]
        return [(rowid, 0.0) for rowid in ordered[:limit]]

    def _activities_by_ids(self, agent_id: str, ids: Sequence[str]) -> dict[str, Activity]:
        if not ids:
            return {}
        with self.read() as conn:
            rows = conn.execute(
                # Primary-key lookups; "+agent_id" keeps the planner off the agent index,
                # which would walk every activity of the agent.
                f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities "
                f"WHERE id IN ({','.join('?' * len(ids))}) AND +agent_id = ?",
                (*ids, agent_id),
            ).fetchall()
        return {r["id"]: DECODE.activity(r) for r in rows}
