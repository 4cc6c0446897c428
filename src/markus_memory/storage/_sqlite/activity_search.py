"""SQLite's activity search: FTS5 documents of the one analyser's terms
(:mod:`markus_memory.analysis`) in each agent's rowid span, ranked by ``bm25``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ...analysis import term_text
from .._records import ACTIVITY_COLUMNS
from ..activities import DOOMED
from ..base import search_terms
from ..repos.activities import Activity, ActivityHit
from ..schema_tables import MAX_INDEXED_LOG_CHARS
from .conn import SqliteDatabase, agent_span, bounded_rank, fts_match, next_rowid
from .dialect import DECODE
from .schema import ACTIVITY_FTS_WEIGHTS


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


class SqliteActivitySearch:
    """The activity search documents and their ranking in one SQLite file (the
    :class:`~..activities.ActivitySearch` of :class:`~..activities.Activities`)."""

    def __init__(self, database: SqliteDatabase, search_candidates: int) -> None:
        self.database = database
        self.search_candidates = search_candidates

    def index_activity(
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

    def drop_documents(self, conn: sqlite3.Connection, params: tuple[Any, ...]) -> None:
        # FTS5 rows have no foreign key: they go by the rowids of their documents.
        conn.execute(
            "DELETE FROM activity_fts WHERE rowid IN (SELECT rowid FROM "
            f"activity_search_docs WHERE activity_id IN ({DOOMED}))",
            params,
        )
        conn.execute(f"DELETE FROM activity_search_docs WHERE activity_id IN ({DOOMED})", params)

    def search(self, agent_id: str, query: str, limit: int) -> list[ActivityHit]:
        """bm25 over FTS5 (see :meth:`~..activities.Activities.search_activities`)."""
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        with self.database.read() as conn:
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
        with self.database.read() as conn:
            rows = conn.execute(
                # Primary-key lookups; "+agent_id" keeps the planner off the agent index,
                # which would walk every activity of the agent.
                f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities "
                f"WHERE id IN ({','.join('?' * len(ids))}) AND +agent_id = ?",
                (*ids, agent_id),
            ).fetchall()
        return {r["id"]: DECODE.activity(r) for r in rows}
