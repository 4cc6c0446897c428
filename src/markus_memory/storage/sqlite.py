"""SqliteStore: the default episodic backend in ``<home>/data.db``; activities and their search.

Connections, transactions and migrations live in :mod:`.sqlite_conn`; mailbox and chat history
in :mod:`.side_tables` (written once for both backends); the transcript index in
:mod:`.sqlite_transcripts`. Row-to-record mapping shared with PostgreSQL is in :mod:`._records`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from ..analysis import with_cjk_pairs
from ._records import ACTIVITY_COLUMNS
from .activity_reads import ActivityReads
from .base import (
    Activity,
    ActivityEnd,
    ActivityHit,
    JsonObject,
    search_terms,
)
from .side_tables import SideTables
from .sqlite_conn import (
    DECODE,
    agent_span,
    bounded_rank,
    fts_match,
    json_text,
    next_rowid,
    to_iso,
)
from .sqlite_schema import ACTIVITY_FTS_WEIGHTS, MAX_INDEXED_LOG_CHARS
from .sqlite_transcripts import SqliteTranscriptIndex


def _cjk(*texts: str | None) -> tuple[str | None, ...]:
    """Search-document fields with their CJK character pairs (the one text analyser)."""
    return tuple(None if text is None else with_cjk_pairs(text) for text in texts)


def _new_doc(conn: sqlite3.Connection, activity_id: str, agent_id: str) -> int:
    """Register a search document for an activity: the next rowid in its agent's span."""
    rowid = next_rowid(conn, "activity_search_docs", "rowid", agent_id)
    conn.execute(
        "INSERT INTO activity_search_docs (rowid, activity_id, agent_id) VALUES (?, ?, ?)",
        (rowid, activity_id, agent_id),
    )
    return rowid


class SqliteStore(SqliteTranscriptIndex, ActivityReads, SideTables):
    """Activities, mailbox, chat history and the transcript index in one SQLite file."""

    # -- activities ---------------------------------------------------------------------------

    def insert_activity(self, activity: Activity) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO agent_activities (id, agent_id, mailbox_item_id, type, label, "
                "task_id, started_at, ended_at, total_tokens, total_tools, success, summary, "
                "keywords, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    activity.id,
                    activity.agent_id,
                    activity.mailbox_item_id,
                    activity.type,
                    activity.label,
                    activity.task_id,
                    to_iso(activity.started_at),
                    None if activity.ended_at is None else to_iso(activity.ended_at),
                    activity.total_tokens,
                    activity.total_tools,
                    int(activity.success),
                    activity.summary,
                    ",".join(activity.keywords),
                    to_iso(activity.started_at),
                ),
            )
            rowid = _new_doc(conn, activity.id, activity.agent_id)
            conn.execute(
                "INSERT INTO activity_fts (rowid, label, summary, keywords, logs) "
                "VALUES (?, ?, ?, ?, '')",
                (rowid, *_cjk(activity.label, activity.summary, ",".join(activity.keywords))),
            )

    def end_activity(self, agent_id: str, activity_id: str, end: ActivityEnd) -> bool:
        keywords = ",".join(end.keywords)
        with self.write() as conn:
            updated = conn.execute(
                "UPDATE agent_activities SET ended_at = ?, total_tokens = ?, total_tools = ?, "
                "success = ?, summary = ?, keywords = ? WHERE id = ? AND agent_id = ?",
                (
                    to_iso(end.ended_at),
                    end.total_tokens,
                    end.total_tools,
                    int(end.success),
                    end.summary,
                    keywords,
                    activity_id,
                    agent_id,
                ),
            ).rowcount
            if not updated:
                return False
            self._reindex_activity(conn, activity_id)
        return True

    def _reindex_activity(self, conn: sqlite3.Connection, activity_id: str) -> None:
        # An activity's document is written at start (label) and rewritten at end with its
        # summary, keywords and log text: one FTS update per episode, not one per log line.
        doc = conn.execute(
            "SELECT rowid FROM activity_search_docs WHERE activity_id = ?", (activity_id,)
        ).fetchone()
        row = conn.execute(
            "SELECT label, summary, keywords FROM agent_activities WHERE id = ?", (activity_id,)
        ).fetchone()
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
        values = (row["label"], row["summary"] or "", row["keywords"] or "")
        log_text = "\n".join(logs)[:MAX_INDEXED_LOG_CHARS]
        if doc is None:
            agent = conn.execute(
                "SELECT agent_id FROM agent_activities WHERE id = ?", (activity_id,)
            ).fetchone()[0]
            rowid = _new_doc(conn, activity_id, str(agent))
        else:
            rowid = doc[0]
            conn.execute("DELETE FROM activity_fts WHERE rowid = ?", (rowid,))
        conn.execute(
            "INSERT INTO activity_fts (rowid, label, summary, keywords, logs) "
            "VALUES (?, ?, ?, ?, ?)",
            (rowid, *_cjk(*values, log_text)),
        )

    def append_log(
        self,
        agent_id: str,
        activity_id: str,
        type: str,
        content: str,
        metadata: JsonObject,
        created_at: datetime,
    ) -> int | None:
        encoded = json_text(metadata) or "{}"
        with self.write() as conn:
            owner = conn.execute(
                "SELECT 1 FROM agent_activities WHERE id = ? AND agent_id = ?",
                (activity_id, agent_id),
            ).fetchone()
            if owner is None:
                return None
            seq = int(
                conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM agent_activity_logs "
                    "WHERE activity_id = ?",
                    (activity_id,),
                ).fetchone()[0]
            )
            conn.execute(
                "INSERT INTO agent_activity_logs (activity_id, seq, type, content, metadata, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (activity_id, seq, type, content, encoded, to_iso(created_at)),
            )
        return seq

    def search_activities(self, agent_id: str, query: str, *, limit: int = 10) -> list[ActivityHit]:
        """All terms first (AND); if that finds fewer than ``limit``, any term (OR) fills up.

        Every term is a quoted literal. Ranking is bm25 (label 4, keywords 3, summary 2, logs 1,
        newer first on ties) over all of the agent's matches when there are at most
        :attr:`search_candidates` of them. A match set larger than that (a term in a large share
        of the agent's history) says little about relevance and would cost a scan of millions of
        postings to score, so it is ordered by recency instead: the newest activities matching
        in label or keywords, then the newest matching anywhere (``score`` 0.0).
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

    def prune_activities(self, agent_id: str, *, before: datetime) -> int:
        cutoff = to_iso(before)
        with self.write() as conn:
            doomed = "SELECT id FROM agent_activities WHERE agent_id = ? AND started_at < ?"
            conn.execute(
                "DELETE FROM activity_fts WHERE rowid IN (SELECT rowid FROM "
                f"activity_search_docs WHERE activity_id IN ({doomed}))",
                (agent_id, cutoff),
            )
            conn.execute(
                f"DELETE FROM activity_search_docs WHERE activity_id IN ({doomed})",
                (agent_id, cutoff),
            )
            conn.execute(
                f"DELETE FROM agent_activity_logs WHERE activity_id IN ({doomed})",
                (agent_id, cutoff),
            )
            return conn.execute(
                "DELETE FROM agent_activities WHERE agent_id = ? AND started_at < ?",
                (agent_id, cutoff),
            ).rowcount
