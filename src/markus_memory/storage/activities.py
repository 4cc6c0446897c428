"""Activities and their logs, written once for both backends; their search is the engine's.

:class:`Activities` is constructed with the database it uses and the engine's
:class:`ActivitySearch`: every write keeps the activity's search document current through it,
and searching ranks those documents (an FTS5 table over slotted rowids and ``bm25`` on SQLite,
a ``tsvector`` row and ``ts_rank`` on PostgreSQL). Reading rows and writing them is shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from ._records import ACTIVITY_COLUMNS, LOG_COLUMNS
from .base import JsonObject
from .dialect import Database, Repository
from .repos.activities import Activity, ActivityEnd, ActivityHit, ActivityLogEntry

# The position of mailbox_item_id in ACTIVITY_COLUMNS.
_MAILBOX_ITEM = 6
# The agent's activities a prune removes (parameters: agent id, cutoff).
DOOMED = "SELECT id FROM agent_activities WHERE agent_id = ? AND started_at < ?"


class ActivitySearch(Protocol):
    """An engine's activity search: its documents, kept in the caller's write transaction,
    and the ranking that reads them."""

    def index_activity(self, conn: Any, activity_id: str, *, fresh: bool = False) -> None:
        """(Re)write the activity's search document from its row and logs (``fresh``: the
        activity was just inserted, so it has neither a document nor logs yet)."""
        ...

    def drop_documents(self, conn: Any, params: tuple[Any, ...]) -> None:
        """Delete the search documents of the activities :data:`DOOMED` selects."""
        ...

    def search(self, agent_id: str, query: str, limit: int) -> list[ActivityHit]:
        """See :meth:`Activities.search_activities`."""
        ...


class Activities(Repository):
    """Activity lookups by id, by mailbox item and by type/task/time; an activity's log;
    start, end and prune; ranked search (:class:`~.repos.activities.ActivityRepo`)."""

    def __init__(self, database: Database, search_index: ActivitySearch) -> None:
        super().__init__(database)
        self.search_index = search_index

    def search_activities(self, agent_id: str, query: str, *, limit: int = 10) -> list[ActivityHit]:
        """All terms first (AND); if that finds fewer than ``limit``, any term (OR) fills up.

        The terms are the one analyser's (:func:`~.base.search_terms`), each a quoted literal:
        a query of stop words alone finds nothing. Ranking is the engine's (label 4, keywords
        3, summary 2, logs 1, newer first on ties) over all of the agent's matches when there
        are at most ``search_candidates`` of them; a larger match set (a term in a large share
        of the agent's history says little about relevance, and would cost a scan of millions
        of postings to score) is ordered by recency instead: the newest activities matching
        in label or keywords, then the newest matching anywhere (``score`` 0.0).
        """
        return self.search_index.search(agent_id, query, limit)

    def get_activity(self, agent_id: str, activity_id: str) -> Activity | None:
        d = self.dialect
        rows = self.select(
            f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE id = ? AND agent_id = ?",
            (activity_id, agent_id),
        )
        return d.decode.activity(rows[0]) if rows else None

    def activity_logs(self, agent_id: str, activity_id: str) -> list[ActivityLogEntry]:
        d = self.dialect
        rows = self.select(
            f"SELECT {LOG_COLUMNS} FROM agent_activity_logs l "
            "JOIN agent_activities a ON a.id = l.activity_id "
            "WHERE l.activity_id = ? AND a.agent_id = ? ORDER BY l.seq, l.id",
            (activity_id, agent_id),
        )
        return [d.decode.activity_log(r) for r in rows]

    def query_activities(
        self,
        agent_id: str,
        *,
        types: Sequence[str] | None = None,
        task_id: str | None = None,
        before: datetime | None = None,
        limit: int = 30,
    ) -> list[Activity]:
        d = self.dialect
        sql = f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if types:
            condition, values = d.any_of("type", types)
            sql += f" AND {condition}"
            params.extend(values)
        if task_id is not None:
            sql += " AND task_id = ?"
            params.append(task_id)
        if before is not None:
            sql += " AND started_at < ?"
            params.append(d.time(before))
        sql += " ORDER BY started_at DESC, id DESC LIMIT ?"
        params.append(max(0, int(limit)))
        rows = self.select(sql, params)
        return [d.decode.activity(r) for r in rows]

    def activity_for_mailbox_item(self, agent_id: str, mailbox_item_id: str) -> Activity | None:
        d = self.dialect
        rows = self.select(
            f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE agent_id = ? "
            "AND mailbox_item_id = ? ORDER BY started_at DESC LIMIT 1",
            (agent_id, mailbox_item_id),
        )
        return d.decode.activity(rows[0]) if rows else None

    def activities_for_mailbox_items(
        self, agent_id: str, mailbox_item_ids: Sequence[str]
    ) -> dict[str, Activity]:
        """The latest activity of each mailbox item that has one."""
        ids = list(dict.fromkeys(mailbox_item_ids))
        if not ids:
            return {}
        d = self.dialect
        condition, params = d.any_of("mailbox_item_id", ids)
        rows = self.select(
            f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities "
            f"WHERE {condition} AND {d.unindexed('agent_id')} = ? ORDER BY started_at",
            (*params, agent_id),
        )
        return {row[_MAILBOX_ITEM]: d.decode.activity(row) for row in rows}

    def insert_activity(self, activity: Activity) -> None:
        d = self.dialect
        with self.database.write() as conn:
            d.bind(conn).run(
                "INSERT INTO agent_activities (id, agent_id, mailbox_item_id, type, label, "
                "task_id, started_at, ended_at, total_tokens, total_tools, success, summary, "
                "keywords, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    activity.id,
                    activity.agent_id,
                    activity.mailbox_item_id,
                    d.text(activity.type),
                    d.text(activity.label),
                    activity.task_id,
                    d.time(activity.started_at),
                    d.opt_time(activity.ended_at),
                    activity.total_tokens,
                    activity.total_tools,
                    d.flag(activity.success),
                    d.text(activity.summary),
                    d.text(",".join(activity.keywords)),
                    d.time(activity.started_at),
                ),
            )
            self.search_index.index_activity(conn, activity.id, fresh=True)

    def end_activity(self, agent_id: str, activity_id: str, end: ActivityEnd) -> bool:
        d = self.dialect
        with self.database.write() as conn:
            updated = d.bind(conn).run(
                "UPDATE agent_activities SET ended_at = ?, total_tokens = ?, total_tools = ?, "
                "success = ?, summary = ?, keywords = ? WHERE id = ? AND agent_id = ?",
                (
                    d.time(end.ended_at),
                    end.total_tokens,
                    end.total_tools,
                    d.flag(end.success),
                    d.text(end.summary),
                    d.text(",".join(end.keywords)),
                    activity_id,
                    agent_id,
                ),
            )
            if not updated:
                return False
            # The document is rewritten once per episode, with its log text: one index
            # update per episode, not one per log line.
            self.search_index.index_activity(conn, activity_id)
        return True

    def append_log(
        self,
        agent_id: str,
        activity_id: str,
        type: str,
        content: str,
        metadata: JsonObject,
        created_at: datetime,
    ) -> int | None:
        d = self.dialect
        with self.database.write() as conn:
            sql = d.bind(conn)
            # On PostgreSQL the row lock serialises appends to one activity (SQLite's write
            # transaction holds the file), so seq is assigned atomically.
            owner = sql.rows(
                "SELECT 1 FROM agent_activities WHERE id = ? AND agent_id = ?" + d.lock_rows,
                (activity_id, agent_id),
            )
            if not owner:
                return None
            # VALUES with a subquery, not INSERT … SELECT: SQLite would copy the rows it
            # reads from the table it writes into a temporary table first.
            row = sql.rows(
                "INSERT INTO agent_activity_logs (activity_id, seq, type, content, metadata, "
                "created_at) VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM "
                f"agent_activity_logs WHERE activity_id = ?), ?, ?, ?{d.json_cast}, ?) "
                "RETURNING seq",
                (
                    activity_id,
                    activity_id,
                    d.text(type),
                    d.text(content),
                    d.json(metadata) or "{}",
                    d.time(created_at),
                ),
            )
        return int(row[0][0])

    def prune_activities(self, agent_id: str, *, before: datetime) -> int:
        d = self.dialect
        params = (agent_id, d.time(before))
        with self.database.write() as conn:
            sql = d.bind(conn)
            self.search_index.drop_documents(conn, params)
            sql.run(f"DELETE FROM agent_activity_logs WHERE activity_id IN ({DOOMED})", params)
            return sql.run(
                "DELETE FROM agent_activities WHERE agent_id = ? AND started_at < ?", params
            )
